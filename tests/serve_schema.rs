//! `idmint serve` against its own OpenAPI documents: schemathesis (PyPI,
//! installed by `scripts/tools.sh`'s `ensure_schemathesis`) generates
//! requests from each listener's document, valid and invalid, and checks
//! every answer against it (`--checks all`): a valid request is never
//! refused for its shape, an invalid one always is, every status and body
//! is the one documented, and a method a path does not have is a 405 with
//! `Allow`. A fixed seed and a bounded number of examples per route keep
//! the run the same each time, and within a minute.

use std::path::Path;
use std::process::{Command, Output};

use crate::support::service::{block_on, Service};
use crate::support::{self, create, stdout};

/// The schemathesis binary: `IDMINT_SCHEMATHESIS` (set by
/// `ensure_schemathesis`), else `schemathesis` on PATH.
fn schemathesis() -> Command {
    let binary = std::env::var_os("IDMINT_SCHEMATHESIS").unwrap_or_else(|| "schemathesis".into());
    Command::new(binary)
}

/// Where generated path parameters name real counters most of the time,
/// so that the runs reach the answers of every kind, not only 404s.
const CONFIG: &str = r#"
[dictionaries.counters]
values = ["orders", "tickets", "events", "notes", "inv"]

[parameters]
"path.name" = { dictionary = "counters", probability = 0.7 }
"path.key" = { dictionary = "counters", probability = 0.7 }
"#;

/// Runs schemathesis on `document` against `url`, in `dir` (where
/// Hypothesis keeps its database: a fresh one, so nothing is replayed).
fn run_schemathesis(dir: &Path, document: &str, url: &str, examples: u32) -> Output {
    let config = dir.join("schemathesis.toml");
    std::fs::write(&config, CONFIG).unwrap();
    schemathesis()
        .current_dir(dir)
        .arg("--config-file")
        .arg(&config)
        .args(["--no-color", "run", document, "--url", url])
        .args(["--checks", "all", "--seed", "1", "--workers", "1"])
        .args(["--max-examples", &examples.to_string()])
        .args(["--phases", "examples,coverage,fuzzing"])
        .output()
        .unwrap_or_else(|error| {
            panic!(
                "cannot run schemathesis ({error}): run `. scripts/tools.sh && ensure_schemathesis`, \
                 which sets IDMINT_SCHEMATHESIS"
            )
        })
}

/// Each listener's document is exact: schemathesis finds no request the
/// API or admin listener answers otherwise than its document says.
#[test]
fn each_listener_answers_as_its_openapi_document_says() {
    const TEST: &str = "serve_schema";
    block_on(support::database(TEST));
    create(TEST, "orders", &["--prefix", "ORD-"]);
    create(TEST, "tickets", &["--kind", "segment", "--raw"]);
    create(TEST, "events", &["--kind", "snowflake", "--raw"]);
    create(TEST, "notes", &["--kind", "periodic", "--raw"]);
    create(TEST, "inv", &["--kind", "autoinc", "--raw"]);
    let service = Service::start(TEST, &[]);
    let dir = tempfile::tempdir().unwrap();
    let admin = format!("http://{}", service.admin);
    for (document, url, examples) in [
        (
            format!("{admin}/openapi.json"),
            format!("http://{}", service.address),
            40,
        ),
        (format!("{admin}/openapi-admin.json"), admin.clone(), 10),
    ] {
        let output = run_schemathesis(dir.path(), &document, &url, examples);
        assert!(
            output.status.success(),
            "schemathesis found failures with {document} against {url}:\n{}\n{}",
            stdout(&output),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
