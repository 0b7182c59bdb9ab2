//! The Node.js client (`clients/node/`), run with the machine's `node` (20+;
//! `IDMINT_TEST_NODE` to name another), no install step: the package has no
//! dependency, and its programs import it by its own name. Its own unit
//! tests (against an HTTP peer inside the tests that fails, stalls or cuts
//! on command), and small programs (`clients/node/programs/`) against real
//! `idmint serve` instances: unique values of every kind of counter from
//! many callers started together, failover while instances are killed,
//! stopped, cut and restarted, a striped counter while a deployment is
//! killed, and the README's examples.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};

use crate::support::fault_proxy::{self, FaultProxy};
use crate::support::process::signal;
use crate::support::service::{request, spawn_serve};
use crate::support::{self, assert_exit, create, idmint, stdout};

/// `clients/node`.
fn package() -> PathBuf {
    support::workspace_root().join("clients/node")
}

/// `node`, run from `clients/node` (where `import "idmint-client"` is the
/// package itself).
fn node_command() -> Command {
    let node = std::env::var("IDMINT_TEST_NODE").unwrap_or_else(|_| "node".into());
    let mut command = Command::new(node);
    command
        .current_dir(package())
        .env_remove("NODE_OPTIONS")
        .env_remove("NODE_PATH");
    command
}

/// Runs `command` to its end, which must be a success; its stdout.
fn succeed(command: &mut Command) -> String {
    let output = command
        .stdin(Stdio::null())
        .output()
        .expect("run node (20+ needed)");
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

/// The Node client's own unit tests (`clients/node/test/*.test.js`, with
/// `node:test`): failover order, set-aside and backoff on a fake clock, one
/// fetch in flight, failures to their callers only, errors at once or at
/// the deadline, answers cut inside their headers or short of their
/// Content-Length failed over, the token sent and URL credentials never; no
/// server needed.
#[test]
fn the_node_client_passes_its_own_tests() {
    let mut files: Vec<String> = std::fs::read_dir(package().join("test"))
        .expect("read clients/node/test")
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".test.js"))
        .map(|name| format!("test/{name}"))
        .collect();
    files.sort();
    assert!(files.len() >= 3, "{files:?}");
    let output = node_command()
        .args(["--test", "--test-reporter=tap"])
        .args(&files)
        .stdin(Stdio::null())
        .output()
        .expect("run node --test");
    assert_exit(&output, 0);
    let report = stdout(&output);
    assert!(report.contains("\n# fail 0\n"), "{report}");
    let passed = report
        .lines()
        .find_map(|line| line.strip_prefix("# pass "))
        .and_then(|count| count.parse::<u32>().ok());
    assert!(passed.is_some_and(|count| count >= 20), "{report}");
}

/// Every kind of counter (autoinc, segment, cyclic, periodic, snowflake as
/// UUIDv7s) through one instance: 16 callers per client, started together
/// behind one gate, take values and IDs; nothing comes twice, across the
/// clients of one counter too; an unknown counter is a 404 at once.
#[test]
fn the_node_client_hands_out_unique_values_of_every_kind() {
    const TEST: &str = "node_kinds";
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
        node_command()
            .arg("programs/unique_run.js")
            .arg(serve.url())
            .args(["16", "500"])
            .args(["values:seg", "values:orders", "ids:orders", "ids:cyc"])
            .args(["ids:per", "uuids:events", "missing:nope"]),
    );
    assert_eq!(
        report,
        "values:seg ok 8000\nvalues:orders ok 8000\nids:orders ok 8000\nids:cyc ok 8000\n\
         ids:per ok 8000\nuuids:events ok 8000\nmissing:nope ok 404\n"
    );
}

/// The README's ```js blocks, each a program of its own (`node
/// --input-type=module -e`), against a real instance whose URL is in
/// `IDMINT_SERVERS`.
#[test]
fn the_node_readme_examples_run() {
    const TEST: &str = "node_readme";
    support::service::block_on(support::database(TEST));
    create(TEST, "orders", &["--kind", "autoinc", "--prefix", "WEB-"]);
    create(TEST, "events", &["--kind", "snowflake"]);
    assert_exit(
        &support::run(idmint(TEST).args(["series", "create", "invoices"])),
        0,
    );
    let serve = Serve::start(
        TEST,
        &[
            ["--policy-for", "autoinc=builtin:decimal"],
            ["--policy-for", "snowflake=builtin:uuidv7"],
        ]
        .concat(),
    );
    let readme = std::fs::read_to_string(package().join("README.md")).unwrap();
    let blocks: Vec<&str> = readme
        .split("```js\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap())
        .collect();
    assert!(
        blocks.len() >= 4,
        "{} js blocks in the README",
        blocks.len()
    );
    for block in blocks {
        let output = node_command()
            .args(["--input-type=module", "-e", block])
            .env("IDMINT_SERVERS", serve.url())
            .stdin(Stdio::null())
            .output()
            .expect("run node");
        assert!(
            output.status.success(),
            "a README example failed:\n{block}\n{}",
            support::stderr(&output)
        );
    }
}

/// Three instances of one segment counter, the first (the preferred one)
/// behind a fault proxy; 16 callers take values through one client in
/// phases, the test acting between them: the first is killed (SIGKILL) and
/// the second stopped (SIGSTOP) until the client has seen both fail and the
/// third answer; then the first is restarted, the second continued
/// (SIGCONT) and the proxy cuts each connection at a random byte, until the
/// client has seen a cut fail, the first answer again and the second answer.
/// No call fails, nothing comes twice, and the restarted instance served
/// values.
#[test]
fn the_node_client_fails_over_past_killed_stopped_and_cut_instances() {
    const TEST: &str = "node_failover";
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
            "programs/failover_run.js",
            "values",
            "seg",
            "16",
            "1000",
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
            .is_some_and(|n| n >= 3 * 16 * 1000),
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
/// the test's own, two instances spanning both; 16 callers take IDs through
/// one client while eu is killed (SIGKILL) and later restarted on its data,
/// each between phases. No call fails and no ID comes twice.
#[test]
fn the_node_client_takes_from_a_striped_counter_while_a_deployment_is_killed() {
    const TEST: &str = "node_deployments";
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
            "programs/failover_run.js",
            "ids",
            "orders",
            "16",
            "250",
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
    assert_eq!(
        report[0],
        format!("taken ok {}", 3 * 16 * 250),
        "{report:?}"
    );
}

/// A Node program that announces pauses (`paused N`) and reads a command
/// at each, so that the test acts at a point the program is known to be at.
struct Pausing {
    child: Child,
    commands: ChildStdin,
    lines: std::io::Lines<BufReader<ChildStdout>>,
    errors: Arc<Mutex<String>>,
    drained: std::thread::JoinHandle<()>,
}

impl Pausing {
    /// Runs node with `args`, then the instances' `urls`.
    fn start(args: &[&str], urls: &[String]) -> Self {
        let mut child = node_command()
            .args(args)
            .args(urls)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run node");
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
        let status = self.child.wait().expect("wait for node");
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
