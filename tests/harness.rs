//! The test harness: a real MongoDB wire-protocol server for the tests.
//!
//! With `MONGODB_URI` set, every test uses that server. Otherwise the first test
//! that asks starts `secantusd-rs` (SecantusDB, a single-node replica set) on a
//! free loopback port with a fresh data directory, and the process keeps it for
//! all tests; it is killed when the test process exits (the child is tied to a
//! keeper thread that never exits with `PR_SET_PDEATHSIG`). Tests that need a
//! server of their own (crash tests) use [`OwnedServer`].
//!
//! Each test works in its own database, named after the test.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, OnceLock};
use std::time::Duration;

use mongodb::{Client, Database};

/// The environment variable naming the server binary (default: on PATH).
const SERVER_BIN_VAR: &str = "IDMINT_TEST_SERVER_BIN";
/// What secantusd-rs prints, followed by `HOST:PORT`, once it accepts connections.
const READY_LINE: &str = "listening on ";

/// The URI of the shared test server.
pub fn uri() -> &'static str {
    static URI: OnceLock<String> = OnceLock::new();
    URI.get_or_init(|| match std::env::var("MONGODB_URI") {
        Ok(uri) if !uri.is_empty() => uri,
        _ => start_shared_server(),
    })
}

/// The workspace root: the tests belong to the CLI crate, `host/cli`.
pub fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("host/cli is two levels below the workspace root")
}

/// The path of a fixture policy component (`guest/<name>`: `check-digit`,
/// `sandbox-probe`, `runaway`, `decimal-0.3`, `lossy-period`), built on first
/// use: fixtures are never part of a production build.
pub fn fixture_policy(name: &str) -> &'static str {
    idmint_guest_build::fixture(name)
        .to_str()
        .expect("the workspace path is UTF-8")
}

/// A fresh, empty database for one test, named after it.
pub async fn database(test: &str) -> Database {
    let client = Client::with_uri_str(uri())
        .await
        .expect("connect to the test server");
    let database = client.database(&database_name(test));
    database.drop().await.expect("drop the test database");
    database
}

/// The database of `test`, as it is (unlike [`database`], nothing is dropped).
pub async fn database_handle(test: &str) -> Database {
    let client = Client::with_uri_str(uri())
        .await
        .expect("connect to the test server");
    client.database(&database_name(test))
}

/// Every command a monitored client sent, as the server received it.
#[derive(Clone, Default)]
pub struct CommandLog {
    commands: std::sync::Arc<std::sync::Mutex<Vec<(String, mongodb::bson::Document)>>>,
}

impl CommandLog {
    /// The commands named `name` (e.g. "findAndModify", "update", "insert"),
    /// each as the full command document sent.
    pub fn named(&self, name: &str) -> Vec<mongodb::bson::Document> {
        self.commands
            .lock()
            .unwrap()
            .iter()
            .filter(|(command, _)| command == name)
            .map(|(_, document)| document.clone())
            .collect()
    }

    /// Every command sent, in order, as (name, document).
    pub fn all(&self) -> Vec<(String, mongodb::bson::Document)> {
        self.commands.lock().unwrap().clone()
    }
}

/// A fresh database for `test` (as [`database`]) on a client that records
/// every command it sends, with the log of them: for asserting what the
/// library really sends (write concerns, one round trip per block, ...).
pub async fn monitored_database(test: &str) -> (Database, CommandLog) {
    use mongodb::event::command::CommandEvent;
    use mongodb::event::EventHandler;
    let log = CommandLog::default();
    let mut options = mongodb::options::ClientOptions::parse(uri())
        .await
        .expect("parse the test server URI");
    let sink = log.commands.clone();
    options.command_event_handler = Some(EventHandler::callback(move |event| {
        if let CommandEvent::Started(started) = event {
            sink.lock()
                .unwrap()
                .push((started.command_name.clone(), started.command.clone()));
        }
    }));
    let client = Client::with_options(options).expect("connect to the test server");
    let database = client.database(&database_name(test));
    database.drop().await.expect("drop the test database");
    (database, log)
}

/// Asserts that a write command was sent with `w: "majority"`, `j: true`
/// and a `wtimeout` (so that a primary cut off from the majority answers).
#[track_caller]
pub fn assert_durable(command: &mongodb::bson::Document) {
    let concern = command
        .get_document("writeConcern")
        .unwrap_or_else(|_| panic!("no writeConcern in {command}"));
    assert_eq!(
        concern.get_str("w").ok(),
        Some("majority"),
        "w is not majority in {command}"
    );
    assert_eq!(
        concern.get_bool("j").ok(),
        Some(true),
        "j is not true in {command}"
    );
    let wtimeout = match concern.get("wtimeout") {
        Some(mongodb::bson::Bson::Int32(ms)) => Some(i64::from(*ms)),
        Some(mongodb::bson::Bson::Int64(ms)) => Some(*ms),
        _ => None,
    };
    assert!(
        wtimeout.is_some_and(|ms| ms > 0),
        "no wtimeout in {command}"
    );
}

