//! The Java client (`clients/java/`), built once per test process with
//! `scripts/build-java-client.sh` (javac, jar, javadoc) and run as small
//! Java programs: against real `idmint serve` instances on the test server
//! for what the service is the point of (unique values from many threads,
//! failover when an instance is killed and comes back), and against an HTTP
//! peer inside the Java program for the client's own behaviour when a fetch
//! fails or stalls on command (`FetchCheck`, `FailoverCheck`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

use crate::support::clients::{Pausing, Serve};
use crate::support::{self, assert_exit, counter_field, create, idmint, stdout};

/// The compiled client and its check programs (`test-classes`), built once.
fn classes() -> &'static Path {
    static CLASSES: OnceLock<PathBuf> = OnceLock::new();
    CLASSES.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR"));
        remove_stale_builds(root);
        let out = root.join(format!("java-client-{}", std::process::id()));
        let script = crate::support::workspace_root().join("scripts/build-java-client.sh");
        let built = Command::new(script)
            .arg("--tests")
            .arg(&out)
            .stdin(Stdio::null())
            .output()
            .expect(
                "run scripts/build-java-client.sh (bash and a JDK 17: scripts/test.sh installs it)",
            );
        assert_exit(&built, 0);
        assert!(
            out.join("idmint-client.jar").is_file() && out.join("javadoc/index.html").is_file(),
            "the script made no jar or javadoc in {}",
            out.display()
        );
        out.join("test-classes")
    })
}

/// Builds of test processes that are gone.
fn remove_stale_builds(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix("java-client-")
            .and_then(|pid| pid.parse::<u32>().ok());
        if pid.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// `java -cp CLASSES io.idmint.client.PROGRAM`.
fn java(program: &str) -> Command {
    let mut command = Command::new("java");
    command
        .arg("-cp")
        .arg(classes())
        .arg(format!("io.idmint.client.{program}"));
    command
}

/// Check program `name` with `args` against the instances' `urls`, pausing
/// as it announces.
fn pausing(name: &'static str, args: &[&str], urls: &[String]) -> Pausing {
    Pausing::start(java(name).args(args).args(urls), name)
}

/// Runs a check program to its end and asserts its report, line for line.
fn assert_check(command: &mut Command, report: &str) {
    let output = command.stdin(Stdio::null()).output().expect("run java");
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), report);
}

/// Four threads taking values from ranges and two taking formatted IDs,
/// started at once, never see a value twice; an unknown counter is the
/// server's 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_java_client_hands_out_unique_values() {
    const TEST: &str = "serve_java";
    support::database(TEST).await;
    create(
        TEST,
        "seg",
        &["--kind", "segment", "--step", "1000", "--raw"],
    );
    create(TEST, "orders", &["--max", "99", "--prefix", "J-"]);
    let serve = Serve::start(TEST, &[]);
    assert_check(
        java("ClientCheck").arg(serve.url()).args(["seg", "orders"]),
        "values ok 200000\nids ok 5000\nerror ok 404\n",
    );
    // Every value the client took came from segments the counter handed out.
    assert!(counter_field(TEST, "seg", "max") > 200_000);
}

/// Issue 35: `IdClient.nextUuid()` takes a snowflake counter's IDs as
/// `java.util.UUID`s from a server that formats them with
/// `builtin:uuidv7` (2 threads started at once: all distinct, version 7,
/// the RFC's variant, made within the run, each thread's increasing), and
/// refuses an ID that is not a UUID by name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_java_client_takes_uuids() {
    const TEST: &str = "serve_java_uuids";
    support::database(TEST).await;
    create(TEST, "events", &["--kind", "snowflake"]);
    create(TEST, "orders", &["--max", "99", "--prefix", "J-"]);
    let serve = Serve::start(TEST, &["--policy-for", "snowflake=builtin:uuidv7"]);
    assert_check(
        java("UuidCheck")
            .arg(serve.url())
            .args(["events", "orders"]),
        "uuids ok 6000\nnot a uuid ok\n",
    );
}

/// Issue 52: `SeriesClient` reserves, confirms and voids numbers of a
/// gap-free series, failing over past an instance that is down (listed
/// first): a reserve asked again with its client key answers the same
/// number, a confirm asked again answers `already`, another reference is
/// refused 409 `settled`; four threads at once reserve and confirm forty
/// numbers, all distinct. The audit then finds the series whole: 1 to 42,
/// 41 confirmed, 1 voided.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_java_client_reserves_confirms_and_voids_numbers_of_a_series() {
    const TEST: &str = "serve_java_series";
    support::database(TEST).await;
    assert_exit(
        &crate::support::run(idmint(TEST).args(["series", "create", "invoices"])),
        0,
    );
    let serve = Serve::start(TEST, &[]);
    let down = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/", listener.local_addr().unwrap())
    };
    assert_check(
        java("SeriesCheck").args(["invoices", &down, &serve.url()]),
        "reserve ok 1\nconfirm ok\nrefused ok 409\nvoid ok 2\nthreads ok 40\nfailover ok\n",
    );
    let output = crate::support::run(idmint(TEST).args(["series", "audit", "invoices"]));
    assert_exit(&output, 0);
    assert_eq!(
        stdout(&output).trim(),
        "series 'invoices': numbers 1 to 42, 41 confirmed, 1 voided; whole: every number has \
         one record"
    );
}

