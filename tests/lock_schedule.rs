//! Scheduled-job locks (ShedLock's shape): `idmint lock run NAME --skip
//! --at-least D --at-most D -- COMMAND`, as cron runs it on every node, in
//! real processes against the real server. A job that ran fast still holds
//! the name until `--at-least` has passed since it was had, by the server's
//! clock: sixteen nodes started together (some with clocks a minute off) run
//! it once, and a second round right after runs it not at all; a holder
//! killed with `kill -9` at once still holds it that long; `--at-most` stops
//! a hung job.

use std::process::{Output, Stdio};
use std::sync::{Arc, Barrier};

use mongodb::bson::{doc, DateTime, Document};
use mongodb::Database;

use crate::support::locks::lock_run;
use crate::support::process::running;
use crate::support::{self, assert_exit, stderr, stdout};

/// When the latest holder of lock `name` had it, by the server's clock.
async fn acquired_at(database: &Database, name: &str) -> DateTime {
    let document = database
        .collection::<Document>(idmint::lock::LOCKS_COLLECTION)
        .find_one(doc! { "_id": name })
        .await
        .unwrap()
        .expect("the lock's document");
    *document.get_datetime("acquiredAt").unwrap()
}

/// Sixteen `lock run NAME --skip` of `script` started together at a barrier,
/// every other one with its clock `offsets` away (libfaketime): their
/// outputs.
fn sixteen_nodes(test: &str, name: &str, flags: &[&str], script: &str) -> Vec<Output> {
    const NODES: usize = 16;
    let offsets = ["+60s", "-60s"];
    let barrier = Arc::new(Barrier::new(NODES));
    let nodes: Vec<_> = (0..NODES)
        .map(|node| {
            let mut command = lock_run(test, name, flags, script);
            command.stdin(Stdio::null());
            if node % 2 == 1 {
                support::fake_clock(&mut command, offsets[node / 2 % 2]);
            }
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                command.output().expect("run lock run")
            })
        })
        .collect();
    nodes.into_iter().map(|node| node.join().unwrap()).collect()
}

/// How many of `outputs` ran the job (exit 0); every other one must have
/// found the lock held (exit 75).
fn ran(outputs: &[Output]) -> usize {
    for output in outputs {
        let code = output.status.code();
        assert!(
            code == Some(0) || code == Some(75),
            "{code:?}: {}",
            stderr(output)
        );
    }
    outputs
        .iter()
        .filter(|output| output.status.code() == Some(0))
        .count()
}

#[test]
fn sixteen_nodes_run_a_fast_job_once_and_not_again_within_its_at_least() {
    const TEST: &str = "lock_schedule_once";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(support::database(TEST));
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("runs");
    let script = format!("echo \"$IDMINT_LOCK_TOKEN\" >> {}", record.display());
    // 60 s: both rounds start well within it, however loaded the machine.
    let flags = ["--skip", "--ttl", "5", "--at-least", "60s"];

    let first = sixteen_nodes(TEST, "nightly", &flags, &script);
    assert_eq!(ran(&first), 1, "one node runs the job");
    // The job ended at once; the name stays held, by nobody's job.
    let status = support::run(support::idmint(TEST).args(["lock", "status", "nightly"]));
    assert!(
        stdout(&status).contains("hold count: 0 (its job ended; held for --at-least)"),
        "{}",
        stdout(&status)
    );
    let second = sixteen_nodes(TEST, "nightly", &flags, &script);
    assert_eq!(ran(&second), 0, "nobody runs it again within --at-least");
    let runs = std::fs::read_to_string(&record).unwrap();
    assert_eq!(runs.lines().count(), 1, "{runs}");
    let busy = second
        .iter()
        .find(|output| output.status.code() == Some(75));
    assert!(
        stderr(busy.unwrap()).contains("nightly"),
        "{}",
        stderr(busy.unwrap())
    );
}