/// Every document of `collection`, sorted by `_id`.
pub async fn documents(database: &Database, collection: &str) -> Vec<mongodb::bson::Document> {
    use futures_util::TryStreamExt;
    database
        .collection::<mongodb::bson::Document>(collection)
        .find(mongodb::bson::doc! {})
        .sort(mongodb::bson::doc! { "_id": 1 })
        .await
        .expect("read the collection")
        .try_collect()
        .await
        .expect("read the collection")
}

/// Replaces counter `id` in `database` by `{_id: id, ..fields}`, as a hand
/// edit would, and returns what it wrote.
pub async fn replace_counter(
    database: &Database,
    id: &str,
    fields: mongodb::bson::Document,
) -> mongodb::bson::Document {
    let mut document = mongodb::bson::doc! { "_id": id };
    document.extend(fields);
    database
        .collection::<mongodb::bson::Document>(idmint::sequence::COUNTERS_COLLECTION)
        .replace_one(mongodb::bson::doc! { "_id": id }, &document)
        .await
        .expect("replace the counter");
    document
}

/// `lock` taken for `ttl` by one attempt; panics if someone holds it.
pub async fn held(lock: &idmint::lock::Lock, ttl: Duration) -> idmint::lock::Lease {
    match lock.try_acquire(ttl).await.unwrap() {
        idmint::lock::Acquired::Held(lease) => lease,
        idmint::lock::Acquired::Busy(state) => panic!("{} is busy: {state:?}", lock.name()),
    }
}

/// The database name for a test: `t_<test>`, within MongoDB's 63-byte limit.
pub fn database_name(test: &str) -> String {
    let cleaned: String = test
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let mut name = format!("t_{cleaned}");
    name.truncate(60);
    name
}

/// Runs a command to completion with no stdin and returns its output.
pub fn run(command: &mut Command) -> std::process::Output {
    command
        .stdin(Stdio::null())
        .output()
        .expect("run the command")
}

/// A command's stdout, as text.
pub fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A command's stderr, as text.
pub fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts the exit code, showing both output streams when it differs.
#[track_caller]
pub fn assert_exit(output: &std::process::Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "expected exit {code}\nstdout: {}\nstderr: {}",
        stdout(output),
        stderr(output)
    );
}

/// The `idmint` binary, pointed at the test server and `test`'s database.
pub fn idmint(test: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_idmint"));
    command
        .env("MONGODB_URI", uri())
        .env("IDMINT_DB", database_name(test))
        .env_remove("IDMINT_POLICY");
    command
}

/// The mongosh binary: `IDMINT_MONGOSH`, else `mongosh` on PATH.
pub fn mongosh() -> PathBuf {
    std::env::var_os("IDMINT_MONGOSH")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("mongosh"))
}

/// Puts `database` into the path of `uri`, keeping its options.
pub fn with_database(uri: &str, database: &str) -> String {
    let (base, query) = uri
        .split_once('?')
        .map_or((uri, None), |(b, q)| (b, Some(q)));
    let scheme_end = base.find("://").map_or(0, |at| at + 3);
    let host_end = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |at| scheme_end + at);
    let mut out = format!("{}/{database}", &base[..host_end]);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

fn start_shared_server() -> String {
    let (sender, receiver) = mpsc::channel();
    // The keeper thread forks the server and never exits, so PR_SET_PDEATHSIG
    // (which fires when the forking *thread* dies) fires only with the process.
    std::thread::Builder::new()
        .name("test-server-keeper".into())
        .spawn(move || {
            let server = OwnedServer::start(ServerConfig::default());
            sender
                .send(server.uri.clone())
                .expect("report the server URI");
            let _keep = server;
            loop {
                std::thread::park();
            }
        })
        .expect("spawn the keeper thread");
    receiver
        .recv()
        .expect("the test server did not start (see the panic above)")
}

