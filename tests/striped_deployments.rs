//! Striped counters across deployments (issue 34): one counter whose lanes
//! are in two or three independent servers, taken from by in-process
//! takers, `idmint seq` processes and `idmint serve` while one server is
//! killed with `kill -9` and restarted on its data, or partitioned (the
//! fault proxy holds everything, connections open): no take waits past its
//! deadline, no value is handed out twice, and the server's lanes are
//! taken from again once it is back. Changes of stripes across
//! deployments (1 lane to N, adding a deployment, retiring one) run with
//! takes in flight. And what the CLI refuses, and says.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::Value;

use idmint::parts::Stamp;
use idmint::sequence::striping::hooks::{hold, Point};
use idmint::sequence::striping::{
    create_laid_out, lanes, set_layout, Deployments, Layout, StripeMap,
};
use idmint::sequence::{CounterKind, CounterSpec, Sequence};

use crate::support::fault_proxy::FaultProxy;
use crate::support::sites::{
    across_flags, connect, database_of, idmint_across, idmint_across_within, in_deployment,
    open_across, open_across_with, own_servers, Site, DEADLINE,
};
use crate::support::takers::{
    as_taken, assert_distinct, joined, leases_of, spawn_takers, Takers, SLACK,
};
use crate::support::wait::{within, PATIENCE};
use crate::support::{
    self, assert_exit, counter_name, database_name, idmint_on, printed_values, run, stderr, stdout,
    OwnedServer, ServerConfig,
};

/// How many `idmint seq` processes a kill test starts at once while a
/// deployment is dead.
const PROCESSES: usize = 8;

/// The take deadline of the tests that kill three servers' first and
/// restart it. A killed server refuses at once, so no take spends its
/// deadline waiting on it: the deadline bounds only what the machine adds,
/// and three servers, one restarting, beside eight `idmint seq` processes
/// and `serve` once took past 2 s on a loaded machine.
const THREE_KILLED_DEADLINE: Duration = Duration::from_secs(6);

/// `serve`'s take deadline in the tests that start it while the preferred
/// deployment is dead. Its first request opens the counter across the
/// deployments (the dead one refuses at once); beside the takers and the
/// `idmint seq` processes, on a fresh clone's loaded machine, that once took
/// past 2 s and answered 503 (retry with backoff). The tests assert its
/// answers, not their time: the takers' deadline stays [`DEADLINE`].
const SERVE_DEADLINE: Duration = Duration::from_secs(6);

/// Fails if a take failed, or waited past `deadline` (and what a loaded
/// machine may add to it).
#[track_caller]
fn assert_in_time(slowest: Duration, errors: &[String], deadline: Duration) {
    assert!(errors.is_empty(), "takes failed: {errors:?}");
    assert!(
        slowest <= deadline + SLACK,
        "a take waited {slowest:?}, past the deadline of {deadline:?}"
    );
}

/// Creates the raw autoinc counter `orders` in the preferred of
/// `deployments`, its lanes laid out as `layout` says; its map.
async fn create_orders(deployments: &Deployments, layout: &str) -> StripeMap {
    let spec = CounterSpec::of(CounterKind::Autoinc).prefixes(Vec::new());
    let layout: Layout = layout.parse().unwrap();
    let preferred = &deployments.preferred().database;
    let state = create_laid_out(
        preferred,
        Some(deployments),
        &counter_name("orders"),
        &spec,
        &layout,
    )
    .await
    .unwrap();
    state.striped.unwrap()
}

/// Counter `orders` opened across `deployments`.
async fn open_orders(deployments: &Deployments) -> Sequence {
    open_across(deployments, "orders").await.0
}

/// Fails if any of `values` is of a dead deployment's lanes (`dead`).
#[track_caller]
fn assert_none_of(values: impl IntoIterator<Item = u64>, dead: impl Fn(u64) -> bool) {
    let values: Vec<u64> = values.into_iter().collect();
    if let Some(value) = values.iter().find(|value| dead(**value)) {
        panic!("{value}, a value of a dead deployment's lane, among {values:?}");
    }
}

