//! `idmint serve`'s router driven in-process (`tower::ServiceExt::oneshot`,
//! STYLE (i)) over a real database: what is decided inside a request, with
//! no socket in the way. Counters are created through the library.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

use idmint::policy::PolicyRuntime;
use idmint::sequence::{self, CounterKind, CounterName, CounterSpec};
use idmint_serve::{Limits, ServeOptions, Server};

use crate::support;

/// A server over `test`'s fresh database with `limits`, and its database.
async fn server(test: &str, counters: &[(&str, CounterSpec)], limits: Limits) -> Server {
    let database = support::database(test).await;
    for (name, spec) in counters {
        sequence::create(&database, &CounterName::new(*name).unwrap(), spec)
            .await
            .unwrap();
    }
    let runtime = PolicyRuntime::new().unwrap();
    let local = runtime.load_default().unwrap();
    let mut options = ServeOptions::default();
    options.limits = limits;
    Server::start(&database, &runtime, local, options)
        .await
        .unwrap()
}

/// One GET through `router`: its status and JSON body.
async fn get(router: &Router, path: &str) -> (StatusCode, Value) {
    let request = Request::get(path).body(Body::empty()).unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, body)
}

/// With every policy slot taken, a request for IDs waits its bounded time,
/// is answered 503 `overloaded`, and has taken nothing: the next value
/// handed out is the one it would have had.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_without_a_policy_slot_takes_no_value() {
    let mut limits = Limits::default();
    limits.policy_wait = Duration::ZERO;
    let server = server(
        "serve_slots",
        &[("orders", CounterSpec::default().maxval(99))],
        limits,
    )
    .await;
    let router = server.router();
    let (status, first) = get(&router, "/v1/counters/orders/ids").await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let semaphore = server.policy_slots().semaphore().clone();
    let all = semaphore
        .clone()
        .acquire_many_owned(server.policy_slots().size() as u32)
        .await
        .unwrap();
    let (status, refused) = get(&router, "/v1/counters/orders/ids?count=5").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{refused}");
    assert_eq!(refused["error"], "overloaded");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("nothing was taken"),
        "{refused}"
    );
    drop(all);
    let (status, next) = get(&router, "/v1/counters/orders/values").await;
    assert_eq!(status, StatusCode::OK, "{next}");
    assert_eq!(next["values"], serde_json::json!([2]), "a value was lost");
}

/// A route that does not serve a counter's kind refuses it before opening
/// it: asking `ranges` or Leaf's segment route of a snowflake counter
/// leases no worker id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_counter_of_another_kind_is_refused_before_it_is_opened() {
    const TEST: &str = "serve_kind_first";
    let server = server(
        TEST,
        &[("ev", CounterSpec::of(CounterKind::Snowflake))],
        Limits::default(),
    )
    .await;
    let router = server.router();
    for path in ["/v1/counters/ev/ranges?count=5", "/api/segment/get/ev"] {
        let (status, body) = get(&router, path).await;
        assert_eq!(status, StatusCode::CONFLICT, "{path}: {body}");
        assert_eq!(body["error"], "unservable", "{path}: {body}");
        assert_eq!(body["counter"], "ev", "{path}: {body}");
    }
    let database = support::database_handle(TEST).await;
    let leases = support::documents(&database, "workers").await;
    assert!(leases.is_empty(), "a worker id was leased: {leases:?}");
    // The route that serves the kind does lease one.
    let (status, body) = get(&router, "/api/snowflake/get/ev").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(!support::documents(&database, "workers").await.is_empty());
}

