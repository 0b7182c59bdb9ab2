//! The HTTP service as its clients see it: a running `idmint serve`, and a
//! client of a few lines of HTTP/1.1 over `TcpStream` (one request per
//! connection), so that tests see exactly what any app sees. The tests
//! using it are plain `#[test]`s (blocking clients, no runtime to stall).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use serde_json::Value;

use super::process::{idmint, read_lines, signal};

/// How long to wait for an event (the service starting, a swap landing).
pub const DEADLINE: Duration = Duration::from_secs(30);

/// Runs `future` on a runtime of its own: these tests are plain `#[test]`s,
/// whose clients are blocking sockets and processes; only the database
/// setup is async.
pub fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

/// A running `idmint serve`.
pub struct Service {
    pub child: Child,
    pub address: String,
    /// The admin listener's address (`/metrics`, `/readyz`, `/openapi.json`).
    pub admin: String,
    pub stderr: Receiver<String>,
}

impl Service {
    /// Starts `idmint serve --listen 127.0.0.1:0 ARGS` for `test` and waits
    /// for the address it prints.
    pub fn start(test: &str, args: &[&str]) -> Self {
        Self::spawn(idmint(test), args)
    }

    /// Starts `command` (an `idmint` set up by the caller: a server of the
    /// test's own) as `serve --listen 127.0.0.1:0 ARGS`, and waits for the
    /// address it prints.
    pub fn spawn(command: Command, args: &[&str]) -> Self {
        let (child, stderr, listening) = spawn_serve(command, "127.0.0.1:0", args);
        let (address, admin) = listening.unwrap_or_else(|first| {
            let log: Vec<String> = stderr.try_iter().collect();
            panic!("idmint serve did not start: {first:?}\n{}", log.join("\n"))
        });
        Self {
            child,
            address,
            admin,
            stderr,
        }
    }

    /// A GET on the API listener.
    pub fn get(&self, path: &str) -> Answer {
        request(&self.address, "GET", path, &[], None)
    }

    /// A GET on the admin listener.
    pub fn admin(&self, path: &str) -> Answer {
        request(&self.admin, "GET", path, &[], None)
    }

    /// Sends SIGTERM and waits for the exit code.
    pub fn terminate(mut self) -> (i32, String) {
        signal(self.child.id(), libc::SIGTERM);
        let status = self.child.wait().expect("wait for idmint serve");
        let log: Vec<String> = self.stderr.try_iter().collect();
        (status.code().unwrap_or(-1), log.join("\n"))
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `command` (an `idmint` set up by the caller) as `serve --listen
/// LISTEN --admin-listen 127.0.0.1:0 ARGS`, logging at `info` unless the
/// command sets `RUST_LOG`: the
/// process, the lines of its stderr, and the API and admin addresses it
/// listens on ([`listening`]: `Err`, the line that came instead).
pub fn spawn_serve<S: AsRef<OsStr>>(
    mut command: Command,
    listen: &str,
    args: &[S],
) -> (Child, Receiver<String>, Result<(String, String), String>) {
    if !command.get_envs().any(|(name, _)| name == "RUST_LOG") {
        command.env("RUST_LOG", "info");
    }
    let mut child = command
        .args(["serve", "--listen", listen, "--admin-listen", "127.0.0.1:0"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start idmint serve");
    let stderr = read_lines(child.stderr.take().expect("piped stderr"));
    let addresses = listening(child.stdout.take().expect("piped stdout"));
    (child, stderr, addresses)
}

/// The API and admin addresses `idmint serve` prints first, once it
/// listens ("listening on http://API (admin on http://ADMIN)"), read from
/// its `stdout` (drained after). Waited for at most [`DEADLINE`], so that a
/// service stuck before it listens fails the test instead of hanging it;
/// `Err` holds the line that came instead (empty for none).
pub fn listening(stdout: ChildStdout) -> Result<(String, String), String> {
    let first = read_lines(stdout)
        .recv_timeout(DEADLINE)
        .unwrap_or_default();
    first
        .trim()
        .strip_prefix("listening on http://")
        .and_then(|rest| rest.strip_suffix(')'))
        .and_then(|rest| rest.split_once(" (admin on http://"))
        .map(|(api, admin)| (api.to_string(), admin.to_string()))
        .ok_or(first)
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: HashMap<String, String>,
    pub body: String,
}

impl Answer {
    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|error| panic!("not JSON ({error}): {self:?}"))
    }

    /// The `values` of a 200 answer.
    pub fn values(&self) -> Vec<u64> {
        assert_eq!(self.status, 200, "{self:?}");
        self.json()["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|value| value.as_u64().unwrap())
            .collect()
    }
}

/// One request on a fresh connection.
pub fn request(
    address: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Answer {
    let mut stream = TcpStream::connect(address).expect("connect to idmint serve");
    stream.set_read_timeout(Some(DEADLINE)).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(body) = body {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    head.push_str("\r\n");
    head.push_str(body.unwrap_or(""));
    stream.write_all(head.as_bytes()).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).expect("read the answer");
    let (head, body) = raw.split_once("\r\n\r\n").expect("an HTTP answer");
    let (status, headers) = status_and_headers(head);
    Answer {
        status,
        headers,
        body: body.to_string(),
    }
}

/// The status of an HTTP answer's head and its headers, names lowercased.
pub fn status_and_headers(head: &str) -> (u16, HashMap<String, String>) {
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .expect("a status line");
    let headers = lines
        .filter_map(|line| line.split_once(": "))
        .map(|(name, value)| (name.to_ascii_lowercase(), value.to_string()))
        .collect();
    (status, headers)
}

/// Asserts an error answer: its status, its `error` kind, and a message
/// that contains `needle`.
#[track_caller]
pub fn assert_error(answer: &Answer, status: u16, kind: &str, needle: &str) {
    assert_eq!(answer.status, status, "{answer:?}");
    let body = answer.json();
    assert_eq!(body["error"], kind, "{answer:?}");
    assert!(
        body["message"].as_str().unwrap().contains(needle),
        "{needle:?} not in {answer:?}"
    );
}