/// `count` processes `idmint seq ARGS` across `sites`, started at once.
fn start_seqs(
    sites: &[Site],
    args: &[&str],
    count: usize,
    deadline: Duration,
) -> Vec<std::process::Child> {
    (0..count)
        .map(|_| {
            let mut command = idmint_across_within(sites, &["seq"], deadline);
            command
                .args(args)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect()
}

/// What each of `processes` printed, each a success.
fn finished(processes: Vec<std::process::Child>) -> Vec<std::process::Output> {
    processes
        .into_iter()
        .map(|process| {
            let output = process.wait_with_output().unwrap();
            assert_exit(&output, 0);
            output
        })
        .collect()
}

/// A counter striped over `servers` servers of the test's own (two lanes
/// each), created with the CLI; takers in this process, `idmint seq`
/// processes and `idmint serve` take from it while the preferred server is
/// killed with `kill -9` and started again on its data.
async fn kill_nine_of_one_of(test: &str, servers: usize) {
    let (mut owned, sites) = own_servers(test, servers);
    let deployments = connect(&sites, DEADLINE).await;
    let layout: Vec<String> = sites
        .iter()
        .map(|site| format!("{}:2", site.name))
        .collect();
    let created = run(&mut idmint_across(
        &sites,
        &[
            "counter",
            "create",
            "orders",
            "--kind",
            "autoinc",
            "--raw",
            "--stripes",
            &layout.join(","),
            "--json",
        ],
    ));
    assert_exit(&created, 0);
    let shown: Value = serde_json::from_str(&stdout(&created)).unwrap();
    let lanes = shown["lanes"].as_array().unwrap();
    assert_eq!(lanes.len(), 2 * servers, "{shown}");
    assert_eq!(lanes[0]["deployment"], "eu", "{shown}");
    assert_eq!(lanes[2]["deployment"], "us", "{shown}");

    let sequence = open_orders(&deployments).await;
    let map = sequence.state().await.unwrap().striped.unwrap();
    assert_eq!(map.spans.len(), servers);
    let takers = Takers::start(&sequence, 4);
    takers.progress(200, "values from every deployment").await;

    // kill -9 the preferred deployment's server, with takes in flight.
    owned[0].kill();
    takers
        .progress(300, "values while the preferred deployment is dead")
        .await;
    let dead_from = takers.count();
    // Processes started while it is dead: they read the map from another
    // deployment's copy, and take from its lanes.
    let processes = start_seqs(&sites, &["orders", "--count", "40"], PROCESSES, DEADLINE);
    let flags = across_flags(&sites, SERVE_DEADLINE);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let service =
        support::service::Service::spawn(idmint_on(&sites[0].uri, &sites[0].database), &flags);
    let mut from_processes = Vec::new();
    for output in finished(processes) {
        let values = printed_values(&output);
        assert_eq!(values.len(), 40, "{}", stderr(&output));
        from_processes.extend(values);
    }
    let answer = service.get("/v1/counters/orders/values?count=7");
    assert_eq!(answer.status, 200, "{}", answer.body);
    from_processes.extend(answer.values());
    // Its monitor says which deployment it set aside.
    let monitor = service.admin("/monitor.json").json();
    let health = monitor["instance"]["deployments"].as_array().unwrap();
    assert_eq!(health.len(), servers, "{monitor}");
    assert_eq!(health[0]["name"], "eu", "{monitor}");
    assert!(health[0]["failures"].as_u64().unwrap() > 0, "{monitor}");
    assert_eq!(health[1]["healthy"], true, "{monitor}");
    // Ready while one deployment answers, naming the one that does not.
    let ready = service.admin("/readyz");
    assert_eq!(ready.status, 200, "{}", ready.body);
    let database = ready.json()["database"].as_str().unwrap().to_string();
    assert!(database.starts_with("eu: "), "{database}");
    // Nothing came from the dead deployment's lanes.
    assert_none_of(
        takers
            .since(dead_from)
            .into_iter()
            .chain(from_processes.clone()),
        |value| in_deployment(&map, "eu", value),
    );

    // Back on its data: its lanes are taken from again.
    takers
        .back_after_restart(&mut owned[0], |value| in_deployment(&map, "eu", value))
        .await;
    let answer = service.get("/v1/counters/orders/values?count=5");
    assert_eq!(answer.status, 200, "{}", answer.body);
    from_processes.extend(answer.values());
    drop(service);

    let (mut all, slowest, errors) = takers.stop().await;
    assert_in_time(slowest, &errors, DEADLINE);
    all.extend(from_processes);
    assert_distinct(&all);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_servers_one_killed_and_restarted_no_value_twice_no_take_past_its_deadline() {
    kill_nine_of_one_of("striped_across_two", 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_servers_one_killed_and_restarted_no_value_twice_no_take_past_its_deadline() {
    kill_nine_of_one_of("striped_across_three", 3).await;
}

/// A segment counter striped across two servers of the test's own, each
/// handle taking whole segments of a lane and handing them out from
/// memory, while the preferred server is killed with `kill -9` and
/// restarted: no value twice, no take past its deadline, the killed
/// server's lanes taken from again once it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_segment_counter_across_two_servers_one_killed_and_restarted_no_value_twice() {
    const TEST: &str = "striped_segment_across_two";
    let (mut owned, sites) = own_servers(TEST, 2);
    let deployments = connect(&sites, DEADLINE).await;
    let created = run(&mut idmint_across(
        &sites,
        &[
            "counter",
            "create",
            "tickets",
            "--kind",
            "segment",
            "--step",
            "20",
            "--raw",
            "--stripes",
            "eu:2,us:2",
        ],
    ));
    assert_exit(&created, 0);
    let (sequence, map) = open_across(&deployments, "tickets").await;
    // Two handles, as two processes: each its own segments.
    let (other, _) = open_across(&deployments, "tickets").await;
    let takers = Takers::start(&sequence, 2);
    let others = Takers::start(&other, 2);
    takers.progress(200, "values from both deployments").await;

    owned[0].kill();
    takers
        .progress(300, "values while the preferred deployment is dead")
        .await;
    let dead_from = takers.count();
    let seq = run(&mut idmint_across(
        &sites,
        &["seq", "tickets", "--count", "50"],
    ));
    assert_exit(&seq, 0);
    let from_process = printed_values(&seq);
    assert_eq!(from_process.len(), 50);
    // Past the segments taken before the kill: none of the dead lanes.
    takers.progress(200, "more values while it is dead").await;
    assert_none_of(
        takers
            .since(dead_from + 200)
            .into_iter()
            .chain(from_process.clone()),
        |value| in_deployment(&map, "eu", value),
    );

    takers
        .back_after_restart(&mut owned[0], |value| in_deployment(&map, "eu", value))
        .await;
    let (mut all, slowest, errors) = takers.stop().await;
    let (from_others, others_slowest, others_errors) = others.stop().await;
    assert!(
        errors.is_empty() && others_errors.is_empty(),
        "takes failed: {errors:?} {others_errors:?}"
    );
    assert!(
        slowest.max(others_slowest) <= DEADLINE + SLACK,
        "a take waited past the deadline of {DEADLINE:?}"
    );
    all.extend(from_others);
    all.extend(from_process);
    assert_distinct(&all);
}

/// A cyclic counter striped across two servers of the test's own, taken
/// from by takers whose clocks are frozen at one instant (so that only the
/// lanes' rule keeps their pairs apart) and by `idmint seq` processes
/// started while the preferred server is dead after `kill -9`, and IDs
/// from `serve`: no (timestamp, value) pair twice, no ID twice, no take
/// past its deadline, and the
/// killed server's lanes come back once it is restarted on its data.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cyclic_counter_across_two_servers_one_killed_and_restarted_no_pair_twice() {
    const TEST: &str = "striped_cyclic_across_two";
    const FROZEN_MICROS: u64 = 1_767_225_600_000_000;
    let (mut owned, sites) = own_servers(TEST, 2);
    let deployments = connect(&sites, DEADLINE).await;
    let created = run(&mut idmint_across(
        &sites,
        &[
            "counter",
            "create",
            "serial",
            "--max",
            "99",
            "--prefix",
            "S",
            "--stripes",
            "eu:2,us:2",
        ],
    ));
    assert_exit(&created, 0);
    let (sequence, map) = open_across(&deployments, "serial").await;
    // A cyclic lane's values are its residue class of the cycle.
    let in_eu = |value: u64| map.deployment_of(value % map.modulus) == Some("eu");
    let takers = Takers::start_at(&sequence, 4, FROZEN_MICROS);
    takers.progress(200, "pairs from both deployments").await;

    owned[0].kill();
    takers
        .progress(300, "pairs while the preferred deployment is dead")
        .await;
    let dead_from = takers.count();
    let mut from_processes = Vec::new();
    let processes = start_seqs(
        &sites,
        &["serial", "--count", "40", "--json"],
        PROCESSES,
        DEADLINE,
    );
    for output in finished(processes) {
        for line in stdout(&output).lines() {
            let line: Value = serde_json::from_str(line).unwrap();
            from_processes.push((
                line["timestamp_micros"].as_u64().unwrap(),
                line["value"].as_u64().unwrap(),
            ));
        }
    }
    assert_eq!(from_processes.len(), 40 * PROCESSES);
    // And `serve`, started while it is dead, formats IDs from the pairs.
    let flags = across_flags(&sites, SERVE_DEADLINE);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let service =
        support::service::Service::spawn(idmint_on(&sites[0].uri, &sites[0].database), &flags);
    let mut ids = Vec::new();
    let mut take_ids = || {
        let answer = service.get("/v1/counters/serial/ids?count=7");
        assert_eq!(answer.status, 200, "{}", answer.body);
        for id in answer.json()["ids"].as_array().unwrap() {
            ids.push(id.as_str().unwrap().to_string());
        }
    };
    take_ids();
    assert_none_of(
        takers
            .since(dead_from)
            .into_iter()
            .chain(from_processes.iter().map(|(_, value)| *value)),
        in_eu,
    );

    takers.back_after_restart(&mut owned[0], in_eu).await;
    take_ids();
    drop(service);
    assert_eq!(ids.len(), 14);
    assert!(ids.iter().all(|id| id.starts_with('S')), "{ids:?}");
    let distinct: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), ids.len(), "an ID twice: {ids:?}");
    let (mut all, slowest, errors) = takers.stop_pairs().await;
    assert_in_time(slowest, &errors, DEADLINE);
    all.extend(from_processes);
    assert_distinct(&all);
}

/// A periodic counter (years, in Paris) striped across two servers of
/// the test's own, taken from by takers, by `idmint seq` processes started
/// while the preferred server is dead after `kill -9`, and by `serve`'s
/// `/values`: no (period, value) twice, no take past its deadline, and the
/// killed server's lanes come back once it is restarted on its data.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_periodic_counter_across_two_servers_one_killed_and_restarted_no_value_twice() {
    const TEST: &str = "striped_periodic_across_two";
    let (mut owned, sites) = own_servers(TEST, 2);
    let deployments = connect(&sites, DEADLINE).await;
    let created = run(&mut idmint_across(
        &sites,
        &[
            "counter",
            "create",
            "inv",
            "--kind",
            "periodic",
            "--zone",
            "Europe/Paris",
            "--raw",
            "--stripes",
            "eu:2,us:2",
        ],
    ));
    assert_exit(&created, 0);
    let (sequence, map) = open_across(&deployments, "inv").await;
    // Above no base in every period: a value's lane is its residue.
    let in_eu = |value: u64| in_deployment(&map, "eu", value);
    let takers = Takers::start(&sequence, 4);
    takers.progress(200, "values from both deployments").await;

    owned[0].kill();
    takers
        .progress(300, "values while the preferred deployment is dead")
        .await;
    let dead_from = takers.count();
    let processes = start_seqs(&sites, &["inv", "--count", "40"], PROCESSES, DEADLINE);
    let mut others: Vec<(String, u64)> = Vec::new();
    for output in finished(processes) {
        others.extend(support::period_value_pairs(&stdout(&output)));
    }
    assert_eq!(others.len(), 40 * PROCESSES);
    // And `serve`, started while it is dead.
    let flags = across_flags(&sites, SERVE_DEADLINE);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let service =
        support::service::Service::spawn(idmint_on(&sites[0].uri, &sites[0].database), &flags);
    let take_values = |others: &mut Vec<(String, u64)>| {
        let answer = service.get("/v1/counters/inv/values?count=7");
        assert_eq!(answer.status, 200, "{}", answer.body);
        let answer = answer.json();
        let values = answer["values"].as_array().unwrap();
        let periods = answer["periods"].as_array().unwrap();
        assert_eq!(values.len(), 7);
        for (period, value) in periods.iter().zip(values) {
            others.push((
                period.as_str().unwrap().to_string(),
                value.as_u64().unwrap(),
            ));
        }
    };
    take_values(&mut others);
    assert_none_of(
        takers
            .since(dead_from)
            .into_iter()
            .chain(others.iter().map(|(_, value)| *value)),
        in_eu,
    );

    takers.back_after_restart(&mut owned[0], in_eu).await;
    take_values(&mut others);
    drop(service);
    let (stamps, slowest, errors) = takers.stop_stamps().await;
    assert_in_time(slowest, &errors, DEADLINE);
    let mut all: Vec<(String, u64)> = as_taken(&stamps);
    all.extend(others);
    assert_distinct(&all);
}