/// The operator's routes are on the admin router only: the API answers
/// them `no-route`; `/healthz` is on both. Each listener has a document of
/// its own routes, and every route a document names is served by that
/// listener.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_routes_are_on_the_admin_listener_only() {
    let server = server("serve_admin_routes", &[], Limits::default()).await;
    let (api, admin) = (server.router(), server.admin_router());
    for path in [
        "/metrics",
        "/readyz",
        "/openapi.json",
        "/openapi-admin.json",
    ] {
        let (status, body) = get(&api, path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        assert_eq!(body["error"], "no-route", "{path}: {body}");
        let (status, body) = get(&admin, path).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
    }
    for router in [&api, &admin] {
        assert_eq!(get(router, "/healthz").await.0, StatusCode::OK);
    }
    let (_, api_document) = get(&admin, "/openapi.json").await;
    let (_, admin_document) = get(&admin, "/openapi-admin.json").await;
    let paths = |document: &Value| -> Vec<String> {
        document["paths"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    assert_eq!(
        paths(&api_document),
        [
            "/api/segment/get/{key}",
            "/api/snowflake/get/{key}",
            "/healthz",
            "/v1/counters/{name}",
            "/v1/counters/{name}/ids",
            "/v1/counters/{name}/ranges",
            "/v1/counters/{name}/values",
            "/v1/locks/{name}",
            "/v1/locks/{name}/acquire",
            "/v1/locks/{name}/release",
            "/v1/locks/{name}/renew",
            "/v1/series/{name}/reservations",
            "/v1/series/{name}/reservations/{number}/confirm",
            "/v1/series/{name}/reservations/{number}/void",
            "/v1/validate",
        ]
    );
    assert_eq!(
        paths(&admin_document),
        [
            "/healthz",
            "/metrics",
            "/monitor",
            "/monitor.json",
            "/openapi-admin.json",
            "/openapi.json",
            "/readyz",
        ]
    );
    assert!(api_document["components"]["schemas"]["RangesResponse"].is_object());
    // Every documented route is served by its own listener, with the method
    // documented; another method is a 405 naming the documented one.
    for (router, document) in [(&api, &api_document), (&admin, &admin_document)] {
        for (path, item) in document["paths"].as_object().unwrap() {
            let concrete = path.replace("{name}", "nope").replace("{key}", "nope");
            let method = item
                .as_object()
                .unwrap()
                .keys()
                .next()
                .unwrap()
                .to_uppercase();
            let other = if method == "GET" { "PUT" } else { "GET" };
            for asked in [method.as_str(), other] {
                let request = Request::builder()
                    .method(asked)
                    .uri(&concrete)
                    .body(Body::empty())
                    .unwrap();
                let response = router.clone().oneshot(request).await.unwrap();
                let status = response.status();
                let allow = response.headers().get("allow").cloned();
                let bytes = response.into_body().collect().await.unwrap().to_bytes();
                let answer: Value = serde_json::from_slice(&bytes).unwrap_or_default();
                assert_ne!(answer["error"], "no-route", "{asked} {path} is not served");
                if asked == other {
                    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{asked} {path}");
                    assert_eq!(answer["error"], "method-not-allowed", "{asked} {path}");
                    let allow = allow.expect("an Allow header");
                    assert!(
                        allow.to_str().unwrap().contains(method.as_str()),
                        "{asked} {path}: Allow {allow:?}"
                    );
                }
            }
        }
    }
}

/// A prefix removed from a counter stops being served once the cached
/// minter is older than `Limits::minter_max_age` (here zero: at once): its
/// ownership is checked again, and the request is a 409.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prefix_removed_from_a_counter_stops_being_served() {
    const TEST: &str = "serve_minter_age";
    let mut limits = Limits::default();
    limits.minter_max_age = Duration::ZERO;
    let server = server(
        TEST,
        &[(
            "orders",
            CounterSpec::default().prefixes(vec!["ORD-".into(), "WEB-".into()]),
        )],
        limits,
    )
    .await;
    let router = server.router();
    let (status, body) = get(&router, "/v1/counters/orders/ids?prefix=WEB-").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let database = support::database_handle(TEST).await;
    sequence::prefixes::remove(&database, &CounterName::new("orders").unwrap(), "WEB-")
        .await
        .unwrap();
    let (status, body) = get(&router, "/v1/counters/orders/ids?prefix=WEB-").await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"], "counter", "{body}");
    let (status, body) = get(&router, "/v1/counters/orders/ids").await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// The `find`s of one counter by its name a monitored client sent to the
/// counters collection: a request's. The service's own read of every
/// counter's headroom (at its start, then every 10 s), which lists them
/// all, is not one of them: on a loaded machine its first read can come
/// after a request's.
fn counter_reads(log: &support::CommandLog) -> usize {
    log.named("find")
        .iter()
        .filter(|command| command.get_str("find") == Ok("counters"))
        .filter(|command| {
            command
                .get_document("filter")
                .is_ok_and(|filter| filter.get_str("_id").is_ok())
        })
        .count()
}

/// A refused request for IDs (a policy that cannot serve the counter, a
/// prefix the counter does not own) is refused again, the same way, without
/// a read of the database, for as long as a prepared minter is trusted; so
/// is a request a prepared minter answers. Refused requests cost what an
/// answer costs, whatever the number of counters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_is_kept_as_long_as_a_prepared_minter() {
    const TEST: &str = "serve_refusals_kept";
    let (database, log) = support::monitored_database(TEST).await;
    for (name, spec) in [
        ("orders", CounterSpec::default().maxval(99)),
        (
            "big",
            CounterSpec::of(CounterKind::Autoinc).prefixes(vec!["BIG-".into()]),
        ),
    ] {
        sequence::create(&database, &CounterName::new(name).unwrap(), &spec)
            .await
            .unwrap();
    }
    let runtime = PolicyRuntime::new().unwrap();
    let local = runtime.load_default().unwrap();
    let mut options = ServeOptions::default();
    options.limits.minter_max_age = Duration::from_secs(3600);
    let server = Server::start(&database, &runtime, local, options)
        .await
        .unwrap();
    let router = server.router();
    for (path, status) in [
        // The two-digit default policy cannot hold an autoinc counter's values.
        ("/v1/counters/big/ids", StatusCode::CONFLICT),
        (
            "/v1/counters/orders/ids?prefix=NOT-MINE-",
            StatusCode::CONFLICT,
        ),
        ("/v1/counters/orders/ids", StatusCode::OK),
    ] {
        let (first_status, first) = get(&router, path).await;
        assert_eq!(first_status, status, "{path}: {first}");
        let reads = counter_reads(&log);
        for _ in 0..3 {
            let (again_status, again) = get(&router, path).await;
            assert_eq!(again_status, status, "{path}: {again}");
            if status != StatusCode::OK {
                assert_eq!(again, first, "{path}");
            }
        }
        // Serving IDs takes values (findAndModify), never a find.
        assert_eq!(counter_reads(&log), reads, "{path} read the counters again");
    }
}

/// Past `Limits::max_open_counters`, the least recently used counter that
/// holds nothing of its own is dropped (and opened again when asked, its
/// values going on from the database), while a segment counter, which
/// holds buffered values, stays open whatever its age.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_that_hold_nothing_are_kept_up_to_a_number() {
    let mut limits = Limits::default();
    limits.max_open_counters = 2;
    let server = server(
        "serve_open_counters",
        &[
            (
                "seg",
                CounterSpec::of(CounterKind::Segment).prefixes(vec!["S-".into()]),
            ),
            (
                "a",
                CounterSpec::default()
                    .maxval(99)
                    .prefixes(vec!["A-".into()]),
            ),
            (
                "b",
                CounterSpec::default()
                    .maxval(99)
                    .prefixes(vec!["B-".into()]),
            ),
            (
                "c",
                CounterSpec::default()
                    .maxval(99)
                    .prefixes(vec!["C-".into()]),
            ),
        ],
        limits,
    )
    .await;
    let router = server.router();
    let take = |name: &'static str| {
        let router = router.clone();
        async move {
            let (status, body) = get(&router, &format!("/v1/counters/{name}/values")).await;
            assert_eq!(status, StatusCode::OK, "{name}: {body}");
            body["values"][0].as_u64().unwrap()
        }
    };
    assert_eq!(take("seg").await, 1);
    assert_eq!(take("a").await, 1);
    assert_eq!(server.open_counters(), ["a", "seg"]);
    take("b").await;
    // At capacity: "a", the least recently used that holds nothing, goes.
    assert_eq!(server.open_counters(), ["b", "seg"]);
    take("c").await;
    assert_eq!(server.open_counters(), ["c", "seg"]);
    // Opened again, "a" goes on where the database says.
    assert_eq!(take("a").await, 2);
    assert_eq!(server.open_counters(), ["a", "seg"]);
    assert_eq!(take("seg").await, 2);
}

