//! A sixth kind of counter, `tally` (even numbers 2, 4, 6, ...), compiled
//! only into a CLI built with the `test-kind` feature: the proof that a kind
//! is its folder (`host/core/src/sequence/kinds/tally/`) and one line of the
//! registry. The CLI lists it, creates, takes from, shows and benchmarks it,
//! and the service serves it, none of them naming it; it stripes by a file
//! of its folder (`kinds/tally/lanes.rs`). `scripts/test.sh`
//! builds that CLI and names it in `IDMINT_TEST_KIND_BIN`; the binary users
//! get does not know the kind, and refuses a counter of it.

use std::process::Command;

use serde_json::Value;

use crate::support::service::{block_on, Service};
use crate::support::{self, assert_exit, idmint, run, stderr, stdout};

/// The CLI built with the test-only kind, set up like `support::idmint`.
fn idmint_with_tally(test: &str) -> Command {
    let binary = std::env::var("IDMINT_TEST_KIND_BIN").unwrap_or_else(|_| {
        panic!(
            "IDMINT_TEST_KIND_BIN is not set: scripts/test.sh builds the CLI with the \
             test-only kind (cargo build -p idmint-cli --features test-kind) and sets it"
        )
    });
    let plain = idmint(test);
    let mut command = Command::new(binary);
    for (key, value) in plain.get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    command
}

#[test]
fn a_kind_added_as_a_folder_and_a_registry_line_works_everywhere() {
    const TEST: &str = "test_kind";
    block_on(support::database(TEST));
    let tally = || idmint_with_tally(TEST);

    // Listed: the kinds' help comes from the registry.
    let help = run(tally().args(["counter", "create", "--help"]));
    assert_exit(&help, 0);
    assert!(
        stdout(&help).contains("tally: even numbers 2, 4, 6"),
        "{}",
        stdout(&help)
    );
    let kinds = run(tally().args(["counter", "--help"]));
    assert!(
        stdout(&kinds).contains("periodic, tally)"),
        "{}",
        stdout(&kinds)
    );

    // Created, with the settings rules of its own (it takes none).
    let created = run(tally().args([
        "counter", "create", "t", "--kind", "tally", "--prefix", "T-",
    ]));
    assert_exit(&created, 0);
    assert!(
        stdout(&created).contains("n:      0 (the next value is 2)"),
        "{}",
        stdout(&created)
    );
    let refused = run(tally().args(["counter", "create", "u", "--kind", "tally", "--start", "5"]));
    assert_exit(&refused, 2);
    assert!(
        stderr(&refused)
            .contains("start applies to autoinc and segment counters, not to tally ones"),
        "{}",
        stderr(&refused)
    );

    // Taken: raw values, and IDs from a policy that holds them; the
    // two-digit default cannot, and says what to use instead.
    let values = run(tally().args(["seq", "t", "--count", "3"]));
    assert_exit(&values, 0);
    assert_eq!(stdout(&values), "2\n4\n6\n");
    let ids = run(tally().args(["next", "t", "--count", "2", "--policy", "builtin:decimal"]));
    assert_exit(&ids, 0);
    assert_eq!(stdout(&ids), "T-000000008\nT-000000010\n");
    let unfit = run(tally().args(["next", "t"]));
    assert_exit(&unfit, 4);
    assert!(
        stderr(&unfit).contains("tally counter 't' hands out values up to"),
        "{}",
        stderr(&unfit)
    );

    // Shown.
    let shown = run(tally().args(["counter", "show", "t", "--json"]));
    assert_exit(&shown, 0);
    let state: Value = serde_json::from_str(&stdout(&shown)).unwrap();
    assert_eq!(
        (state["kind"].as_str(), state["n"].as_u64()),
        (Some("tally"), Some(10))
    );

    // Served: values, IDs, and no ranges (its values are not runs).
    let service = Service::spawn(tally(), &["--policy", "builtin:decimal"]);
    assert_eq!(
        service.get("/v1/counters/t/values?count=3").values(),
        [12, 14, 16]
    );
    let served = service.get("/v1/counters/t/ids?count=2");
    assert_eq!(served.status, 200, "{served:?}");
    assert_eq!(
        served.json()["ids"],
        serde_json::json!(["T-000000018", "T-000000020"])
    );
    let ranges = service.get("/v1/counters/t/ranges?count=2");
    assert_eq!(ranges.status, 409, "{ranges:?}");
    let (code, _) = service.terminate();
    assert_eq!(code, 0);

    // Benchmarked: a mode of each kind, so its two.
    let bench = run(tally().args([
        "bench",
        "--only",
        "sequence",
        "--seconds",
        "0.2",
        "--concurrency",
        "1",
        "--json",
    ]));
    assert_exit(&bench, 0);
    let report: Value = serde_json::from_str(&stdout(&bench)).unwrap();
    for mode in ["tally", "tally_block"] {
        let result = report["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|result| result["mode"] == mode)
            .unwrap_or_else(|| panic!("no {mode} in {report}"));
        assert!(result["ops"].as_u64().unwrap() > 0, "{result}");
    }

    // The binary users get does not know the kind, and takes nothing.
    let plain = run(idmint(TEST).args(["seq", "t"]));
    assert_exit(&plain, 2);
    assert!(
        stderr(&plain).contains("has kind \"tally\", which this idmint does not know"),
        "{}",
        stderr(&plain)
    );
    let after = run(tally().args(["counter", "show", "t", "--json"]));
    let state: Value = serde_json::from_str(&stdout(&after)).unwrap();
    assert_eq!(state["n"].as_u64(), Some(20));
}

#[test]
fn a_kind_whose_folder_says_what_its_lanes_are_stripes() {
    const TEST: &str = "test_kind_stripes";
    block_on(support::database(TEST));
    let tally = || idmint_with_tally(TEST);
    let seq = |count: &str| {
        let taken = run(tally().args(["seq", "s", "--count", count]));
        assert_exit(&taken, 0);
        stdout(&taken)
            .lines()
            .map(|line| line.parse::<u64>().unwrap())
            .collect::<Vec<u64>>()
    };
    let stripes = |set: &str| {
        let changed = run(tally().args(["counter", "stripes", "s", "--set", set]));
        assert_exit(&changed, 0);
    };

    // Unstriped first: 2, 4, 6.
    let created = run(tally().args(["counter", "create", "s", "--kind", "tally", "--raw"]));
    assert_exit(&created, 0);
    let mut values = seq("3");
    assert_eq!(values, [2, 4, 6]);

    // Striped into 2 lanes, then 3: each take from one lane (each process
    // starts at a lane of its own), every value even, above those the
    // counter handed out before, and never twice.
    stripes("2");
    for _ in 0..4 {
        values.extend(seq("4"));
    }
    stripes("3");
    for _ in 0..4 {
        values.extend(seq("4"));
    }
    let shown = run(tally().args(["counter", "show", "s", "--json"]));
    assert_exit(&shown, 0);
    let state: Value = serde_json::from_str(&stdout(&shown)).unwrap();
    assert_eq!(
        (state["kind"].as_str(), state["striped"]["modulus"].as_u64()),
        (Some("tally"), Some(3)),
        "{state}"
    );
    assert_eq!(values.len(), 3 + 8 * 4);
    assert!(
        values.iter().all(|value| *value > 0 && value % 2 == 0),
        "{values:?}"
    );
    assert!(values[3..].iter().all(|value| *value > 6), "{values:?}");
    let mut distinct = values.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), values.len(), "a value twice: {values:?}");
}
