//! Semaphores (`lock run NAME --permits N`) and read-write locks (`lock run
//! NAME --shared` beside the exclusive `lock run NAME`), in real processes
//! against the real server: at most N holders, each with its own fencing
//! token; a lower N admits no one until under it; a scheduled job's place
//! stays taken for its `--at-least`; a permit holder killed
//! with `kill -9`, stopped with SIGSTOP or cut off from the database gives
//! its place up when its lease ends, its command gone first; a writer waits for the readers, and readers
//! who come after a waiting writer queue behind it; sixteen contenders never
//! put more than N holders, or a writer beside anyone, in the shared log.

use std::io::{BufRead, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Barrier};

use crate::support::fault_proxy::FaultProxy;
use crate::support::locks::lock_run;
use crate::support::process::{running, signal};
use crate::support::wait::{self, PATIENCE};
use crate::support::{self, assert_exit, lock_name};

/// A holder that prints "TOKEN PID" and holds until told (a line on its
/// stdin).
fn holder(test: &str, name: &str, flags: &[&str]) -> (Child, i64, u32) {
    let mut child = lock_run(test, name, flags, "echo \"$IDMINT_LOCK_TOKEN $$\"; read x")
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let mut fields = line.split_whitespace();
    let token = fields.next().expect("a token").parse().unwrap();
    let pid = fields.next().expect("a pid").parse().unwrap();
    (child, token, pid)
}

/// Tells a holder to end, and waits for it.
fn end(mut child: Child) {
    child.stdin.as_mut().unwrap().write_all(b"done\n").unwrap();
    assert_exit(&child.wait_with_output().unwrap(), 0);
}

/// `lock run NAME FLAGS --skip -- true`'s exit code.
fn skip(test: &str, name: &str, flags: &[&str]) -> Option<i32> {
    let mut flags = flags.to_vec();
    flags.push("--skip");
    support::run(lock_run(test, name, &flags, "true").stdin(Stdio::null()))
        .status
        .code()
}

#[test]
fn a_semaphore_admits_n_holders_and_a_lower_n_none_until_under_it() {
    const TEST: &str = "lock_semaphore";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(support::database(TEST));
    let three = ["--permits", "3"];
    let (a, token_a, _) = holder(TEST, "pool", &three);
    let (b, token_b, _) = holder(TEST, "pool", &three);
    let (c, token_c, _) = holder(TEST, "pool", &three);
    assert!(token_a < token_b && token_b < token_c);
    assert_eq!(skip(TEST, "pool", &three), Some(75), "a fourth holder");
    // Neither the exclusive lock nor a reader gets in beside them.
    assert_eq!(skip(TEST, "pool", &[]), Some(75));
    let status = support::stdout(&support::run(
        support::idmint(TEST).args(["lock", "status", "pool"]),
    ));
    assert!(status.contains("shared:     3 holder(s)"), "{status}");

    // N lowered to 2: no one until fewer than 2 hold.
    end(a);
    assert_eq!(skip(TEST, "pool", &["--permits", "2"]), Some(75));
    end(b);
    assert_eq!(skip(TEST, "pool", &["--permits", "2"]), Some(0));
    end(c);
    // Free of shared holders, the exclusive lock is had, with a larger token.
    let (exclusive, token, _) = holder(TEST, "pool", &[]);
    assert!(token > token_c);
    assert_eq!(
        skip(TEST, "pool", &three),
        Some(75),
        "a permit beside the exclusive lock"
    );
    end(exclusive);

    // Scheduled jobs on two places: each place stays taken for its
    // --at-least after its job ended, so a third run finds none.
    let jobs = ["--permits", "2", "--at-least", "60s", "--ttl", "5"];
    assert_eq!(skip(TEST, "batch", &jobs), Some(0));
    assert_eq!(skip(TEST, "batch", &jobs), Some(0));
    assert_eq!(
        skip(TEST, "batch", &jobs),
        Some(75),
        "a place given up before its --at-least"
    );

    for (flags, says) in [
        (&["--permits", "0"][..], "invalid permits: 0"),
        (&["--permits", "2", "--shared"][..], "cannot be used with"),
    ] {
        let refused = support::run(lock_run(TEST, "pool", flags, "true").stdin(Stdio::null()));
        assert_exit(&refused, 2);
        assert!(
            support::stderr(&refused).contains(says),
            "{flags:?}: {}",
            support::stderr(&refused)
        );
    }
}

