//! The `idmint` binary end to end: exit codes, stderr, JSON, concurrency.

use std::collections::HashSet;
use std::io::Write;
use std::net::TcpListener;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use mongodb::bson::{doc, Document};

use crate::support::{self, assert_exit, counter_doc, run, stderr, stdout};

fn validate_stdin(test: &str, input: &str) -> Output {
    let mut child = support::idmint(test)
        .arg("validate")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// Eight `idmint next` processes on one counter at once: no duplicate, and
/// every ID passes `idmint validate`.
#[tokio::test]
async fn eight_concurrent_next_processes_never_duplicate() {
    const TEST: &str = "cli_eight_processes";
    support::database(TEST).await;
    assert_exit(
        &run(support::idmint(TEST).args(["counter", "create", "orders", "--prefix", "ORD-"])),
        0,
    );
    let children: Vec<_> = (0..8)
        .map(|_| {
            support::idmint(TEST)
                .args(["next", "orders", "--count", "60"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut ids = Vec::new();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert_exit(&output, 0);
        let lines: Vec<String> = stdout(&output).lines().map(str::to_string).collect();
        assert_eq!(lines.len(), 60);
        assert!(
            lines.windows(2).all(|pair| pair[0] < pair[1]),
            "each process sees increasing IDs"
        );
        ids.extend(lines);
    }
    let distinct: HashSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), 480, "duplicate IDs across processes");
    assert!(
        ids.iter()
            .all(|id| id.starts_with("ORD-") && id.len() == 26),
        "{:?}",
        &ids[..3]
    );
    let validated = validate_stdin(TEST, &ids.join("\n"));
    assert_exit(&validated, 0);
    assert_eq!(
        stdout(&validated)
            .lines()
            .filter(|line| line.contains(": ok"))
            .count(),
        480
    );
}

#[test]
fn validate_names_the_reason_for_each_invalid_id() {
    let output = run(support::idmint("cli_validate").args([
        "validate",
        "ORD-2026112203145712345601",
        "2026112203145712345",
        "ORD-20261122031457123456",
        "ORD-2026132203145712345601",
        "ORD-2023022903145712345601",
        "ORD-20261122031457x2345601",
        "O R-2026112203145712345601",
    ]));
    assert_exit(&output, 1);
    let text = stdout(&output);
    let line = |id: &str| {
        text.lines()
            .find(|line| line.starts_with(&format!("{id}:")))
            .unwrap()
            .to_string()
    };
    assert!(
        line("ORD-2026112203145712345601").contains(": ok"),
        "{text}"
    );
    assert!(line("2026112203145712345").contains("length"), "{text}");
    // Long enough for the 22 digits, so its first two bytes are the prefix.
    assert!(
        line("ORD-20261122031457123456").contains("'D' at byte 2"),
        "{text}"
    );
    assert!(
        line("ORD-2026132203145712345601").contains("month 13"),
        "{text}"
    );
    // The reason, not the ID (which contains "29" itself).
    assert!(
        line("ORD-2023022903145712345601")
            .ends_with(": invalid: impossible date: day 29 of February 2023"),
        "{text}"
    );
    assert!(
        line("ORD-20261122031457x2345601").contains("digit"),
        "{text}"
    );
    assert!(
        line("O R-2026112203145712345601").contains("prefix"),
        "{text}"
    );
}

#[test]
fn validate_json_and_expected_prefix() {
    let output = run(support::idmint("cli_validate_json").args([
        "validate",
        "--json",
        "--prefix",
        "INV-",
        "ORD-2026112203145712345601",
    ]));
    assert_exit(&output, 1);
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["valid"], false);
    assert!(
        report["results"][0]["error"]
            .as_str()
            .unwrap()
            .contains("INV-"),
        "{report}"
    );
    let ok = run(support::idmint("cli_validate_json").args([
        "validate",
        "--json",
        "X2026112203145712345601",
    ]));
    assert_exit(&ok, 0);
    let report: serde_json::Value = serde_json::from_str(&stdout(&ok)).unwrap();
    assert_eq!(report["results"][0]["parts"]["sequence"], 1);
    assert_eq!(report["results"][0]["parts"]["prefix"], "X");
}

#[test]
fn validate_without_ids_is_a_usage_error() {
    let output = validate_stdin("cli_validate_empty", "\n\n");
    assert_exit(&output, 2);
    assert!(
        stderr(&output).contains("no IDs given"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test]
async fn an_unknown_counter_exits_2_naming_it() {
    const TEST: &str = "cli_unknown_counter";
    support::database(TEST).await;
    for args in [
        ["next", "missing-counter"],
        ["seq", "missing-counter"],
        ["counter", "show"],
    ] {
        let mut command = support::idmint(TEST);
        command.args(args);
        if args[0] == "counter" {
            command.arg("missing-counter");
        }
        let output = run(&mut command);
        assert_exit(&output, 2);
        assert!(
            stderr(&output).contains("counter 'missing-counter' does not exist"),
            "{}",
            stderr(&output)
        );
    }
    assert!(counter_doc(TEST, "missing-counter").await.is_none());
}

#[tokio::test]
async fn injection_shaped_names_are_refused_before_any_query() {
    const TEST: &str = "cli_bad_names";
    for bad in ["{\"$gt\":\"\"}", "$where", "a b", &"x".repeat(200)] {
        let output = run(support::idmint(TEST).args(["next", bad]));
        assert_exit(&output, 2);
        assert!(
            stderr(&output).contains("invalid counter name"),
            "{bad}: {}",
            stderr(&output)
        );
    }
}

#[tokio::test]
async fn a_corrupt_counter_exits_2_and_is_not_repaired() {
    const TEST: &str = "cli_corrupt";
    let database = support::database(TEST).await;
    let corrupt = doc! { "_id": "broken", "val": "seven", "maxval": 99 };
    database
        .collection::<Document>("counters")
        .insert_one(&corrupt)
        .await
        .unwrap();
    let output = run(support::idmint(TEST).args(["next", "broken"]));
    assert_exit(&output, 2);
    assert!(
        stderr(&output).contains("counter 'broken' is corrupt: val is the string \"seven\""),
        "{}",
        stderr(&output)
    );
    assert_eq!(counter_doc(TEST, "broken").await.unwrap(), corrupt);
}

#[tokio::test]
async fn a_bad_prefix_or_a_too_small_policy_consumes_no_value() {
    const TEST: &str = "cli_preflight";
    support::database(TEST).await;
    assert_exit(
        &run(support::idmint(TEST).args(["counter", "create", "c"])),
        0,
    );
    // A prefix the counter does not own is refused before the policy is asked.
    let output = run(support::idmint(TEST).args(["next", "c", "--prefix", "no spaces"]));
    assert_exit(&output, 2);
    assert!(
        stderr(&output).contains("counter 'c' does not own prefix \"no spaces\""),
        "{}",
        stderr(&output)
    );
    let output =
        run(support::idmint(TEST).args(["counter", "create", "d", "--prefix", "bad/prefix"]));
    assert_exit(&output, 2);
    assert!(
        counter_doc(TEST, "d").await.is_none(),
        "nothing is written for a refused prefix"
    );

    assert_exit(
        &run(support::idmint(TEST).args([
            "counter", "create", "big", "--max", "999", "--prefix", "BIG-",
        ])),
        0,
    );
    let output = run(support::idmint(TEST).args(["next", "big"]));
    assert_exit(&output, 4);
    assert!(
        stderr(&output).contains("holds 100 sequence values"),
        "{}",
        stderr(&output)
    );
    for name in ["c", "big"] {
        assert_eq!(
            counter_doc(TEST, name)
                .await
                .unwrap()
                .get_i64("val")
                .unwrap(),
            0,
            "{name} was consumed"
        );
    }
}

#[test]
fn an_unreachable_server_fails_fast_with_the_uri_redacted() {
    // A port that was free a moment ago: nothing listens there.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let uri = format!("mongodb://admin:hunter2@127.0.0.1:{port}/?directConnection=true");
    let started = Instant::now();
    let output = run(support::idmint("cli_unreachable")
        .args(["seq", "c", "--server-timeout", "1"])
        .env("MONGODB_URI", &uri));
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "took {:?}",
        started.elapsed()
    );
    assert_exit(&output, 3);
    let text = stderr(&output);
    assert!(!text.contains("hunter2"), "password leaked: {text}");
    assert!(
        text.contains(&format!("mongodb://admin:***@127.0.0.1:{port}/")),
        "{text}"
    );
    // Said the way a person reads it: what failed, what to check, how long
    // it waited; not the driver's topology dump, and once.
    assert!(
        text.contains("no usable server answered in time: connection refused; is mongod running there, on that port?"),
        "{text}"
    );
    assert!(text.contains("waited for up to 1 s"), "{text}");
    assert!(!text.contains("Topology"), "{text}");
    assert_eq!(text.matches("connection refused").count(), 1, "{text}");
    // --json keeps the driver's detail.
    let json = run(support::idmint("cli_unreachable")
        .args(["--json", "seq", "c", "--server-timeout", "1"])
        .env("MONGODB_URI", &uri));
    let error: serde_json::Value = serde_json::from_str(stderr(&json).trim()).unwrap();
    assert!(error["error"]["detail"]
        .as_str()
        .unwrap()
        .contains("Topology"));
}

#[test]
fn a_malformed_uri_is_a_usage_error_with_the_password_hidden() {
    let output = run(support::idmint("cli_bad_uri")
        .args(["status"])
        .env("MONGODB_URI", "mongodb://u:pw@@/x?w=nope"));
    assert_exit(&output, 2);
    assert!(!stderr(&output).contains(":pw"), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("invalid connection string"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test]
async fn seq_and_next_print_json_when_asked() {
    const TEST: &str = "cli_json";
    support::database(TEST).await;
    let created = run(support::idmint(TEST).args([
        "counter", "create", "j", "--max", "5", "--prefix", "J", "--json",
    ]));
    assert_exit(&created, 0);
    let state: serde_json::Value = serde_json::from_str(&stdout(&created)).unwrap();
    assert_eq!(
        (state["name"].as_str(), state["maxval"].as_u64()),
        (Some("j"), Some(5))
    );
    // JSON Lines: one object per value, printed as it is handed out.
    let seq = run(support::idmint(TEST).args(["seq", "j", "--count", "7", "--json"]));
    assert_exit(&seq, 0);
    let values: Vec<serde_json::Value> = stdout(&seq)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(
        values
            .iter()
            .map(|v| v["value"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [1, 2, 3, 4, 5, 0, 1]
    );
    assert!(values.iter().all(|v| v["counter"] == "j"));
    let next = run(support::idmint(TEST).args(["next", "j", "--json", "--prefix", "J"]));
    assert_exit(&next, 0);
    let next: serde_json::Value = serde_json::from_str(stdout(&next).trim()).unwrap();
    assert!(next["id"].as_str().unwrap().ends_with("02"), "{next}");
    assert_eq!(next["policy"], "default");
    let shown = run(support::idmint(TEST).args(["counter", "show", "j", "--json"]));
    let shown: serde_json::Value = serde_json::from_str(&stdout(&shown)).unwrap();
    assert_eq!(shown["val"], 2);
    assert!(
        shown["last_issued_at"].as_str().unwrap().ends_with('Z'),
        "{shown}"
    );
}

#[test]
fn errors_are_json_with_json() {
    let output = run(support::idmint("cli_json_error").args(["next", "$bad", "--json"]));
    assert_exit(&output, 2);
    let error: serde_json::Value = serde_json::from_str(stderr(&output).trim()).unwrap();
    assert_eq!(error["error"]["exit_code"], 2);
    assert_eq!(error["error"]["class"], "bad-input");
    assert!(error["error"]["message"]
        .as_str()
        .unwrap()
        .contains("invalid counter name"));
}

/// Short commands exit cleanly: each shuts its client down before the
/// runtime ends (a runtime torn down under the driver's tasks printed a
/// panic now and then). 48 runs, 16 at a time, each with an empty stderr.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_short_commands_at_once_exit_with_an_empty_stderr() {
    const TEST: &str = "short_commands_clean_exit";
    support::database(TEST).await;
    assert_exit(
        &run(support::idmint(TEST).args(["counter", "create", "c", "--max", "1000000"])),
        0,
    );
    let outputs = tokio::task::spawn_blocking(|| {
        let mut outputs = Vec::new();
        for _ in 0..3 {
            outputs.extend(support::run_at_once(
                TEST,
                &["seq", "c", "--count", "3"],
                16,
            ));
        }
        outputs
    })
    .await
    .unwrap();
    let mut values = HashSet::new();
    for output in &outputs {
        assert_exit(output, 0);
        assert_eq!(stderr(output), "", "a clean exit prints nothing on stderr");
        for line in stdout(output).lines() {
            assert!(values.insert(line.to_string()));
        }
    }
    assert_eq!(values.len(), 48 * 3);
}

/// `validate --layout` reads a raw snowflake value (what `seq` prints) with
/// the layout alone, and prints the fields the base32 path prints; a bare
/// number of more than 63 bits is invalid, naming why.
#[test]
fn validate_decodes_a_raw_snowflake_value_with_a_layout() {
    // 2026-01-02T03:04:05.678Z, worker 5, sequence 7, in layout 41,10,12.
    let output = run(support::idmint("cli_validate_raw").args([
        "validate",
        "132680287741038599",
        "9223372036854775808",
        "--layout",
        "41,10,12",
    ]));
    assert_exit(&output, 1);
    assert_eq!(
        stdout(&output),
        "132680287741038599: ok (prefix \"\", snowflake 132680287741038599: issued at \
         2026-01-02T03:04:05.678000Z, worker 5, sequence 7)\n\
         9223372036854775808: invalid: not a snowflake value of layout 41,10,12 in ms from \
         2025-01-01: more than 63 bits\n"
    );
    let json = run(support::idmint("cli_validate_raw").args([
        "--json",
        "validate",
        "132680287741038599",
        "--layout",
        "41,10,12",
        "--epoch",
        "2025-06-01",
    ]));
    assert_exit(&json, 0);
    let report: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    let result = &report["results"][0];
    assert_eq!(result["snowflake"]["worker"], 5, "{report}");
    assert_eq!(result["snowflake"]["seq"], 7, "{report}");
    // Another epoch moves the time, not the fields.
    assert_eq!(
        result["snowflake"]["issued_at"], "2026-06-02T03:04:05.678000Z",
        "{report}"
    );
    assert_eq!(result["parts"]["sequence"], 132680287741038599_u64);
}

/// The help names every kind of counter the library has: the list is the
/// library's own, so a kind added there and left out of the help fails.
#[test]
fn help_names_every_counter_kind() {
    let kinds = idmint::sequence::CounterKind::ALL;
    assert!(!kinds.is_empty(), "the library lists no kind");
    for args in [
        &["--help"][..],
        &["counter", "--help"],
        &["counter", "create", "--help"],
    ] {
        let output = run(support::idmint("cli_help").args(args));
        assert_exit(&output, 0);
        let text = stdout(&output);
        for kind in kinds.iter().map(|kind| kind.as_str()) {
            assert!(text.contains(kind), "idmint {args:?} omits {kind}:\n{text}");
        }
    }
}

/// `policy check --maxval N` refuses a policy too small for such a counter
/// without naming a made-up counter ('--maxval').
#[test]
fn policy_check_maxval_names_no_made_up_counter() {
    let output = run(support::idmint("cli_policy_check_maxval").args([
        "policy",
        "check",
        crate::support::fixture_policy("check-digit"),
        "--maxval",
        "1000",
    ]));
    assert_exit(&output, 4);
    let text = stderr(&output);
    assert!(
        text.contains(
            "policy 'check-digit' holds 1000 sequence values (0 to 999), but a cyclic counter \
             hands out values up to 1000"
        ),
        "{text}"
    );
    assert!(!text.contains("'--maxval'"), "{text}");
}

/// `policy check` takes a built-in policy as `--policy` does.
#[test]
fn policy_check_takes_a_builtin_policy() {
    let output = run(support::idmint("cli_policy_check_builtin").args([
        "policy",
        "check",
        "builtin:base32",
    ]));
    assert_exit(&output, 0);
    assert!(
        stdout(&output).starts_with("ok: builtin:base32 passes the activation check"),
        "{}",
        stdout(&output)
    );
    let unknown = run(support::idmint("cli_policy_check_builtin").args([
        "policy",
        "check",
        "builtin:nosuch",
    ]));
    assert_exit(&unknown, 2);
    assert!(stderr(&unknown).contains("nosuch"), "{}", stderr(&unknown));
}

/// A missing policy file is named with its reason once, in text and JSON.
#[test]
fn a_missing_policy_file_is_reported_once() {
    let output =
        run(support::idmint("cli_missing_file").args(["policy", "check", "no-such-policy.wasm"]));
    assert_exit(&output, 4);
    assert_eq!(
        stderr(&output),
        "idmint: error: cannot read policy file no-such-policy.wasm: No such file or directory (os error 2)\n"
    );
    let json = run(support::idmint("cli_missing_file").args([
        "--json",
        "policy",
        "check",
        "no-such-policy.wasm",
    ]));
    let error: serde_json::Value = serde_json::from_str(stderr(&json).trim()).unwrap();
    for field in ["message", "detail"] {
        let text = error["error"][field].as_str().unwrap();
        assert_eq!(text.matches("No such file").count(), 1, "{field}: {text}");
    }
}

/// `workers` lists the leases of a snowflake counter only: another kind, or
/// no counter, is a usage error naming it.
#[tokio::test]
async fn workers_refuses_a_counter_that_is_not_snowflake() {
    const TEST: &str = "cli_workers_kind";
    support::database(TEST).await;
    assert_exit(
        &run(support::idmint(TEST).args(["counter", "create", "inv", "--kind", "autoinc"])),
        0,
    );
    let output = run(support::idmint(TEST).args(["workers", "inv"]));
    assert_exit(&output, 2);
    assert_eq!(stdout(&output), "");
    assert!(
        stderr(&output).contains("counter 'inv' is an autoinc counter, not a snowflake one"),
        "{}",
        stderr(&output)
    );
    let missing = run(support::idmint(TEST).args(["workers", "nosuch"]));
    assert_exit(&missing, 2);
    assert!(
        stderr(&missing).contains("counter 'nosuch' does not exist"),
        "{}",
        stderr(&missing)
    );
    // A snowflake counter with no lease yet is listed, empty.
    assert_exit(
        &run(support::idmint(TEST).args([
            "counter",
            "create",
            "ids",
            "--kind",
            "snowflake",
            "--raw",
        ])),
        0,
    );
    let empty = run(support::idmint(TEST).args(["workers", "ids"]));
    assert_exit(&empty, 0);
    assert!(
        stdout(&empty).contains("(no leases yet)"),
        "{}",
        stdout(&empty)
    );
    // A striped counter's document names no kind of its own: its lanes'
    // kind is read from its map, the same rule either way.
    for (name, kind) in [("striped-inv", "autoinc"), ("striped-ids", "snowflake")] {
        let args = [
            "counter",
            "create",
            name,
            "--kind",
            kind,
            "--stripes",
            "2",
            "--raw",
        ];
        assert_exit(&run(support::idmint(TEST).args(args)), 0);
    }
    let striped_autoinc = run(support::idmint(TEST).args(["workers", "striped-inv"]));
    assert_exit(&striped_autoinc, 2);
    assert!(
        stderr(&striped_autoinc)
            .contains("counter 'striped-inv' is an autoinc counter, not a snowflake one"),
        "{}",
        stderr(&striped_autoinc)
    );
    let striped_snowflake = run(support::idmint(TEST).args(["workers", "striped-ids"]));
    assert_exit(&striped_snowflake, 0);
    assert!(
        stdout(&striped_snowflake).contains("(no leases yet)"),
        "{}",
        stdout(&striped_snowflake)
    );
}

/// A usage line shows the flags to type, not the ones the environment
/// (`MONGODB_URI`, `IDMINT_DB`) or a default gave; without any connection
/// string, a command that needs one says how to give it.
#[test]
fn usage_lines_show_no_flag_the_environment_gives() {
    // support::idmint sets MONGODB_URI and IDMINT_DB.
    let output = run(support::idmint("cli_usage").args(["next", "c", "--stream", "--count", "3"]));
    assert_exit(&output, 2);
    let text = stderr(&output);
    assert!(
        text.contains("Usage: idmint next [OPTIONS] <NAME>\n"),
        "{text}"
    );
    assert!(
        !text.contains("--uri <URI>") && !text.contains("--db <DB>"),
        "{text}"
    );
    let help = run(support::idmint("cli_usage").args(["seq", "--help"]));
    assert!(
        stdout(&help).contains("Usage: idmint seq [OPTIONS] <NAME>\n"),
        "{}",
        stdout(&help)
    );
    let no_uri = run(support::idmint("cli_usage")
        .env_remove("MONGODB_URI")
        .args(["seq", "c"]));
    assert_exit(&no_uri, 2);
    assert_eq!(
        stderr(&no_uri),
        "idmint: error: no MongoDB connection string: pass --uri or set MONGODB_URI\n"
    );
}

/// An error of idmint's own that exits 3 (every worker id leased) names no
/// server: the `server:` line, with how long a server was waited for, is for
/// errors the server or the connection caused (an_unreachable_server_...).
#[tokio::test]
async fn an_error_not_from_the_server_names_no_server() {
    const TEST: &str = "cli_no_server_line";
    support::database(TEST).await;
    assert_exit(
        &run(support::idmint(TEST).args([
            "counter",
            "create",
            "tiny",
            "--kind",
            "snowflake",
            "--layout",
            "52,1,10",
        ])),
        0,
    );
    // Two holders, each blocked writing to a pipe nobody reads once it has
    // printed its first value: both worker ids are leased, for 60 s.
    let mut holders: Vec<support::Seq> = (0..2)
        .map(|_| support::Seq::start(TEST, &["tiny", "--count", "10000000", "--lease-ttl", "60"]))
        .collect();
    for holder in &mut holders {
        holder.next_value().expect("a holder printed a value");
    }
    let refused = run(support::idmint(TEST).args(["seq", "tiny"]));
    assert_exit(&refused, 3);
    let text = stderr(&refused);
    assert!(text.contains("is leased and live"), "{text}");
    assert!(!text.contains("idmint: server:"), "{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
    for mut holder in holders {
        holder.child.kill().unwrap();
        holder.child.wait().unwrap();
    }
}

/// `idmint next c --stream --policy builtin:decimal` against `uri`, once it
/// has printed its first ID: the process (stderr piped), what it prints
/// next, and that first ID.
fn decimal_stream(
    test: &str,
    uri: &str,
) -> (
    std::process::Child,
    std::sync::mpsc::Receiver<String>,
    String,
) {
    let mut stream = support::idmint(test)
        .env("MONGODB_URI", uri)
        .args(["next", "c", "--stream", "--policy", "builtin:decimal"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let printed = support::process::read_lines(stream.stdout.take().unwrap());
    let Ok(first) = printed.recv_timeout(Duration::from_secs(60)) else {
        let _ = stream.kill();
        let output = stream.wait_with_output().unwrap();
        panic!("the stream printed nothing: {}", stderr(&output));
    };
    (stream, printed, first)
}

/// Issue 31: Ctrl-C while `next --stream` waits for a take the database
/// has already applied (its answer held by a proxy, so the timing is
/// certain) prints that take's IDs before it exits: every value the
/// counter moved past is printed, none dropped. Before, the take was
/// dropped with its values, a gap. An autoinc counter, so that its `seq`
/// counts every value taken; the answer is released once the stream has
/// acted on the interrupt (said so, or exited).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_during_a_take_prints_its_ids_before_next_stream_exits() {
    const TEST: &str = "cli_stream_ctrl_c_take";
    support::database(TEST).await;
    assert_exit(
        &run(support::idmint(TEST).args(["counter", "create", "c", "--kind", "autoinc"])),
        0,
    );
    let proxy = crate::support::fault_proxy::FaultProxy::start();
    // Heartbeats every ten minutes: the only answers on the way are takes'.
    let (mut stream, printed, first) = decimal_stream(
        TEST,
        &format!("{}&heartbeatFrequencyMS=600000", proxy.uri()),
    );
    let mut ids = vec![first];

    proxy.hold_answers();
    let start = Instant::now();
    while proxy.held_answer_bytes() == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no take reached the server"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    support::process::signal(stream.id(), libc::SIGINT);
    // The answer is released only once the stream has acted on the
    // interrupt: said it finishes the take, or (the gap) exited.
    let errors = support::process::read_lines(stream.stderr.take().unwrap());
    let mut stderr_lines = Vec::new();
    let start = Instant::now();
    while !stderr_lines
        .iter()
        .any(|line: &String| line.starts_with("idmint: interrupted"))
        && stream.try_wait().unwrap().is_none()
    {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the stream did not act on SIGINT: {stderr_lines:?}"
        );
        if let Ok(line) = errors.recv_timeout(Duration::from_millis(20)) {
            stderr_lines.push(line);
        }
    }
    proxy.release_answers();
    let status = stream.wait().unwrap();
    ids.extend(printed.iter());
    stderr_lines.extend(errors.iter());
    assert_eq!(status.code(), Some(0), "stderr: {stderr_lines:?}");

    let unique: HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "an ID printed twice");
    let taken = counter_doc(TEST, "c")
        .await
        .unwrap()
        .get_i64("seq")
        .unwrap();
    assert_eq!(
        ids.len() as i64,
        taken,
        "the counter moved past {taken} values, {} were printed",
        ids.len()
    );
}

/// A stream cut off from the database (a proxy that stops forwarding while
/// its connections stay open) does not wait for ever on a take: the
/// driver's monitor finds the server silent and ends the connection in
/// use, and the stream exits 3 saying the connection was interrupted and
/// that the take may have been applied (a gap, never a repeat). The soak
/// once seemed to show CLI takers hanging; they were not (the harness had
/// run out of file descriptors), and this holds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_off_from_the_database_ends_instead_of_waiting_for_ever() {
    const TEST: &str = "cli_stream_partitioned";
    support::database(TEST).await;
    assert_exit(
        &run(support::idmint(TEST).args(["counter", "create", "c", "--kind", "autoinc"])),
        0,
    );
    let proxy = crate::support::fault_proxy::FaultProxy::start();
    // Heartbeats every second, so that the monitor notices soon.
    let (mut stream, _printed, _first) =
        decimal_stream(TEST, &format!("{}&heartbeatFrequencyMS=1000", proxy.uri()));
    proxy.partition();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = stream.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = stream.kill();
            panic!("the partitioned stream was still waiting after 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let errors: Vec<String> = support::process::read_lines(stream.stderr.take().unwrap())
        .iter()
        .collect();
    assert_eq!(status.code(), Some(3), "stderr: {errors:?}");
    assert!(
        errors
            .iter()
            .any(|line| line.contains("the connection was interrupted")
                || line.contains("no usable server answered")),
        "stderr: {errors:?}"
    );
}

/// `idmint seq` prints what makes a value unique where its kind's values
/// repeat: a cyclic counter's server-decided timestamp before each value,
/// so that the values of a counter that wraps stay unique as printed (and
/// `timestamp_micros` with `--json`); an autoinc counter's values alone.
#[test]
fn seq_prints_a_cyclic_value_with_the_timestamp_that_makes_it_unique() {
    const TEST: &str = "cli_seq_cyclic";
    support::service::block_on(support::database(TEST));
    support::create(TEST, "wraps", &["--max", "2"]);
    support::create(TEST, "plain", &["--kind", "autoinc", "--raw"]);
    let out = run(support::idmint(TEST).args(["seq", "wraps", "--count", "7"]));
    assert_exit(&out, 0);
    let lines: Vec<(u64, u64)> = stdout(&out)
        .lines()
        .map(|line| {
            let (timestamp, value) = line.split_once(' ').expect("TIMESTAMP VALUE");
            (timestamp.parse().unwrap(), value.parse().unwrap())
        })
        .collect();
    // Seven values of a cycle of three: values repeat, pairs do not.
    assert_eq!(lines.len(), 7);
    assert!(
        lines
            .iter()
            .map(|(_, value)| value)
            .collect::<HashSet<_>>()
            .len()
            < 7
    );
    assert_eq!(lines.iter().collect::<HashSet<_>>().len(), 7, "{lines:?}");
    let json = run(support::idmint(TEST).args(["seq", "wraps", "--json"]));
    let line: serde_json::Value = serde_json::from_str(stdout(&json).trim()).unwrap();
    assert!(
        line["timestamp_micros"].as_u64().unwrap() > lines[6].0,
        "{line}"
    );
    let plain = run(support::idmint(TEST).args(["seq", "plain", "--count", "2"]));
    assert_eq!(stdout(&plain), "1\n2\n");
}
