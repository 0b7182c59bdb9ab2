//! The periodic kind against a server whose clock the test holds: libfaketime
//! under the server reads its time from a file at every call, so the test
//! freezes `$$NOW`, moves it across a year boundary and steps it back. The
//! server's clock decides the period; no value is handed out twice within a
//! period, whatever that clock does, from one process, eight at once, or the
//! stored JavaScript twin beside the host.

use std::collections::BTreeSet;

use crate::support::{self, assert_exit, idmint_on, run, stderr, stdout, FakeClockServer, Seq};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_clock_decides_the_period_frozen_stepped_back_and_in_a_zone() {
    // TZ of the test process itself does not matter: the server decides.
    let clock = FakeClockServer::start("2026-12-31 23:00:00");
    for (name, zone) in [
        ("inv", "UTC"),
        ("paris", "Europe/Paris"),
        ("lagos", "Africa/Lagos"),
    ] {
        let prefix = format!("{}-", name.to_uppercase());
        assert_exit(
            &run(clock.idmint("periodic").args([
                "counter",
                "create",
                name,
                "--kind",
                "periodic",
                "--zone",
                zone,
                "--prefix",
                &prefix,
                "--policy",
                "builtin:decimal",
            ])),
            0,
        );
    }
    // A frozen clock: the same period, values still unique and increasing.
    let frozen = run(clock
        .idmint("periodic")
        .args(["seq", "inv", "--count", "3"]));
    assert_exit(&frozen, 0);
    assert_eq!(
        support::period_value_pairs(&stdout(&frozen)),
        [("2026".into(), 1), ("2026".into(), 2), ("2026".into(), 3)]
    );
    // 23:00 UTC on 31 December is already next year in Paris (UTC+1).
    let paris = run(clock.idmint("periodic").args(["seq", "paris"]));
    assert_eq!(
        support::period_value_pairs(&stdout(&paris)),
        [("2027".into(), 1)],
        "{}",
        stderr(&paris)
    );

    // Across the boundary: the values restart at 1, and the decimal policy
    // prints the period.
    clock.freeze("2027-01-01 00:00:01");
    let next_year = run(clock.idmint("periodic").args([
        "next",
        "inv",
        "--count",
        "2",
        "--policy",
        "builtin:decimal",
    ]));
    assert_exit(&next_year, 0);
    assert_eq!(
        stdout(&next_year),
        "INV-2027-000000001\nINV-2027-000000002\n"
    );

    // Stepped back an hour: the counter stays in 2027 and goes on; nothing
    // of 2026 or 2027 is handed out twice.
    clock.freeze("2026-12-31 23:59:59");
    let back = run(clock
        .idmint("periodic")
        .args(["seq", "inv", "--count", "2"]));
    assert_eq!(
        support::period_value_pairs(&stdout(&back)),
        [("2027".into(), 3), ("2027".into(), 4)]
    );
    // And a UTC+1 counter that has not moved since stays in its 2027.
    let lagos = run(clock.idmint("periodic").args(["seq", "lagos"]));
    assert_eq!(
        support::period_value_pairs(&stdout(&lagos)),
        [("2027".into(), 1)]
    );

    // The stored JavaScript twin shares the counter: it goes on where the
    // host left off, and the host after it.
    assert_exit(&run(clock.idmint("periodic").args(["install"])), 0);
    let shell = run(&mut support::mongosh::shell_on(
        &clock.server.uri,
        "periodic",
        "print(JSON.stringify(getNextPeriodic('inv', 2)))",
    ));
    assert_exit(&shell, 0);
    assert!(
        stdout(&shell).contains(r#"{"period":"2027","values":[5,6]}"#),
        "{}",
        stdout(&shell)
    );
    let after = run(clock.idmint("periodic").args(["seq", "inv"]));
    assert_eq!(
        support::period_value_pairs(&stdout(&after)),
        [("2027".into(), 7)]
    );
}

/// Eight processes take from one periodic counter while the server's clock
/// crosses into the next year under them (the crossing made certain: every
/// process has handed out a value of the old year before the clock moves):
/// no (period, value) twice, each process's pairs increasing, each period's
/// values 1..=n with no gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_processes_across_a_period_boundary_never_repeat_a_value() {
    // More than a pipe buffer holds (64 KiB) at about 8 bytes a line, so
    // that every process is still running when the clock moves.
    const PER_PROCESS: u64 = 12_000;
    let clock = FakeClockServer::start("2030-12-31 23:59:00");
    assert_exit(
        &run(clock
            .idmint("periodic")
            .args(["counter", "create", "p", "--kind", "periodic", "--raw"])),
        0,
    );
    let count = PER_PROCESS.to_string();
    let uri = clock.server.uri.clone();
    let (before, after) = tokio::task::spawn_blocking(move || {
        let mut processes: Vec<Seq> = (0..8)
            .map(|_| {
                let mut command = idmint_on(&uri, "periodic");
                command.args(["seq", "p", "--count", &count]);
                Seq::spawn(command)
            })
            .collect();
        // One line from each: all eight have taken values in 2030.
        let before: Vec<String> = processes
            .iter_mut()
            .map(|process| process.next_line().expect("a first value"))
            .collect();
        (processes, before)
    })
    .await
    .map(|(mut processes, before)| {
        set_clock(&clock, "2031-01-01 00:00:05");
        let after: Vec<Vec<String>> = processes
            .iter_mut()
            .map(|process| {
                let lines: Vec<String> = std::iter::from_fn(|| process.next_line()).collect();
                assert!(process.child.wait().unwrap().success());
                lines
            })
            .collect();
        (before, after)
    })
    .unwrap();
    let mut all = BTreeSet::new();
    let mut years = BTreeSet::new();
    for (first, rest) in before.iter().zip(&after) {
        assert!(first.starts_with("2030 "), "{first}");
        let mut process: Vec<(String, u64)> = Vec::new();
        for line in std::iter::once(first).chain(rest) {
            let (period, value) = line.split_once(' ').unwrap();
            years.insert(period.to_string());
            process.push((period.to_string(), value.parse().unwrap()));
        }
        assert_eq!(process.len() as u64, PER_PROCESS);
        assert!(
            process.windows(2).all(|pair| pair[0] < pair[1]),
            "a process's pairs must increase"
        );
        for pair in process {
            assert!(all.insert(pair.clone()), "{pair:?} was handed out twice");
        }
    }
    assert_eq!(
        years,
        BTreeSet::from(["2030".to_string(), "2031".to_string()])
    );
    for year in years {
        let values: Vec<u64> = all
            .iter()
            .filter(|(p, _)| *p == year)
            .map(|(_, v)| *v)
            .collect();
        assert_eq!(
            values,
            (1..=values.len() as u64).collect::<Vec<_>>(),
            "{year}: a gap or a repeat"
        );
    }
}

fn set_clock(clock: &FakeClockServer, frozen: &str) {
    clock.freeze(frozen);
}
