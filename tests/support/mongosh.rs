//! mongosh, running the installed functions' shell loader and a script.

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

/// Runs `script` in mongosh against the database `database` after loading
/// the installed functions (`mongo-js/shell/idmint-loader.js`).
pub fn shell_in(database: &str, script: &str) -> Command {
    let loader = workspace_root().join("mongo-js/shell/idmint-loader.js");
    let script = format!("load({:?});\n{script}", loader.display().to_string());
    let mut command = Command::new(binary());
    command
        .args([
            "--quiet",
            "--norc",
            &with_database(uri(), database),
            "--eval",
            &script,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Runs `script` in mongosh against `test`'s database after loading the
/// installed functions.
pub fn shell(test: &str, script: &str) -> Command {
    shell_in(&database_name(test), script)
}
