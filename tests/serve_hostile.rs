//! `idmint serve` against slow and hostile clients (issue 18, section 3),
//! over real sockets, because the wire is the point: connections that send
//! nothing, more connections than the cap, a client that pipelines requests
//! and never reads its answers while the server shuts down, request bodies
//! that never arrive. Each test has a legitimate client answered beside
//! the hostile ones, and makes the hostile state certain before it asserts
//! (the server's own gauges on the admin listener), never a sleep.
//!
//! The clients are blocking sockets, so these are plain `#[test]`s; the
//! database is prepared on a runtime of their own.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::support::service::{assert_error, block_on, Answer, Service, DEADLINE};
use crate::support::{self, create, idmint, run};

/// A connection kept open across requests (HTTP/1.1 keep-alive).
struct Connection(TcpStream);

impl Connection {
    fn open(address: &str) -> Self {
        let stream = TcpStream::connect(address).expect("connect to idmint serve");
        stream.set_read_timeout(Some(DEADLINE)).unwrap();
        Self(stream)
    }

    /// Sends one GET and reads its answer, leaving the connection open.
    fn get(&mut self, path: &str, headers: &[(&str, &str)]) -> Answer {
        let mut head = format!("GET {path} HTTP/1.1\r\nHost: idmint\r\n");
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        self.0.write_all(head.as_bytes()).unwrap();
        self.answer()
    }

    /// Reads one answer (its header, then `content-length` bytes).
    fn answer(&mut self) -> Answer {
        let mut raw = Vec::new();
        let mut byte = [0u8; 1];
        while !raw.ends_with(b"\r\n\r\n") {
            let read = self.0.read(&mut byte).expect("read an answer");
            assert_eq!(read, 1, "the connection closed mid-answer: {raw:?}");
            raw.push(byte[0]);
        }
        let head = String::from_utf8(raw).unwrap();
        let (status, headers) = crate::support::service::status_and_headers(&head);
        let length: usize = headers["content-length"].parse().unwrap();
        let mut body = vec![0u8; length];
        self.0.read_exact(&mut body).unwrap();
        Answer {
            status,
            headers,
            body: String::from_utf8(body).unwrap(),
        }
    }

    /// Reads until the server closes the connection; what it sent first.
    fn until_closed(&mut self) -> std::io::Result<Vec<u8>> {
        let mut rest = Vec::new();
        self.0.read_to_end(&mut rest).map(|_| rest)
    }
}

/// Gives `stream` a small receive buffer of its own: the kernel no longer
/// grows its window as answers arrive, so a server write that finds it full
/// stays blocked (a growing window would let the answer in flight finish,
/// and a shutdown then end the connection before its deadline).
fn fixed_receive_window(stream: &TcpStream) {
    use std::os::fd::AsRawFd;
    let size: libc::c_int = 4096;
    // SAFETY: a valid socket, and an int option of the size given.
    let set = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            std::ptr::addr_of!(size).cast(),
            std::mem::size_of_val(&size) as libc::socklen_t,
        )
    };
    assert_eq!(
        set,
        0,
        "setsockopt SO_RCVBUF: {}",
        std::io::Error::last_os_error()
    );
}

/// Waits until `metric` reads `value` on the admin listener.
fn wait_for_metric(service: &Service, metric: &str, value: u64) {
    wait_for_metrics(service, &[metric], value);
}

