//! `idmint serve`: the HTTP service, driven over real sockets against a real
//! server by the client of `support::service`, so the tests see exactly
//! what any app sees. They are plain `#[test]`s (blocking clients, no
//! runtime to stall); what needs no socket is in `serve_inprocess.rs`,
//! hostile clients in `serve_hostile.rs`.

use std::collections::BTreeSet;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::service::{assert_error, block_on, request, Service, DEADLINE};
use crate::support::{
    self, assert_exit, counter_field, create, idmint, idmint_on, replace_file, run, stdout, wait,
    OwnedServer, ServerConfig,
};

/// Every kind served: formatted IDs and raw values, JSON and text; every
/// bad request refused with its reason before any value is taken.
#[test]
fn every_kind_is_served_and_bad_requests_consume_nothing() {
    const TEST: &str = "serve_kinds";
    block_on(support::database(TEST));
    // `orders` owns two prefixes; `inv` the empty one; the others none (raw
    // values only): a prefix is owned by one counter at most.
    create(TEST, "orders", &["--prefix", "ORD-", "--prefix", "X-"]);
    create(TEST, "inv", &["--kind", "autoinc", "--start", "100"]);
    create(TEST, "seg", &["--kind", "segment", "--step", "10", "--raw"]);
    create(TEST, "ev", &["--kind", "snowflake", "--raw"]);
    let service = Service::start(TEST, &[]);

    let ids = service.get("/v1/counters/orders/ids?count=3");
    assert_eq!(ids.status, 200, "{ids:?}");
    let ids = ids.json();
    assert_eq!(ids["policy"], "default 0.1.0");
    let ids: Vec<&str> = ids["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 3);
    assert!(
        ids.iter()
            .all(|id| id.starts_with("ORD-") && id.len() == 26),
        "{ids:?}"
    );
    assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "{ids:?}");
    let text = request(
        &service.address,
        "GET",
        "/v1/counters/orders/ids?count=2&prefix=X-",
        &[("Accept", "text/plain")],
        None,
    );
    assert_eq!(text.status, 200, "{text:?}");
    assert!(text.headers["content-type"].starts_with("text/plain"));
    let lines: Vec<&str> = text.body.lines().collect();
    assert!(
        lines.len() == 2 && lines.iter().all(|id| id.starts_with("X-")),
        "{text:?}"
    );

    let cyclic = service.get("/v1/counters/orders/values?count=2").json();
    assert_eq!(cyclic["kind"], "cyclic");
    // A cyclic counter hands out val + 1: 1 to 5 went out above.
    assert_eq!(cyclic["values"], serde_json::json!([6, 7]));
    assert_eq!(cyclic["timestamps_micros"].as_array().unwrap().len(), 2);
    assert_eq!(
        service.get("/v1/counters/seg/values?count=3").values(),
        [1, 2, 3]
    );
    let snowflake = service.get("/v1/counters/ev/values?count=3").values();
    assert!(snowflake.windows(2).all(|pair| pair[0] < pair[1]));

    // Refused before anything is taken: the autoinc counter stays at 100.
    let refusals = [
        (
            "/v1/counters/inv/values?count=0",
            400,
            "bad-request",
            "count must be 1 to 1000, not 0",
        ),
        (
            "/v1/counters/inv/values?count=1001",
            400,
            "bad-request",
            "not 1001",
        ),
        (
            "/v1/counters/inv/values?cont=3",
            400,
            "bad-request",
            "unknown field `cont`",
        ),
        (
            "/v1/counters/inv/values?count=x",
            400,
            "bad-request",
            "count",
        ),
        (
            "/v1/counters/in%20v/values",
            400,
            "bad-request",
            "invalid counter name",
        ),
        // A prefix the counter does not own, even one no policy would take.
        (
            "/v1/counters/inv/ids?prefix=%0A",
            409,
            "counter",
            "counter 'inv' does not own prefix \"\\n\"",
        ),
        (
            "/v1/counters/inv/ids?prefix=ORD-",
            409,
            "counter",
            "counter 'inv' does not own prefix \"ORD-\"",
        ),
        // The default policy holds two digits; autoinc values go far beyond.
        (
            "/v1/counters/inv/ids",
            409,
            "unservable",
            "policy 'default' holds 100 sequence values",
        ),
        (
            "/api/snowflake/get/inv",
            409,
            "unservable",
            "this route serves snowflake counters",
        ),
    ];
    for (path, status, kind, needle) in refusals {
        assert_error(&service.get(path), status, kind, needle);
    }
    let missing = service.get("/v1/counters/nope/ids");
    assert_error(
        &missing,
        404,
        "unknown-counter",
        "counter 'nope' does not exist",
    );
    assert_eq!(missing.json()["counter"], "nope");
    assert_error(
        &service.get("/v2/nothing"),
        404,
        "no-route",
        "GET /v2/nothing",
    );
    assert_eq!(service.get("/v1/counters/inv/values").values(), [100]);
}

