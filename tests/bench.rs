//! `idmint bench`: it runs to the end against a real server, so that the
//! figures in docs/BENCHMARKS.md can be measured again.

use serde_json::Value;

use crate::support::service::block_on;
use crate::support::{self, assert_exit, idmint, run, stderr, stdout};

/// `idmint bench --only sequence --seconds 0.3 --json ARGS` for `test`,
/// which must succeed: its report.
fn sequence_bench(test: &str, args: &[&str]) -> Value {
    let output = run(idmint(test)
        .args(["bench", "--only", "sequence", "--seconds", "0.3", "--json"])
        .args(args));
    assert_exit(&output, 0);
    serde_json::from_str(&stdout(&output)).unwrap()
}

/// Every sequence mode is measured, each in several slices with a counter
/// made afresh for each (the prefix history must not refuse the second, nor
/// a striped counter's lanes), and hands out values; the bench leaves none
/// of its counters, lanes, claims or leases behind.
#[test]
fn the_sequence_bench_measures_every_mode_and_cleans_up() {
    const TEST: &str = "bench_sequence";
    block_on(support::database(TEST));
    let report = sequence_bench(TEST, &["--concurrency", "1,2"]);
    let results = report["results"].as_array().unwrap();
    // The yardsticks (the segment kind's allocator alone among them), then
    // each kind the registry lists, one value and a
    // block per take, then each kind that can be striped, on 2 and 4 lanes.
    let kinds = idmint::sequence::CounterKind::ALL
        .iter()
        .flat_map(|kind| [kind.to_string(), format!("{kind}_block")]);
    let striped = idmint::sequence::striping::STRIPABLE
        .iter()
        .flat_map(|kind| [format!("{kind}_stripes2"), format!("{kind}_stripes4")]);
    let modes: Vec<String> = ["raw_inc", "seed_cas", "segment_allocator"]
        .map(String::from)
        .into_iter()
        .chain(kinds)
        .chain(striped)
        .collect();
    for concurrency in [1, 2] {
        for mode in &modes {
            let result = results
                .iter()
                .find(|r| r["mode"] == mode.as_str() && r["concurrency"] == concurrency)
                .unwrap_or_else(|| panic!("no {mode} at {concurrency} in {report}"));
            assert!(result["ops"].as_u64().unwrap() > 0, "{result}");
        }
    }
    let left = block_on(async {
        let database = support::database_handle(TEST).await;
        let mut left = Vec::new();
        for collection in ["counters", "prefixes", "workers"] {
            left.extend(support::documents(&database, collection).await);
        }
        left
    });
    assert!(left.is_empty(), "the bench left {left:?}");
}

/// Given two deployments, the sequence bench also measures a counter
/// striped across both (half its clients preferring each), hands out values
/// from it, and leaves nothing behind in either.
#[test]
fn the_sequence_bench_measures_a_counter_across_two_deployments() {
    const TEST: &str = "bench_across";
    block_on(support::database(TEST));
    let us = support::OwnedServer::start(support::ServerConfig::default());
    let report = sequence_bench(
        TEST,
        &[
            "--concurrency",
            "2",
            "--uri",
            &format!("eu={}", support::uri()),
            "--uri",
            &format!("us={}", us.uri),
        ],
    );
    let results = report["results"].as_array().unwrap();
    for kind in idmint::sequence::striping::STRIPABLE {
        for stripes in [2, 4] {
            let mode = format!("{kind}_across2_stripes{stripes}");
            let result = results
                .iter()
                .find(|r| r["mode"] == mode.as_str())
                .unwrap_or_else(|| panic!("no {mode} in {report}"));
            assert!(result["ops"].as_u64().unwrap() > 0, "{result}");
        }
    }
    let left = block_on(async {
        let mut left = Vec::new();
        for uri in [support::uri(), us.uri.as_str()] {
            let client = mongodb::Client::with_uri_str(uri).await.unwrap();
            let database = client.database(&support::database_name(TEST));
            for collection in ["counters", "prefixes", "workers"] {
                left.extend(support::documents(&database, collection).await);
            }
        }
        left
    });
    assert!(left.is_empty(), "the bench left {left:?}");
}

/// Every format mode is measured, the standard IDs' beside the `uuid`
/// crate's, and the text names each ratio a figure in docs/BENCHMARKS.md
/// is read from.
#[test]
fn the_format_bench_measures_every_mode_and_its_yardstick() {
    const TEST: &str = "bench_format";
    let output =
        run(idmint(TEST).args(["bench", "--only", "format", "--seconds", "0.3", "--json"]));
    assert_exit(&output, 0);
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let results = report["results"].as_array().unwrap();
    for mode in [
        "format_wasm",
        "format_native",
        "format_base32",
        "format_uuidv7",
        "format_ulid",
        "uuid_crate_v7",
    ] {
        let result = results
            .iter()
            .find(|r| r["mode"] == mode)
            .unwrap_or_else(|| panic!("no {mode} in {report}"));
        assert!(result["ops"].as_u64().unwrap() > 0, "{result}");
    }
    let output = run(idmint(TEST).args(["bench", "--only", "format", "--seconds", "0.3"]));
    assert_exit(&output, 0);
    for ratio in [
        "format_wasm / format_native on one thread: ",
        "format_uuidv7 / uuid_crate_v7 on one thread: ",
        "format_ulid / uuid_crate_v7 on one thread: ",
    ] {
        assert!(stdout(&output).contains(ratio), "{}", stdout(&output));
    }
}

