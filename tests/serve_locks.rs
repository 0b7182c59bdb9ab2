//! Locks held by HTTP clients of `idmint serve` (`POST /v1/locks/{name}/
//! acquire`, `renew`, `release`), against the real server and real service
//! processes: the lease's ID is all a client keeps, so another instance
//! renews it after the first was killed with `kill -9`; a client that stops
//! renewing loses the lock to the next in line, never before the time it
//! was told to trust its lease; sixteen clients never put more than a
//! semaphore's permits, or a writer beside anyone, in the lock at once; a
//! token opens the locks it lists only; bad requests are refused by name.

use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support;
use crate::support::locks::line;
use crate::support::service::{assert_error, block_on, request, Answer, Service};
use crate::support::wait::{self, PATIENCE};

/// `POST path` with a JSON body, and a bearer token if given.
fn post(address: &str, path: &str, body: &Value, token: Option<&str>) -> Answer {
    let bearer = token.map(|token| format!("Bearer {token}"));
    let headers: Vec<(&str, &str)> = bearer
        .as_deref()
        .map(|value| ("Authorization", value))
        .into_iter()
        .collect();
    request(address, "POST", path, &headers, Some(&body.to_string()))
}

fn acquire(address: &str, lock: &str, body: Value) -> Answer {
    post(address, &format!("/v1/locks/{lock}/acquire"), &body, None)
}

fn renew(address: &str, lock: &str, lease: &str) -> Answer {
    post(
        address,
        &format!("/v1/locks/{lock}/renew"),
        &json!({ "lease": lease }),
        None,
    )
}

fn release(address: &str, lock: &str, lease: &str) -> Answer {
    post(
        address,
        &format!("/v1/locks/{lock}/release"),
        &json!({ "lease": lease }),
        None,
    )
}

/// The lease of a 200 answer: its ID and fencing token.
#[track_caller]
fn lease_of(answer: &Answer) -> (String, i64) {
    assert_eq!(answer.status, 200, "{answer:?}");
    let body = answer.json();
    (
        body["lease"].as_str().unwrap().to_string(),
        body["token"].as_i64().unwrap(),
    )
}

