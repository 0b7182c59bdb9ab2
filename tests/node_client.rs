//! The Node.js client (`clients/node/`), run with the machine's `node` (20+;
//! `IDMINT_TEST_NODE` to name another), no install step: the package has no
//! dependency, and its programs import it by its own name. Its own unit
//! tests (against an HTTP peer inside the tests that fails, stalls or cuts
//! on command), and small programs (`clients/node/programs/`) against real
//! `idmint serve` instances: unique values of every kind of counter from
//! many callers started together, failover while instances are killed,
//! stopped, cut and restarted, a striped counter while a deployment is
//! killed, and the README's examples.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::support::clients::{self, FailoverRun, Pausing, Serve};
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

/// The node program `args` against the instances' `urls`, pausing as
/// it announces.
fn pausing(args: &[&str], urls: &[String]) -> Pausing {
    Pausing::start(node_command().args(args).args(urls), "node")
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

/// [`fail_over_past_killed_stopped_and_cut_instances`](clients::fail_over_past_killed_stopped_and_cut_instances) with the node
/// client's program: instances killed, stopped and cut.
#[test]
fn the_node_client_fails_over_past_killed_stopped_and_cut_instances() {
    clients::fail_over_past_killed_stopped_and_cut_instances(
        "node_failover",
        &FailoverRun {
            pausing: &pausing,
            program: "programs/failover_run.js",
            callers: 16,
            per_phase: 1000,
        },
    );
}

/// [`take_from_a_striped_counter_while_a_deployment_is_killed`](clients::take_from_a_striped_counter_while_a_deployment_is_killed) with the node
/// client's program: a counter striped across two deployments while one is killed.
#[test]
fn the_node_client_takes_from_a_striped_counter_while_a_deployment_is_killed() {
    clients::take_from_a_striped_counter_while_a_deployment_is_killed(
        "node_deployments",
        &FailoverRun {
            pausing: &pausing,
            program: "programs/failover_run.js",
            callers: 16,
            per_phase: 250,
        },
    );
}
