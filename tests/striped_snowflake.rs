//! Striped snowflake counters (issue 34): each lane owns the worker ids of
//! its residue class and is the gate of their time reservations; a process
//! leases a worker id of one lane and issues from memory. Taken from by
//! processes at once, and changed while handles opened before the change
//! keep issuing from the reservations they hold.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Barrier;

use idmint::sequence::striping::hooks::{hold, Point};
use idmint::sequence::striping::set_stripes;
use idmint::sequence::SnowflakeOptions;
use idmint::sequence::{OpenOptions, Sequence};

use crate::support::{
    self, assert_exit, counter_name, create, database_name, idmint, run, stderr, stdout, Seq,
};

/// How many of the worker leases of `test`'s counter `ids` are live.
fn live_leases(test: &str) -> usize {
    support::worker_leases(test, "ids")
        .iter()
        .filter(|lease| lease["live"].as_bool().unwrap())
        .count()
}

/// Waits until no worker lease of `test`'s counter `ids` is live: handles
/// whose gate a change of stripes sealed let their worker ids go at their
/// next renewal.
async fn leases_released(test: &str) {
    support::wait::within(
        support::wait::PATIENCE,
        "the sealed handles' leases released",
        async {
            while live_leases(test) > 0 {
                tokio::task::yield_now().await;
            }
        },
    )
    .await;
}

/// `counter create ids --kind snowflake --stripes 4`, then 8 `idmint seq`
/// processes holding their leases at once: each issues under one worker id,
/// the eight worker ids distinct, and no ID twice. `counter show` says
/// what each lane reserved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_processes_lease_worker_ids_of_the_lanes_and_never_share_an_id() {
    const TEST: &str = "striped_snowflake_processes";
    support::database(TEST).await;
    create(
        TEST,
        "ids",
        &["--kind", "snowflake", "--raw", "--stripes", "4"],
    );
    let layout = support::snowflake_layout(TEST, "ids");
    // More than a pipe holds: reading one ID of each first proves all
    // eight hold their leases at once.
    let mut issuers: Vec<Seq> = (0..8)
        .map(|_| Seq::start(TEST, &["ids", "--count", "20000"]))
        .collect();
    let mut ids: Vec<Vec<u64>> = issuers
        .iter_mut()
        .map(|issuer| vec![issuer.next_value().unwrap()])
        .collect();
    for (issuer, ids) in issuers.iter_mut().zip(&mut ids) {
        ids.extend(issuer.rest());
        assert!(issuer.child.wait().unwrap().success());
    }
    let mut workers = BTreeSet::new();
    let mut all = BTreeSet::new();
    for ids in &ids {
        assert_eq!(ids.len(), 20000);
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
    let shown = stdout(&run(idmint(TEST).args(["counter", "show", "ids"])));
    // Each process picks its first lane at random: the lanes used say what
    // they reserved (eight processes leave one of four lanes unused one run
    // in ten).
    assert!(
        shown.contains(
            "striped: generation 1: 4 lanes, each leasing the worker ids of its residue, \
             issuing after time unit 0 (IDs unique, not increasing)"
        ) && shown.contains("modulo 4, time reserved up to unit"),
        "{shown}"
    );
    // More lanes than worker ids: refused, nothing written.
    let refused = run(idmint(TEST).args([
        "counter",
        "create",
        "few",
        "--kind",
        "snowflake",
        "--raw",
        "--layout",
        "41,2,20",
        "--stripes",
        "5",
    ]));
    assert_exit(&refused, 2);
    assert!(
        stderr(&refused).contains(
            "a snowflake counter of 2 worker bits has at most 4 lanes, one per worker id, not 5"
        ),
        "{}",
        stderr(&refused)
    );
    assert!(support::counter_doc(TEST, "few").await.is_none());
}

