//! What the client libraries' tests share (`java_client.rs`,
//! `python_client.rs`, `node_client.rs`): `idmint serve` instances that can
//! be killed and restarted on their own port, and a client program that
//! announces its pauses so that a test acts when the program is known to be
//! at one.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};

use super::process::{idmint, signal};
use super::service::{request, spawn_serve};

/// A running `idmint serve` on a port that stays its own across a restart.
pub struct Serve {
    test: &'static str,
    port: u16,
    /// The admin listener's port (`/metrics`), chosen anew at each start.
    admin_port: u16,
    child: Option<Child>,
    log: Arc<Mutex<Vec<String>>>,
    /// Flags of `idmint serve` besides the listeners.
    args: Vec<String>,
    /// Its wall clock, as libfaketime's FAKETIME says it (none: the real one).
    clock: Option<&'static str>,
}

impl Serve {
    /// Starts one on a port of its choosing, with more flags (`--policy FILE`).
    pub fn start(test: &'static str, args: &[&str]) -> Self {
        Self::start_at(test, args, None)
    }

    /// [`Serve::start`], its wall clock at `clock` if given (as libfaketime's
    /// FAKETIME says it).
    pub fn start_at(test: &'static str, args: &[&str], clock: Option<&'static str>) -> Self {
        let mut serve = Self {
            test,
            port: 0,
            admin_port: 0,
            child: None,
            log: Arc::default(),
            args: args.iter().map(|arg| arg.to_string()).collect(),
            clock,
        };
        serve.spawn();
        serve
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    pub fn address(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("a running idmint serve").id()
    }

    /// Kills it with SIGKILL (a crash: no shutdown, no segment given back).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().expect("SIGKILL idmint serve");
            child.wait().expect("wait for idmint serve");
        }
    }

    /// Starts it again on the same port, so clients find it where it was.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    fn spawn(&mut self) {
        let listen = format!("127.0.0.1:{}", self.port);
        let mut command = idmint(self.test);
        if let Some(clock) = self.clock {
            super::fake_clock(&mut command, clock);
        }
        let (mut child, lines, listening) = spawn_serve(command, &listen, &self.args);
        let log = self.log.clone();
        let logging = std::thread::spawn(move || {
            for line in lines {
                log.lock().unwrap().push(line);
            }
        });
        let port_of = |address: &str| address.rsplit(':').next()?.parse::<u16>().ok();
        let ports = listening.and_then(|(api, admin)| {
            Ok((
                port_of(&api).ok_or(api.clone())?,
                port_of(&admin).ok_or(admin.clone())?,
            ))
        });
        let (port, admin_port) = ports.unwrap_or_else(|first| {
            let _ = child.kill();
            let _ = child.wait();
            // Its stderr ended with it: every line is in the log.
            let _ = logging.join();
            panic!(
                "idmint serve did not start on {listen}: {first:?}\n{}",
                self.log.lock().unwrap().join("\n")
            )
        });
        self.port = port;
        self.admin_port = admin_port;
        self.child = Some(child);
    }

    /// `GET /metrics` on the admin listener, on a connection of its own.
    pub fn metrics(&self) -> String {
        let admin = format!("127.0.0.1:{}", self.admin_port);
        let answer = request(&admin, "GET", "/metrics", &[], None);
        assert_eq!(answer.status, 200, "{answer:?}");
        answer.body
    }

    /// The values of `counter` it served since it started (`/metrics`).
    pub fn served(&self, counter: &str) -> u64 {
        let prefix = format!("idmint_values_total{{counter=\"{counter}\"}} ");
        self.metrics()
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

/// A client program that announces pauses (`paused N`) and reads a command
/// at each (`go`, or what the program knows), so that the test acts at a
/// point the program is known to be at.
pub struct Pausing {
    name: &'static str,
    child: Child,
    commands: ChildStdin,
    lines: std::io::Lines<BufReader<ChildStdout>>,
    errors: Arc<Mutex<String>>,
    drained: std::thread::JoinHandle<()>,
}

impl Pausing {
    /// Starts `command`, the program `name` (for messages) with its
    /// arguments.
    pub fn start(command: &mut Command, name: &'static str) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|error| panic!("run {name}: {error}"));
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
            name,
            child,
            commands,
            lines,
            errors,
            drained,
        }
    }

    /// Returns once the program says it waits at pause `number`.
    pub fn paused(&mut self, number: u32) {
        let expected = format!("paused {number}");
        match self.lines.next() {
            Some(Ok(line)) if line == expected => {}
            other => {
                // Its stderr ends with it: wait for that, then show it.
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "expected {expected:?} from {}, got {other:?}; its stderr:\n{}",
                    self.name,
                    self.errors.lock().unwrap()
                );
            }
        }
    }

    /// Sends the command for this pause.
    pub fn send(&mut self, command: &str) {
        writeln!(self.commands, "{command}").unwrap();
    }

    /// Waits for it to end, which must be a success; the lines it printed
    /// after its last pause.
    pub fn finish(mut self) -> Vec<String> {
        let report: Vec<String> = self.lines.map_while(Result::ok).collect();
        let status = self.child.wait().expect("wait for the program");
        self.drained.join().unwrap();
        assert!(
            status.success(),
            "{} failed ({status}):\n{}\n{}",
            self.name,
            report.join("\n"),
            self.errors.lock().unwrap()
        );
        report
    }
}

