//! `idmint serve`'s admin listener and who may use it (issue 31): an
//! address other hosts reach is refused without a token (exit 2, before
//! anything starts) unless `--admin-insecure` says so, and then warned
//! about; with `--admin-token-sha256` (or `IDMINT_ADMIN_TOKEN_SHA256`)
//! every operator route answers 401 without the token and 200 with it,
//! while `/healthz` stays open.

use std::process::{Command, Stdio};
use std::time::Instant;

use crate::support::service::{assert_error, block_on, request, Service, DEADLINE};
use crate::support::{self, idmint};

/// Runs `command` until it exits, within the deadline (killed and failed
/// past it: a server that should have refused to start is serving).
fn exit_within_deadline(command: &mut Command) -> std::process::Output {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start idmint");
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "still running: it did not refuse to start\nstdout: {}\nstderr: {}",
                support::stdout(&output),
                support::stderr(&output)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn an_admin_listener_other_hosts_reach_needs_a_token() {
    const TEST: &str = "serve_admin_exposed";
    block_on(support::database(TEST));
    let serve = |args: &[&str]| {
        let mut command = idmint(TEST);
        command
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args);
        command
    };
    // Every address, no token: refused, naming the way out.
    let refused = exit_within_deadline(&mut serve(&["--admin-listen", "0.0.0.0:0"]));
    support::assert_exit(&refused, 2);
    let error = support::stderr(&refused);
    assert!(
        error.contains("the admin listener on 0.0.0.0:0 is reachable from other hosts")
            && error.contains("--admin-token-sha256")
            && error.contains("--admin-insecure"),
        "{error}"
    );
    assert!(support::stdout(&refused).is_empty(), "it listened");
    // A token that is not a SHA-256 (the token itself, say) is refused
    // without being repeated.
    let pasted = exit_within_deadline(&mut serve(&[
        "--admin-listen",
        "0.0.0.0:0",
        "--admin-token-sha256",
        "tok-pasted-by-mistake",
    ]));
    support::assert_exit(&pasted, 2);
    let error = support::stderr(&pasted);
    assert!(error.contains("64 hexadecimal digits"), "{error}");
    assert!(!error.contains("tok-pasted-by-mistake"), "{error}");
    // Said to be meant: served, and warned about on stderr.
    let mut child = serve(&["--admin-listen", "0.0.0.0:0", "--admin-insecure"])
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start idmint serve");
    let log = support::process::read_lines(child.stderr.take().unwrap());
    let warned = loop {
        match log.recv_timeout(DEADLINE) {
            Ok(line) if line.contains("REQUIRES NO TOKEN") => break line,
            Ok(_) => continue,
            Err(error) => {
                let _ = child.kill();
                panic!("no warning: {error}");
            }
        }
    };
    assert!(warned.contains("WARN"), "{warned}");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn the_admin_token_guards_every_operator_route() {
    const TEST: &str = "serve_admin_token";
    block_on(support::database(TEST));
    let token = "tok-admin-0123";
    let mut command = idmint(TEST);
    command.env(
        "IDMINT_ADMIN_TOKEN_SHA256",
        idmint::checksum::sha256_hex(token.as_bytes()),
    );
    let service = Service::spawn(command, &[]);
    let bearer = format!("Bearer {token}");
    for path in [
        "/readyz",
        "/metrics",
        "/openapi.json",
        "/monitor",
        "/monitor.json",
    ] {
        assert_error(&service.admin(path), 401, "unauthenticated", "bearer token");
        let wrong = request(
            &service.admin,
            "GET",
            path,
            &[("Authorization", "Bearer tok-admin-0124")],
            None,
        );
        assert_error(&wrong, 401, "unauthenticated", "bearer token");
        let right = request(
            &service.admin,
            "GET",
            path,
            &[("Authorization", &bearer)],
            None,
        );
        assert_eq!(right.status, 200, "{path}: {right:?}");
    }
    // Liveness tells nothing: open on both listeners.
    assert_eq!(service.admin("/healthz").status, 200);
    assert_eq!(service.get("/healthz").status, 200);
}