/// Waits until the sum of `metrics` reads `value` on the admin listener.
fn wait_for_metrics(service: &Service, metrics: &[&str], value: u64) {
    let waited = Instant::now();
    loop {
        let text = service.admin("/metrics").body;
        let sum: u64 = metrics
            .iter()
            .filter_map(|metric| {
                text.lines()
                    .find_map(|line| line.strip_prefix(&format!("{metric} ")))
                    .and_then(|value| value.parse::<u64>().ok())
            })
            .sum();
        if sum == value {
            return;
        }
        assert!(
            waited.elapsed() < DEADLINE,
            "{metrics:?} never added up to {value}:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A connection that sends nothing, or dribbles a header it never ends, is
/// closed at `--header-timeout`; so is a keep-alive connection left idle
/// after its answer. A legitimate client is answered meanwhile.
#[test]
fn silent_and_idle_connections_are_closed_at_the_header_timeout() {
    const TEST: &str = "serve_header_timeout";
    block_on(support::database(TEST));
    let service = Service::start(TEST, &["--header-timeout", "0.3"]);
    let mut silent = Connection::open(&service.address);
    let mut dribbling = Connection::open(&service.address);
    dribbling
        .0
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: idmint\r\n")
        .unwrap();
    let mut idle = Connection::open(&service.address);
    assert_eq!(idle.get("/healthz", &[]).status, 200);
    assert_eq!(service.get("/healthz").status, 200);
    for (name, connection) in [
        ("silent", &mut silent),
        ("dribbling", &mut dribbling),
        ("idle", &mut idle),
    ] {
        // Closed by the server (an EOF), not by the test's own deadline.
        let closed = connection.until_closed();
        assert!(closed.is_ok(), "{name}: not closed: {closed:?}");
    }
}

/// At `--max-connections` open connections, one more is answered 503
/// (`overloaded`) and closed at once; the admin listener, with a cap of its
/// own, still answers; when a connection closes, a new client is served.
#[test]
fn connections_past_the_cap_are_refused_at_once() {
    const TEST: &str = "serve_connection_cap";
    block_on(support::database(TEST));
    create(TEST, "inv", &["--kind", "autoinc"]);
    let service = Service::start(TEST, &["--max-connections", "2", "--header-timeout", "60"]);
    // Two connections, each answered once and kept open: both are being
    // served (each holds its place under the cap).
    let mut first = Connection::open(&service.address);
    let mut second = Connection::open(&service.address);
    assert_eq!(first.get("/healthz", &[]).status, 200);
    assert_eq!(second.get("/healthz", &[]).status, 200);
    assert_error(
        &service.get("/v1/counters/inv/values"),
        503,
        "overloaded",
        "connection limit",
    );
    let metrics = service.admin("/metrics").body;
    assert!(
        metrics.contains("idmint_connections_refused_total 1"),
        "{metrics}"
    );
    drop(first);
    // The server sees the close when it reads the EOF: until then the cap
    // holds; then a new client is served (and the refused request took no
    // value: this is the first).
    let closed = Instant::now();
    loop {
        let answer = service.get("/v1/counters/inv/values");
        if answer.status == 200 {
            assert_eq!(answer.values(), [1]);
            break;
        }
        assert_error(&answer, 503, "overloaded", "connection limit");
        assert!(
            closed.elapsed() < DEADLINE,
            "the closed connection is still counted"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(second.get("/healthz", &[]).status, 200);
}

/// Shutdown with a client that pipelines requests and never reads its
/// answers: the server stops within `--shutdown-timeout`, cuts that
/// connection (its requests abandoned), gives the segment's tail back,
/// releases the worker lease, and exits 0.
#[test]
fn shutdown_is_not_stalled_by_a_client_that_never_reads() {
    const TEST: &str = "serve_shutdown_stall";
    block_on(support::database(TEST));
    create(TEST, "seg", &["--kind", "segment", "--step", "1000"]);
    create(TEST, "ev", &["--kind", "snowflake", "--raw"]);
    // The write timeout is far past the test's deadline: the blocked
    // connection can only end by the shutdown, however slowly this
    // machine runs the steps between the block and the signal.
    let mut service = Service::start(
        TEST,
        &["--shutdown-timeout", "1", "--write-timeout", "3600"],
    );
    service.get("/v1/counters/ev/values").values();
    let mut hostile = TcpStream::connect(&service.address).unwrap();
    fixed_receive_window(&hostile);
    let writer = std::thread::spawn(move || {
        let request = b"GET /v1/counters/seg/values?count=1000 HTTP/1.1\r\nHost: idmint\r\n\r\n";
        // Writes until the server cuts the connection; never reads.
        while hostile.write_all(request).is_ok() {}
    });
    // The server is stuck writing to it: its window is full.
    wait_for_metric(&service, "idmint_connections_write_blocked", 1);
    let before = support::counter_field(TEST, "seg", "max");
    support::process::signal(service.child.id(), libc::SIGTERM);
    let stopping = Instant::now();
    let status = loop {
        if let Some(status) = service.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            stopping.elapsed() < DEADLINE,
            "shutdown is stalled by the client that never reads"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let log: Vec<String> = service.stderr.try_iter().collect();
    let log = log.join("\n");
    assert_eq!(status.code(), Some(0), "{log}");
    assert!(log.contains("their requests abandoned"), "{log}");
    writer.join().unwrap();
    // The tail of the segment in service was given back.
    let after = support::counter_field(TEST, "seg", "max");
    assert!(
        after < before,
        "no tail given back: max {before} -> {after}"
    );
    // The one lease the service took, released (not an empty list).
    let leases = support::worker_leases(TEST, "ev");
    assert!(
        leases.len() == 1 && leases[0]["live"] == false,
        "{leases:?}"
    );
}

/// `POST /v1/validate` checks the token from the headers before it reads
/// the body (a client without one is answered 401 without sending it), and
/// bodies that never arrive hold connections, never request slots: with
/// room for two requests, two stalled bodies leave a legitimate client
/// served.
#[test]
fn slow_bodies_do_not_starve_other_requests() {
    const TEST: &str = "serve_slow_bodies";
    block_on(support::database(TEST));
    create(TEST, "inv", &["--kind", "autoinc"]);
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.json");
    let token = "tok-slow-bodies";
    std::fs::write(
        &tokens,
        format!(
            r#"{{"apps": [{{"name": "billing", "token_sha256": "{}", "counters": ["*"]}}]}}"#,
            idmint::checksum::sha256_hex(token.as_bytes())
        ),
    )
    .unwrap();
    let service = Service::start(
        TEST,
        &[
            "--tokens",
            tokens.to_str().unwrap(),
            "--max-concurrent",
            "2",
            "--body-timeout",
            "60",
        ],
    );
    let bearer = format!("Bearer {token}");
    let post_head = |authorization: Option<&str>| {
        let mut head = String::from(
            "POST /v1/validate HTTP/1.1\r\nHost: idmint\r\nContent-Type: application/json\r\n\
             Content-Length: 100\r\n",
        );
        if let Some(value) = authorization {
            head.push_str(&format!("Authorization: {value}\r\n"));
        }
        head.push_str("\r\n{\"ids\": [");
        head
    };
    // No token: 401 at once, though the body never comes.
    let mut anonymous = Connection::open(&service.address);
    anonymous.0.write_all(post_head(None).as_bytes()).unwrap();
    assert_error(&anonymous.answer(), 401, "unauthenticated", "bearer token");
    // Two stalled bodies, both being read.
    let mut stalled = Vec::new();
    for _ in 0..2 {
        let mut connection = Connection::open(&service.address);
        connection
            .0
            .write_all(post_head(Some(&bearer)).as_bytes())
            .unwrap();
        stalled.push(connection);
    }
    wait_for_metric(&service, "idmint_http_bodies_reading", 2);
    let served = crate::support::service::request(
        &service.address,
        "GET",
        "/v1/counters/inv/values",
        &[("Authorization", &bearer)],
        None,
    );
    assert_eq!(served.values(), [1]);
}

/// A connection with a small receive window, for a client that will not
/// read.
fn small_window(address: &str) -> TcpStream {
    let stream = TcpStream::connect(address).expect("connect to idmint serve");
    fixed_receive_window(&stream);
    stream.set_write_timeout(Some(DEADLINE * 2)).unwrap();
    stream
}

/// Pipelines `GET /healthz` on `stream` and never reads the answers: writes
/// until the server closes the connection (or, if it never does, until long
/// after the test's deadline).
fn never_reading(mut stream: TcpStream) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let requests = b"GET /healthz HTTP/1.1\r\nHost: idmint\r\n\r\n".repeat(64);
        while stream.write_all(&requests).is_ok() {}
    })
}

/// More clients that pipeline requests and never read than
/// `--max-connections`: those let in fill their windows and are closed at
/// `--write-timeout` or shed for a new connection (without either they held
/// their slots for good, needing no token), so a legitimate client that
/// came after them is answered, every request, once. The hostile ones hold
/// every slot before they start and before it asks: the ones past the cap
/// were refused.
#[test]
fn clients_that_never_read_are_closed_at_the_write_timeout() {
    const TEST: &str = "serve_write_timeout";
    const CAP: usize = 8;
    const HOSTILE: usize = 12;
    block_on(support::database(TEST));
    create(TEST, "inv", &["--kind", "autoinc"]);
    let cap = CAP.to_string();
    let service = Service::start(
        TEST,
        &[
            "--max-connections",
            &cap,
            "--write-timeout",
            "1",
            "--header-timeout",
            "60",
        ],
    );
    // Accepted in the order they connect: the first CAP take every slot.
    let streams: Vec<TcpStream> = (0..HOSTILE)
        .map(|_| small_window(&service.address))
        .collect();
    wait_for_metric(
        &service,
        "idmint_connections_refused_total",
        (HOSTILE - CAP) as u64,
    );
    let hostile: Vec<_> = streams.into_iter().map(never_reading).collect();
    // The legitimate client: each request on a connection of its own, asked
    // again while the server is at its cap.
    let started = Instant::now();
    for expected in 1..=20u64 {
        loop {
            let answer = service.get("/v1/counters/inv/values");
            if answer.status == 200 {
                assert_eq!(answer.values(), [expected]);
                break;
            }
            assert_error(&answer, 503, "overloaded", "connection limit");
            assert!(
                started.elapsed() < DEADLINE,
                "request {expected} not answered: the clients that never read hold every slot"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    // Each one let in was closed at the write timeout, or shed for one of
    // the legitimate client's connections, and saw it closed.
    wait_for_metrics(
        &service,
        &[
            "idmint_connections_write_timeouts_total",
            "idmint_connections_shed_total",
        ],
        CAP as u64,
    );
    for client in hostile {
        client.join().unwrap();
    }
}

/// `--connection-buffer` is what hyper buffers per connection: a request
/// header that fills it unfinished is answered 431 and closed, rather than
/// read further; a bad value is refused at start, naming the flag.
#[test]
fn a_request_header_that_fills_the_connection_buffer_is_431() {
    const TEST: &str = "serve_connection_buffer";
    block_on(support::database(TEST));
    let refused = run(idmint(TEST).args(["serve", "--connection-buffer", "100"]));
    support::assert_exit(&refused, 2);
    assert!(
        support::stderr(&refused).contains("--connection-buffer 100 is out of range 8192 to"),
        "{}",
        support::stderr(&refused)
    );
    let service = Service::start(TEST, &["--connection-buffer", "8192"]);
    let mut connection = Connection::open(&service.address);
    let mut head = b"GET /healthz HTTP/1.1\r\nHost: idmint\r\nX-Filler: ".to_vec();
    // Exactly the buffer, unfinished: the server has read all of it when it
    // answers, so its close cannot reset the answer away.
    head.resize(8192, b'a');
    connection.0.write_all(&head).unwrap();
    let answer = connection
        .until_closed()
        .expect("an answer, then the close");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 431 "), "not 431: {answer:?}");
    assert_eq!(service.get("/healthz").status, 200);
}

/// Every slot held by a client that pipelines requests and never reads, and
/// a write timeout longer than the test: each new connection of a client
/// that reads takes the slot of the connection blocked longest, which is
/// closed and counted (`idmint_connections_shed_total`), so eight keep-alive
/// connections opened together are all served, every request, while the
/// other stalled connections hold on (still blocked, none timed out).
/// Without shedding they would be refused until the write timeout.
#[test]
fn stalled_connections_are_shed_first_for_clients_that_read() {
    const TEST: &str = "serve_shed_stalled";
    const CAP: usize = 12;
    const READERS: usize = 8;
    block_on(support::database(TEST));
    create(TEST, "inv", &["--kind", "autoinc"]);
    let cap = CAP.to_string();
    let service = Service::start(
        TEST,
        &[
            "--max-connections",
            &cap,
            "--write-timeout",
            "600",
            "--header-timeout",
            "600",
            "--connection-buffer",
            "8192",
        ],
    );
    let hostile: Vec<_> = (0..CAP)
        .map(|_| never_reading(small_window(&service.address)))
        .collect();
    wait_for_metric(&service, "idmint_connections_write_blocked", CAP as u64);
    // Opened together (a barrier), each asking until it is let in: a
    // connection blocked for less than 250 ms is not shed yet.
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(READERS));
    let readers: Vec<_> = (0..READERS)
        .map(|_| {
            let barrier = barrier.clone();
            let address = service.address.clone();
            std::thread::spawn(move || {
                barrier.wait();
                let started = Instant::now();
                loop {
                    let mut connection = Connection::open(&address);
                    let answer = connection.get("/v1/counters/inv/values", &[]);
                    if answer.status == 503 {
                        assert_error(&answer, 503, "overloaded", "connection limit");
                        assert!(started.elapsed() < DEADLINE, "never let in");
                        std::thread::sleep(Duration::from_millis(50));
                        continue;
                    }
                    assert_eq!(answer.status, 200, "{answer:?}");
                    let mut values = answer.values();
                    for _ in 1..10 {
                        values.extend(connection.get("/v1/counters/inv/values", &[]).values());
                    }
                    return (connection, values);
                }
            })
        })
        .collect();
    let mut all = Vec::new();
    let mut open = Vec::new();
    for reader in readers {
        let (connection, values) = reader.join().unwrap();
        assert_eq!(values.len(), 10);
        all.extend(values);
        open.push(connection);
    }
    all.sort_unstable();
    assert_eq!(all, (1..=(READERS as u64 * 10)).collect::<Vec<_>>());
    // The readers' connections are still open: each took a stalled one's
    // slot, and the rest of the stalled ones hold on.
    wait_for_metric(&service, "idmint_connections_shed_total", READERS as u64);
    wait_for_metric(
        &service,
        "idmint_connections_write_blocked",
        (CAP - READERS) as u64,
    );
    wait_for_metric(&service, "idmint_connections_write_timeouts_total", 0);
    drop(open);
    drop(service);
    for client in hostile {
        client.join().unwrap();
    }
}