/// A prefix-limited token is checked against the prefix the IDs get: the
/// counter's default as it is now, not as it was when the counter was
/// opened. Once the default is removed (`counter prefix remove`), and the
/// prepared minter is older than `Limits::minter_max_age` (here zero: at
/// once), a request without `prefix` gets the new default: the token limited
/// to it is served, the token limited to the removed one is refused 403 and
/// gets no ID of the new default's, and the removed prefix is a 409.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prefix_limited_token_is_checked_against_the_default_now() {
    const TEST: &str = "serve_token_default";
    let database = support::database(TEST).await;
    let orders = CounterName::new("orders").unwrap();
    sequence::create(
        &database,
        &orders,
        &CounterSpec::default().prefixes(vec!["ORD-".into(), "WEB-".into()]),
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.json");
    let entry = |app: &str, prefix: &str| {
        format!(
            r#"{{"name": "{app}", "token_sha256": "{}", "counters": ["orders"], "prefixes": ["{prefix}"]}}"#,
            idmint::checksum::sha256_hex(format!("tok-{app}").as_bytes())
        )
    };
    std::fs::write(
        &tokens,
        format!(
            r#"{{"apps": [{}, {}]}}"#,
            entry("ord", "ORD-"),
            entry("web", "WEB-")
        ),
    )
    .unwrap();
    let runtime = PolicyRuntime::new().unwrap();
    let local = runtime.load_default().unwrap();
    let mut options = ServeOptions::default();
    options.limits.minter_max_age = Duration::ZERO;
    options.access = Some(idmint::tokens::Access::from_file(&tokens).unwrap());
    let server = Server::start(&database, &runtime, local, options)
        .await
        .unwrap();
    let router = server.router();
    let ids = |app: &'static str, path: &'static str| {
        let router = router.clone();
        async move {
            let request = Request::get(path)
                .header("authorization", format!("Bearer tok-{app}"))
                .body(Body::empty())
                .unwrap();
            let response = router.oneshot(request).await.unwrap();
            let status = response.status();
            let bytes = response.into_body().collect().await.unwrap().to_bytes();
            (status, serde_json::from_slice::<Value>(&bytes).unwrap())
        }
    };
    let first_id = |body: &Value| body["ids"][0].as_str().unwrap_or_default().to_string();
    let (status, body) = ids("ord", "/v1/counters/orders/ids").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(first_id(&body).starts_with("ORD-"), "{body}");
    let (status, body) = ids("web", "/v1/counters/orders/ids").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("\"ORD-\""),
        "{body}"
    );

    sequence::prefixes::remove(&database, &orders, "ORD-")
        .await
        .unwrap();
    let (status, body) = ids("web", "/v1/counters/orders/ids").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(first_id(&body).starts_with("WEB-"), "{body}");
    let (status, body) = ids("ord", "/v1/counters/orders/ids").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("\"WEB-\""),
        "{body}"
    );
    let (status, body) = ids("ord", "/v1/counters/orders/ids?prefix=ORD-").await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"], "counter", "{body}");
}

