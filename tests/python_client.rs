//! The Python client (`clients/python/`), installed once per test process
//! into a venv (`pip install`, offline: its build backend is in its own
//! directory) and run: its own unit tests (against an HTTP peer inside the
//! tests that fails or stalls on command), and small Python programs
//! (`clients/python/tests/programs/`) against real `idmint serve`
//! instances: unique values of every kind of counter from threads at a
//! barrier and from asyncio tasks, the README's examples, and failover while
//! instances are killed, stopped, cut and restarted.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};

use crate::support::fault_proxy::{self, FaultProxy};
use crate::support::process::signal;
use crate::support::service::{request, spawn_serve};
use crate::support::{self, assert_exit, create, idmint, stdout};

/// `clients/python`.
fn package() -> PathBuf {
    support::workspace_root().join("clients/python")
}

/// The venv's python, with the package installed, made once.
fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR"));
        remove_stale_venvs(root);
        let venv = root.join(format!("python-client-{}", std::process::id()));
        let base = std::env::var("IDMINT_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
        let made = Command::new(&base)
            .args(["-m", "venv"])
            .arg(&venv)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|error| panic!("run {base} -m venv (python3 3.9+ needed): {error}"));
        assert_exit(&made, 0);
        let installed = Command::new(venv.join("bin/pip"))
            .args([
                "install",
                "--no-index",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .arg(package())
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::null())
            .output()
            .expect("run the venv's pip");
        assert_exit(&installed, 0);
        venv.join("bin/python")
    })
}

