//! Network faults under load: a proxy (`support::fault_proxy`) cuts every
//! connection at a random point, so that some writes are applied and their
//! answers lost, while several processes of every kind of counter
//! (`idmint seq`) and of `idmint lock run` work through it at once.
//! Whatever fails, no value is issued twice, no two lock holders run at
//! once, nothing panics, and every failure is one line. The cut points come from a printed seed
//! (`IDMINT_FAULT_SEED` replays it).

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Barrier};

use serde_json::Value;

use crate::support::fault_proxy::{self, FaultProxy};
use crate::support::{self, assert_exit, idmint, run, stdout};

/// Processes of each kind at once, and runs each makes in turn.
const PROCESSES: usize = 2;
const RUNS: usize = 6;
/// Values each run asks for.
const COUNT: &str = "40";
/// Connections are cut after 1 to this many bytes (a handshake is about
/// 1.5 KB, a take about 1 to 2 KB with its answer).
const MAX_BYTES: u64 = 16 * 1024;

/// The counters, one of each kind, with what `counter create` needs.
const COUNTERS: [(&str, &[&str]); 5] = [
    // No wrap within the test: a cyclic value alone is then unique.
    ("cyclic", &["--kind", "cyclic", "--max", "1000000000"]),
    ("autoinc", &["--kind", "autoinc"]),
    // Small segments: many fetches, many give-backs.
    ("segment", &["--kind", "segment", "--step", "10"]),
    ("snowflake", &["--kind", "snowflake"]),
    ("periodic", &["--kind", "periodic", "--period", "year"]),
];

/// One run's outcome.
struct Run {
    what: String,
    output: Output,
}