/// How a client library's failover program is run: `pausing(args, urls)`
/// starts `program` (its file, relative to the package) with `args` against
/// the instances' `urls`; `callers` take `per_phase` items each per phase.
pub struct FailoverRun<'a> {
    pub pausing: &'a dyn Fn(&[&str], &[String]) -> Pausing,
    pub program: &'a str,
    pub callers: u64,
    pub per_phase: u64,
}

/// Three instances of one segment counter, the first (the preferred one)
/// behind a fault proxy; `run.callers` take values through one client in
/// phases, the test acting between them: the first is killed (SIGKILL) and
/// the second stopped (SIGSTOP) until the client has seen both fail and the
/// third answer; then the first is restarted, the second continued
/// (SIGCONT) and the proxy cuts each connection at a random byte, until the
/// client has seen a cut fail, the first answer again and the second answer.
/// No call fails, nothing comes twice (the program checks), and the
/// restarted instance served values.
pub fn fail_over_past_killed_stopped_and_cut_instances(test: &'static str, run: &FailoverRun) {
    super::service::block_on(super::database(test));
    super::create(test, "seg", &["--kind", "segment", "--step", "1000"]);
    let mut instances: Vec<Serve> = (0..3).map(|_| Serve::start(test, &[])).collect();
    let proxy = super::fault_proxy::FaultProxy::to(instances[0].address());
    let urls = [
        format!("http://{}/", proxy.address()),
        instances[1].url(),
        instances[2].url(),
    ];
    let (callers, per_phase) = (run.callers.to_string(), run.per_phase.to_string());
    let mut program = (run.pausing)(
        &[run.program, "values", "seg", &callers, &per_phase, "100"],
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
    proxy.cut_at_random(super::fault_proxy::seed(test), 1000);
    program.send("go failed=0 answered=0,1");
    program.paused(4);
    program.send("end");
    let report = program.finish();
    assert!(
        report[0]
            .strip_prefix("taken ok ")
            .and_then(|n| n.parse::<u64>().ok())
            .is_some_and(|n| n >= 3 * run.callers * run.per_phase),
        "{report:?}"
    );
    let (_, cut) = proxy.counts();
    assert!(cut >= 1, "the proxy cut no connection: {report:?}");
    assert!(
        instances[0].served("seg") > 0,
        "the restarted instance served nothing: {report:?}"
    );
}

/// A striped autoinc counter (`eu:2,us:2`) across two database servers of
/// the test's own, two instances spanning both; `run.callers` take IDs
/// through one client while eu is killed (SIGKILL) and later restarted on
/// its data, each between phases. No call fails and no ID comes twice (the
/// program checks).
pub fn take_from_a_striped_counter_while_a_deployment_is_killed(
    test: &'static str,
    run: &FailoverRun,
) {
    super::service::block_on(super::database(test));
    let durable = || {
        super::OwnedServer::start(super::ServerConfig {
            sync_on_commit: true,
            ..super::ServerConfig::default()
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
    super::create(test, "orders", &args);
    let serve = |first: &str, second: &str| {
        let mut args = policy.to_vec();
        args.extend(["--uri", first, "--uri", second]);
        Serve::start(test, &args)
    };
    let instances = [serve(&eu_flag, &us_flag), serve(&us_flag, &eu_flag)];
    let urls: Vec<String> = instances.iter().map(Serve::url).collect();
    let (callers, per_phase) = (run.callers.to_string(), run.per_phase.to_string());
    let mut program = (run.pausing)(
        &[run.program, "ids", "orders", &callers, &per_phase, "50"],
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
    assert_eq!(
        report[0],
        format!("taken ok {}", 3 * run.callers * run.per_phase),
        "{report:?}"
    );
}
