//! Traces: each request of `serve` and each command of the CLI runs in a
//! span naming the counter it served, its kind, the round trips it made to
//! the database and the servers they went to, on its log lines (serve's
//! JSON logs; the CLI's on stderr when `RUST_LOG` asks).

use std::process::Stdio;

use serde_json::Value;

use crate::support::service::{listening, request, DEADLINE};
use crate::support::{self, assert_exit, create, idmint, run, stderr};

#[test]
fn a_command_s_span_names_its_counter_kind_and_round_trips() {
    const TEST: &str = "traces_command";
    support::service::block_on(support::database(TEST));
    create(TEST, "orders", &["--kind", "autoinc"]);
    let output = run(idmint(TEST)
        .args(["seq", "orders", "--count", "3"])
        .env("RUST_LOG", "idmint::cli=debug"));
    assert_exit(&output, 0);
    let log = stderr(&output);
    let line = log
        .lines()
        .find(|line| line.contains("command done"))
        .unwrap_or_else(|| panic!("no span line:\n{log}"));
    for field in [
        "command{name=\"seq\"",
        "counter=\"orders\"",
        "kind=\"autoinc\"",
        "servers=\"127.0.0.1:",
    ] {
        assert!(line.contains(field), "no {field} in {line}");
    }
    let trips: u64 = line
        .split("round_trips=")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|digits| digits.parse().ok())
        .unwrap_or_else(|| panic!("no round trips in {line}"));
    assert!(trips >= 2, "reading the counter and taking: {line}");
    // Without RUST_LOG, nothing is logged.
    let quiet = run(idmint(TEST).args(["seq", "orders"]).env_remove("RUST_LOG"));
    assert_eq!(stderr(&quiet), "");
}

#[test]
fn a_request_s_span_names_its_counter_kind_and_round_trips_in_json_logs() {
    const TEST: &str = "traces_request";
    support::service::block_on(support::database(TEST));
    create(TEST, "orders", &["--kind", "autoinc"]);
    create(
        TEST,
        "tickets",
        &["--kind", "segment", "--step", "1000", "--raw"],
    );
    let mut child = idmint(TEST)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
        ])
        .args(["--log-format", "json"])
        .env("RUST_LOG", "info,idmint_serve=debug")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start idmint serve");
    let lines = support::process::read_lines(child.stderr.take().unwrap());
    let (address, _) = listening(child.stdout.take().unwrap()).expect("listening");
    for path in [
        "/v1/counters/orders/values",
        "/v1/counters/tickets/values",
        "/v1/counters/tickets/values",
    ] {
        assert_eq!(request(&address, "GET", path, &[], None).status, 200);
    }
    let mut spans = Vec::new();
    while spans.len() < 3 {
        let line = lines
            .recv_timeout(DEADLINE)
            .expect("a request's log line within the deadline");
        let Ok(json) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if json["fields"]["message"] == "request" {
            spans.push(json["span"].clone());
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(spans[0]["name"], "request", "{spans:?}");
    assert_eq!(spans[0]["counter"], "orders", "{spans:?}");
    assert_eq!(spans[0]["kind"], "autoinc", "{spans:?}");
    assert_eq!(spans[0]["route"], "/v1/counters/{name}/values", "{spans:?}");
    assert!(
        spans[0]["round_trips"].as_u64() >= Some(2),
        "open and take: {spans:?}"
    );
    assert!(
        spans[0]["servers"]
            .as_str()
            .is_some_and(|servers| servers.starts_with("127.0.0.1:")),
        "{spans:?}"
    );
    // A segment counter's second value comes from memory: no round trip.
    assert_eq!(spans[2]["kind"], "segment", "{spans:?}");
    assert_eq!(spans[2]["round_trips"], 0, "{spans:?}");
}