/// Takes lock `name` with `lock run --skip` (under a clock 10 minutes
/// ahead) until one run gets it; every run before must have found it held.
fn first_run_after(test: &str, name: &str, flags: &[&str]) {
    // A hang guard, not a speed claim.
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while std::time::Instant::now() < give_up {
        let mut command = lock_run(test, name, flags, "true");
        let output = support::run(support::fake_clock(&mut command, "+600s").stdin(Stdio::null()));
        match output.status.code() {
            Some(0) => return,
            Some(75) => continue,
            other => panic!("{other:?}: {}", stderr(&output)),
        }
    }
    panic!("lock {name} was never had again");
}

#[test]
fn the_next_run_starts_at_least_at_least_after_the_last_even_after_kill_9() {
    const TEST: &str = "lock_schedule_kill";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let database = runtime.block_on(support::database(TEST));
    const AT_LEAST_MS: i64 = 4_000;
    // A TTL a quarter of --at-least: a lease of the TTL alone would let
    // the next run in after a second.
    let flags = ["--skip", "--ttl", "1", "--at-least", "4s"];

    // A job that ends at once.
    let fast = support::run(lock_run(TEST, "hourly", &flags, "true").stdin(Stdio::null()));
    assert_exit(&fast, 0);
    let fast_at = runtime.block_on(acquired_at(&database, "hourly"));
    first_run_after(TEST, "hourly", &flags);
    let next_at = runtime.block_on(acquired_at(&database, "hourly"));
    let gap = next_at.timestamp_millis() - fast_at.timestamp_millis();
    assert!(gap >= AT_LEAST_MS, "the next run came {gap} ms after");

    // A holder killed with kill -9 as soon as its job started.
    let mut holder = lock_run(TEST, "daily", &flags, "echo $$; exec sleep 600")
        .spawn()
        .unwrap();
    let job: u32 = support::process::read_lines(holder.stdout.take().unwrap())
        .recv()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let killed_at = runtime.block_on(acquired_at(&database, "daily"));
    holder.kill().unwrap();
    holder.wait().unwrap();
    first_run_after(TEST, "daily", &flags);
    let next_at = runtime.block_on(acquired_at(&database, "daily"));
    let gap = next_at.timestamp_millis() - killed_at.timestamp_millis();
    assert!(
        gap >= AT_LEAST_MS,
        "the next run came {gap} ms after a killed one"
    );
    // The killed holder's job went with it (flock's promise).
    assert!(!running(job), "the killed holder's job still runs");
}

#[test]
fn at_most_stops_a_hung_job_and_bad_flags_are_refused() {
    const TEST: &str = "lock_schedule_at_most";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(support::database(TEST));
    // A job that ignores SIGTERM: killed after the grace (a quarter of the TTL).
    let mut hung = lock_run(
        TEST,
        "report",
        &["--ttl", "2", "--at-most", "1s"],
        "trap '' TERM; echo $$; while :; do sleep 1; done",
    );
    let hung = support::run(hung.stdin(Stdio::null()));
    assert_exit(&hung, 124);
    let job: u32 = stdout(&hung).trim().parse().unwrap();
    assert!(!running(job), "the hung job still runs");
    assert!(
        stderr(&hung)
            .contains("ran past --at-most 1s; stopping it: SIGTERM now, SIGKILL in 500 ms"),
        "{}",
        stderr(&hung)
    );
    // Released: the next run has it at once.
    let next = support::run(lock_run(TEST, "report", &["--skip"], "true").stdin(Stdio::null()));
    assert_exit(&next, 0);

    for (flags, says) in [
        (
            &["--at-least", "10m", "--at-most", "5m"][..],
            "--at-most 5m is less than --at-least 10m",
        ),
        (
            &["--at-most", "0"][..],
            "--at-most 0 would stop COMMAND at once",
        ),
        (&["--at-least", "soon"][..], "\"soon\" is not a duration"),
        (&["--skip", "--wait", "5"][..], "cannot be used with"),
        (&["--at-least", "2d"][..], "at least"),
    ] {
        let refused = support::run(lock_run(TEST, "report", flags, "true").stdin(Stdio::null()));
        assert_exit(&refused, 2);
        assert!(
            stderr(&refused).contains(says),
            "{flags:?}: {}",
            stderr(&refused)
        );
    }
    // Nothing was taken by a refused run.
    let status = support::run(support::idmint(TEST).args(["lock", "status", "report"]));
    assert!(stdout(&status).contains("free"), "{}", stdout(&status));
}