/// Tokens from the database: a document that is not a valid entry is
/// skipped, not fatal (the other apps are let in); when the collection
/// cannot be read again for longer than `tokens_max_age`, the server fails
/// closed: 503 `unavailable`, naming the tokens, for a token that was good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_skip_a_bad_document_and_fail_closed_when_too_old() {
    let mut owned = tokio::task::spawn_blocking(|| {
        support::OwnedServer::start(support::ServerConfig::default())
    })
    .await
    .unwrap();
    let mut client = mongodb::options::ClientOptions::parse(&owned.uri)
        .await
        .unwrap();
    client.server_selection_timeout = Some(Duration::from_millis(300));
    let database = mongodb::Client::with_options(client)
        .unwrap()
        .database("serve_tokens_age");
    let token = idmint::tokens::add_app(&database, "billing", &["*".to_string()], None, &[])
        .await
        .unwrap();
    database
        .collection::<mongodb::bson::Document>("tokens")
        .insert_one(mongodb::bson::doc! { "_id": "broken", "token_sha256": 5 })
        .await
        .unwrap();
    let runtime = PolicyRuntime::new().unwrap();
    let local = runtime.load_default().unwrap();
    let mut options = ServeOptions::default();
    options.access_from_db = true;
    options.tokens_reload = Duration::from_millis(50);
    options.tokens_max_age = Duration::from_millis(500);
    let server = Server::start(&database, &runtime, local, options)
        .await
        .unwrap();
    let router = server.router();
    let validate = |router: Router| {
        let token = token.clone();
        async move {
            let request = Request::post("/v1/validate")
                .header("authorization", format!("bearer {token}"))
                .header("content-type", "application/json")
                .body(Body::from(r#"{"ids": ["1"]}"#))
                .unwrap();
            let response = router.oneshot(request).await.unwrap();
            let status = response.status();
            let bytes = response.into_body().collect().await.unwrap().to_bytes();
            (status, serde_json::from_slice::<Value>(&bytes).unwrap())
        }
    };
    let (status, body) = validate(router.clone()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    owned = tokio::task::spawn_blocking(move || {
        owned.kill();
        owned
    })
    .await
    .unwrap();
    let killed = std::time::Instant::now();
    loop {
        let (status, body) = validate(router.clone()).await;
        if status == StatusCode::SERVICE_UNAVAILABLE {
            assert_eq!(body["error"], "unavailable", "{body}");
            assert!(
                body["message"]
                    .as_str()
                    .unwrap()
                    .contains("tokens could not be read"),
                "{body}"
            );
            break;
        }
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(
            killed.elapsed() < crate::support::service::DEADLINE,
            "stale tokens still let requests in"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(owned);
}

/// A database that stops answering (a proxy that stops forwarding, as a
/// primary without a majority looks to the driver): a request that needs a
/// segment fetch is answered 503 at the fetch's deadline, `/readyz` names
/// the fetch while it waits, the server serves again once the database
/// answers, and shutdown closes the counters within their deadline rather
/// than waiting for ever to give a tail back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_stops_answering_fails_requests_and_shutdown_at_deadlines() {
    use crate::support::fault_proxy::FaultProxy;
    use idmint::sequence::SegmentOptions;

    const TEST: &str = "serve_stalled";
    let direct = support::database(TEST).await;
    sequence::create(
        &direct,
        &CounterName::new("seg").unwrap(),
        &CounterSpec::of(CounterKind::Segment)
            .step(10)
            .prefixes(Vec::new()),
    )
    .await
    .unwrap();
    let proxy = FaultProxy::start();
    let mut client = mongodb::options::ClientOptions::parse(proxy.uri())
        .await
        .unwrap();
    client.server_selection_timeout = Some(Duration::from_secs(1));
    let database = mongodb::Client::with_options(client)
        .unwrap()
        .database(&support::database_name(TEST));
    let runtime = PolicyRuntime::new().unwrap();
    let local = runtime.load_default().unwrap();
    let mut options = ServeOptions::default();
    options.open.segment = SegmentOptions::default().fetch_timeout(Duration::from_secs(2));
    options.limits.stuck_fetch = Duration::ZERO;
    options.limits.readiness_timeout = Duration::from_millis(10);
    options.limits.close_timeout = Duration::from_millis(500);
    let server = Server::start(&database, &runtime, local, options)
        .await
        .unwrap();
    let (api, admin) = (server.router(), server.admin_router());
    let (status, body) = get(&api, "/v1/counters/seg/values").await;
    assert_eq!(status, StatusCode::OK, "{body}");

    proxy.freeze();
    // More than both buffers hold: a fetch is needed, and nothing answers.
    let stalled = tokio::spawn({
        let api = api.clone();
        async move { get(&api, "/v1/counters/seg/values?count=1000").await }
    });
    let waited = std::time::Instant::now();
    loop {
        let (status, ready) = get(&admin, "/readyz").await;
        if ready["stuck_fetches"][0]["counter"] == "seg" {
            assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{ready}");
            break;
        }
        assert!(
            !stalled.is_finished() && waited.elapsed() < crate::support::service::DEADLINE,
            "/readyz never named the stuck fetch: {ready}"
        );
    }
    let (status, body) = stalled.await.unwrap();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"], "unavailable", "{body}");

    proxy.thaw();
    let thawed = std::time::Instant::now();
    loop {
        let (status, body) = get(&api, "/v1/counters/seg/values?count=5").await;
        if status == StatusCode::OK {
            break;
        }
        assert!(
            thawed.elapsed() < crate::support::service::DEADLINE,
            "no recovery: {body}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Shutdown with the database gone silent again: the tail cannot be
    // given back, and the counter is reported, not waited for.
    proxy.freeze();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let failures = tokio::time::timeout(
        crate::support::service::DEADLINE,
        server.run(listener, std::future::ready(())),
    )
    .await
    .expect("shutdown waited for a database that does not answer")
    .unwrap();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0].0.as_str(), "seg");
}

/// One GET through `router` with `Accept: text/plain`: status and text.
async fn get_text(router: &Router, path: &str) -> (StatusCode, String) {
    let request = Request::get(path)
        .header("accept", "text/plain")
        .body(Body::empty())
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

/// Leaf's routes answer bare decimals, as Leaf's clients parse them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaf_routes_answer_bare_decimals() {
    let server = server(
        "serve_leaf",
        &[
            ("seg", CounterSpec::of(CounterKind::Segment).start(7)),
            (
                "ev",
                CounterSpec::of(CounterKind::Snowflake).prefixes(Vec::new()),
            ),
        ],
        Limits::default(),
    )
    .await;
    let router = server.router();
    let mut segment = Vec::new();
    let mut snowflake = Vec::new();
    for _ in 0..3 {
        let (status, body) = get_text(&router, "/api/segment/get/seg").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        segment.push(body.parse::<u64>().expect("a bare decimal"));
        let (status, body) = get_text(&router, "/api/snowflake/get/ev").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        snowflake.push(body.parse::<u64>().expect("a bare decimal"));
    }
    assert_eq!(segment, [7, 8, 9]);
    assert!(
        snowflake.windows(2).all(|pair| pair[0] < pair[1]),
        "{snowflake:?}"
    );
}

/// Ranges: runs of consecutive values of a segment or auto-increment
/// counter, covering exactly `count` values none of which any other route
/// hands out; cyclic and snowflake counters are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ranges_cover_exactly_count_values() {
    let server = server(
        "serve_ranges",
        &[
            (
                "seg",
                CounterSpec::of(CounterKind::Segment)
                    .step(10)
                    .prefixes(Vec::new()),
            ),
            (
                "inv",
                CounterSpec::of(CounterKind::Autoinc)
                    .start(5)
                    .prefixes(Vec::new()),
            ),
            ("orders", CounterSpec::default()),
        ],
        Limits::default(),
    )
    .await;
    let router = server.router();
    let values = |answer: (StatusCode, Value)| -> Vec<u64> {
        assert_eq!(answer.0, StatusCode::OK, "{}", answer.1);
        serde_json::from_value(answer.1["values"].clone()).unwrap()
    };
    let expand = |answer: (StatusCode, Value)| -> Vec<u64> {
        assert_eq!(answer.0, StatusCode::OK, "{}", answer.1);
        answer.1["ranges"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|run| run[0].as_u64().unwrap()..=run[1].as_u64().unwrap())
            .collect()
    };
    let first = values(get(&router, "/v1/counters/seg/values?count=3").await);
    // 25 values across segments of at least 10: more than one run.
    let ranged = expand(get(&router, "/v1/counters/seg/ranges?count=25").await);
    let after = values(get(&router, "/v1/counters/seg/values?count=3").await);
    assert_eq!(ranged.len(), 25);
    let all: std::collections::BTreeSet<u64> =
        first.iter().chain(&ranged).chain(&after).copied().collect();
    assert_eq!(all.len(), 31, "overlap: {first:?} {ranged:?} {after:?}");
    assert_eq!(
        expand(get(&router, "/v1/counters/inv/ranges?count=1000").await),
        (5..1005).collect::<Vec<u64>>()
    );
    let (_, text) = get_text(&router, "/v1/counters/inv/ranges?count=2").await;
    assert_eq!(text, "1005 1006\n");
    for (path, status, kind, needle) in [
        (
            "/v1/counters/orders/ranges?count=5",
            StatusCode::CONFLICT,
            "unservable",
            "ranges are served for autoinc and segment counters only",
        ),
        (
            "/v1/counters/inv/ranges?count=0",
            StatusCode::BAD_REQUEST,
            "bad-request",
            "count must be 1 to 1000000, not 0",
        ),
        (
            "/v1/counters/inv/ranges",
            StatusCode::BAD_REQUEST,
            "bad-request",
            "count",
        ),
    ] {
        let (found, body) = get(&router, path).await;
        assert_eq!(found, status, "{path}: {body}");
        assert_eq!(body["error"], kind, "{path}: {body}");
        assert!(
            body["message"].as_str().unwrap().contains(needle),
            "{path}: {body}"
        );
    }
    assert_eq!(
        values(get(&router, "/v1/counters/inv/values").await),
        [1007]
    );
}

/// `POST /v1/validate`: parts for valid IDs, reasons for the others, and a
/// snowflake counter's fields read by the policy with its layout; a
/// malformed body is a 400 naming the field, one over `--max-body` a 413.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_reads_ids_back() {
    let database = support::database("serve_validate").await;
    sequence::create(
        &database,
        &CounterName::new("ev").unwrap(),
        &CounterSpec::of(CounterKind::Snowflake).prefixes(vec!["EVT-".into()]),
    )
    .await
    .unwrap();
    let runtime = PolicyRuntime::new().unwrap();
    let local = runtime.load_builtin("base32").unwrap();
    let mut options = ServeOptions::default();
    options.limits.max_body_bytes = 200;
    let server = Server::start(&database, &runtime, local, options)
        .await
        .unwrap();
    let router = server.router();
    let post = |body: String| {
        let router = router.clone();
        async move {
            let request = Request::post("/v1/validate")
                .header("content-type", "application/json")
                .header("content-length", body.len())
                .body(Body::from(body))
                .unwrap();
            let response = router.oneshot(request).await.unwrap();
            let status = response.status();
            let bytes = response.into_body().collect().await.unwrap().to_bytes();
            (status, serde_json::from_slice::<Value>(&bytes).unwrap())
        }
    };
    let (status, ids) = get(&router, "/v1/counters/ev/ids?count=2").await;
    assert_eq!(status, StatusCode::OK, "{ids}");
    let id = ids["ids"][0].as_str().unwrap();
    let (status, answer) = post(format!(r#"{{"ids": ["{id}", "EVT-!"], "counter": "ev"}}"#)).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["valid"], false);
    let parts = &answer["results"][0]["parts"];
    assert_eq!(parts["prefix"], "EVT-");
    assert!(parts["snowflake"]["time"].as_u64().unwrap() > 0, "{answer}");
    assert_eq!(answer["results"][1]["valid"], false);
    assert!(answer["results"][1]["error"].is_string());
    let (status, malformed) = post("{\"ids\": 3}".to_string()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{malformed}");
    assert_eq!(malformed["error"], "bad-request");
    assert!(malformed["message"].as_str().unwrap().contains("ids"));
    let (status, large) = post(format!(r#"{{"ids": ["{}"]}}"#, "A".repeat(300))).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{large}");
    assert_eq!(large["error"], "too-large");
    assert!(large["message"]
        .as_str()
        .unwrap()
        .contains("limit of 200 bytes"));
}

/// Requests for IDs that arrive together share policy calls (the batcher),
/// and each still gets its own IDs: as many as it asked for, from values
/// taken in order, none lost and none given twice; `/metrics` counts each
/// request once among the calls' requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_for_ids_that_arrive_together_each_get_their_own() {
    let server = server(
        "serve_batched",
        &[("orders", CounterSpec::default().maxval(99))],
        Limits::default(),
    )
    .await;
    let router = server.router();
    // The minter is prepared by the first request: the others race only
    // for the batcher.
    let (status, first) = get_text(&router, "/v1/counters/orders/ids").await;
    assert_eq!(status, StatusCode::OK, "{first}");
    // 24 requests of 1 to 4 IDs: values 2 to 61, below the wrap at 99, so
    // the default policy's two digits are the values themselves.
    let counts: Vec<usize> = (0..24).map(|request| 1 + request % 4).collect();
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(counts.len()));
    let requests: Vec<_> = counts
        .iter()
        .map(|&count| {
            let (router, barrier) = (router.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                get_text(&router, &format!("/v1/counters/orders/ids?count={count}")).await
            })
        })
        .collect();
    let mut taken = Vec::new();
    for (request, count) in requests.into_iter().zip(&counts) {
        let (status, text) = request.await.unwrap();
        assert_eq!(status, StatusCode::OK, "{text}");
        let values: Vec<u64> = text
            .lines()
            .map(|id| id[id.len() - 2..].parse().unwrap())
            .collect();
        assert_eq!(values.len(), *count, "{text}");
        assert!(
            values.windows(2).all(|pair| pair[1] == pair[0] + 1),
            "a request's IDs are its own consecutive values: {text}"
        );
        taken.extend(values);
    }
    taken.sort_unstable();
    assert_eq!(
        taken,
        (2..=61).collect::<Vec<u64>>(),
        "none lost, none twice"
    );
    let (_, metrics) = get(&server.admin_router(), "/metrics").await;
    let metrics = metrics.as_str().unwrap();
    let total = |name: &str| -> u64 {
        let line = metrics
            .lines()
            .find(|line| line.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} not in\n{metrics}"));
        line[name.len() + 1..].parse().unwrap()
    };
    assert_eq!(total("idmint_policy_call_requests_total"), 25);
    let calls = total("idmint_policy_calls_total");
    assert!((1..=25).contains(&calls), "{calls} calls");
}

/// IDs without a prefix from a counter that owns none, kept apart by its
/// tag (a standard ID): once the prepared minter is older than
/// `Limits::minter_max_age` (here zero: at once), the counter is read again,
/// and a tag that is no longer the counter's is not served: the minter is
/// prepared afresh, and the IDs carry the tag the counter has now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aged_minter_keyed_by_a_tag_serves_the_tag_the_counter_has_now() {
    const TEST: &str = "serve_minter_age_tag";
    let database = support::database(TEST).await;
    let name = CounterName::new("events").unwrap();
    sequence::create(
        &database,
        &name,
        &CounterSpec::of(CounterKind::Snowflake).prefixes(Vec::new()),
    )
    .await
    .unwrap();
    let runtime = PolicyRuntime::new().unwrap();
    let uuidv7 = runtime.load_builtin("uuidv7").unwrap();
    let mut options = ServeOptions::default();
    options.limits.minter_max_age = Duration::ZERO;
    let server = Server::start(&database, &runtime, uuidv7.clone(), options)
        .await
        .unwrap();
    let router = server.router();
    // The tag each ID of an answer carries, read back by the policy.
    let tags = |body: &Value| -> Vec<u32> {
        let ids: Vec<String> = body["ids"]
            .as_array()
            .expect("ids")
            .iter()
            .map(|id| id.as_str().unwrap().to_string())
            .collect();
        uuidv7
            .validate_many(&ids, Some(""), Some(&idmint::parts::Layout::default()))
            .unwrap()
            .into_iter()
            .map(|parts| parts.unwrap().snowflake.unwrap().tag)
            .collect()
    };
    let (status, body) = get(&router, "/v1/counters/events/ids?count=3").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let first = sequence::state(&database, &name)
        .await
        .unwrap()
        .counter_tag()
        .unwrap()
        .tag;
    assert_eq!(tags(&body), [first; 3], "{body}");
    // A tag no counter was given (tags only grow), as a restore or a hand
    // edit could leave it.
    let now = first + 1000;
    database
        .collection::<mongodb::bson::Document>(sequence::COUNTERS_COLLECTION)
        .update_one(
            mongodb::bson::doc! { "_id": "events" },
            mongodb::bson::doc! { "$set": { "tag": i64::from(now) } },
        )
        .await
        .unwrap();
    let (status, body) = get(&router, "/v1/counters/events/ids?count=3").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(tags(&body), [now; 3], "{body}");
}