/// The worker id and time unit of each of `ids`, in the default layout.
fn workers_and_times(ids: &[u64]) -> Vec<(u64, u64)> {
    let layout = idmint::parts::Layout::default();
    ids.iter()
        .map(|id| {
            let parts = layout.decompose(*id).unwrap();
            (parts.worker, parts.time)
        })
        .collect()
}

/// A snowflake counter whose only lane moves from `eu` to `us`: worker id
/// 0, leased in `eu` by a handle opened before the change, is leased in
/// `us` after it, while the first holder still issues from the time it
/// reserved in `eu` (its lease outlives the test). Every ID the second
/// holder issues is later than every ID of the first, whose reservation
/// the change's floor is above: no ID twice, though the two deployments
/// never see each other's leases.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_worker_id_moved_to_another_deployment_issues_after_its_holder_there() {
    const TEST: &str = "striped_snowflake_moved";
    let (_owned, sites) = own_servers(TEST, 2);
    let deployments = connect(&sites, DEADLINE).await;
    let created = run(&mut idmint_across(
        &sites,
        &[
            "counter",
            "create",
            "ids",
            "--kind",
            "snowflake",
            "--raw",
            "--stripes",
            "eu:1",
        ],
    ));
    assert_exit(&created, 0);
    let long = Duration::from_secs(120);
    let (first, _) = open_across_with(&deployments, "ids", leases_of(long)).await;
    let take = |sequence: &Sequence| {
        let sequence = sequence.clone();
        async move {
            let stamps = sequence.take(50, 0).await.unwrap();
            stamps
                .iter()
                .map(|stamp| stamp.sequence)
                .collect::<Vec<u64>>()
        }
    };
    let mut before = take(&first).await;
    let moved = run(&mut idmint_across(
        &sites,
        &["counter", "stripes", "ids", "--set", "us:1"],
    ));
    assert_exit(&moved, 0);
    let (second, map) = open_across_with(&deployments, "ids", leases_of(long)).await;
    assert_eq!(map.placement, ["us"]);
    let after = take(&second).await;
    // The first holder issues on, from what it reserved in eu.
    before.extend(take(&first).await);
    let (before, after) = (workers_and_times(&before), workers_and_times(&after));
    let worker = |ids: &[(u64, u64)]| ids.iter().map(|(w, _)| *w).collect::<BTreeSet<u64>>();
    assert_eq!(worker(&before), BTreeSet::from([0]));
    assert_eq!(worker(&after), BTreeSet::from([0]));
    let last_before = before.iter().map(|(_, time)| *time).max().unwrap();
    let first_after = after.iter().map(|(_, time)| *time).min().unwrap();
    assert!(
        last_before <= map.base && first_after > map.base,
        "the first holder issued up to unit {last_before}, the second from {first_after}, \
         the floor is {}",
        map.base
    );
    first.close().await.unwrap();
    second.close().await.unwrap();
}

