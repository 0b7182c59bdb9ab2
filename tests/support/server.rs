//! The MongoDB wire-protocol servers the tests talk to.
//!
//! With `MONGODB_URI` set, every test uses that server. Otherwise the first test
//! that asks starts `secantusd-rs` (SecantusDB, a single-node replica set) on a
//! free loopback port with a fresh data directory, and the process keeps it for
//! all tests; it is killed when the test process exits (the child is tied to a
//! keeper thread that never exits with `PR_SET_PDEATHSIG`). Tests that need a
//! server of their own (crash tests, a server clock of their own,
//! authentication) use [`OwnedServer`].

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, OnceLock};
use std::time::Duration;

use mongodb::Client;

use super::faketime::with_libfaketime;

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

    /// Loses the server for good: kills it with SIGKILL and removes its
    /// data directory (a deployment whose data is gone).
    pub fn lose(&mut self) {
        self.kill();
        std::fs::remove_dir_all(&self.data).expect("remove the server's data");
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