/// Three instances on one segment counter, hit at once: every value handed
/// out once, each instance's values increasing, and the database written
/// once per segment, not per value.
#[test]
fn three_instances_share_one_segment_counter() {
    const TEST: &str = "serve_three";
    block_on(support::database(TEST));
    create(TEST, "seg", &["--kind", "segment", "--step", "100"]);
    let services: Vec<Service> = (0..3).map(|_| Service::start(TEST, &[])).collect();
    const CLIENTS_PER_SERVICE: usize = 4;
    const ROUNDS: usize = 20;
    let barrier = Arc::new(Barrier::new(services.len() * CLIENTS_PER_SERVICE));
    let handles: Vec<_> = services
        .iter()
        .flat_map(|service| {
            (0..CLIENTS_PER_SERVICE).map(|_| {
                let address = service.address.clone();
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    barrier.wait();
                    (0..ROUNDS)
                        .flat_map(|_| {
                            request(
                                &address,
                                "GET",
                                "/v1/counters/seg/values?count=25",
                                &[],
                                None,
                            )
                            .values()
                        })
                        .collect::<Vec<u64>>()
                })
            })
        })
        .collect();
    let per_client: Vec<Vec<u64>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let total = services.len() * CLIENTS_PER_SERVICE * ROUNDS * 25;
    let all: BTreeSet<u64> = per_client.iter().flatten().copied().collect();
    assert_eq!(all.len(), total, "a value was handed out twice");
    for values in &per_client {
        assert!(values.windows(2).all(|pair| pair[0] < pair[1]));
    }
    // Each segment is one counter write: every value came from a segment
    // the counter handed out, and each instance took far fewer segments
    // than it answered requests (80 of 25 values each).
    let max = counter_field(TEST, "seg", "max");
    assert!(max > *all.last().unwrap());
    for service in &services {
        let metrics = service.admin("/metrics").body;
        let fetches: u64 = metrics
            .lines()
            .find_map(|line| line.strip_prefix(r#"idmint_segment_fetches_total{counter="seg"} "#))
            .unwrap_or_else(|| panic!("no segment fetches in\n{metrics}"))
            .parse()
            .unwrap();
        assert!(
            (1..=25).contains(&fetches),
            "{fetches} segment fetches for {} requests",
            CLIENTS_PER_SERVICE * ROUNDS
        );
    }
    for service in services {
        assert_eq!(service.terminate().0, 0);
    }
}

/// SIGTERM: requests stop, the segment's unused tail is given back and the
/// worker lease released, and the process exits 0.
#[test]
fn sigterm_gives_back_segments_and_releases_leases() {
    const TEST: &str = "serve_sigterm";
    block_on(support::database(TEST));
    create(TEST, "seg", &["--kind", "segment", "--step", "1000"]);
    create(TEST, "ev", &["--kind", "snowflake", "--raw"]);
    let service = Service::start(TEST, &[]);
    assert_eq!(
        service.get("/v1/counters/seg/values?count=5").values(),
        [1, 2, 3, 4, 5]
    );
    service.get("/v1/counters/ev/values").values();
    assert!(counter_field(TEST, "seg", "max") > 6);
    let ready = service.admin("/readyz");
    assert_eq!(ready.status, 200, "{ready:?}");
    assert_eq!(ready.json()["leases"][0]["holding"], true);
    let (code, log) = service.terminate();
    assert_eq!(code, 0, "{log}");
    assert_eq!(
        counter_field(TEST, "seg", "max"),
        6,
        "the tail was given back"
    );
    // The one lease the service took, released (not an empty list).
    let leases = support::worker_leases(TEST, "ev");
    assert!(
        leases.len() == 1 && leases[0]["live"] == false,
        "{leases:?}"
    );
}

/// Tokens: none or a wrong one is 401, a counter the app may not use is
/// 403 (whether or not it exists), an allowed one is served; a token
/// limited to some prefixes takes formatted IDs only, never raw values
/// (403 on `values`, `ranges` and Leaf's routes); the token never appears
/// in the log.
#[test]
fn tokens_guard_counters() {
    const TEST: &str = "serve_tokens";
    block_on(support::database(TEST));
    create(TEST, "orders", &["--prefix", "ORD-", "--prefix", "WEB-"]);
    create(TEST, "secret", &["--prefix", "S-"]);
    create(TEST, "tickets", &["--kind", "segment", "--raw"]);
    create(TEST, "ev", &["--kind", "snowflake", "--raw"]);
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.json");
    let token = "tok-3f9a1c";
    let ops_token = "tok-77e0b2";
    // billing may format IDs with ORD- only, though orders owns WEB- too;
    // ops is limited to no prefix.
    std::fs::write(
        &tokens,
        format!(
            r#"{{"apps": [{{"name": "billing", "token_sha256": "{}", "counters": ["orders", "tickets", "ev"], "prefixes": ["ORD-"]}}, {{"name": "ops", "token_sha256": "{}", "counters": ["*"]}}]}}"#,
            idmint::checksum::sha256_hex(token.as_bytes()),
            idmint::checksum::sha256_hex(ops_token.as_bytes())
        ),
    )
    .unwrap();
    let service = Service::start(TEST, &["--tokens", tokens.to_str().unwrap()]);
    let bearer = format!("Bearer {token}");
    let ops = format!("Bearer {ops_token}");
    let get = |path: &str, authorization: Option<&str>| {
        let headers: Vec<(&str, &str)> = authorization
            .map(|value| ("Authorization", value))
            .into_iter()
            .collect();
        request(&service.address, "GET", path, &headers, None)
    };
    assert_error(
        &get("/v1/counters/orders/values", None),
        401,
        "unauthenticated",
        "bearer token",
    );
    assert_error(
        &get("/v1/counters/orders/values", Some("Bearer nope")),
        401,
        "unauthenticated",
        "bearer token",
    );
    for counter in ["secret", "nope"] {
        let path = format!("/v1/counters/{counter}/values");
        assert_error(
            &get(&path, Some(&bearer)),
            403,
            "forbidden",
            "application 'billing' may not use",
        );
    }
    assert_error(
        &get("/v1/counters/orders/ids?prefix=WEB-", Some(&bearer)),
        403,
        "forbidden",
        "application 'billing' may not use prefix \"WEB-\"",
    );
    for path in [
        "/v1/counters/orders/values",
        "/v1/counters/tickets/values?count=2",
        "/v1/counters/tickets/ranges?count=10",
        "/api/segment/get/tickets",
        "/api/snowflake/get/ev",
    ] {
        assert_error(
            &get(path, Some(&bearer)),
            403,
            "forbidden",
            "application 'billing' may use prefixes [\"ORD-\"] only, so it may take formatted IDs (ids) only, not raw values",
        );
    }
    assert_eq!(
        get("/v1/counters/orders/values", Some(&ops)).values(),
        [1],
        "a refused request took a value"
    );
    assert_eq!(
        get("/v1/counters/tickets/values", Some(&ops)).values(),
        [1],
        "a refused request took a value"
    );
    let leases = || {
        block_on(async {
            support::documents(&support::database_handle(TEST).await, "workers").await
        })
    };
    let workers = leases();
    assert!(
        workers.is_empty(),
        "a refused request leased a worker id: {workers:?}"
    );
    // An allowed one does, where the read above looked.
    get("/v1/counters/ev/values", Some(&ops)).values();
    assert_eq!(leases().len(), 1, "the allowed request leased no worker id");
    let ids = get("/v1/counters/orders/ids", Some(&bearer));
    assert_eq!(ids.status, 200, "{ids:?}");
    assert!(ids.json()["ids"][0].as_str().unwrap().starts_with("ORD-"));
    assert_eq!(get("/healthz", None).status, 200);
    let (_, log) = service.terminate();
    assert!(!log.contains(token) && !log.contains(ops_token), "{log}");
}

/// Values of a kind whose values repeat carry what makes them unique, as
/// `idmint seq` prints them: a periodic value its period (`periods` in
/// JSON, `PERIOD VALUE` per line in text), a cyclic one its server-decided
/// timestamp (`timestamps_micros`, `TIMESTAMP_MICROS VALUE`); the other
/// kinds' answers are unchanged.
#[test]
fn values_carry_their_period_or_timestamp() {
    const TEST: &str = "serve_value_periods";
    block_on(support::database(TEST));
    create(TEST, "notes", &["--kind", "periodic", "--raw"]);
    create(TEST, "orders", &["--prefix", "ORD-"]);
    create(TEST, "seg", &["--kind", "segment", "--raw"]);
    let service = Service::start(TEST, &[]);
    let text = |path: &str| {
        let answer = request(
            &service.address,
            "GET",
            path,
            &[("Accept", "text/plain")],
            None,
        );
        assert_eq!(answer.status, 200, "{answer:?}");
        assert!(answer.headers["content-type"].starts_with("text/plain"));
        answer.body
    };

    let json = service.get("/v1/counters/notes/values?count=2").json();
    assert_eq!(json["values"], serde_json::json!([1, 2]), "{json}");
    let periods = json["periods"].as_array().expect("periods").clone();
    assert_eq!(periods.len(), 2, "{json}");
    let lines = text("/v1/counters/notes/values?count=2");
    // The period `idmint seq` prints for the next value is the one served.
    let seq = run(idmint(TEST).args(["seq", "notes"]));
    assert_exit(&seq, 0);
    let seq = stdout(&seq);
    let (period, next) = seq.trim().split_once(' ').expect("seq prints PERIOD VALUE");
    assert_eq!(next, "5", "{seq}");
    assert_eq!(periods, [period, period], "{json}");
    assert_eq!(lines, format!("{period} 3\n{period} 4\n"));

    let json = service.get("/v1/counters/orders/values?count=2").json();
    assert!(json.get("periods").is_none(), "{json}");
    let lines = text("/v1/counters/orders/values?count=2");
    let lines: Vec<(u64, u64)> = lines
        .lines()
        .map(|line| {
            let (micros, value) = line.split_once(' ').expect("TIMESTAMP_MICROS VALUE");
            (micros.parse().unwrap(), value.parse().unwrap())
        })
        .collect();
    assert_eq!(lines.iter().map(|l| l.1).collect::<Vec<_>>(), [3, 4]);
    let after = json["timestamps_micros"][1].as_u64().unwrap();
    assert!(
        lines.iter().all(|l| l.0 >= after),
        "{lines:?} after {after}"
    );

    let json = service.get("/v1/counters/seg/values?count=2").json();
    assert_eq!(
        json,
        serde_json::json!({"counter": "seg", "kind": "segment", "values": [1, 2]})
    );
    assert_eq!(text("/v1/counters/seg/values?count=2"), "3\n4\n");
}

/// `/metrics` counts requests by route and status and values by counter;
/// `/openapi.json` documents every route of the API listener,
/// `/openapi-admin.json` those of the admin listener.
#[test]
fn metrics_and_openapi() {
    const TEST: &str = "serve_metrics";
    block_on(support::database(TEST));
    create(TEST, "seg", &["--kind", "segment"]);
    let service = Service::start(TEST, &[]);
    for _ in 0..3 {
        service.get("/v1/counters/seg/values?count=4").values();
    }
    service.get("/v1/counters/missing/values");
    let metrics = service.admin("/metrics").body;
    for line in [
        r#"idmint_http_requests_total{route="/v1/counters/{name}/values",status="200"} 3"#,
        r#"idmint_http_requests_total{route="/v1/counters/{name}/values",status="404"} 1"#,
        r#"idmint_values_total{counter="seg"} 12"#,
        r#"idmint_segment_fetches_total{counter="seg"} 1"#,
        r#"idmint_policy_info{serves="any",name="default",version="0.1.0",contract="0.4.0""#,
    ] {
        assert!(metrics.contains(line), "{line} not in\n{metrics}");
    }
    let openapi = service.admin("/openapi.json").json();
    for path in [
        "/v1/counters/{name}/ids",
        "/v1/counters/{name}/values",
        "/v1/counters/{name}/ranges",
        "/v1/counters/{name}",
        "/v1/validate",
        "/api/segment/get/{key}",
        "/api/snowflake/get/{key}",
    ] {
        assert!(openapi["paths"][path].is_object(), "{path} missing");
    }
    // The admin listener's routes are in its own document, not the API's.
    let admin = service.admin("/openapi-admin.json").json();
    for path in ["/readyz", "/metrics", "/monitor", "/monitor.json"] {
        assert!(admin["paths"][path].is_object(), "{path} missing");
        assert!(
            openapi["paths"][path].is_null(),
            "{path} in the API's document"
        );
    }
}

/// A policy file replaced under a running server is served by the next
/// requests; a broken one is refused and the current one keeps serving;
/// both show in `/metrics`.
#[test]
fn a_policy_swap_reaches_the_next_request() {
    const TEST: &str = "serve_swap";
    block_on(support::database(TEST));
    create(TEST, "orders", &["--max", "99"]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("policy.wasm");
    std::fs::write(&file, idmint::policy::DEFAULT_POLICY_WASM).unwrap();
    let service = Service::start(TEST, &["--policy", file.to_str().unwrap()]);
    assert_eq!(
        service.get("/v1/counters/orders/ids").json()["policy"],
        "default 0.1.0"
    );
    replace_file(
        &file,
        &std::fs::read(crate::support::fixture_policy("check-digit")).unwrap(),
    );
    let swapped = Instant::now();
    loop {
        let answer = service.get("/v1/counters/orders/ids").json();
        if answer["policy"] == "check-digit 0.1.0" {
            break;
        }
        assert!(swapped.elapsed() < DEADLINE, "no swap: {answer}");
        std::thread::sleep(Duration::from_millis(50));
    }
    replace_file(&file, b"not a policy");
    wait::until(DEADLINE, "the broken policy refused", || {
        service
            .admin("/metrics")
            .body
            .contains("idmint_policy_refusals_total 1")
    });
    assert_eq!(
        service.get("/v1/counters/orders/ids").json()["policy"],
        "check-digit 0.1.0"
    );
    assert!(service
        .admin("/metrics")
        .body
        .contains("idmint_policy_swaps_total 1"));
}

/// The database going away: requests answer 503 quickly and `/readyz`
/// fails; when it is back, the same process serves again.
#[test]
fn an_unreachable_database_is_503_and_service_recovers() {
    // Fsync on commit: the test server otherwise acknowledges the journal
    // without writing it, and a killed one would forget the first value.
    let mut server = OwnedServer::start(ServerConfig {
        sync_on_commit: true,
        ..ServerConfig::default()
    });
    let idmint = || idmint_on(&server.uri, "serve_recovery");
    assert_exit(
        &run(idmint().args(["counter", "create", "inv", "--kind", "autoinc"])),
        0,
    );
    let service = Service::spawn(idmint(), &["--server-timeout", "1"]);
    assert_eq!(service.get("/v1/counters/inv/values").values(), [1]);
    server.kill();
    let down = service.get("/v1/counters/inv/values");
    // "unavailable", not the request timeout's "overloaded": the answer came
    // from the driver giving up at --server-timeout.
    assert_error(&down, 503, "unavailable", "");
    let ready = service.admin("/readyz");
    assert_eq!(ready.status, 503, "{ready:?}");
    assert_eq!(ready.json()["ready"], false);
    server.restart();
    let restarted = Instant::now();
    loop {
        let answer = service.get("/v1/counters/inv/values");
        if answer.status == 200 {
            assert_eq!(answer.values(), [2]);
            break;
        }
        assert!(restarted.elapsed() < DEADLINE, "no recovery: {answer:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    // /readyz asks the database at most once a second: its answer follows.
    while service.admin("/readyz").status != 200 {
        assert!(restarted.elapsed() < DEADLINE, "never ready again");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Limits: with room for one request at a time, a second request while the
/// first is in flight is answered 503 at once (not queued), and the first,
/// stuck on a database that is gone, is answered 503 at its time limit;
/// `/metrics` stays outside the limit.
#[test]
fn requests_over_the_limits_are_503_not_queued() {
    let mut server = OwnedServer::start(ServerConfig::default());
    let idmint = || idmint_on(&server.uri, "serve_limits");
    assert_exit(
        &run(idmint().args(["counter", "create", "inv", "--kind", "autoinc"])),
        0,
    );
    let service = Service::spawn(
        idmint(),
        &[
            "--max-concurrent",
            "1",
            "--request-timeout",
            "3",
            "--server-timeout",
            "60",
        ],
    );
    assert_eq!(service.get("/v1/counters/inv/values").values(), [1]);
    server.kill();
    let address = service.address.clone();
    let stuck =
        std::thread::spawn(move || request(&address, "GET", "/v1/counters/inv/values", &[], None));
    // The stuck request is in flight once the gauge counts it (the admin
    // listener's scrape is not an API request): no guessing with sleeps.
    wait::until(DEADLINE, "the first request in flight", || {
        service
            .admin("/metrics")
            .body
            .contains("idmint_http_requests_in_flight 1")
    });
    assert_error(
        &service.get("/v1/counters/inv/values"),
        503,
        "overloaded",
        "concurrency limit",
    );
    assert_error(&stuck.join().unwrap(), 503, "overloaded", "time limit");
}

/// A policy call that never returns (the runaway fixture, for sequence 42)
/// is stopped at its time limit: that request is a 500 naming the limit,
/// and the server goes on serving the next values.
#[test]
fn a_runaway_policy_fails_one_request_not_the_server() {
    const TEST: &str = "serve_runaway";
    block_on(support::database(TEST));
    create(TEST, "orders", &["--max", "99"]);
    let service = Service::start(
        TEST,
        &["--policy", crate::support::fixture_policy("runaway")],
    );
    let first = service.get("/v1/counters/orders/ids?count=41");
    assert_eq!(first.status, 200, "{first:?}");
    // A 5xx says what kind of failure it was, never its detail (the
    // policy's file, the wasm trap): that goes to the server's log.
    let failed = service.get("/v1/counters/orders/ids");
    assert_error(&failed, 500, "policy", "the server log has the cause");
    for secret in ["100 ms", "runaway", ".wasm", "wasm"] {
        assert!(!failed.body.contains(secret), "{secret} in {failed:?}");
    }
    assert_eq!(service.get("/healthz").status, 200);
    let next = service.get("/v1/counters/orders/ids").json();
    assert!(next["ids"][0].as_str().unwrap().ends_with("43"), "{next}");
    let (_, log) = service.terminate();
    let logged = log
        .lines()
        .find(|line| line.contains("request failed"))
        .unwrap_or_else(|| panic!("no failure logged:\n{log}"));
    assert!(
        logged.contains("ran past its 100 ms time limit") && logged.contains("status=500"),
        "{logged}"
    );
}

/// `--policy-for KIND=POLICY`: one server formats a cyclic counter with the
/// default policy and a snowflake counter with the base32 one, and reads
/// the snowflake IDs back with the policy that wrote them.
#[test]
fn a_policy_per_kind_lets_one_server_format_every_kind() {
    const TEST: &str = "serve_policy_for";
    block_on(support::database(TEST));
    create(TEST, "orders", &["--prefix", "ORD-"]);
    create(TEST, "ev", &["--kind", "snowflake", "--prefix", "EVT-"]);
    let service = Service::start(TEST, &["--policy-for", "snowflake=builtin:base32"]);
    let orders = service.get("/v1/counters/orders/ids").json();
    assert_eq!(orders["policy"], "default 0.1.0", "{orders}");
    let events = service.get("/v1/counters/ev/ids").json();
    assert_eq!(events["policy"], "base32 0.1.0", "{events}");
    let id = events["ids"][0].as_str().unwrap();
    assert_eq!(id.len(), 4 + 13, "{id}");
    let body = format!(r#"{{"ids": ["{id}"], "counter": "ev"}}"#);
    let read = request(&service.address, "POST", "/v1/validate", &[], Some(&body)).json();
    assert_eq!(read["valid"], true, "{read}");
    // A raw value (what `seq` prints) is read with the counter's layout, as
    // `idmint validate --layout` reads it: one routing in the library.
    let value = service.get("/v1/counters/ev/values").values()[0];
    let body = format!(r#"{{"ids": ["{value}"], "counter": "ev"}}"#);
    let raw = request(&service.address, "POST", "/v1/validate", &[], Some(&body)).json();
    assert_eq!(raw["valid"], true, "{raw}");
    assert_eq!(raw["results"][0]["parts"]["sequence"], value, "{raw}");
    assert!(
        raw["results"][0]["parts"]["snowflake"]["worker"].is_u64(),
        "{raw}"
    );
    assert!(service
        .admin("/metrics")
        .body
        .contains(r#"idmint_policy_info{serves="snowflake",name="base32""#));
    let refused = run(idmint(TEST).args(["serve", "--policy-for", "comet=builtin:base32"]));
    assert_exit(&refused, 2);
    assert!(
        support::stderr(&refused).contains("--policy-for \"comet=builtin:base32\""),
        "{}",
        support::stderr(&refused)
    );
}

/// Tokens in the database: `idmint token add` prints a token once and
/// stores its hash; a server with `--tokens-from-db` accepts it for its
/// counters only; after `idmint token remove` the server refuses it once it
/// has read the collection again.
#[test]
fn tokens_from_the_database_are_added_and_removed_live() {
    const TEST: &str = "serve_tokens_db";
    block_on(support::database(TEST));
    create(TEST, "orders", &[]);
    let added =
        run(idmint(TEST).args(["token", "add", "billing", "--counters", "orders", "--json"]));
    assert_exit(&added, 0);
    let added: Value = serde_json::from_str(&stdout(&added)).unwrap();
    let token = added["token"].as_str().unwrap().to_string();
    let stored = block_on(async {
        support::documents(&support::database_handle(TEST).await, "tokens").await
    });
    assert_eq!(stored.len(), 1);
    assert_eq!(
        stored[0].get_str("token_sha256").unwrap(),
        idmint::checksum::sha256_hex(token.as_bytes())
    );
    assert!(
        !format!("{stored:?}").contains(&token),
        "the token itself is stored"
    );
    let again = run(idmint(TEST).args(["token", "add", "billing", "--counters", "*"]));
    assert_exit(&again, 2);
    assert!(support::stderr(&again).contains("has a token already"));

    let service = Service::start(TEST, &["--tokens-from-db"]);
    let bearer = format!("Bearer {token}");
    let get = |path: &str| {
        request(
            &service.address,
            "GET",
            path,
            &[("Authorization", &bearer)],
            None,
        )
    };
    assert_eq!(get("/v1/counters/orders/values").values(), [1]);
    assert_error(
        &get("/v1/counters/other/values"),
        403,
        "forbidden",
        "may not use",
    );
    assert_exit(&run(idmint(TEST).args(["token", "remove", "billing"])), 0);
    wait::until(DEADLINE, "the removed token refused", || {
        get("/v1/counters/orders/values").status == 401
    });
    let missing = run(idmint(TEST).args(["token", "remove", "billing"]));
    assert_exit(&missing, 2);
}

/// Every setting of `serve` can come from the environment: a service
/// started with `IDMINT_MAX_COUNT=3` and a policy for two kinds from
/// `IDMINT_POLICY_FOR` (comma-separated), and no flags for them, refuses a
/// fourth value and formats both kinds with that policy; a flag given
/// beside its variable wins; a switch's variable set to `false` is not the
/// switch (`IDMINT_TOKENS_FROM_DB=false` beside `--tokens` starts), and
/// two settings that cannot go together are refused, exit 2, naming both
/// flags and both variables.
#[test]
fn settings_come_from_the_environment_and_flags_win() {
    const TEST: &str = "serve_environment";
    block_on(support::database(TEST));
    create(TEST, "inv", &["--kind", "autoinc", "--prefix", "INV-"]);
    create(TEST, "ev", &["--kind", "snowflake", "--prefix", "EVT-"]);
    let from_env = || {
        let mut command = idmint(TEST);
        command
            .env("IDMINT_MAX_COUNT", "3")
            .env(
                "IDMINT_POLICY_FOR",
                "snowflake=builtin:base32,autoinc=builtin:base32",
            )
            .env("IDMINT_TOKENS_FROM_DB", "false");
        command
    };
    let service = Service::spawn(from_env(), &[]);
    assert_eq!(
        service.get("/v1/counters/inv/values?count=3").values(),
        [1, 2, 3]
    );
    assert_error(
        &service.get("/v1/counters/inv/values?count=4"),
        400,
        "bad-request",
        "count must be 1 to 3, not 4",
    );
    for counter in ["inv", "ev"] {
        let ids = service.get(&format!("/v1/counters/{counter}/ids")).json();
        assert_eq!(ids["policy"], "base32 0.1.0", "{ids}");
    }
    drop(service);

    let service = Service::spawn(from_env(), &["--max-count", "5"]);
    assert_eq!(
        service
            .get("/v1/counters/inv/values?count=5")
            .values()
            .len(),
        5
    );
    drop(service);

    let tokens = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tokens.path(), r#"{"apps": []}"#).unwrap();
    let tokens = tokens.path().to_str().unwrap().to_string();
    let service = Service::spawn(from_env(), &["--tokens", &tokens]);
    assert_eq!(service.get("/v1/counters/inv/values").status, 401);
    drop(service);

    let refused = run(idmint(TEST)
        .env("IDMINT_TOKENS_FROM_DB", "1")
        .args(["serve", "--tokens", &tokens]));
    assert_exit(&refused, 2);
    let message = support::stderr(&refused);
    assert!(
        message
            .contains("--tokens (IDMINT_TOKENS_FILE) and --tokens-from-db (IDMINT_TOKENS_FROM_DB)"),
        "{message}"
    );
}
