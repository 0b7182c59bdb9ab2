//! Files the tests use: the workspace's, the fixture policies, and files
//! replaced as a deployment would.

use std::path::Path;

/// The workspace root: the tests belong to the CLI crate, `host/cli`.
pub fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("host/cli is two levels below the workspace root")
}

/// The path of a fixture policy component (`guest/<name>`: `check-digit`,
/// `sandbox-probe`, `runaway`, `decimal-0.3`, `lossy-period`, `untagged`), built on first
/// use: fixtures are never part of a production build.
pub fn fixture_policy(name: &str) -> &'static str {
    idmint_guest_build::fixture(name)
        .to_str()
        .expect("the workspace path is UTF-8")
}

/// Replaces `path` atomically with `bytes` (written aside, then renamed), as
/// a deployment would: a reader never sees half of it.
pub fn replace_file(path: &Path, bytes: &[u8]) {
    let aside = path.with_extension("next");
    std::fs::write(&aside, bytes).unwrap();
    std::fs::rename(&aside, path).unwrap();
}
