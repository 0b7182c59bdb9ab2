//! A server of a test's own whose clock the test holds: libfaketime under
//! the server reads its time from a file at every call, so the test freezes
//! `$$NOW`, moves it across a period boundary and steps it back.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::fixtures::replace_file;
use super::process::idmint_on;
use super::server::{OwnedServer, ServerConfig};

/// A server whose wall clock the test sets.
pub struct FakeClockServer {
    /// The server.
    pub server: OwnedServer,
    file: PathBuf,
    _dir: tempfile::TempDir,
}

impl FakeClockServer {
    /// Starts the server with its clock frozen at `frozen` (`YYYY-MM-DD
    /// hh:mm:ss`, UTC).
    pub fn start(frozen: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("server-clock");
        set(&file, frozen);
        let server = OwnedServer::start(ServerConfig {
            fake_time: Some(file.clone()),
            ..ServerConfig::default()
        });
        Self {
            server,
            file,
            _dir: dir,
        }
    }

    /// Freezes the server's clock at `frozen` (UTC), from its next call on.
    pub fn freeze(&self, frozen: &str) {
        set(&self.file, frozen);
    }

    /// `idmint` against this server's database `db`.
    pub fn idmint(&self, db: &str) -> Command {
        idmint_on(&self.server.uri, db)
    }
}

/// Writes libfaketime's absolute, frozen form of a UTC time, whole (the
/// server never reads half a line).
fn set(file: &Path, frozen: &str) {
    replace_file(file, format!("{frozen}\n").as_bytes());
}