/// Issue 18: one fetch in flight for every taker that needs it, waited on
/// outside the lock and for a bounded time; a failed fetch's error reaches
/// the takers waiting on it only (a failed background fetch is fetched
/// again by the next taker, not thrown at it); `close()` wakes a waiting
/// taker; bad settings are refused by name. Against an HTTP peer that holds
/// or fails answers on command (see `FetchCheck.java`).
#[test]
fn one_fetch_in_flight_and_its_error_reaches_its_takers_only() {
    assert_check(
        &mut java("FetchCheck"),
        "one fetch ok\nclose ok\nbackground failure ok\nfailure to its takers ok\n\
         stalled server ok\nsettings ok 8\n",
    );
}

/// Failover rules, on a clock the check moves (see `FailoverCheck.java`): a
/// failed instance is set aside 1, 2, 4, 4 s (the cap) and asked again once
/// that is over; every instance failing is one error at the deadline,
/// naming each instance and why, without credentials; the buffer serves
/// while a fetch fails over.
#[test]
fn failover_sets_failed_instances_aside_and_errs_only_at_the_deadline() {
    assert_check(
        &mut java("FailoverCheck"),
        "set aside ok\ndeadline ok\nserves while failing over ok\nshared failure at once ok\n",
    );
}

/// Issue 31: a failure every instance would give (500 `policy`: the
/// runaway fixture policy never returns for value 42, which the first
/// fetch takes) reaches the caller at once, not at the client's deadline
/// (a minute here) after asking every instance, each ask taking a fresh
/// batch. Two instances; one request in all: the counter moved by that one
/// batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_every_instance_would_give_reaches_the_caller_at_once() {
    const TEST: &str = "java_shared_failure";
    const BATCH: u64 = 50;
    support::database(TEST).await;
    create(TEST, "orders", &[]);
    let runaway = ["--policy", support::fixture_policy("runaway")];
    let instances = [Serve::start(TEST, &runaway), Serve::start(TEST, &runaway)];
    let output = java("SharedFailureRun")
        .args(["orders", &BATCH.to_string()])
        .args(instances.iter().map(Serve::url))
        .stdin(Stdio::null())
        .output()
        .expect("run java");
    assert_exit(&output, 0);
    let report = stdout(&output);
    let mut lines = report.lines();
    let outcome: Vec<&str> = lines.next().unwrap_or_default().split(' ').collect();
    assert_eq!(outcome[..2], ["failed", "500"], "{report}");
    let body: Value = serde_json::from_str(lines.next().unwrap_or_default()).unwrap();
    assert_eq!(body["error"], "policy", "{report}");
    // Every request the client made was answered before it returned: a
    // second one would have taken a second batch.
    assert_eq!(
        counter_field(TEST, "orders", "val"),
        BATCH,
        "not one batch taken: {report}"
    );
}