/// A snowflake counter's tag is kept in every deployment it spans: a
/// counter of `us` that has it already refuses the layout (exit 2, naming
/// it), and the counter made for it is not left behind; spanning with a
/// tag no counter of `us` has raises `us`'s tags, so that a counter made
/// there after it gets another. Two counters with one tag could make the
/// same standard ID.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_snowflake_counter_keeps_its_tag_in_every_deployment_it_spans() {
    const TEST: &str = "striped_snowflake_tags";
    let (_owned, sites) = own_servers(TEST, 2);
    let deployments = connect(&sites, DEADLINE).await;
    let in_us = |args: &[&str]| run(idmint_on(&sites[1].uri, &sites[1].database).args(args));
    let tag_of = |show: &std::process::Output| -> u64 {
        let shown: Value = serde_json::from_str(&stdout(show)).unwrap();
        shown["tag"].as_u64().unwrap()
    };
    // Tag 1 in us, and tag 1 drawn in eu for the spanning counter.
    assert_exit(
        &in_us(&["counter", "create", "first", "--kind", "snowflake", "--raw"]),
        0,
    );
    let refused = run(&mut idmint_across(
        &sites,
        &[
            "counter",
            "create",
            "ids",
            "--kind",
            "snowflake",
            "--raw",
            "--stripes",
            "eu:1,us:1",
        ],
    ));
    assert_exit(&refused, 2);
    assert!(
        stderr(&refused).contains("in deployment \"us\": counter 'first' has tag 1"),
        "{}",
        stderr(&refused)
    );
    let eu = database_of(&deployments, "eu");
    assert!(support::counter_document(&eu, "ids").await.is_none());

    // Tag 2 in eu, free in us: spanning keeps it there.
    let created = run(&mut idmint_across(
        &sites,
        &[
            "counter",
            "create",
            "ids",
            "--kind",
            "snowflake",
            "--raw",
            "--stripes",
            "eu:1,us:1",
        ],
    ));
    assert_exit(&created, 0);
    let spanning = tag_of(&run(&mut idmint_across(
        &sites,
        &["counter", "show", "ids", "--json"],
    )));
    assert_exit(
        &in_us(&["counter", "create", "later", "--kind", "snowflake", "--raw"]),
        0,
    );
    let later = tag_of(&in_us(&["counter", "show", "later", "--json"]));
    assert!(
        later > spanning,
        "us drew tag {later}, not above {spanning}"
    );
}

