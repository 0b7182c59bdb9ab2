//! Snowflake counters against the server: worker ids leased and reused,
//! fail-closed leases (kill -9, SIGSTOP), clock rollback across a restart,
//! and the layout's lifetime.

use std::collections::BTreeSet;
use std::time::Duration;

use idmint::parts::Layout;
use mongodb::bson::{doc, Document};
use serde_json::Value;

use crate::support::{
    self, assert_exit, create, idmint, printed_values, run, stderr, stdout, wait, Seq,
};

/// The live leases (worker ids) of a counter, by the server's clock.
fn live_workers(test: &str, counter: &str) -> BTreeSet<u64> {
    support::worker_leases(test, counter)
        .iter()
        .filter(|lease| lease["live"].as_bool().unwrap())
        .map(|lease| lease["worker"].as_u64().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_processes_lease_eight_worker_ids_and_never_share_an_id() {
    const TEST: &str = "snowflake_eight_processes";
    support::database(TEST).await;
    create(TEST, "ids", &["--kind", "snowflake"]);
    let layout = support::snowflake_layout(TEST, "ids");
    // More than a pipe holds: each process blocks until read, so reading one
    // ID of each first proves all eight hold their leases at once.
    let mut issuers: Vec<Seq> = (0..8)
        .map(|_| Seq::start(TEST, &["ids", "--count", "20000"]))
        .collect();
    let mut ids: Vec<Vec<u64>> = issuers
        .iter_mut()
        .map(|issuer| vec![issuer.next_value().unwrap()])
        .collect();
    assert_eq!(live_workers(TEST, "ids").len(), 8);
    for (issuer, ids) in issuers.iter_mut().zip(&mut ids) {
        ids.extend(issuer.rest());
        assert!(issuer.child.wait().unwrap().success());
    }
    let mut workers = BTreeSet::new();
    let mut all = BTreeSet::new();
    for ids in &ids {
        assert_eq!(ids.len(), 20000);
        assert!(
            ids.windows(2).all(|pair| pair[0] < pair[1]),
            "increasing per process"
        );
        let worker: BTreeSet<u64> = ids
            .iter()
            .map(|&id| layout.decompose(id).unwrap().worker)
            .collect();
        assert_eq!(worker.len(), 1, "one worker id per process");
        workers.extend(worker);
        all.extend(ids.iter().copied());
    }
    assert_eq!(workers.len(), 8, "eight distinct worker ids: {workers:?}");
    assert_eq!(all.len(), 8 * 20000, "an ID was issued twice");
    // Clean exits released every lease.
    assert!(live_workers(TEST, "ids").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_runs_on_eight_worker_ids_never_exhaust_them() {
    const TEST: &str = "snowflake_sixty_four_runs";
    support::database(TEST).await;
    create(
        TEST,
        "small",
        &["--kind", "snowflake", "--layout", "49,3,11"],
    );
    let mut all = BTreeSet::new();
    for run_number in 0..64 {
        let output = run(idmint(TEST).args(["seq", "small", "--count", "3"]));
        assert_exit(&output, 0);
        for line in stdout(&output).lines() {
            assert!(
                all.insert(line.parse::<u64>().unwrap()),
                "run {run_number} repeated {line}"
            );
        }
    }
    assert_eq!(all.len(), 64 * 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_worker_ids_live_is_a_clear_error_and_a_killed_holders_id_waits_for_its_expiry() {
    const TEST: &str = "snowflake_exhaustion_and_kill";
    support::database(TEST).await;
    create(
        TEST,
        "tiny",
        &["--kind", "snowflake", "--layout", "52,1,10"],
    ); // two worker ids
    let layout = support::snowflake_layout(TEST, "tiny");
    let mut first = Seq::start(TEST, &["tiny", "--count", "10000000", "--lease-ttl", "2"]);
    let mut second = Seq::start(TEST, &["tiny", "--count", "10000000", "--lease-ttl", "2"]);
    let a = first.next_value().unwrap();
    second.next_value().unwrap();
    // Both ids held: a third process gets a clear error, exit 3, no made-up id.
    let refused = run(idmint(TEST).args(["seq", "tiny"]));
    assert_exit(&refused, 3);
    assert!(
        stderr(&refused).contains(
            "every worker id of counter 'tiny' (2) is leased and live; the first lease expires at"
        ),
        "{}",
        stderr(&refused)
    );
    // kill -9 the first: its worker id stays leased until the lease expires ...
    let victim = layout.decompose(a).unwrap().worker;
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    assert!(live_workers(TEST, "tiny").contains(&victim));
    let still = run(idmint(TEST).args(["seq", "tiny"]));
    assert_exit(&still, 3);
    // ... and is handed out again after it, above every time the victim could use.
    wait::until(
        Duration::from_secs(30),
        "the killed holder's lease expires",
        || !live_workers(TEST, "tiny").contains(&victim),
    );
    let output = run(idmint(TEST).args(["seq", "tiny", "--count", "5"]));
    assert_exit(&output, 0);
    let after = printed_values(&output);
    let parts = layout.decompose(after[0]).unwrap();
    assert_eq!(parts.worker, victim);
    assert!(after[0] > a);
    second.child.kill().unwrap();
    second.child.wait().unwrap();
}

/// A holder paused (SIGSTOP) past its lease while another process takes its
/// worker id issues nothing more with that id once resumed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_paused_past_its_lease_issues_nothing_with_the_worker_id_taken_over() {
    const TEST: &str = "snowflake_sigstop";
    support::database(TEST).await;
    create(TEST, "ids", &["--kind", "snowflake", "--layout", "51,2,10"]);
    let layout = support::snowflake_layout(TEST, "ids");
    let mut paused = Seq::start(TEST, &["ids", "--count", "10000000", "--lease-ttl", "2"]);
    let first = paused.next_value().unwrap();
    let worker = layout.decompose(first).unwrap().worker;
    paused.signal(libc::SIGSTOP);
    wait::until(
        Duration::from_secs(30),
        "the paused holder's lease expires",
        || !live_workers(TEST, "ids").contains(&worker),
    );
    // The lowest free worker id is the paused one's.
    let mut taker = Seq::start(TEST, &["ids", "--count", "10000000", "--lease-ttl", "2"]);
    let taken: Vec<u64> = (0..1000).map(|_| taker.next_value().unwrap()).collect();
    assert_eq!(layout.decompose(taken[0]).unwrap().worker, worker);
    let takeover_time = layout.decompose(taken[0]).unwrap().time;
    paused.signal(libc::SIGCONT);
    // Read on well past what the pipe held before the pause.
    let resumed: Vec<u64> = (0..100_000).map(|_| paused.next_value().unwrap()).collect();
    let more_taken: Vec<u64> = (0..1000).map(|_| taker.next_value().unwrap()).collect();
    for id in resumed.iter() {
        let parts = layout.decompose(*id).unwrap();
        assert!(
            parts.worker != worker || parts.time < takeover_time,
            "the paused holder issued {parts:?} with the worker id taken over at time {takeover_time}"
        );
    }
    assert_ne!(
        layout.decompose(*resumed.last().unwrap()).unwrap().worker,
        worker,
        "the resumed holder leased another worker id"
    );
    let mut all = BTreeSet::new();
    for id in [first]
        .iter()
        .chain(&resumed)
        .chain(&taken)
        .chain(&more_taken)
    {
        assert!(all.insert(*id), "{id} issued twice");
    }
    for mut issuer in [paused, taker] {
        issuer.child.kill().unwrap();
        issuer.child.wait().unwrap();
    }
}

/// A restart onto the same worker id with the clock an hour back: it starts
/// after the last time the previous holder used, so nothing repeats and the
/// worker's IDs keep increasing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_with_the_clock_an_hour_back_repeats_nothing() {
    const TEST: &str = "snowflake_clock_back_restart";
    support::database(TEST).await;
    create(TEST, "ids", &["--kind", "snowflake"]);
    let layout = support::snowflake_layout(TEST, "ids");
    let before = run(idmint(TEST).args(["seq", "ids", "--count", "1000"]));
    assert_exit(&before, 0);
    let before = printed_values(&before);
    let faked = |extra: &[&str]| {
        let mut command = idmint(TEST);
        support::fake_clock(&mut command, "-3600s")
            .args(["seq", "ids", "--count", "1000"])
            .args(extra);
        run(&mut command)
    };
    // Refusing, it says why and issues nothing.
    let refused = faked(&["--clock-rollback", "refuse"]);
    assert_exit(&refused, 3);
    assert!(
        stderr(&refused).contains("behind the last ID issued"),
        "{}",
        stderr(&refused)
    );
    assert!(stdout(&refused).is_empty());
    // Borrowing (the default), it issues after the last time used.
    let after = faked(&[]);
    assert_exit(&after, 0);
    let after = printed_values(&after);
    assert_eq!(after.len(), 1000);
    let worker = |id: u64| layout.decompose(id).unwrap().worker;
    assert_eq!(worker(after[0]), worker(before[0]), "the same worker id");
    assert!(
        after[0] > *before.last().unwrap(),
        "the worker's IDs keep increasing"
    );
    assert!(after.windows(2).all(|pair| pair[0] < pair[1]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layout_that_runs_out_soon_is_refused_and_an_old_one_warns() {
    const TEST: &str = "snowflake_layout_lifetime";
    let database = support::database(TEST).await;
    for (args, message) in [
        (&["--layout", "30,20,13"][..], "run out on"),
        (&["--layout", "41,10,13"][..], "adds up to 64 bits"),
        (&["--epoch", "2999-01-01"][..], "is in the future"),
        (&["--layout", "41,10"][..], "must be three bit counts"),
    ] {
        let output = run(idmint(TEST)
            .args(["counter", "create", "bad", "--kind", "snowflake"])
            .args(args));
        assert_exit(&output, 2);
        assert!(
            stderr(&output).contains(message),
            "{args:?}: {}",
            stderr(&output)
        );
    }
    // One created long ago whose time bits run out within a year.
    let now_ms = chrono::Utc::now().timestamp_millis();
    let epoch_ms = now_ms + 300 * 86_400_000 - (1_i64 << 30) * 1000;
    database
        .collection::<Document>("counters")
        .insert_one(
            doc! { "_id": "old", "kind": "snowflake", "time_bits": 30_i64,
            "worker_bits": 20_i64, "seq_bits": 13_i64, "unit": "s", "epoch_ms": epoch_ms },
        )
        .await
        .unwrap();
    let shown = run(idmint(TEST).args(["counter", "show", "old"]));
    assert_exit(&shown, 0);
    assert!(
        stdout(&shown).contains("warning: the time bits run out on"),
        "{}",
        stdout(&shown)
    );
    // `status` says it too (within its --warn-days, 365 by default).
    let status = run(idmint(TEST).args(["status"]));
    assert!(
        stdout(&status).contains("warning: counter 'old' runs out on")
            && stdout(&status).contains("days left, fewer than 365)"),
        "{}",
        stdout(&status)
    );
    let json = run(idmint(TEST).args(["counter", "show", "old", "--json"]));
    let json: Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert!(json["warning"].as_str().is_some() && json["runs_out_on"].as_str().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_lease_is_named_exit_2_and_left_unchanged() {
    const TEST: &str = "snowflake_corrupt_lease";
    let database = support::database(TEST).await;
    create(TEST, "ids", &["--kind", "snowflake"]);
    let corrupt = doc! { "_id": "ids#0", "counter": "ids", "worker": 0_i64, "owner": "x",
    "expires": "tomorrow", "last_time": 5_i64 };
    database
        .collection::<Document>("workers")
        .insert_one(&corrupt)
        .await
        .unwrap();
    let output = run(idmint(TEST).args(["seq", "ids"]));
    assert_exit(&output, 2);
    assert!(
        stderr(&output).contains("worker lease \"ids#0\" of counter 'ids' is corrupt: expires is the string \"tomorrow\", not a date"),
        "{}",
        stderr(&output)
    );
    let after = support::documents(&database, "workers").await;
    assert_eq!(after, [corrupt]);
}

/// Snowflake IDs formatted by the built-in base32 policy: 13 characters
/// after the prefix, sorting as the IDs do, read back by the policy itself
/// (contract 0.3.0) into the time, worker id and sequence the layout packed;
/// the default policy is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snowflake_ids_format_through_the_base32_policy() {
    const TEST: &str = "snowflake_base32";
    support::database(TEST).await;
    create(TEST, "events", &["--kind", "snowflake", "--prefix", "EVT-"]);
    let output = run(idmint(TEST).args([
        "next",
        "events",
        "--count",
        "3",
        "--policy",
        "builtin:base32",
    ]));
    assert_exit(&output, 0);
    let ids: Vec<String> = stdout(&output).lines().map(str::to_string).collect();
    assert_eq!(ids.len(), 3);
    assert!(
        ids.iter()
            .all(|id| id.starts_with("EVT-") && id.len() == 4 + 13),
        "{ids:?}"
    );
    assert!(ids.windows(2).all(|pair| pair[0] < pair[1]));
    let layout = support::snowflake_layout(TEST, "events");
    let valid = run(idmint(TEST)
        .args(["validate", "--policy", "builtin:base32", "--prefix", "EVT-"])
        .args(["--layout", "41,10,12", "--json"])
        .args(&ids));
    assert_exit(&valid, 0);
    let report: Value = serde_json::from_str(&stdout(&valid)).unwrap();
    for result in report["results"].as_array().unwrap() {
        // `parts` is what the policy's own validate returned.
        let parts = &result["parts"];
        let value = parts["sequence"].as_u64().unwrap();
        let packed = layout.decompose(value).unwrap();
        let fields = &parts["snowflake"];
        assert_eq!(
            (
                fields["time"].as_u64(),
                fields["worker"].as_u64(),
                fields["seq"].as_u64()
            ),
            (Some(packed.time), Some(packed.worker), Some(packed.seq)),
            "{result}"
        );
        assert_eq!(
            parts["timestamp_micros"].as_u64(),
            Some(layout.unix_ms_of(packed.time) * 1000),
            "{result}"
        );
    }
    let refused = run(idmint(TEST).args(["next", "events"]));
    assert_exit(&refused, 4);
    // The refused run leased a worker id to open the counter, and released
    // it at once rather than leaving it live until it expires.
    assert_eq!(live_workers(TEST, "events"), BTreeSet::new());
    assert!(
        stderr(&refused)
            .contains("snowflake counter 'events' hands out values up to 9223372036854775807")
            && stderr(&refused).contains("builtin:base32"),
        "{}",
        stderr(&refused)
    );
}

/// Every lease write (claim, take-over, release) is sent with write concern
/// majority and journal, as the command log shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_lease_write_is_durable() {
    use idmint::sequence::{self, CounterKind, CounterName, CounterSpec};
    use idmint::sequence::{SnowflakeCounter, SnowflakeOptions};
    let (database, log) = support::monitored_database("snowflake_durable_leases").await;
    let name = CounterName::new("ids").unwrap();
    sequence::create(&database, &name, &CounterSpec::of(CounterKind::Snowflake))
        .await
        .unwrap();
    let layout = Layout::default();
    for _ in 0..2 {
        // The first run inserts the lease, the second takes the released one over.
        let snowflake =
            SnowflakeCounter::start(&database, name.clone(), layout, SnowflakeOptions::default())
                .await
                .unwrap();
        snowflake.take(10).await.unwrap();
        snowflake.close().await.unwrap();
    }
    let writes: Vec<_> = ["insert", "findAndModify", "update"]
        .iter()
        .flat_map(|command| log.named(command))
        .filter(|command| {
            command
                .get_str("insert")
                .or(command.get_str("findAndModify"))
                .or(command.get_str("update"))
                == Ok("workers")
        })
        .collect();
    assert_eq!(
        writes.len(),
        4,
        "insert, release, take-over, release: {writes:?}"
    );
    writes.iter().for_each(support::assert_durable);
}

/// A second `close()` changes nothing: it must not release the worker id
/// again (the old code released worker 0 with `last_time: -1`, so that a
/// restart with a slower clock could repeat the IDs issued before).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_close_changes_nothing() {
    use idmint::sequence::{self, CounterKind, CounterName, CounterSpec};
    use idmint::sequence::{SnowflakeCounter, SnowflakeOptions};
    let database = support::database("snowflake_second_close").await;
    let name = CounterName::new("ids").unwrap();
    sequence::create(&database, &name, &CounterSpec::of(CounterKind::Snowflake))
        .await
        .unwrap();
    let layout = Layout::default();
    let snowflake =
        SnowflakeCounter::start(&database, name.clone(), layout, SnowflakeOptions::default())
            .await
            .unwrap();
    let ids = snowflake.take(10).await.unwrap();
    snowflake.close().await.unwrap();
    let released = support::documents(&database, "workers").await;
    assert_eq!(released.len(), 1);
    assert_eq!(
        released[0].get_i64("last_time").unwrap(),
        layout.decompose(ids[9]).unwrap().time as i64,
        "the release records the last time unit issued"
    );
    snowflake.close().await.unwrap();
    assert_eq!(
        support::documents(&database, "workers").await,
        released,
        "a second close changed the released lease"
    );
    // Closed, it issues nothing.
    assert!(snowflake.take(1).await.is_err());
    // The next holder of worker 0 starts after the IDs issued.
    let next = SnowflakeCounter::start(&database, name, layout, SnowflakeOptions::default())
        .await
        .unwrap();
    let after = next.take(1).await.unwrap();
    assert_eq!(next.worker(), 0);
    assert!(after[0] > ids[9]);
    next.close().await.unwrap();
}
