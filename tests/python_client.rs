//! The Python client (`clients/python/`), installed once per test process
//! into a venv (`pip install`, offline: its build backend is in its own
//! directory) and run: its own unit tests (against an HTTP peer inside the
//! tests that fails or stalls on command), and small Python programs
//! (`clients/python/tests/programs/`) against real `idmint serve`
//! instances: unique values of every kind of counter from threads at a
//! barrier and from asyncio tasks, the README's examples, and failover while
//! instances are killed, stopped, cut and restarted.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::support::clients::{self, FailoverRun, Pausing, Serve};
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

/// The python program `args` against the instances' `urls`, pausing as
/// it announces.
fn pausing(args: &[&str], urls: &[String]) -> Pausing {
    Pausing::start(python_command().args(args).args(urls), "python")
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

/// [`fail_over_past_killed_stopped_and_cut_instances`](clients::fail_over_past_killed_stopped_and_cut_instances) with the python
/// client's program: instances killed, stopped and cut.
#[test]
fn the_python_client_fails_over_past_killed_stopped_and_cut_instances() {
    clients::fail_over_past_killed_stopped_and_cut_instances(
        "python_failover",
        &FailoverRun {
            pausing: &pausing,
            program: "programs/failover_run.py",
            callers: 8,
            per_phase: 2000,
        },
    );
}

/// [`take_from_a_striped_counter_while_a_deployment_is_killed`](clients::take_from_a_striped_counter_while_a_deployment_is_killed) with the python
/// client's program: a counter striped across two deployments while one is killed.
#[test]
fn the_python_client_takes_from_a_striped_counter_while_a_deployment_is_killed() {
    clients::take_from_a_striped_counter_while_a_deployment_is_killed(
        "python_deployments",
        &FailoverRun {
            pausing: &pausing,
            program: "programs/failover_run.py",
            callers: 8,
            per_phase: 500,
        },
    );
}