/// Loads libfaketime into `command`, its monotonic clocks (timers, sleeps,
/// timeouts) left on real time; the caller's FAKETIME variables say what
/// its wall clock reads. The library comes from Debian's `faketime` package
/// (`scripts/test.sh` installs it).
///
/// Not through the package's `faketime` wrapper: it names a semaphore after
/// its own PID and leaves it behind when killed, and a later wrapper given
/// the same PID then fails with "sem_open: File exists" before running
/// anything.
fn with_libfaketime(command: &mut Command) -> &mut Command {
    let found = std::fs::read_dir("/usr/lib")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("faketime/libfaketime.so.1"))
        .chain([PathBuf::from("/usr/lib/faketime/libfaketime.so.1")])
        .find(|path| path.exists());
    let library =
        found.expect("libfaketime.so.1 (Debian's faketime package; scripts/test.sh installs it)");
    command
        .env("LD_PRELOAD", library)
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
}

/// Runs `command` with its wall clock set by libfaketime, `clock` in
/// FAKETIME's own forms: an offset (`"+1h"`, `"-3600s"`), a frozen instant
/// (`"2026-01-01 00:00:00"`) or a start that then ticks
/// (`"@2026-01-01 00:00:00"`).
pub fn fake_clock<'a>(command: &'a mut Command, clock: &str) -> &'a mut Command {
    with_libfaketime(command).env("FAKETIME", clock)
}

/// How to start a server of one's own.
#[derive(Debug, Clone, Default)]
pub struct ServerConfig {
    /// Fsync every commit (`--sync-on-commit`): needed where durability is tested.
    pub sync_on_commit: bool,
    /// Run the server under libfaketime, its clock read from this file at
    /// every call (`FAKETIME_TIMESTAMP_FILE`): the test sets, freezes or
    /// steps back the server's `$$NOW` by writing the file.
    pub fake_time: Option<PathBuf>,
    /// Require SCRAM authentication (`--auth`); the first user can be created
    /// from localhost without credentials.
    pub auth: bool,
}

/// A server of one test's own with authentication on, and its first user,
/// `root` (role root, in `admin`), created through the localhost exception.
pub struct AuthServer {
    /// The server.
    pub server: OwnedServer,
    /// The connection string as `root`.
    pub root_uri: String,
}

impl AuthServer {
    /// Starts the server and creates `root`.
    pub async fn start() -> Self {
        let server = OwnedServer::start(ServerConfig {
            auth: true,
            ..ServerConfig::default()
        });
        let anonymous = Client::with_uri_str(&server.uri).await.unwrap();
        anonymous
            .database("admin")
            .run_command(
                mongodb::bson::doc! { "createUser": "root", "pwd": "rootpw", "roles": ["root"] },
            )
            .await
            .unwrap();
        let root_uri = Self::uri_of(&server, "root", "rootpw", "admin");
        Self { server, root_uri }
    }

    /// The connection string of `user` with `password`, authenticated
    /// against `source`.
    pub fn user_uri(&self, user: &str, password: &str, source: &str) -> String {
        Self::uri_of(&self.server, user, password, source)
    }

    fn uri_of(server: &OwnedServer, user: &str, password: &str, source: &str) -> String {
        let port_uri = server.uri.trim_end_matches('/');
        port_uri.replacen("mongodb://", &format!("mongodb://{user}:{password}@"), 1)
            + &format!("/?authSource={source}")
    }
}

/// A server owned by one test: can be killed and restarted on the same data.
pub struct OwnedServer {
    /// Its connection string.
    pub uri: String,
    port: u16,
    data: PathBuf,
    config: ServerConfig,
    child: Option<Child>,
}

impl OwnedServer {
    /// Starts a server on a port it picks itself, with a fresh data directory.
    pub fn start(config: ServerConfig) -> Self {
        let data = fresh_data_dir();
        let mut server = Self {
            uri: String::new(),
            port: 0,
            data,
            config,
            child: None,
        };
        server.spawn();
        server
    }