/// `series_txn` is measured at each concurrency, with how many runs each
/// commit took (one with one writer: nothing to conflict with), then
/// `series_reserve`, and the bench's own audit found each series whole,
/// every number confirmed (exit 0).
#[test]
fn the_series_bench_measures_commits_and_their_runs() {
    const TEST: &str = "bench_series";
    block_on(support::database(TEST));
    let output = run(idmint(TEST).args([
        "bench",
        "--only",
        "series",
        "--seconds",
        "0.3",
        "--concurrency",
        "1,4",
        "--json",
    ]));
    assert_exit(&output, 0);
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let results = report["results"].as_array().unwrap();
    let measured: Vec<(&str, u64)> = results
        .iter()
        .map(|result| {
            assert!(result["ops"].as_u64().unwrap() > 0, "{report}");
            (
                result["mode"].as_str().unwrap(),
                result["concurrency"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        measured,
        [
            ("series_txn", 1),
            ("series_txn", 4),
            ("series_reserve", 1),
            ("series_reserve", 4)
        ]
    );
    let runs = report["runs_per_commit"].as_array().unwrap();
    assert_eq!(runs[0], serde_json::json!([1, 1.0]), "{report}");
    assert!(runs[1][1].as_f64().unwrap() >= 1.0, "{report}");
}

/// `idmint bench --baseline tests/fixtures/bench/BASELINE --compare
/// tests/fixtures/bench/RUN ARGS`: two stored runs compared, nothing
/// measured (no database given either).
fn compare_runs(baseline: &str, run_file: &str, args: &[&str]) -> std::process::Output {
    let stored = |name: &str| {
        support::workspace_root()
            .join("tests/fixtures/bench")
            .join(name)
            .display()
            .to_string()
    };
    run(std::process::Command::new(env!("CARGO_BIN_EXE_idmint"))
        .env_remove("MONGODB_URI")
        .args(["bench", "--baseline", &stored(baseline)])
        .args(["--compare", &stored(run_file)])
        .args(args))
}

/// The lines of `output` that name a figure that fell.
fn falls(output: &std::process::Output) -> Vec<String> {
    stdout(output)
        .lines()
        .filter(|line| line.starts_with("fell: "))
        .map(str::to_string)
        .collect()
}

/// A run whose `segment` figure at one client fell by 92% against the
/// baseline, the others by 10% at most: that one figure is named, in text
/// and in JSON, and the exit code is 1.
#[test]
fn a_figure_that_fell_past_the_threshold_is_named_and_exits_1() {
    let output = compare_runs("baseline.json", "fell.json", &[]);
    assert_exit(&output, 1);
    let fell = falls(&output);
    assert_eq!(fell.len(), 1, "{}", stdout(&output));
    assert!(
        fell[0].starts_with("fell: segment at concurrency 1: "),
        "{fell:?}"
    );

    let output = compare_runs("baseline.json", "fell.json", &["--json"]);
    assert_exit(&output, 1);
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let fell = report["baseline"]["fell"].as_array().unwrap();
    assert_eq!(fell.len(), 1, "{report}");
    assert_eq!(fell[0]["mode"], "segment");
    assert_eq!(fell[0]["concurrency"], 1);
    assert_eq!(report["baseline"]["compared"], 4);
}

/// A run whose figures fell by 18.5% at most passes the default threshold
/// (20%), and fails one of 15%, which names the two that fell more.
#[test]
fn figures_within_the_threshold_pass_and_a_tighter_threshold_names_them() {
    let output = compare_runs("baseline.json", "held.json", &[]);
    assert_exit(&output, 0);
    assert!(falls(&output).is_empty(), "{}", stdout(&output));
    assert!(stdout(&output).contains("no figure fell"));

    let output = compare_runs("baseline.json", "held.json", &["--threshold", "15"]);
    assert_exit(&output, 1);
    let fell = falls(&output);
    assert_eq!(fell.len(), 2, "{fell:?}");
    assert!(
        fell[0].starts_with("fell: raw_inc at concurrency 1: "),
        "{fell:?}"
    );
    assert!(
        fell[1].starts_with("fell: segment at concurrency 8: "),
        "{fell:?}"
    );
}

/// A baseline that is not a run, one that cannot be read, and a threshold
/// that is no share are bad input (exit 2), said before anything runs.
#[test]
fn a_malformed_baseline_is_bad_input() {
    let output = compare_runs("malformed.json", "held.json", &[]);
    assert_exit(&output, 2);
    assert!(
        stderr(&output).contains("malformed.json"),
        "{}",
        stderr(&output)
    );
    assert!(
        stderr(&output).contains("not a benchmark run"),
        "{}",
        stderr(&output)
    );
    assert_exit(&compare_runs("no-such-run.json", "held.json", &[]), 2);
    assert_exit(&compare_runs("baseline.json", "malformed.json", &[]), 2);
    assert_exit(
        &compare_runs("baseline.json", "held.json", &["--threshold", "0"]),
        2,
    );
}
