//! mongosh, connected to a test's database, running a script after the
//! installed functions' shell loader.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::database::{database_name, with_database};
use super::fixtures::workspace_root;
use super::server::uri;

/// The mongosh binary: `IDMINT_MONGOSH`, else `mongosh` on PATH.
pub fn binary() -> PathBuf {
    std::env::var_os("IDMINT_MONGOSH")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("mongosh"))
}

/// The shell loader that defines the installed functions in a session.
pub fn loader() -> PathBuf {
    workspace_root().join("mongo-js/shell/idmint-loader.js")
}

/// mongosh connected to the database `database` of the server at `uri`,
/// quiet and without an rc file; the caller adds what it runs.
pub fn connected(uri: &str, database: &str) -> Command {
    let mut command = Command::new(binary());
    command.args(["--quiet", "--norc", &with_database(uri, database)]);
    command
}

/// Runs `script` in mongosh against the database `database` of the server
/// at `uri`, after loading the installed functions; output piped.
pub fn shell_on(uri: &str, database: &str, script: &str) -> Command {
    let script = format!("load({:?});\n{script}", loader().display().to_string());
    let mut command = connected(uri, database);
    command
        .args(["--eval", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Runs `script` in mongosh against the database `database` of the test
/// server after loading the installed functions.
pub fn shell_in(database: &str, script: &str) -> Command {
    shell_on(uri(), database, script)
}

/// Runs `script` in mongosh against `test`'s database after loading the
/// installed functions.
pub fn shell(test: &str, script: &str) -> Command {
    shell_in(&database_name(test), script)
}

/// Runs `command` (a mongosh made here), fails the test unless it succeeds,
/// and returns the JSON objects it printed, one a line (other lines, such
/// as mongosh's notices, are skipped).
pub fn json_lines(command: &mut Command) -> Vec<serde_json::Value> {
    let output = command.output().expect("run mongosh");
    assert!(
        output.status.success(),
        "mongosh: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| line.starts_with('{'))
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}