/// A handle opened on an unstriped counter, and handles opened on its
/// lanes after each change of stripes (1 to 2, 2 to 4, 4 to 2), all
/// issuing while the changes happen, with leases long enough that no
/// handle renews within the test: each handle issues from the
/// reservation it holds after its gate was sealed, and every ID of a
/// generation's handles is later than the reservation of every handle
/// before. No ID twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn handles_from_before_a_change_issue_from_what_they_reserved_and_never_share_an_id() {
    const TEST: &str = "striped_snowflake_changes";
    let database = support::database(TEST).await;
    create(TEST, "ids", &["--kind", "snowflake", "--raw"]);
    let layout = support::snowflake_layout(TEST, "ids");
    let name = counter_name("ids");
    let mut options = OpenOptions::default();
    options.snowflake = SnowflakeOptions::default().lease_ttl(Duration::from_secs(120));
    let open = || async {
        Sequence::open(&database, name.clone(), &options)
            .await
            .unwrap()
            .0
    };
    let take = |sequence: Sequence| async move {
        let stamps = sequence.take(50, 0).await.unwrap();
        stamps
            .iter()
            .map(|stamp| stamp.sequence)
            .collect::<Vec<u64>>()
    };
    let time = |id: &u64| layout.decompose(*id).unwrap().time;

    let mut handles = vec![open().await];
    let mut all: Vec<u64> = take(handles[0].clone()).await;
    for lanes in [2, 4, 2] {
        let changed = set_stripes(&database, &name, lanes).await.unwrap();
        let floor = changed.map.base;
        assert!(
            all.iter().all(|id| time(id) <= floor),
            "an ID before the change is after the new floor {floor}"
        );
        let fresh = open().await;
        let after = take(fresh.clone()).await;
        assert!(
            after.iter().all(|id| time(id) > floor),
            "an ID of the new generation is not after its floor {floor}"
        );
        all.extend(after);
        handles.push(fresh);
        // Every handle opened before issues on, from what it reserved.
        for handle in &handles[..handles.len() - 1] {
            let ids = take(handle.clone()).await;
            assert!(ids.iter().all(|id| time(id) <= floor));
            all.extend(ids);
        }
    }
    let distinct: BTreeSet<u64> = all.iter().copied().collect();
    assert_eq!(distinct.len(), all.len(), "an ID was issued twice");
    for handle in handles {
        handle.close().await.unwrap();
    }
}

/// Takes of one value are served from the lane lease a handle holds, with
/// no await that waits: two handles, two tasks each taking at once (a
/// barrier), before and after a change of stripes (2 to 4 lanes) that seals
/// the lanes they hold: their renewals (every 100 ms) find it and let the
/// worker ids go, so the takes after lease lanes of the new generation.
/// No ID twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn takes_of_one_value_from_tasks_at_once_and_across_a_change_never_share_an_id() {
    const TEST: &str = "striped_snowflake_ones";
    const TAKES: usize = 2000;
    let database = support::database(TEST).await;
    create(
        TEST,
        "ids",
        &["--kind", "snowflake", "--raw", "--stripes", "2"],
    );
    let name = counter_name("ids");
    let mut options = OpenOptions::default();
    let mut leases = SnowflakeOptions::default();
    leases.renew_every = Duration::from_millis(100);
    options.snowflake = leases;
    let mut handles = Vec::new();
    for _ in 0..2 {
        handles.push(
            Sequence::open(&database, name.clone(), &options)
                .await
                .unwrap()
                .0,
        );
    }
    let round = |handles: Vec<Sequence>| async move {
        let barrier = Arc::new(Barrier::new(4));
        let tasks: Vec<_> = handles
            .iter()
            .flat_map(|handle| [handle.clone(), handle.clone()])
            .map(|handle| {
                let barrier = barrier.clone();
                tokio::spawn(async move {
                    barrier.wait().await;
                    let mut ids = Vec::with_capacity(TAKES);
                    for _ in 0..TAKES {
                        let stamps = handle.take(1, 0).await.unwrap();
                        ids.push(stamps[0].sequence);
                    }
                    ids
                })
            })
            .collect();
        let mut all = Vec::new();
        for task in tasks {
            all.extend(task.await.unwrap());
        }
        all
    };
    let mut all = round(handles.clone()).await;
    assert_eq!(live_leases(TEST), 2, "each handle holds a lane's worker id");
    set_stripes(&database, &name, 4).await.unwrap();
    // Both handles found their lanes sealed and let their worker ids go:
    // each next take finds that its lease issues no more.
    leases_released(TEST).await;
    all.extend(round(handles.clone()).await);
    let distinct: BTreeSet<u64> = all.iter().copied().collect();
    assert_eq!(distinct.len(), 8 * TAKES, "an ID was issued twice");
    for handle in handles {
        handle.close().await.unwrap();
    }
}

/// A handle that holds a lease of the unstriped counter, renewed often but
/// long lived (5 minutes), when the counter is striped: its next renewal finds its gate
/// sealed, and it releases its worker id at once (not minutes later, when
/// its lease would expire); its next take comes from the lanes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handle_whose_gate_is_sealed_releases_its_worker_id_at_once() {
    const TEST: &str = "striped_snowflake_retired";
    let database = support::database(TEST).await;
    create(TEST, "ids", &["--kind", "snowflake", "--raw"]);
    let name = counter_name("ids");
    let mut options = OpenOptions::default();
    let mut leases = SnowflakeOptions::default().lease_ttl(Duration::from_secs(300));
    leases.renew_every = Duration::from_millis(100);
    options.snowflake = leases;
    let (held, _) = Sequence::open(&database, name.clone(), &options)
        .await
        .unwrap();
    let before = held.take(10, 0).await.unwrap();
    assert_eq!(live_leases(TEST), 1);
    set_stripes(&database, &name, 2).await.unwrap();
    leases_released(TEST).await;
    let after = held.take(10, 0).await.unwrap();
    let mut all: Vec<u64> = before.iter().chain(&after).map(|s| s.sequence).collect();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 20, "an ID was issued twice");
}