#[test]
fn a_client_holds_renews_and_releases_and_the_next_in_line_gets_the_lock() {
    const TEST: &str = "serve_lock_lease";
    block_on(support::database(TEST));
    // Every request logged, to see that no line holds a lease's ID.
    let mut command = support::idmint(TEST);
    command.env("RUST_LOG", "idmint_serve=debug,info");
    let service = Service::spawn(command, &[]);
    let first = acquire(&service.address, "report", json!({ "ttl_ms": 5000 }));
    let (lease, token) = lease_of(&first);
    assert_eq!(first.json()["lease_ms"], 4500, "{}", first.body);
    assert_eq!(first.json()["shared"], false);
    assert_error(
        &acquire(&service.address, "report", json!({ "ttl_ms": 5000 })),
        409,
        "lock-busy",
        &format!("fencing token {token}"),
    );
    assert_eq!(renew(&service.address, "report", &lease).status, 200);

    // A second client waits in line; the release hands it the lock.
    let waiting = std::thread::scope(|scope| {
        let waiter = scope.spawn(|| {
            acquire(
                &service.address,
                "report",
                json!({ "ttl_ms": 5000, "wait_ms": 4000 }),
            )
        });
        wait::until(PATIENCE, "a waiter in the lock's line", || {
            block_on(async {
                let database = support::database_handle(TEST).await;
                !line(&database, "report").await.is_empty()
            })
        });
        let released = release(&service.address, "report", &lease);
        assert_eq!(released.status, 200, "{released:?}");
        assert_eq!(released.json()["token"], token);
        waiter.join().unwrap()
    });
    let (next_lease, next_token) = lease_of(&waiting);
    assert_eq!(next_token, token + 1);

    // The first lease is gone: renewing or releasing it again is refused,
    // and changes nothing.
    assert_error(
        &renew(&service.address, "report", &lease),
        409,
        "lease-lost",
        "lease lost",
    );
    assert_error(
        &release(&service.address, "report", &lease),
        409,
        "lease-lost",
        "lease lost",
    );
    let status = service.get("/v1/locks/report").json();
    assert_eq!(status["held"], true, "{status}");
    assert_eq!(status["token"], next_token, "{status}");
    assert_eq!(release(&service.address, "report", &next_lease).status, 200);

    // The lease's ID, a secret, is in no log line.
    let (_, log) = service.terminate();
    let owner = lease.rsplit('.').next().unwrap();
    assert!(
        !log.contains(owner),
        "the lease's owner token was logged:\n{log}"
    );
    assert!(
        log.contains(r#"route="/v1/locks/{name}/release" status=200"#),
        "{log}"
    );
}

#[test]
fn a_lease_is_renewed_and_released_through_another_instance_after_the_first_was_killed() {
    const TEST: &str = "serve_lock_instances";
    block_on(support::database(TEST));
    let mut first = Service::start(TEST, &[]);
    let (lease, token) = lease_of(&acquire(
        &first.address,
        "nightly",
        json!({ "ttl_ms": 20000, "label": "node-a" }),
    ));
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    let second = Service::start(TEST, &[]);
    let renewed = renew(&second.address, "nightly", &lease);
    assert_eq!(renewed.status, 200, "{renewed:?}");
    assert_eq!(renewed.json()["token"], token);
    let status = second.get("/v1/locks/nightly").json();
    assert_eq!(status["label"], "node-a", "{status}");
    assert!(
        status["expires_in_ms"].as_i64().unwrap() > 15_000,
        "{status}"
    );
    assert_eq!(release(&second.address, "nightly", &lease).status, 200);
    assert_eq!(second.get("/v1/locks/nightly").json()["held"], false);
}

#[test]
fn a_client_that_stops_renewing_loses_the_lock_never_before_its_lease_ms() {
    const TEST: &str = "serve_lock_lapse";
    block_on(support::database(TEST));
    let service = Service::start(TEST, &[]);
    let sent = Instant::now();
    let first = acquire(&service.address, "sweep", json!({ "ttl_ms": 2000 }));
    let (lease, token) = lease_of(&first);
    let trusted = Duration::from_millis(first.json()["lease_ms"].as_u64().unwrap());
    // Never renewed: the next in line gets the lock once its TTL ends on
    // the server, after the time the first client was told to trust it.
    let next_sent = Instant::now();
    let next = acquire(
        &service.address,
        "sweep",
        json!({ "ttl_ms": 5000, "wait_ms": 4000 }),
    );
    let taken = sent.elapsed();
    let (next_lease, next_token) = lease_of(&next);
    assert!(next_token > token);
    assert!(
        taken >= trusted,
        "the next holder had the lock {taken:?} after the first asked, within the {trusted:?} it trusted"
    );
    // It waited more than a second in line, and its lease_ms says so: the
    // TTL's share and the whole seconds it waited, counted from when it sent
    // its request, ending before the server ends its lease.
    let next_trusted = next.json()["lease_ms"].as_u64().unwrap();
    assert!(next_trusted >= 4500 + 1000, "{}", next.body);
    let asked = Instant::now();
    let status = service.get("/v1/locks/sweep").json();
    let server_left = status["expires_in_ms"].as_u64().unwrap();
    let trusted_end = next_sent + Duration::from_millis(next_trusted);
    let server_end = asked + Duration::from_millis(server_left);
    assert!(
        trusted_end <= server_end,
        "trusted {:?} past the server's end of the lease",
        trusted_end - server_end
    );
    assert_error(
        &renew(&service.address, "sweep", &lease),
        409,
        "lease-lost",
        "",
    );
    assert_eq!(release(&service.address, "sweep", &next_lease).status, 200);
}

/// Who holds the lock at once, as the clients themselves count it: each
/// counts itself in after its acquire answered and out before it sends its
/// release, so a count above the lock's rule means the server admitted two
/// it must not have.
#[derive(Default)]
struct Inside {
    permits: usize,
    writers: usize,
    most_permits: usize,
    tokens: Vec<i64>,
}

#[test]
fn sixteen_clients_never_hold_more_than_the_permits_nor_a_writer_beside_anyone() {
    const TEST: &str = "serve_lock_permits";
    block_on(support::database(TEST));
    let service = Service::start(TEST, &[]);
    let permit = json!({ "ttl_ms": 5000, "wait_ms": 4000, "permits": 3 });
    let writer = json!({ "ttl_ms": 5000, "wait_ms": 4000 });

    // Three permits are held at once (a barrier of the three holders), and
    // neither a fourth nor a writer gets in beside them.
    let three = Barrier::new(4);
    std::thread::scope(|scope| {
        let holders: Vec<_> = (0..3)
            .map(|_| {
                scope.spawn(|| {
                    let (lease, _) = lease_of(&acquire(&service.address, "pool", permit.clone()));
                    three.wait();
                    three.wait();
                    assert_eq!(release(&service.address, "pool", &lease).status, 200);
                })
            })
            .collect();
        three.wait();
        // Asked while the three hold; checked once they are let go (a
        // failed check must not leave them at the barrier).
        let beside: Vec<Answer> = [
            json!({ "ttl_ms": 5000, "permits": 3 }),
            json!({ "ttl_ms": 5000 }),
        ]
        .into_iter()
        .map(|body| acquire(&service.address, "pool", body))
        .collect();
        let status = service.get("/v1/locks/pool").json();
        three.wait();
        holders.into_iter().for_each(|h| h.join().unwrap());
        for answer in &beside {
            assert_error(answer, 409, "lock-busy", "");
        }
        assert_eq!(status["shared"], 3, "{status}");
    });

    // Sixteen clients, four of them writers, three rounds each, started at
    // once: the rule holds throughout.
    let inside = Arc::new(Mutex::new(Inside::default()));
    let start = Barrier::new(16);
    std::thread::scope(|scope| {
        for client in 0..16 {
            let body = if client % 4 == 0 { &writer } else { &permit };
            let (inside, start, address) = (&inside, &start, service.address.as_str());
            scope.spawn(move || {
                start.wait();
                for _ in 0..3 {
                    let answer = loop {
                        let answer = acquire(address, "pool", body.clone());
                        if answer.status != 409 {
                            break answer;
                        }
                    };
                    let (lease, token) = lease_of(&answer);
                    let is_writer = body.get("permits").is_none();
                    {
                        let mut now = inside.lock().unwrap();
                        if is_writer {
                            now.writers += 1;
                        } else {
                            now.permits += 1;
                        }
                        now.most_permits = now.most_permits.max(now.permits);
                        now.tokens.push(token);
                        assert!(
                            now.writers <= 1 && (now.writers == 0 || now.permits == 0),
                            "a writer beside another holder: {} writer(s), {} permit(s)",
                            now.writers,
                            now.permits
                        );
                        assert!(now.permits <= 3, "{} permit holders at once", now.permits);
                    }
                    {
                        let mut now = inside.lock().unwrap();
                        if is_writer {
                            now.writers -= 1;
                        } else {
                            now.permits -= 1;
                        }
                    }
                    assert_eq!(release(address, "pool", &lease).status, 200);
                }
            });
        }
    });
    let inside = inside.lock().unwrap();
    let mut tokens = inside.tokens.clone();
    tokens.sort_unstable();
    tokens.dedup();
    assert_eq!(tokens.len(), 48, "each holding its own fencing token");
}

#[test]
fn a_token_opens_the_locks_it_lists_and_bad_requests_are_refused_by_name() {
    const TEST: &str = "serve_lock_tokens";
    block_on(support::database(TEST));
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.json");
    let (jobs, plain) = ("tok-jobs-51c2", "tok-plain-9e07");
    std::fs::write(
        &tokens,
        format!(
            r#"{{"apps": [{{"name": "jobs", "token_sha256": "{}", "counters": ["orders"], "locks": ["nightly", "readers"]}}, {{"name": "plain", "token_sha256": "{}", "counters": ["*"]}}]}}"#,
            idmint::checksum::sha256_hex(jobs.as_bytes()),
            idmint::checksum::sha256_hex(plain.as_bytes())
        ),
    )
    .unwrap();
    let service = Service::start(TEST, &["--tokens", tokens.to_str().unwrap()]);
    let take = |lock: &str, body: Value, token: Option<&str>| {
        post(
            &service.address,
            &format!("/v1/locks/{lock}/acquire"),
            &body,
            token,
        )
    };
    let ttl = json!({ "ttl_ms": 5000 });
    assert_error(
        &take("nightly", ttl.clone(), None),
        401,
        "unauthenticated",
        "bearer",
    );
    assert_error(
        &take("nightly", ttl.clone(), Some(plain)),
        403,
        "forbidden",
        "application 'plain' may not take lock 'nightly'",
    );
    assert_error(
        &take("weekly", ttl.clone(), Some(jobs)),
        403,
        "forbidden",
        "may not take lock 'weekly'",
    );

    // A scheduled job's lock, and a reader's place, taken with an
    // at-least and released at once: each stays held until it has passed,
    // so a writer still finds it busy.
    for (lock, shared) in [("nightly", false), ("readers", true)] {
        let job = take(
            lock,
            json!({ "ttl_ms": 5000, "at_least_ms": 60000, "shared": shared }),
            Some(jobs),
        );
        let (lease, _) = lease_of(&job);
        let released = post(
            &service.address,
            &format!("/v1/locks/{lock}/release"),
            &json!({ "lease": lease }),
            Some(jobs),
        );
        assert_eq!(released.status, 200, "{released:?}");
        assert_error(&take(lock, ttl.clone(), Some(jobs)), 409, "lock-busy", "");
    }
    let status = request(
        &service.address,
        "GET",
        "/v1/locks/readers",
        &[("Authorization", &format!("Bearer {jobs}"))],
        None,
    )
    .json();
    assert_eq!(status["shared"], 1, "{status}");

    for (body, says) in [
        (json!({}), "ttl_ms"),
        (json!({ "ttl_ms": 10 }), "lease ttl"),
        (json!({ "ttl_ms": 5000, "permits": 0 }), "permits"),
        (
            json!({ "ttl_ms": 5000, "permits": 5_000_000 }),
            "out of range 1..=1000000",
        ),
        (
            json!({ "ttl_ms": 5000, "wait_ms": 90_000_000 }),
            "wait_ms 90000000 is out of range",
        ),
        (
            json!({ "ttl_ms": 5000, "at_least_ms": 90_000_000 }),
            "at least",
        ),
        (json!({ "ttl_ms": 5000, "label": "" }), "holder label"),
        (json!({ "ttl_ms": 5000, "mode": "x" }), "unknown field"),
    ] {
        assert_error(&take("nightly", body, Some(jobs)), 400, "bad-request", says);
    }
    for lease in ["", "l1.x.1", "l1.x.1.1000.0.o\u{1}", "not-a-lease"] {
        let answer = post(
            &service.address,
            "/v1/locks/nightly/renew",
            &json!({ "lease": lease }),
            Some(jobs),
        );
        assert_error(&answer, 400, "bad-request", "invalid lease id");
    }
    // The token's rights first: a name it does not list is 403, valid or not.
    assert_error(&take("bad%20name", ttl, Some(jobs)), 403, "forbidden", "");
}