#[test]
fn a_killed_stopped_or_cut_off_permit_holder_gives_its_place_up_with_its_command_gone() {
    const TEST: &str = "lock_semaphore_faults";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(support::database(TEST));
    let proxy = FaultProxy::start();
    let three = ["--permits", "3", "--ttl", "2"];
    let (mut killed, _, killed_job) = holder(TEST, "pool", &three);
    let (stopped, _, stopped_job) = holder(TEST, "pool", &three);
    let mut cut = lock_run(
        TEST,
        "pool",
        &three,
        "echo \"$IDMINT_LOCK_TOKEN $$\"; read x",
    );
    let mut cut = cut.env("MONGODB_URI", proxy.uri()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(cut.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let cut_job: u32 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert_eq!(skip(TEST, "pool", &three), Some(75));

    killed.kill().unwrap();
    killed.wait().unwrap();
    signal(stopped.id(), libc::SIGSTOP);
    proxy.partition();
    // Three waiters get the three places once the server has ended the
    // three leases; by then every command is gone.
    let waiting = ["--permits", "3", "--ttl", "2", "--wait", "60"];
    let waiters: Vec<_> = (0..3).map(|_| holder(TEST, "pool", &waiting)).collect();
    for (job, how) in [
        (killed_job, "killed"),
        (stopped_job, "stopped"),
        (cut_job, "cut off"),
    ] {
        assert!(!running(job), "the {how} holder's command runs on");
    }
    signal(stopped.id(), libc::SIGCONT);
    assert_exit(&stopped.wait_with_output().unwrap(), 76);
    assert_exit(&cut.wait_with_output().unwrap(), 76);
    for (waiter, _, _) in waiters {
        end(waiter);
    }
    drop(proxy);
}

#[test]
fn a_writer_waits_for_readers_and_readers_after_it_wait_for_the_writer() {
    const TEST: &str = "lock_read_write";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let database = runtime.block_on(support::database(TEST));
    let (first_reader, reader_token, _) = holder(TEST, "books", &["--shared"]);
    let (second_reader, _, _) = holder(TEST, "books", &["--shared"]);

    // A writer waits in line; a reader who comes after it waits behind it.
    let mut writer = lock_run(
        TEST,
        "books",
        &["--wait", "60"],
        "echo \"$IDMINT_LOCK_TOKEN writer\"; read x",
    )
    .spawn()
    .unwrap();
    let lock = idmint::lock::Lock::new(&database, lock_name("books"));
    let waiters = |count: usize| {
        let lock = lock.clone();
        let runtime = &runtime;
        move || runtime.block_on(lock.status()).unwrap().unwrap().waiters == count
    };
    wait::until(PATIENCE, "the writer in line", waiters(1));
    let mut late_reader = lock_run(
        TEST,
        "books",
        &["--shared", "--wait", "60"],
        "echo \"$IDMINT_LOCK_TOKEN reader\"; read x",
    )
    .spawn()
    .unwrap();
    wait::until(PATIENCE, "the late reader in line", waiters(2));
    assert_eq!(
        skip(TEST, "books", &["--shared"]),
        Some(75),
        "a reader jumped the line"
    );

    end(first_reader);
    end(second_reader);
    let mut line = String::new();
    BufReader::new(writer.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let writer_token: i64 = line.split_whitespace().next().unwrap().parse().unwrap();
    assert!(writer_token > reader_token);
    // The late reader still waits while the writer writes.
    assert!(late_reader.try_wait().unwrap().is_none());
    assert_eq!(runtime.block_on(lock.status()).unwrap().unwrap().waiters, 1);
    end(writer);
    let mut line = String::new();
    BufReader::new(late_reader.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.ends_with("reader\n"), "{line}");
    end(late_reader);
}

/// Each holding's "mode token start end" from the shared log.
fn holdings(log: &Path) -> Vec<(String, i64, u128, u128)> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split(' ').collect();
            (
                f[0].to_string(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn sixteen_contenders_never_exceed_the_permits_nor_put_a_writer_beside_anyone() {
    const TEST: &str = "lock_shared_contenders";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(support::database(TEST));
    let dir = tempfile::tempdir().unwrap();
    for (name, modes) in [
        ("semaphore", vec![vec!["--permits", "3"]; 16]),
        (
            "books",
            (0..16)
                .map(|n| if n % 4 == 0 { vec![] } else { vec!["--shared"] })
                .collect(),
        ),
    ] {
        let log = dir.path().join(name);
        // Each holding appends "mode token start end" (nanoseconds, this
        // machine's one clock), holding for a moment between.
        let script = format!(
            "s=$(date +%s%N); sleep 0.05; e=$(date +%s%N); echo \"$IDMINT_LOCK_MODE $IDMINT_LOCK_TOKEN $s $e\" >> {}",
            log.display()
        );
        let barrier = Arc::new(Barrier::new(modes.len()));
        let contenders: Vec<_> = modes
            .into_iter()
            .map(|mode| {
                let (barrier, script) = (barrier.clone(), script.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    for _ in 0..4 {
                        let mut flags = mode.clone();
                        flags.extend(["--wait", "600", "--ttl", "30"]);
                        let output = support::run(
                            lock_run(TEST, name, &flags, &script).stdin(Stdio::null()),
                        );
                        assert_exit(&output, 0);
                    }
                })
            })
            .collect();
        contenders.into_iter().for_each(|c| c.join().unwrap());

        let holdings = holdings(&log);
        assert_eq!(holdings.len(), 64);
        let mut tokens: Vec<i64> = holdings.iter().map(|h| h.1).collect();
        tokens.sort_unstable();
        tokens.dedup();
        assert_eq!(tokens.len(), 64, "a fencing token twice");
        for (mode, _, start, end) in &holdings {
            let beside: Vec<_> = holdings
                .iter()
                .filter(|other| other.2 < *end && *start < other.3)
                .collect();
            if name == "semaphore" {
                // Those holding at its start, itself included.
                let at_start = holdings
                    .iter()
                    .filter(|other| other.2 <= *start && *start < other.3)
                    .count();
                assert!(at_start <= 3, "{at_start} permit holders at once");
            } else if mode == "exclusive" {
                assert_eq!(beside.len(), 1, "a writer beside others: {beside:?}");
            }
        }
    }
}