/// A snowflake counter striped across two servers of the test's own, its
/// handles holding short leases, while the preferred server is killed with
/// `kill -9` and restarted: takers move their lease to the other
/// deployment within the deadline, `idmint seq` processes started while
/// it is dead lease there, and one started once it is back leases in it
/// again. No ID twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_snowflake_counter_across_two_servers_one_killed_and_restarted_no_id_twice() {
    const TEST: &str = "striped_snowflake_across_two";
    let (mut owned, sites) = own_servers(TEST, 2);
    let deployments = connect(&sites, DEADLINE).await;
    let created = run(&mut idmint_across(
        &sites,
        &[
            "counter",
            "create",
            "ids",
            "--kind",
            "snowflake",
            "--raw",
            "--stripes",
            "eu:1,us:1",
        ],
    ));
    assert_exit(&created, 0);
    let (sequence, map) =
        open_across_with(&deployments, "ids", leases_of(Duration::from_secs(3))).await;
    let residue_of = |deployment: &str| {
        (0..map.modulus)
            .find(|residue| map.deployment_of(*residue) == Some(deployment))
            .unwrap()
    };
    let in_eu = |id: u64| {
        let worker = idmint::parts::Layout::default()
            .decompose(id)
            .unwrap()
            .worker;
        worker % map.modulus == residue_of("eu")
    };
    let takers = Takers::start(&sequence, 4);
    takers
        .progress(200, "IDs from the preferred deployment's lane")
        .await;
    assert!(takers.since(0).into_iter().all(in_eu));

    owned[0].kill();
    let dead_from = takers.count();
    takers
        .until_one("an ID of the other deployment's lane", |id| !in_eu(id))
        .await;
    takers
        .progress(300, "IDs while the preferred deployment is dead")
        .await;
    let mut others = Vec::new();
    for output in finished(start_seqs(
        &sites,
        &["ids", "--count", "40"],
        PROCESSES,
        DEADLINE,
    )) {
        others.extend(printed_values(&output));
    }
    assert_eq!(others.len(), 40 * PROCESSES);
    // IDs issued from memory before the lease ran out are eu's; none after.
    let late: Vec<u64> = takers.since(takers.count().saturating_sub(100));
    assert_none_of(late.into_iter().chain(others.iter().copied()), in_eu);
    assert!(takers.count() > dead_from);

    owned[0].restart();
    let back = within(
        PATIENCE,
        "a process leasing in the restarted deployment",
        async {
            loop {
                let sites = sites.clone();
                let output = tokio::task::spawn_blocking(move || {
                    let mut one = start_seqs(&sites, &["ids", "--count", "5"], 1, DEADLINE);
                    one.remove(0).wait_with_output()
                })
                .await
                .unwrap()
                .unwrap();
                if output.status.success() {
                    let ids = printed_values(&output);
                    if ids.iter().copied().all(in_eu) {
                        return ids;
                    }
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        },
    )
    .await;
    others.extend(back);
    let (mut all, slowest, errors) = takers.stop().await;
    assert_in_time(slowest, &errors, DEADLINE);
    all.extend(others);
    assert_distinct(&all);
    sequence.close().await.unwrap();
}

/// How a test tells which lane a value came from, by its counter's kind.
#[derive(Debug, Clone, Copy)]
enum LaneOfValue {
    /// Above the map's base, every `m`-th (autoinc, segment; periodic with
    /// no base).
    AboveBase,
    /// The value's residue (a cyclic counter's cycle).
    Residue,
    /// A snowflake ID's worker id's residue.
    Worker,
}

impl LaneOfValue {
    /// Whether `value` came from one of `map`'s lanes in `deployment`.
    fn of(self, map: &StripeMap, deployment: &str, value: u64) -> bool {
        let residue = match self {
            LaneOfValue::AboveBase => return in_deployment(map, deployment, value),
            LaneOfValue::Residue => value % map.modulus,
            LaneOfValue::Worker => {
                let worker = idmint::parts::Layout::default()
                    .decompose(value)
                    .unwrap()
                    .worker;
                worker % map.modulus
            }
        };
        map.deployment_of(residue) == Some(deployment)
    }
}

/// What makes a value unique, whatever its counter's kind: its period, its
/// timestamp (a cyclic counter's; the takers' frozen clock otherwise) and
/// the value.
fn unique_key(stamp: &Stamp) -> Key {
    // A snowflake ID is unique alone; its time is in it.
    let time = if stamp.snowflake.is_some() {
        0
    } else {
        stamp.timestamp_micros
    };
    (
        stamp.period.map(|period| period.to_string()),
        time,
        stamp.sequence,
    )
}

/// What makes a value unique (see [`unique_key`]).
type Key = (Option<String>, u64, u64);

/// The keys of the values a line of `idmint seq --json` or an answer of
/// `serve`'s `/values` gives: `value`, with `timestamp_micros` and
/// `period` where its kind has them.
fn keys_of_seq_json(printed: &str) -> Vec<Key> {
    printed
        .lines()
        .map(|line| {
            let line: Value = serde_json::from_str(line).unwrap();
            (
                line["period"].as_str().map(str::to_string),
                line["timestamp_micros"].as_u64().unwrap_or(0),
                line["value"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The keys of the values of an answer of `serve`'s `/values`.
fn keys_of_values(answer: &Value) -> Vec<Key> {
    let values = answer["values"].as_array().unwrap();
    (0..values.len())
        .map(|index| {
            (
                answer["periods"][index].as_str().map(str::to_string),
                answer["timestamps_micros"][index].as_u64().unwrap_or(0),
                values[index].as_u64().unwrap(),
            )
        })
        .collect()
}

/// A counter made as `spec` says, two lanes in each of `servers` servers of
/// the test's own (`eu`, `us`, `ap`), taken from while the preferred one is
/// killed with `kill -9` and restarted on its data: takers in this process
/// (a snowflake handle's lease of 3 s), `PROCESSES` `idmint seq` processes
/// started while it is dead, and `serve`'s `/values`. No value twice, no
/// take past its deadline, and eu's lanes taken from again once it is back
/// (a snowflake counter's: by a handle opened then).
async fn kill_nine_across(
    test: &'static str,
    servers: usize,
    spec: CounterSpec,
    lanes: LaneOfValue,
) {
    let (mut owned, sites) = own_servers(test, servers);
    let deployments = connect(&sites, THREE_KILLED_DEADLINE).await;
    let layout: Layout = sites
        .iter()
        .map(|site| format!("{}:2", site.name))
        .collect::<Vec<_>>()
        .join(",")
        .parse()
        .unwrap();
    create_laid_out(
        &deployments.preferred().database,
        Some(&deployments),
        &counter_name("c"),
        &spec.prefixes(Vec::new()),
        &layout,
    )
    .await
    .unwrap();
    let short_leases = leases_of(Duration::from_secs(3));
    let (sequence, map) = open_across_with(&deployments, "c", short_leases.clone()).await;
    let in_eu = |value: u64| lanes.of(&map, "eu", value);
    let takers = Takers::start(&sequence, 4);
    takers.until_one("a value of eu's lanes", in_eu).await;

    owned[0].kill();
    takers
        .until_one("a value of another deployment's lanes", |value| {
            !in_eu(value)
        })
        .await;
    takers.progress(300, "values while eu is dead").await;
    let dead_from = takers.count();
    let mut others: Vec<Key> = Vec::new();
    for output in finished(start_seqs(
        &sites,
        &["c", "--count", "40", "--json"],
        PROCESSES,
        THREE_KILLED_DEADLINE,
    )) {
        others.extend(keys_of_seq_json(&stdout(&output)));
    }
    assert_eq!(others.len(), 40 * PROCESSES);
    let flags = across_flags(&sites, THREE_KILLED_DEADLINE);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let service =
        support::service::Service::spawn(idmint_on(&sites[0].uri, &sites[0].database), &flags);
    let answer = service.get("/v1/counters/c/values?count=7");
    assert_eq!(answer.status, 200, "{}", answer.body);
    others.extend(keys_of_values(&answer.json()));
    drop(service);
    assert_none_of(
        takers
            .since(dead_from)
            .into_iter()
            .chain(others.iter().map(|(_, _, value)| *value)),
        in_eu,
    );

    owned[0].restart();
    let mut later = Vec::new();
    if let LaneOfValue::Worker = lanes {
        // Each try a handle of its own, with fresh health (eu not set
        // aside): once eu answers, it leases there.
        later = within(PATIENCE, "a lease in the restarted deployment", async {
            loop {
                let fresh = Deployments::new(deployments.list().to_vec())
                    .unwrap()
                    .deadline(THREE_KILLED_DEADLINE);
                let (healed, _) = open_across_with(&fresh, "c", short_leases.clone()).await;
                let taken = healed.take(20, 0).await;
                let _ = healed.close().await;
                if let Ok(stamps) = taken {
                    if stamps.iter().all(|stamp| in_eu(stamp.sequence)) {
                        return stamps.into_vec();
                    }
                }
            }
        })
        .await;
    } else {
        takers
            .until_one("a value of the restarted deployment's lanes", in_eu)
            .await;
    }
    let (mut all, slowest, errors) = takers.stop_stamps().await;
    assert_in_time(slowest, &errors, THREE_KILLED_DEADLINE);
    all.extend(later);
    let keys: Vec<Key> = all.iter().map(unique_key).chain(others).collect();
    assert_distinct(&keys);
    sequence.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_segment_counter_across_three_servers_one_killed_and_restarted_no_value_twice() {
    kill_nine_across(
        "striped_three_segment",
        3,
        CounterSpec::of(CounterKind::Segment).step(20),
        LaneOfValue::AboveBase,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cyclic_counter_across_three_servers_one_killed_and_restarted_no_pair_twice() {
    kill_nine_across(
        "striped_three_cyclic",
        3,
        CounterSpec::of(CounterKind::Cyclic).maxval(99),
        LaneOfValue::Residue,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_periodic_counter_across_three_servers_one_killed_and_restarted_no_value_twice() {
    kill_nine_across(
        "striped_three_periodic",
        3,
        CounterSpec::of(CounterKind::Periodic),
        LaneOfValue::AboveBase,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_snowflake_counter_across_three_servers_one_killed_and_restarted_no_id_twice() {
    kill_nine_across(
        "striped_three_snowflake",
        3,
        CounterSpec::of(CounterKind::Snowflake),
        LaneOfValue::Worker,
    )
    .await;
}

/// A counter made as `spec` says, striped `eu:2,us:2` (the two sites are
/// two databases of the test server, `eu` reached through a proxy),
/// its preferred deployment partitioned (the proxy forwards nothing, every
/// connection stays open): a take waits on it at most its share of the
/// deadline, then the other answers (a snowflake handle moves its lease
/// there once its lease in eu runs out); set aside, it costs nothing more
/// until its backoff passes. Healed, its lanes are taken from again (a
/// snowflake counter's: by a handle opened then). No value twice.
async fn partitioned(test: &'static str, spec: CounterSpec, lanes: LaneOfValue) {
    let proxy = FaultProxy::start();
    let sites = [
        Site::new("eu", &proxy.uri(), test, true),
        Site::new("us", support::uri(), test, true),
    ];
    let deployments = connect(&sites, DEADLINE).await;
    let layout: Layout = "eu:2,us:2".parse().unwrap();
    create_laid_out(
        &deployments.preferred().database,
        Some(&deployments),
        &counter_name("c"),
        &spec.prefixes(Vec::new()),
        &layout,
    )
    .await
    .unwrap();
    let short_leases = leases_of(Duration::from_secs(3));
    let (sequence, map) = open_across_with(&deployments, "c", short_leases.clone()).await;
    let in_eu = |value: u64| lanes.of(&map, "eu", value);
    let takers = Takers::start(&sequence, 4);
    takers
        .until_one("a value of the preferred deployment", in_eu)
        .await;

    proxy.freeze();
    takers
        .until_one("a value of the other deployment", |value| !in_eu(value))
        .await;
    takers
        .progress(300, "values while the preferred deployment is partitioned")
        .await;
    let health = deployments.health(Instant::now());
    assert!(health[0].failures > 0, "{health:?}");

    proxy.thaw();
    let mut later = Vec::new();
    if let LaneOfValue::Worker = lanes {
        // The takers' handle holds its lease in us; a handle opened now
        // (with fresh health: eu is not set aside) leases in eu.
        let fresh = Deployments::new(deployments.list().to_vec())
            .unwrap()
            .deadline(DEADLINE);
        let (healed, _) = open_across_with(&fresh, "c", short_leases).await;
        later = healed.take(20, 0).await.unwrap().into_vec();
        assert!(later.iter().all(|stamp| in_eu(stamp.sequence)), "{later:?}");
        healed.close().await.unwrap();
    } else {
        takers
            .until_one("a value of the healed deployment", in_eu)
            .await;
    }
    let (mut all, slowest, errors) = takers.stop_stamps().await;
    assert_in_time(slowest, &errors, DEADLINE);
    all.extend(later);
    let mut seen = std::collections::HashSet::new();
    for stamp in &all {
        assert!(seen.insert(unique_key(stamp)), "{stamp:?} handed out twice");
    }
    sequence.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_partitioned_deployment_costs_a_take_at_most_its_deadline() {
    partitioned(
        "striped_partitioned",
        CounterSpec::of(CounterKind::Autoinc),
        LaneOfValue::AboveBase,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_partitioned_deployment_costs_a_segment_take_at_most_its_deadline() {
    partitioned(
        "striped_partitioned_segment",
        CounterSpec::of(CounterKind::Segment).step(20),
        LaneOfValue::AboveBase,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_partitioned_deployment_costs_a_cyclic_take_at_most_its_deadline() {
    partitioned(
        "striped_partitioned_cyclic",
        CounterSpec::of(CounterKind::Cyclic).maxval(99),
        LaneOfValue::Residue,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_partitioned_deployment_costs_a_periodic_take_at_most_its_deadline() {
    partitioned(
        "striped_partitioned_periodic",
        CounterSpec::of(CounterKind::Periodic),
        LaneOfValue::AboveBase,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_partitioned_deployment_costs_a_snowflake_take_at_most_its_deadline() {
    partitioned(
        "striped_partitioned_snowflake",
        CounterSpec::of(CounterKind::Snowflake),
        LaneOfValue::Worker,
    )
    .await;
}

/// Changes of stripes across deployments with takes in flight at both
/// points (applied and not answered; sent on a map read before the
/// change): a lane in `eu` goes to a lane in each of `eu` and `us`
/// (adding a deployment), then to two in each, then leaves `eu` (two in
/// `us`: retiring one). No value twice; each generation's values above the
/// last's. (The deadline is long: takes held at a point are not late.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn changes_of_stripes_across_deployments_with_takes_in_flight_never_repeat_a_value() {
    const TEST: &str = "striped_restripe_across";
    let sites = Site::shared_pair(TEST);
    let deployments = connect(&sites, PATIENCE).await;
    let eu = database_of(&deployments, "eu");
    let name = counter_name("orders");
    create_orders(&deployments, "eu:1").await;
    let sequence = open_orders(&deployments).await;
    let mut all: Vec<u64> = joined(spawn_takers(&sequence, 4, 5)).await;
    let mut floor = 0;
    for (layout, point) in [
        ("eu:1,us:1", Point::AfterTake),
        ("eu:2,us:2", Point::BeforeTake),
        ("us:2", Point::AfterTake),
    ] {
        // Takes held in flight at `point` (in either deployment's
        // database: the takers go to the preferred, `eu`, while it
        // has lanes).
        let held_eu = hold(&sites[0].database, "orders", point, 2);
        let takers = spawn_takers::<u64>(&sequence, 2, 3);
        held_eu.arrived().await;
        let changed = set_layout(&eu, Some(&deployments), &name, &layout.parse().unwrap())
            .await
            .unwrap();
        assert!(changed.map.base >= floor, "{changed:?}");
        floor = changed.map.base;
        held_eu.release().await;
        for taker in takers {
            all.extend(taker.await.unwrap());
        }
        drop(held_eu);
        let after: Vec<u64> = joined(spawn_takers(&sequence, 4, 5)).await;
        assert!(
            after.iter().all(|value| *value > floor),
            "{layout}: {after:?} not above {floor}"
        );
        all.extend(after);
        assert_distinct(&all);
    }
    // Retired: both copies of the map say the lanes are in us.
    for site in ["eu", "us"] {
        let document = support::counter_document(&database_of(&deployments, site), "orders")
            .await
            .unwrap();
        let map = StripeMap::read(&document).unwrap();
        assert_eq!(map.placement, ["us", "us"], "{site}: {document}");
        assert_eq!(map.here.as_deref(), Some(site));
        let lanes = lanes(&eu, Some(&deployments), &name, &map).await.unwrap();
        assert!(lanes.iter().all(|lane| lane.lane.is_ok()), "{lanes:?}");
    }
}

/// What the CLI refuses across deployments, naming what is wrong, with
/// nothing written: a layout naming a deployment not given; several
/// connection strings, one unnamed; a change of the prefixes of a counter
/// across deployments. And `counter show` with a deployment that does
/// not answer shows its lanes as unread.
#[tokio::test]
async fn the_cli_names_what_is_wrong_across_deployments() {
    const TEST: &str = "striped_across_cli";
    let eu = Site::new("eu", support::uri(), TEST, false);
    let database = support::database(TEST).await;
    let refused = run(&mut idmint_across(
        std::slice::from_ref(&eu),
        &[
            "counter",
            "create",
            "orders",
            "--kind",
            "autoinc",
            "--raw",
            "--stripes",
            "eu:2,us:1",
        ],
    ));
    assert_exit(&refused, 2);
    assert!(
        stderr(&refused).contains("needs deployment \"us\" (the layout names it)"),
        "{}",
        stderr(&refused)
    );
    assert!(support::counter_document(&database, "orders")
        .await
        .is_none());

    let unnamed = run(idmint_on(support::uri(), &database_name(TEST)).args([
        "seq",
        "orders",
        "--uri",
        support::uri(),
        "--uri",
        &eu.flag(),
    ]));
    assert_exit(&unnamed, 2);
    assert!(
        stderr(&unnamed).contains("has no name"),
        "{}",
        stderr(&unnamed)
    );

    let us_server = OwnedServer::start(ServerConfig::default());
    let us = Site::new("us", &us_server.uri, TEST, false);
    let created = run(&mut idmint_across(
        &[eu.clone(), us.clone()],
        &[
            "counter",
            "create",
            "orders",
            "--kind",
            "autoinc",
            "--raw",
            "--stripes",
            "eu:1,us:1",
        ],
    ));
    assert_exit(&created, 0);
    // A prefix another counter owns in us: the counter is not created.
    let other = run(
        idmint_on(&us.uri, &us.database).args(["counter", "create", "other", "--prefix", "P-"])
    );
    assert_exit(&other, 0);
    let taken = run(&mut idmint_across(
        &[eu.clone(), us.clone()],
        &[
            "counter",
            "create",
            "tickets",
            "--kind",
            "autoinc",
            "--prefix",
            "P-",
            "--policy",
            "builtin:decimal",
            "--stripes",
            "eu:1,us:1",
        ],
    ));
    assert_exit(&taken, 2);
    assert!(
        stderr(&taken).contains("in deployment \"us\": ")
            && stderr(&taken).contains("prefix \"P-\" is owned by counter 'other'"),
        "{}",
        stderr(&taken)
    );
    assert!(support::counter_document(&database, "tickets")
        .await
        .is_none());
    // Each deployment keeps a copy of its prefixes: not changed, refused.
    let prefix = run(&mut idmint_across(
        &[eu.clone(), us.clone()],
        &["counter", "prefix", "add", "orders", "ORD-"],
    ));
    assert_exit(&prefix, 2);
    assert!(
        stderr(&prefix)
            .contains("its lanes span deployments eu, us: its prefixes cannot be changed yet"),
        "{}",
        stderr(&prefix)
    );
    // us does not answer: its server is gone.
    drop(us_server);
    let dead_us = us;
    let shown = run(&mut idmint_across(
        &[eu.clone(), dead_us.clone()],
        &["counter", "show", "orders"],
    ));
    assert_exit(&shown, 0);
    let text = stdout(&shown);
    assert!(
        text.contains("striped: generation 1: 2 lanes in eu, us, values above 0"),
        "{text}"
    );
    assert!(
        text.contains("lane 0: in eu: nothing handed out yet"),
        "{text}"
    );
    assert!(text.contains("lane 1: in us: unread ("), "{text}");
    // A change of stripes with us down is refused before anything is
    // claimed: the counter keeps its live lanes, and eu's is taken from.
    let refused = run(&mut idmint_across(
        &[eu.clone(), dead_us.clone()],
        &["counter", "stripes", "orders", "--set", "eu:2,us:2"],
    ));
    assert_exit(&refused, 3);
    assert!(
        stderr(&refused).contains("deployment \"us\" did not answer"),
        "{}",
        stderr(&refused)
    );
    let document = support::counter_document(&database, "orders")
        .await
        .unwrap();
    let map = StripeMap::read(&document).unwrap();
    assert!(map.live && map.generation == 1, "{map:?}");
    let taken = run(&mut idmint_across(
        &[eu.clone(), dead_us.clone()],
        &["seq", "orders"],
    ));
    assert_exit(&taken, 0);
    assert_eq!(printed_values(&taken), [1]);
    // An unstriped counter is left unstriped, and taken from.
    let solo = run(idmint_on(&eu.uri, &eu.database)
        .args(["counter", "create", "solo", "--kind", "autoinc", "--raw"]));
    assert_exit(&solo, 0);
    let refused = run(&mut idmint_across(
        &[eu.clone(), dead_us.clone()],
        &["counter", "stripes", "solo", "--set", "eu:1,us:1"],
    ));
    assert_exit(&refused, 3);
    let document = support::counter_document(&database, "solo").await.unwrap();
    assert_eq!(document.get_str("kind"), Ok("autoinc"), "{document}");
    let taken = run(&mut idmint_across(&[eu, dead_us], &["seq", "solo"]));
    assert_exit(&taken, 0);
    assert_eq!(printed_values(&taken), [1]);
}

/// The stored twin `getNextSequence`, run in one deployment, takes from
/// that deployment's lanes only (its copy of the map says which); in a
/// deployment that holds none of the generation's lanes it refuses,
/// naming where they are, and takes nothing.
#[tokio::test]
async fn the_stored_twin_takes_from_the_lanes_of_its_own_deployment() {
    const TEST: &str = "striped_twin_across";
    let sites = Site::shared_pair(TEST);
    let deployments = connect(&sites, PATIENCE).await;
    let eu = database_of(&deployments, "eu");
    let us = database_of(&deployments, "us");
    let name = counter_name("orders");
    let map = create_orders(&deployments, "eu:1,us:2").await;
    for database in [&eu, &us] {
        idmint::installer::install(database, &Default::default())
            .await
            .unwrap();
    }
    let script =
        "for (var i = 0; i < 6; i++) print(JSON.stringify({ value: getNextSequence('orders') }));";
    for (site, database) in [("us", &sites[1].database), ("eu", &sites[0].database)] {
        let lines = support::mongosh::json_lines(&mut support::mongosh::shell_in(database, script));
        let values: Vec<u64> = lines
            .iter()
            .map(|line| line["value"].as_u64().unwrap())
            .collect();
        assert_eq!(values.len(), 6, "{lines:?}");
        assert!(
            values.iter().all(|value| in_deployment(&map, site, *value)),
            "{site}: {values:?}"
        );
    }
    // Moved to us alone: eu's copy names no lane of eu.
    set_layout(&eu, Some(&deployments), &name, &"us:2".parse().unwrap())
        .await
        .unwrap();
    let script = "try { getNextSequence('orders'); } catch (e) { print(JSON.stringify({ refused: String(e.message) })); }";
    let lines =
        support::mongosh::json_lines(&mut support::mongosh::shell_in(&sites[0].database, script));
    let refused = lines[0]["refused"].as_str().unwrap();
    assert!(
        refused.contains("its lanes are in deployments us, none in this one (eu)")
            && refused.contains("nothing was taken"),
        "{refused}"
    );
}