    /// Kills the server with SIGKILL (a crash) and waits for it to die.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port and data.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    fn spawn(&mut self) {
        let binary = std::env::var_os(SERVER_BIN_VAR).unwrap_or_else(|| "secantusd-rs".into());
        let log_path = self.data.with_extension("log");
        let mut command = Command::new(&binary);
        command
            // Port 0 on the first start: the server picks a free port and prints
            // it, so there is no race with other processes for it. A restart
            // reuses that port so clients find the server again.
            .args([
                "--host",
                "127.0.0.1",
                "--port",
                &self.port.to_string(),
                "--storage-path",
            ])
            .arg(&self.data)
            // Small caches and log files: tests may run several servers on a small machine.
            .args(["--cache-size", "256M", "--log-file-max", "32MB"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if self.config.sync_on_commit {
            command.arg("--sync-on-commit");
        }
        if self.config.auth {
            command.arg("--auth");
        }
        if let Some(file) = &self.config.fake_time {
            with_libfaketime(&mut command)
                .env("FAKETIME_TIMESTAMP_FILE", file)
                // Read the file at every call, so that a test steps the clock.
                .env("FAKETIME_NO_CACHE", "1");
        }
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = command.spawn().unwrap_or_else(|error| {
            panic!(
                "cannot start the test server {binary:?}: {error}. Install it (scripts/test.sh does), \
                 set {SERVER_BIN_VAR}, or set MONGODB_URI to use a running server"
            )
        });
        // Wait for the event "listening", not for a guessed time.
        let (ready_tx, ready_rx) = mpsc::channel();
        for stream in [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let ready_tx = ready_tx.clone();
            let log_path = log_path.clone();
            std::thread::spawn(move || copy_log_until_ready(stream, &log_path, ready_tx));
        }
        drop(ready_tx);
        match ready_rx.recv_timeout(Duration::from_secs(60)) {
            Ok(port) => {
                self.port = port;
                self.uri = format!("mongodb://127.0.0.1:{port}/");
                self.child = Some(child);
            }
            Err(_) => {
                let _ = child.kill();
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                panic!(
                    "the test server did not report {READY_LINE:?} within 60 s; its output:\n{log}"
                );
            }
        }
    }
}

impl Drop for OwnedServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.data);
        let _ = std::fs::remove_file(self.data.with_extension("log"));
    }
}

/// Copies the server's output to its log, and reports the port once it prints
/// `... listening on 127.0.0.1:PORT`.
fn copy_log_until_ready(
    stream: Box<dyn std::io::Read + Send>,
    log_path: &Path,
    ready: mpsc::Sender<u16>,
) {
    use std::io::Write;
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path)
        .ok();
    for line in BufReader::new(stream).lines() {
        let Ok(line) = line else { break };
        if let Some(log) = log.as_mut() {
            let _ = writeln!(log, "{line}");
        }
        if let Some((_, address)) = line.split_once(READY_LINE) {
            if let Some(port) = address
                .trim()
                .rsplit(':')
                .next()
                .and_then(|port| port.parse().ok())
            {
                let _ = ready.send(port);
            }
        }
    }
}

/// A new data directory under the target's tmp dir; stale ones of dead test
/// processes (killed before they could clean up) are removed first.
fn fresh_data_dir() -> PathBuf {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("secantus");
    std::fs::create_dir_all(&root).expect("create the server data root");
    if let Ok(entries) = std::fs::read_dir(&root) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let pid = name
                .split('-')
                .next()
                .and_then(|pid| pid.parse::<u32>().ok());
            if pid.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
                let _ = std::fs::remove_dir_all(entry.path());
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let serial = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = root.join(format!("{}-{serial}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the server data dir");
    dir
}

/// A running `idmint seq` whose values are read line by line as it prints
/// them. It writes more than a pipe holds and blocks until read, which the
/// concurrency tests use to make processes overlap for certain.
pub struct Seq {
    /// The process.
    pub child: std::process::Child,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

impl Seq {
    /// Starts `idmint seq ARGS` for `test`'s database.
    pub fn start(test: &str, args: &[&str]) -> Self {
        let mut command = idmint(test);
        command.arg("seq").args(args);
        Self::spawn(command)
    }

    /// Starts `command` (an `idmint seq` set up by the caller), reading its
    /// stdout line by line.
    pub fn spawn(mut command: Command) -> Self {
        use std::io::BufRead;
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start idmint seq");
        let lines = std::io::BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        Self { child, lines }
    }

    /// The next value printed, or `None` at the end.
    pub fn next_value(&mut self) -> Option<u64> {
        self.next_line().map(|line| {
            // A periodic counter prints `PERIOD VALUE`: the value is last.
            line.rsplit(' ')
                .next()
                .and_then(|value| value.parse().ok())
                .expect("a number")
        })
    }

    /// The next line as printed (a periodic counter's: `PERIOD VALUE`).
    pub fn next_line(&mut self) -> Option<String> {
        self.lines.next().map(|line| line.expect("read a line"))
    }

    /// Every value left.
    pub fn rest(&mut self) -> Vec<u64> {
        std::iter::from_fn(|| self.next_value()).collect()
    }

    /// Sends `signal` to the process.
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on our own child's pid.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, signal) }, 0);
    }
}

/// Starts `count` runs of `idmint ARGS` for `test` at once, then waits for
/// all of them; their outputs, in start order.
pub fn run_at_once(test: &str, args: &[&str], count: usize) -> Vec<std::process::Output> {
    let children: Vec<_> = (0..count)
        .map(|_| {
            idmint(test)
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start idmint")
        })
        .collect();
    children
        .into_iter()
        .map(|child| child.wait_with_output().expect("wait for idmint"))
        .collect()
}