/// Venvs of test processes that are gone.
fn remove_stale_venvs(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix("python-client-")
            .and_then(|pid| pid.parse::<u32>().ok());
        if pid.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The venv's python, run from `clients/python/tests` (so that a program
/// imports the installed package, not the sources).
fn python_command() -> Command {
    let mut command = Command::new(python());
    command
        .current_dir(package().join("tests"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("PYTHONPATH");
    command
}

/// Runs `command` to its end, which must be a success; its stdout.
fn succeed(command: &mut Command) -> String {
    let output = command.stdin(Stdio::null()).output().expect("run python");
    assert_exit(&output, 0);
    stdout(&output)
}

/// A running `idmint serve` on a port that stays its own across a restart.
struct Serve {
    test: &'static str,
    port: u16,
    admin_port: u16,
    child: Option<Child>,
    log: Arc<Mutex<Vec<String>>>,
    args: Vec<String>,
}

impl Serve {
    fn start(test: &'static str, args: &[&str]) -> Self {
        let mut serve = Self {
            test,
            port: 0,
            admin_port: 0,
            child: None,
            log: Arc::default(),
            args: args.iter().map(|arg| arg.to_string()).collect(),
        };
        serve.spawn();
        serve
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    fn address(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().expect("a running idmint serve").id()
    }

    /// Kills it with SIGKILL (a crash).
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().expect("SIGKILL idmint serve");
            child.wait().expect("wait for idmint serve");
        }
    }

    /// Starts it again on the same port.
    fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    fn spawn(&mut self) {
        let listen = format!("127.0.0.1:{}", self.port);
        let (mut child, lines, listening) = spawn_serve(idmint(self.test), &listen, &self.args);
        let log = self.log.clone();
        std::thread::spawn(move || {
            for line in lines {
                log.lock().unwrap().push(line);
            }
        });
        let port_of = |address: &str| address.rsplit(':').next()?.parse::<u16>().ok();
        let ports = listening
            .ok()
            .and_then(|(api, admin)| Some((port_of(&api)?, port_of(&admin)?)));
        let Some((port, admin_port)) = ports else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("idmint serve did not start on {listen}");
        };
        (self.port, self.admin_port, self.child) = (port, admin_port, Some(child));
    }

    /// The values of `counter` it served since it started (`/metrics`).
    fn served(&self, counter: &str) -> u64 {
        let admin = format!("127.0.0.1:{}", self.admin_port);
        let answer = request(&admin, "GET", "/metrics", &[], None);
        assert_eq!(answer.status, 200, "{answer:?}");
        let prefix = format!("idmint_values_total{{counter=\"{counter}\"}} ");
        answer
            .body
            .lines()
            .find_map(|line| line.strip_prefix(&prefix)?.parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Some(child) = &self.child {
            // A stopped process dies of SIGKILL too, but let it go first.
            signal(child.id(), libc::SIGCONT);
        }
        self.kill();
        if std::thread::panicking() {
            eprintln!(
                "idmint serve on port {} logged:\n{}",
                self.port,
                self.log.lock().unwrap().join("\n")
            );
        }
    }
}

/// The Python client's own unit tests (`clients/python/tests/test_*.py`):
/// one fetch in flight, failures to their takers only, failover order,
/// set-aside and backoff, errors at once or at the deadline, the token sent
/// and URL credentials never, the asyncio flavour; no server needed.
#[test]
fn the_python_client_passes_its_own_tests() {
    let output = python_command()
        .args(["-m", "unittest", "discover", "-s", ".", "-p", "test_*.py"])
        .stdin(Stdio::null())
        .output()
        .expect("run python -m unittest");
    assert_exit(&output, 0);
    let report = support::stderr(&output);
    assert!(report.contains("\nOK"), "{report}");
}

/// Every kind of counter through one instance (its snowflake IDs UUIDv7s):
/// eight threads started at a barrier per client, and 8 asyncio tasks, take
/// values and IDs; nothing comes twice, across the blocking and asyncio
/// clients of one counter too; an unknown counter is a 404 at once. Then the
/// README's examples run against the same instance.
#[test]
fn the_python_client_hands_out_unique_values_of_every_kind() {
    const TEST: &str = "python_kinds";
    support::service::block_on(support::database(TEST));
    create(
        TEST,
        "seg",
        &["--kind", "segment", "--step", "1000", "--raw"],
    );
    create(TEST, "orders", &["--kind", "autoinc", "--prefix", "WEB-"]);
    create(TEST, "cyc", &["--max", "99", "--prefix", "C"]);
    create(TEST, "per", &["--kind", "periodic", "--prefix", "P-"]);
    create(TEST, "events", &["--kind", "snowflake"]);
    assert_exit(
        &support::run(idmint(TEST).args(["series", "create", "invoices"])),
        0,
    );
    let serve = Serve::start(
        TEST,
        &[
            ["--policy-for", "autoinc=builtin:decimal"],
            ["--policy-for", "periodic=builtin:decimal"],
            ["--policy-for", "snowflake=builtin:uuidv7"],
        ]
        .concat(),
    );
    let report = succeed(
        python_command()
            .arg("programs/unique_run.py")
            .arg(serve.url())
            .args(["8", "1000"])
            .args([
                "values:seg",
                "async-values:seg",
                "values:orders",
                "ids:orders",
            ])
            .args(["async-ids:cyc", "ids:per", "uuids:events", "missing:nope"]),
    );
    assert_eq!(
        report,
        "values:seg ok 8000\nasync-values:seg ok 8000\nvalues:orders ok 8000\n\
         ids:orders ok 8000\nasync-ids:cyc ok 8000\nids:per ok 8000\nuuids:events ok 8000\n\
         missing:nope ok 404\n"
    );
    // The README's python blocks, each a program of its own.
    let readme = std::fs::read_to_string(package().join("README.md")).unwrap();
    let blocks: Vec<&str> = readme
        .split("```python\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap())
        .collect();
    assert!(
        blocks.len() >= 4,
        "{} python blocks in the README",
        blocks.len()
    );
    for block in blocks {
        let output = python_command()
            .args(["-c", block])
            .env("IDMINT_SERVERS", serve.url())
            .stdin(Stdio::null())
            .output()
            .expect("run python");
        assert!(
            output.status.success(),
            "a README example failed:\n{block}\n{}",
            support::stderr(&output)
        );
    }
}

/// Three instances of one segment counter, the first (the preferred one)
/// behind a fault proxy; eight threads take values through one client in
/// phases, the test acting between them: the first is killed (SIGKILL) and
/// the second stopped (SIGSTOP) until the client has seen both fail and the
/// third answer; then the first is restarted, the second continued
/// (SIGCONT) and the proxy cuts each connection at a random byte, until the
/// client has seen a cut fail, the first answer again and the second answer.
/// No call fails, nothing comes twice, and the restarted instance served
/// values.
#[test]
fn the_python_client_fails_over_past_killed_stopped_and_cut_instances() {
    const TEST: &str = "python_failover";
    support::service::block_on(support::database(TEST));
    create(TEST, "seg", &["--kind", "segment", "--step", "1000"]);
    let mut instances: Vec<Serve> = (0..3).map(|_| Serve::start(TEST, &[])).collect();
    let proxy = FaultProxy::to(instances[0].address());
    let urls = [
        format!("http://{}/", proxy.address()),
        instances[1].url(),
        instances[2].url(),
    ];
    let mut program = Pausing::start(
        &[
            "programs/failover_run.py",
            "values",
            "seg",
            "8",
            "2000",
            "100",
        ],
        &urls,
    );
    program.paused(1);
    program.send("go");
    program.paused(2);
    instances[0].kill();
    signal(instances[1].pid(), libc::SIGSTOP);
    program.send("go failed=0,1 answered=2");
    program.paused(3);
    instances[0].restart();
    signal(instances[1].pid(), libc::SIGCONT);
    proxy.cut_at_random(fault_proxy::seed(TEST), 1000);
    program.send("go failed=0 answered=0,1");
    program.paused(4);
    program.send("end");
    let report = program.finish();
    assert!(
        report[0]
            .strip_prefix("taken ok ")
            .and_then(|n| n.parse::<u64>().ok())
            .is_some_and(|n| n >= 3 * 8 * 2000),
        "{report:?}"
    );
    let (_, cut) = proxy.counts();
    assert!(cut >= 1, "the proxy cut no connection: {report:?}");
    assert!(
        instances[0].served("seg") > 0,
        "the restarted instance served nothing"
    );
}

/// A striped autoinc counter (`eu:2,us:2`) across two database servers of
/// the test's own, two instances spanning both; eight threads take IDs
/// through one client while eu is killed (SIGKILL) and later restarted on
/// its data, each between phases. No call fails and no ID comes twice.
#[test]
fn the_python_client_takes_from_a_striped_counter_while_a_deployment_is_killed() {
    const TEST: &str = "python_deployments";
    support::service::block_on(support::database(TEST));
    let durable = || {
        support::OwnedServer::start(support::ServerConfig {
            sync_on_commit: true,
            ..support::ServerConfig::default()
        })
    };
    let (mut eu, us) = (durable(), durable());
    let eu_flag = format!("eu={}", eu.uri);
    let us_flag = format!("us={}", us.uri);
    let policy = ["--policy", "builtin:decimal"];
    let mut args = vec!["--kind", "autoinc", "--prefix", "S-"];
    args.extend(policy);
    args.extend([
        "--stripes",
        "eu:2,us:2",
        "--uri",
        &eu_flag,
        "--uri",
        &us_flag,
    ]);
    create(TEST, "orders", &args);
    let serve = |first: &str, second: &str| {
        let mut args = policy.to_vec();
        args.extend(["--uri", first, "--uri", second]);
        Serve::start(TEST, &args)
    };
    let instances = [serve(&eu_flag, &us_flag), serve(&us_flag, &eu_flag)];
    let urls: Vec<String> = instances.iter().map(Serve::url).collect();
    let mut program = Pausing::start(
        &[
            "programs/failover_run.py",
            "ids",
            "orders",
            "8",
            "500",
            "50",
        ],
        &urls,
    );
    program.paused(1);
    program.send("go");
    program.paused(2);
    eu.kill();
    program.send("go");
    program.paused(3);
    eu.restart();
    program.send("go");
    program.paused(4);
    program.send("end");
    let report = program.finish();
    assert_eq!(report[0], format!("taken ok {}", 3 * 8 * 500), "{report:?}");
}

/// A Python program that announces pauses (`paused N`) and reads a command
/// at each, so that the test acts at a point the program is known to be at.
struct Pausing {
    child: Child,
    commands: ChildStdin,
    lines: std::io::Lines<BufReader<ChildStdout>>,
    errors: Arc<Mutex<String>>,
    drained: std::thread::JoinHandle<()>,
}

impl Pausing {
    /// Runs the venv's python with `args`, then the instances' `urls`.
    fn start(args: &[&str], urls: &[String]) -> Self {
        let mut child = python_command()
            .args(args)
            .args(urls)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run python");
        let commands = child.stdin.take().expect("piped stdin");
        let lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let errors: Arc<Mutex<String>> = Arc::default();
        let stderr = child.stderr.take().expect("piped stderr");
        let sink = errors.clone();
        let drained = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut errors = sink.lock().unwrap();
                errors.push_str(&line);
                errors.push('\n');
            }
        });
        Self {
            child,
            commands,
            lines,
            errors,
            drained,
        }
    }

    /// Returns once the program says it waits at pause `number`.
    fn paused(&mut self, number: u32) {
        let expected = format!("paused {number}");
        match self.lines.next() {
            Some(Ok(line)) if line == expected => {}
            other => {
                // Its stderr ends with it: wait for that, then show it.
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "expected {expected:?} from the program, got {other:?}; its stderr:\n{}",
                    self.errors.lock().unwrap()
                );
            }
        }
    }

    /// Sends the command for this pause.
    fn send(&mut self, command: &str) {
        writeln!(self.commands, "{command}").unwrap();
    }

    /// Waits for it to end, which must be a success; the lines it printed
    /// after its last pause.
    fn finish(mut self) -> Vec<String> {
        let report: Vec<String> = self.lines.map_while(Result::ok).collect();
        let status = self.child.wait().expect("wait for python");
        self.drained.join().unwrap();
        assert!(
            status.success(),
            "the program failed ({status}):\n{}\n{}",
            report.join("\n"),
            self.errors.lock().unwrap()
        );
        report
    }
}
