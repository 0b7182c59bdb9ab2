//! Leader election, `idmint lock elect NAME -- COMMAND`, in real processes
//! against the real server: sixteen candidates, and a leader cut off by a
//! partition, then one stopped with SIGSTOP, then one killed with `kill -9`.
//! Each time a standby takes over, and the old leader's COMMAND is gone by
//! then (checked when the new one has started, as `lock run`'s tests do);
//! the fencing token counts the successions; `lock status` names the
//! leader.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Barrier};
use std::time::Instant;

use crate::support::fault_proxy::FaultProxy;
use crate::support::process::{running, signal};
use crate::support::service::Service;
use crate::support::wait::{self, PATIENCE};
use crate::support::{self, lock_name, stdout};

/// A candidate for lock "service", named `label`, through `uri` if given;
/// while leading, COMMAND appends "token label pid" to `log` and sleeps.
fn candidate(test: &str, label: &str, log: &Path, uri: Option<&str>) -> Child {
    let script = format!(
        "echo \"$IDMINT_LOCK_TOKEN $IDMINT_LOCK_LABEL $$\" >> {}; exec sleep 600",
        log.display()
    );
    let mut command = support::idmint(test);
    command
        .args(["lock", "elect", "service", "--ttl", "2", "--id", label])
        .args(["--", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(uri) = uri {
        command.env("MONGODB_URI", uri);
    }
    command.spawn().expect("start lock elect")
}

/// A leader as its COMMAND wrote itself down.
#[derive(Debug, Clone, PartialEq)]
struct Leader {
    token: i64,
    label: String,
    pid: u32,
}

/// The `n`th leader (from 1), once it has started: waits for it.
fn leader(log: &Path, n: usize) -> Leader {
    let mut line = None;
    wait::until(PATIENCE, &format!("leader {n}"), || {
        line = std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .nth(n - 1)
            .map(str::to_string);
        line.is_some()
    });
    let line = line.unwrap();
    let fields: Vec<&str> = line.split(' ').collect();
    Leader {
        token: fields[0].parse().unwrap(),
        label: fields[1].to_string(),
        pid: fields[2].parse().unwrap(),
    }
}

/// Waits for the leader after `previous` and checks the handover: another
/// candidate, a larger token, and `previous`'s COMMAND gone.
fn next_leader(log: &Path, n: usize, previous: &Leader, since: Instant) -> Leader {
    let next = leader(log, n);
    let overlapped = running(previous.pid);
    if overlapped {
        signal(previous.pid, libc::SIGKILL);
    }
    assert!(
        !overlapped,
        "two leaders ran at once: {previous:?} and {next:?}"
    );
    assert_ne!(next.label, previous.label);
    assert!(next.token > previous.token, "{previous:?} then {next:?}");
    eprintln!(
        "leader {n} ({}) started {} ms after the fault",
        next.label,
        since.elapsed().as_millis()
    );
    next
}

#[test]
fn a_standby_takes_over_from_a_cut_off_stopped_or_killed_leader_and_never_beside_it() {
    const TEST: &str = "lock_elect";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let database = runtime.block_on(support::database(TEST));
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("leaders");
    let proxy = FaultProxy::start();

    // The first candidate alone, through the proxy: it leads.
    let mut candidates: HashMap<String, Child> = HashMap::new();
    let first = candidate(TEST, "node-0", &log, Some(&proxy.uri()));
    candidates.insert("node-0".into(), first);
    let leader_1 = leader(&log, 1);
    assert_eq!(leader_1.label, "node-0");

    // Fifteen more, started together; all stand in the lock's line.
    let barrier = Arc::new(Barrier::new(15));
    let standing: Vec<_> = (1..16)
        .map(|n| {
            let (barrier, log) = (barrier.clone(), log.clone());
            std::thread::spawn(move || {
                let label = format!("node-{n}");
                barrier.wait();
                let child = candidate(TEST, &label, &log, None);
                (label, child)
            })
        })
        .collect();
    candidates.extend(standing.into_iter().map(|thread| thread.join().unwrap()));
    let lock = idmint::lock::Lock::new(&database, lock_name("service"));
    wait::until(PATIENCE, "fifteen standbys in line", || {
        let state = runtime.block_on(lock.status()).unwrap().unwrap();
        state.waiters == 15
    });
    let status = support::run(support::idmint(TEST).args(["lock", "status", "service"]));
    assert!(
        stdout(&status).contains("label:      node-0"),
        "{}",
        stdout(&status)
    );

    // Cut off from the database: its COMMAND is stopped before its lease
    // can end, and a standby leads.
    let fault = Instant::now();
    proxy.partition();
    let leader_2 = next_leader(&log, 2, &leader_1, fault);

    // Stopped with SIGSTOP: its guard ends COMMAND at the deadline.
    let stopped = candidates[&leader_2.label].id();
    let fault = Instant::now();
    signal(stopped, libc::SIGSTOP);
    let leader_3 = next_leader(&log, 3, &leader_2, fault);
    // Continued, it stands again rather than exit.
    signal(stopped, libc::SIGCONT);

    // Killed with kill -9: its guard ends COMMAND at once.
    let fault = Instant::now();
    candidates
        .get_mut(&leader_3.label)
        .unwrap()
        .kill()
        .expect("kill -9 the leader");
    let leader_4 = next_leader(&log, 4, &leader_3, fault);

    let status = stdout(&support::run(
        support::idmint(TEST).args(["lock", "status", "service", "--json"]),
    ));
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status[0]["label"], leader_4.label.as_str(), "{status}");
    assert_eq!(status[0]["token"], leader_4.token, "{status}");
    // The one stopped and continued is a standby again.
    let mut continued = candidates.remove(&leader_2.label).unwrap();
    assert!(
        continued.try_wait().unwrap().is_none(),
        "it left the election"
    );

    // Every candidate ends with SIGTERM: the leader's COMMAND with it.
    continued.kill().unwrap();
    for (_, mut child) in candidates {
        signal(child.id(), libc::SIGTERM);
        let _ = child.wait();
    }
    let _ = continued.wait();
    assert!(
        !running(leader_4.pid),
        "the last leader's COMMAND outlived it"
    );
    drop(proxy);
}

#[test]
fn a_leader_whose_command_ends_gives_the_lead_up_and_bad_labels_are_refused() {
    const TEST: &str = "lock_elect_exit";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(support::database(TEST));
    let elect = |label: &str, script: &str| {
        support::run(
            support::idmint(TEST)
                .args([
                    "lock", "elect", "duty", "--id", label, "--", "sh", "-c", script,
                ])
                .stdin(Stdio::null()),
        )
    };
    let first = elect(
        "node-a",
        "echo \"$IDMINT_LOCK_LABEL $IDMINT_LOCK_TOKEN\"; exit 7",
    );
    support::assert_exit(&first, 7);
    assert_eq!(stdout(&first).trim(), "node-a 1");
    // Given up: the next candidate leads at once, with the next token.
    let second = elect("node-b", "echo \"$IDMINT_LOCK_LABEL $IDMINT_LOCK_TOKEN\"");
    support::assert_exit(&second, 0);
    assert_eq!(stdout(&second).trim(), "node-b 2");

    // `serve` answers "who leads?": nobody now, then the leader while it
    // leads, its token counting the successions.
    let service = Service::start(TEST, &[]);
    let free = service.get("/v1/locks/duty").json();
    assert_eq!(free["held"], false, "{free}");
    assert_eq!(free["token"], 2, "{free}");
    assert!(free.get("label").is_none(), "{free}");
    assert_eq!(free["shared"], 0, "{free}");
    let mut leading = support::idmint(TEST)
        .args([
            "lock",
            "elect",
            "duty",
            "--id",
            "node-c",
            "--",
            "sh",
            "-c",
            "echo go; read x",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut go = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(leading.stdout.as_mut().unwrap()),
        &mut go,
    )
    .unwrap();
    assert_eq!(go.trim(), "go");
    let leads = service.get("/v1/locks/duty").json();
    assert_eq!(leads["held"], true, "{leads}");
    assert_eq!(leads["label"], "node-c", "{leads}");
    assert_eq!(leads["token"], 3, "{leads}");
    assert!(leads["expires_in_ms"].as_i64().unwrap() > 0, "{leads}");
    assert!(
        !leads.to_string().contains('/'),
        "no owner token shown: {leads}"
    );
    std::io::Write::write_all(leading.stdin.as_mut().unwrap(), b"done\n").unwrap();
    support::assert_exit(&leading.wait_with_output().unwrap(), 0);
    let bad = service.get("/v1/locks/bad%20name");
    assert_eq!(bad.status, 400, "{}", bad.body);
    drop(service);

    let refused = elect("", "true");
    support::assert_exit(&refused, 2);
    assert!(
        support::stderr(&refused).contains("invalid holder label \"\""),
        "{}",
        support::stderr(&refused)
    );
}