/// Three instances on one segment counter; four Java threads take values
/// through one client while an instance is killed with SIGKILL mid-run and
/// later restarted on its port. The kill and the restart happen while the
/// program waits at a pause it announced, so "mid-run" is certain; the
/// program goes on until the client has seen the dead instance fail, and
/// after the restart until every instance (the restarted one too) has
/// answered. No call fails and no value is handed out twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_instance_is_failed_over_and_rejoins_when_restarted() {
    const TEST: &str = "java_failover";
    const THREADS: u64 = 4;
    const PER_PHASE: u64 = 5_000;
    support::database(TEST).await;
    create(TEST, "seg", &["--kind", "segment", "--step", "1000"]);
    let mut instances: Vec<Serve> = (0..3).map(|_| Serve::start(TEST, &[])).collect();
    let urls: Vec<String> = instances.iter().map(Serve::url).collect();
    let mut program = pausing(
        "FailoverRun",
        &["seg", &THREADS.to_string(), &PER_PHASE.to_string(), "100"],
        &urls,
    );
    program.paused(1);
    instances[0].kill();
    program.send("go");
    program.paused(2);
    instances[0].restart();
    assert_eq!(instances[0].url(), urls[0], "restarted on another port");
    program.send("go");
    let report = program.finish();
    let field = |name: &str| -> u64 {
        report
            .iter()
            .find_map(|line| line.strip_prefix(&format!("{name} ")))
            .and_then(|value| value.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {report:?}"))
    };
    assert!(field("values ok") >= 3 * THREADS * PER_PHASE, "{report:?}");
    assert!(
        field("failures") >= 1,
        "the client never met the killed instance: {report:?}"
    );
    // The restarted process served values of its own (its metrics start at 0).
    let metrics = instances[0].metrics();
    let served: u64 = metrics
        .lines()
        .find_map(|line| line.strip_prefix(r#"idmint_values_total{counter="seg"} "#))
        .unwrap_or_else(|| panic!("no values served after the restart:\n{metrics}"))
        .parse()
        .unwrap();
    assert!(served > 0, "{metrics}");
    assert!(counter_field(TEST, "seg", "max") > field("max"));
}

/// Issue 34: an autoinc counter striped across two database servers, two
/// instances each spanning both (one preferring each); four Java threads
/// take IDs through one client while one server is killed with SIGKILL
/// and later restarted on its data, each while the program waits at a
/// pause it announced. No call fails (the instances fail over between the
/// deployments themselves) and no ID is handed out twice. (IDs: a striped
/// counter's values are not runs, which `ValueClient` takes.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_java_client_takes_from_a_counter_across_deployments_while_one_is_killed() {
    java_across_deployments(
        "java_deployments",
        &["--kind", "autoinc", "--prefix", "J-"],
        &["--policy", "builtin:decimal"],
        None,
    )
    .await;
}

/// The same with a cyclic counter (`--max 99`) and the default policy,
/// whose IDs are the lanes' (timestamp, value) pairs, the instances' wall
/// clocks frozen at one instant: only the lanes' rule keeps the IDs apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_java_client_takes_from_a_cyclic_counter_across_deployments_while_one_is_killed() {
    java_across_deployments(
        "java_deployments_cyclic",
        &["--max", "99", "--prefix", "C"],
        &[],
        Some("2026-01-01 00:00:00"),
    )
    .await;
}

/// The same with a segment counter: each instance hands out the segments
/// it takes from a lane from memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_java_client_takes_from_a_segment_counter_across_deployments_while_one_is_killed() {
    java_across_deployments(
        "java_deployments_segment",
        &["--kind", "segment", "--step", "100", "--prefix", "G-"],
        &["--policy", "builtin:decimal"],
        None,
    )
    .await;
}

/// The same with a periodic counter, whose IDs write each value's period.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_java_client_takes_from_a_periodic_counter_across_deployments_while_one_is_killed() {
    java_across_deployments(
        "java_deployments_periodic",
        &["--kind", "periodic", "--prefix", "P-"],
        &["--policy", "builtin:decimal"],
        None,
    )
    .await;
}

/// The same with a snowflake counter: each instance leases a worker id of
/// a lane, and moves its lease to the other deployment's lane when eu is
/// killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_java_client_takes_from_a_snowflake_counter_across_deployments_while_one_is_killed() {
    java_across_deployments(
        "java_deployments_snowflake",
        &["--kind", "snowflake", "--prefix", "S-"],
        &["--policy", "builtin:base32"],
        None,
    )
    .await;
}

/// Counter `orders`, created with `kind` (its kind and prefix), striped
/// `eu:2,us:2` across two servers of the test's own; two instances with
/// `policy` (and their wall clocks at `clock`, if given); the Java program
/// `DeploymentsRun` through them while eu is killed and restarted.
async fn java_across_deployments(
    test: &'static str,
    kind: &[&str],
    policy: &[&str],
    clock: Option<&'static str>,
) {
    const THREADS: u64 = 4;
    const PER_PHASE: u64 = 2_000;
    let durable = || {
        support::OwnedServer::start(support::ServerConfig {
            sync_on_commit: true,
            ..support::ServerConfig::default()
        })
    };
    let (mut eu, us) = (durable(), durable());
    let eu_flag = format!("eu={}", eu.uri);
    let us_flag = format!("us={}", us.uri);
    let mut args: Vec<&str> = kind.to_vec();
    args.extend(policy);
    args.extend([
        "--stripes",
        "eu:2,us:2",
        "--uri",
        &eu_flag,
        "--uri",
        &us_flag,
    ]);
    create(test, "orders", &args);
    let serve = |first: &str, second: &str| {
        let mut args: Vec<&str> = policy.to_vec();
        args.extend(["--uri", first, "--uri", second]);
        Serve::start_at(test, &args, clock)
    };
    let instances = [serve(&eu_flag, &us_flag), serve(&us_flag, &eu_flag)];
    let urls: Vec<String> = instances.iter().map(Serve::url).collect();
    let mut program = pausing(
        "DeploymentsRun",
        &["orders", &THREADS.to_string(), &PER_PHASE.to_string(), "50"],
        &urls,
    );
    program.paused(1);
    eu.kill();
    program.send("go");
    program.paused(2);
    eu.restart();
    program.send("go");
    assert_eq!(
        program.finish(),
        [format!("ids ok {}", 3 * THREADS * PER_PHASE)]
    );
}