fn through(test: &str, proxy: &str) -> Command {
    let mut command = idmint(test);
    command
        .env("MONGODB_URI", proxy)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

#[test]
fn random_cuts_never_issue_a_value_twice_nor_let_two_lock_holders_run_at_once() {
    const TEST: &str = "network_faults";
    let seed = fault_proxy::seed(TEST);
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(support::database(TEST));
    for (counter, flags) in COUNTERS {
        let output = run(idmint(TEST)
            .args(["counter", "create", counter, "--raw"])
            .args(flags));
        assert_exit(&output, 0);
    }
    let dir = tempfile::tempdir().unwrap();
    let sections = dir.path().join("sections");
    let last = dir.path().join("last-holder");
    // A critical section long enough for renewals to happen
    // (every 1.3 s) and fail under the cuts. On entering, it looks whether the previous
    // holder's shell still runs (not gone, not a zombie): a holder stopped
    // by `lock run` leaves no end, and only this tells that it was stopped
    // before the next one started.
    let section = format!(
        "echo $IDMINT_LOCK_TOKEN; \
         if p=$(cat {last} 2>/dev/null) && s=$(cat /proc/$p/stat 2>/dev/null); then \
           case \"${{s##*) }}\" in Z*|X*) ;; *) echo \"overlap $IDMINT_LOCK_TOKEN $p\" >> {file};; esac; \
         fi; echo $$ > {last}; \
         echo \"start $IDMINT_LOCK_TOKEN $(date +%s%N)\" >> {file}; \
         sleep 2; echo \"end $IDMINT_LOCK_TOKEN $(date +%s%N)\" >> {file}",
        file = sections.display(),
        last = last.display(),
    );

    let proxy = FaultProxy::start();
    proxy.cut_at_random(seed, MAX_BYTES);
    let uri = proxy.uri();
    let workers = COUNTERS.len() * PROCESSES + PROCESSES;
    let barrier = Arc::new(Barrier::new(workers));
    let mut threads = Vec::new();
    for (counter, _) in COUNTERS {
        for _ in 0..PROCESSES {
            let (barrier, uri) = (barrier.clone(), uri.clone());
            threads.push(std::thread::spawn(move || {
                barrier.wait();
                (0..RUNS)
                    .map(|_| Run {
                        what: format!("seq {counter}"),
                        output: through(TEST, &uri)
                            .args(["seq", counter, "--count", COUNT, "--json"])
                            .output()
                            .unwrap(),
                    })
                    .collect::<Vec<_>>()
            }));
        }
    }
    for _ in 0..PROCESSES {
        let (barrier, uri, section) = (barrier.clone(), uri.clone(), section.clone());
        threads.push(std::thread::spawn(move || {
            barrier.wait();
            (0..RUNS / 2)
                .map(|_| Run {
                    what: "lock run".to_string(),
                    output: through(TEST, &uri)
                        .args(["lock", "run", "job", "--ttl", "4", "--wait", "120"])
                        .args(["--", "sh", "-c", &section])
                        .output()
                        .unwrap(),
                })
                .collect::<Vec<_>>()
        }));
    }
    let runs: Vec<Run> = threads
        .into_iter()
        .flat_map(|thread| thread.join().unwrap())
        .collect();
    let (accepted, cut) = proxy.counts();
    drop(proxy);

    // Every failure is one line, and nothing panicked.
    let mut failures: BTreeMap<String, usize> = BTreeMap::new();
    for run in &runs {
        let stderr = support::stderr(&run.output);
        assert!(
            !stderr.contains("panicked") && run.output.status.code() != Some(101),
            "{} panicked:\n{stderr}",
            run.what
        );
        let code = run.output.status.code().expect("exited, not killed");
        if code != 0 {
            *failures
                .entry(format!("{} exit {code}", run.what))
                .or_default() += 1;
        }
        assert!(
            one_line_failure(&stderr, code),
            "{} (exit {code}) did not fail with one line:\n{stderr}",
            run.what
        );
    }

    // No value issued twice, by kind; a periodic value with its period.
    let mut issued: BTreeMap<&str, BTreeSet<(String, u64)>> = BTreeMap::new();
    for run in runs.iter().filter(|run| run.what.starts_with("seq ")) {
        let counter = &run.what["seq ".len()..];
        let values = issued.entry(counter_name(counter)).or_default();
        for line in stdout(&run.output).lines() {
            let value: Value = serde_json::from_str(line).unwrap();
            let period = value["period"].as_str().unwrap_or_default().to_string();
            let number = value["value"].as_u64().unwrap();
            assert!(
                values.insert((period.clone(), number)),
                "{counter}: value {number} {period} issued twice (seed {seed})"
            );
        }
    }
    for (counter, _) in COUNTERS {
        let values = issued.get(counter).map_or(0, BTreeSet::len);
        assert!(values > 0, "{counter}: nothing issued at all (seed {seed})");
    }

    // No two lock holders at once: sections sorted by start never overlap,
    // and their fencing tokens grow. A section without an end was stopped,
    // and its run exited 76.
    let stopped: BTreeSet<i64> = runs
        .iter()
        .filter(|run| run.what == "lock run" && run.output.status.code() == Some(76))
        .filter_map(|run| stdout(&run.output).trim().parse().ok())
        .collect();
    let mut starts: BTreeMap<i64, u128> = BTreeMap::new();
    let mut ends: BTreeMap<i64, u128> = BTreeMap::new();
    for line in std::fs::read_to_string(&sections)
        .unwrap_or_default()
        .lines()
    {
        let fields: Vec<&str> = line.split(' ').collect();
        let (token, at): (i64, u128) = (fields[1].parse().unwrap(), fields[2].parse().unwrap());
        match fields[0] {
            "overlap" => panic!(
                "holder {} started while the shell {} of the one before still ran (seed {seed})",
                fields[1], fields[2]
            ),
            "start" => assert!(starts.insert(token, at).is_none(), "token {token} twice"),
            _ => assert!(ends.insert(token, at).is_none(), "token {token} twice"),
        }
    }
    assert!(
        !starts.is_empty(),
        "no lock holder ran at all (seed {seed})"
    );
    let mut by_start: Vec<(u128, i64)> = starts.iter().map(|(&t, &s)| (s, t)).collect();
    by_start.sort();
    for pair in by_start.windows(2) {
        let ((_, token0), (start1, token1)) = (pair[0], pair[1]);
        assert!(
            token1 > token0,
            "tokens not in start order: {pair:?} (seed {seed})"
        );
        match ends.get(&token0) {
            Some(&end0) => assert!(
                start1 > end0,
                "holders {token0} and {token1} ran at once (seed {seed})"
            ),
            None => assert!(
                stopped.contains(&token0),
                "holder {token0} has no end but was not stopped (seed {seed})"
            ),
        }
    }
    println!(
        "{TEST}: {accepted} connections, {cut} cut; {} runs; failures: {failures:?}; \
         values: {:?}; lock sections: {}",
        runs.len(),
        issued.iter().map(|(k, v)| (k, v.len())).collect::<Vec<_>>(),
        starts.len()
    );
    assert!(cut > 0, "no connection was cut (seed {seed})");
}

fn counter_name(counter: &str) -> &'static str {
    COUNTERS
        .iter()
        .map(|(name, _)| *name)
        .find(|name| *name == counter)
        .unwrap()
}

/// A failed run says why on one line: exactly one error (`idmint: error:`
/// in text, one JSON object with an `error` under `--json`, or `lock run`'s
/// one line on stopping its command), besides which stderr holds only
/// idmint's other one-line notes (the server it talked to, warnings).
fn one_line_failure(stderr: &str, code: i32) -> bool {
    let lines: Vec<&str> = stderr.lines().filter(|line| !line.is_empty()).collect();
    let notes_only = lines
        .iter()
        .all(|line| line.starts_with("idmint: ") || serde_json::from_str::<Value>(line).is_ok());
    let errors = lines
        .iter()
        .filter(|line| {
            line.starts_with("idmint: error:")
                || serde_json::from_str::<Value>(line).is_ok_and(|v| v.get("error").is_some())
                || (line.starts_with("idmint: lock ") && line.contains("stopping"))
                || line.contains("was lost while")
        })
        .count();
    notes_only && if code == 0 { errors == 0 } else { errors == 1 }
}