/// A change of stripes that stopped half way (its task ended after its
/// seals) leaves a snowflake counter with no live lane: the next `idmint
/// seq` finishes it on its own (see `striped_resume.rs`) and issues.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_change_stopped_half_way_is_finished_by_the_next_seq() {
    const TEST: &str = "striped_snowflake_half_way";
    let database = support::database(TEST).await;
    create(
        TEST,
        "ids",
        &["--kind", "snowflake", "--raw", "--stripes", "3"],
    );
    let name = counter_name("ids");
    let held = hold(&database_name(TEST), "ids", Point::BeforeLaneWrites, 1);
    let stopped = {
        let (database, name) = (database.clone(), name.clone());
        tokio::spawn(async move { set_stripes(&database, &name, 2).await })
    };
    held.arrived().await;
    stopped.abort();
    assert!(stopped.await.unwrap_err().is_cancelled());
    drop(held);

    let after = run(idmint(TEST).args(["seq", "ids", "--count", "3"]));
    assert_exit(&after, 0);
    assert_eq!(stdout(&after).lines().count(), 3);
    let shown = stdout(&run(idmint(TEST).args(["counter", "show", "ids"])));
    assert!(shown.contains("generation 3: 2 lanes"), "{shown}");
}

/// A holder of an idmint before gates records its reservations in its
/// lease only, never in the counter (its lease says nothing of the gate):
/// striping the counter while its lease is live is refused, naming it and
/// changing nothing; once its lease has lapsed, the new generation starts
/// above the time it reserved, so no holder of a lane issues a time unit
/// it may have issued under the same worker id.
#[tokio::test]
async fn a_holder_that_never_raised_the_gate_is_waited_for_and_then_counted() {
    use mongodb::bson::{doc, DateTime, Document};
    const TEST: &str = "striped_snowflake_ungated";
    let database = support::database(TEST).await;
    create(TEST, "ids", &["--kind", "snowflake", "--raw"]);
    let first = run(idmint(TEST).args(["seq", "ids", "--count", "1"]));
    assert_exit(&first, 0);
    let workers = database.collection::<Document>("workers");
    let gated = workers
        .find_one(doc! { "counter": "ids" })
        .await
        .unwrap()
        .unwrap();
    let ahead = gated.get_i64("last_time").unwrap() + 100_000;
    // Worker id 7, as an idmint before gates leases it: no `gated`.
    workers
        .insert_one(doc! {
            "_id": "ids#7", "counter": "ids", "worker": 7_i64, "owner": "0123456789abcdef",
            "host": "old-host", "pid": 4242_i64, "acquired": DateTime::now(), "floor": 0_i64,
            "last_time": ahead,
            "expires": DateTime::from_millis(DateTime::now().timestamp_millis() + 3_600_000),
        })
        .await
        .unwrap();
    let before = database
        .collection::<Document>("counters")
        .find_one(doc! { "_id": "ids" })
        .await
        .unwrap();

    let refused = run(idmint(TEST).args(["counter", "stripes", "ids", "--set", "2"]));
    assert_exit(&refused, 2);
    assert!(
        stderr(&refused).contains("worker id 7 is leased by old-host (pid 4242)"),
        "{}",
        stderr(&refused)
    );
    let after = database
        .collection::<Document>("counters")
        .find_one(doc! { "_id": "ids" })
        .await
        .unwrap();
    assert_eq!(after, before, "nothing changed");

    // Its lease lapses (the process stopped): the change goes ahead, above it.
    workers
        .update_one(
            doc! { "_id": "ids#7" },
            doc! { "$set": { "expires": DateTime::from_millis(0) } },
        )
        .await
        .unwrap();
    let striped = run(idmint(TEST).args(["counter", "stripes", "ids", "--set", "2"]));
    assert_exit(&striped, 0);
    let lanes = database
        .collection::<Document>("counters")
        .find(doc! { "_id": { "$in": ["ids#0", "ids#1"] } })
        .await
        .unwrap();
    use futures_util::TryStreamExt;
    let lanes: Vec<Document> = lanes.try_collect().await.unwrap();
    assert_eq!(lanes.len(), 2);
    for lane in &lanes {
        let floor = lane.get_document("lane").unwrap().get_i64("b").unwrap();
        assert!(
            floor >= ahead,
            "lane floor {floor} is below {ahead}, reserved by worker 7"
        );
    }
    let after = run(idmint(TEST).args(["seq", "ids", "--count", "3"]));
    assert_exit(&after, 0);
}
