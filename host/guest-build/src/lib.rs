//! Builds idmint's policy components (`guest/`) for `wasm32-wasip2` with a
//! nested `cargo build`, for the two places that need them:
//!
//! - the core crate's build script, for the policies idmint embeds
//!   (`host/core/build.rs`);
//! - the tests, for the policies that are only test fixtures ([`FIXTURES`]:
//!   `guest/check-digit`, `guest/sandbox-probe`, `guest/runaway`,
//!   `guest/decimal-0.3`, `guest/lossy-period`, `guest/untagged`), built on first use so that
//!   no production build ever compiles them.
//!
//! Each builds into a target directory of its own under `<workspace>/target`
//! ([`target_dir`] for the embedded policies, [`fixtures_target_dir`] for
//! the fixtures), so that the nested build never waits on the lock of the
//! outer build's directory and stays incremental. The two are apart because
//! some fixtures build on a shipped policy's crate as a library (without its
//! `export` feature), and cargo then writes that library's component, with
//! no exports, under the very file name the embedded build writes the
//! real one to (a `cdylib` file name has no hash): in one directory, each
//! build would overwrite the other's. A nested build must not touch
//! anything the outer build owns: it never rewrites `Cargo.lock`
//! (`--locked`), and it does not inherit the outer build's flags
//! ([`SCRUBBED`]).

use std::env;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The guests' target triple.
pub const TARGET: &str = "wasm32-wasip2";

/// One policy crate of `guest/`.
#[derive(Debug, Clone, Copy)]
pub struct Guest {
    /// The cargo package name, e.g. `idmint-policy-default`.
    pub package: &'static str,
    /// Its directory, relative to the workspace root, e.g. `guest/default`.
    pub dir: &'static str,
    /// Its features to turn on. The shipped policies are libraries of their
    /// policy unless built with `export` (`guest/default/Cargo.toml` says
    /// why), so their build names it; a fixture exports unconditionally.
    pub features: &'static [&'static str],
}

impl Guest {
    /// The component's file name: the package name with `_` for `-`, `.wasm`.
    pub fn artifact(&self) -> String {
        format!("{}.wasm", self.package.replace('-', "_"))
    }
}

/// Variables the nested cargo must not inherit, in addition to every
/// `CARGO_CFG_*`, `CARGO_FEATURE_*`, `CARGO_PKG_*` and `DEP_*` one.
///
/// Cargo hands the outer build's flags to build scripts; a nested cargo would
/// apply them to the wasm build, where host flags (`-C target-cpu=native`,
/// `-C instrument-coverage` under cargo-llvm-cov, ...) break it. wasmtime's
/// `crates/test-programs/artifacts/build.rs` removes `CARGO_ENCODED_RUSTFLAGS`
/// for the same reason. `RUSTC_WORKSPACE_WRAPPER` is clippy-driver under
/// `cargo clippy`, which need not lint the guest a second time. The target
/// and profile are given on the command line, so their variables go too.
pub const SCRUBBED: &[&str] = &[
    "CARGO_ENCODED_RUSTFLAGS",
    "CARGO_ENCODED_RUSTDOCFLAGS",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "CARGO_BUILD_RUSTFLAGS",
    "CARGO_BUILD_TARGET",
    "CARGO_BUILD_TARGET_DIR",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "CARGO_MANIFEST_DIR",
    "CARGO_MANIFEST_PATH",
    "CARGO_MANIFEST_LINKS",
    "CARGO_PRIMARY_PACKAGE",
    "OUT_DIR",
    "TARGET",
    "HOST",
    "NUM_JOBS",
    "OPT_LEVEL",
    "DEBUG",
    "PROFILE",
];

/// The target directory of the embedded policies' build under `workspace`.
pub fn target_dir(workspace: &Path) -> PathBuf {
    workspace.join("target").join("policy-build")
}

/// The target directory of the fixtures' build under `workspace`: the
/// component of fixture `NAME` is
/// `target/policy-fixtures/wasm32-wasip2/release/idmint_policy_NAME.wasm`.
pub fn fixtures_target_dir(workspace: &Path) -> PathBuf {
    workspace.join("target").join("policy-fixtures")
}

/// Builds `guests` in release mode for [`TARGET`] into [`target_dir`] and
/// returns the path of each one's component, in order.
pub fn build(workspace: &Path, guests: &[Guest]) -> Result<Vec<PathBuf>, String> {
    build_into(workspace, &target_dir(workspace), guests)
}

/// [`build`] into `target_dir`.
fn build_into(
    workspace: &Path,
    target_dir: &Path,
    guests: &[Guest],
) -> Result<Vec<PathBuf>, String> {
    check_target_installed()?;
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.current_dir(workspace)
        .arg("build")
        .arg("--manifest-path")
        .arg(workspace.join("Cargo.toml"));
    for guest in guests {
        cmd.args(["-p", guest.package]);
        for feature in guest.features {
            cmd.arg("--features")
                .arg(format!("{}/{feature}", guest.package));
        }
    }
    cmd.args(["--release", "--target", TARGET])
        .arg("--target-dir")
        .arg(target_dir)
        // The outer cargo has already brought Cargo.lock up to date for the
        // whole workspace; the nested one must never rewrite it underneath.
        .arg("--locked")
        // A policy needs no debug info, and an LTO'd, stripped guest is ~25x
        // smaller (65 KB instead of 2.5 MB with line tables).
        .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        .env("CARGO_PROFILE_RELEASE_STRIP", "true")
        .env("CARGO_PROFILE_RELEASE_LTO", "true")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "1")
        // A 64 KiB shadow stack instead of the default 1 MiB: policies
        // format short strings, and a small stack puts the data and the heap
        // in the first pages of linear memory, which the host's instance pool
        // keeps resident between calls (`policy/runtime.rs`, `KEEP_RESIDENT`).
        .env(
            "CARGO_TARGET_WASM32_WASIP2_RUSTFLAGS",
            "-C link-arg=-zstack-size=65536",
        )
        // A build script's stdout is read for `cargo::` directives: send the
        // nested build's output to stderr so none of it is taken as one.
        .stdout(Stdio::from(std::io::stderr()));
    for (key, _) in env::vars_os() {
        let key = key.to_string_lossy();
        if SCRUBBED.contains(&key.as_ref())
            || key.starts_with("CARGO_CFG_")
            || key.starts_with("CARGO_FEATURE_")
            || key.starts_with("CARGO_PKG_")
            || key.starts_with("DEP_")
        {
            cmd.env_remove(key.as_ref());
        }
    }
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run {}: {e}", Path::new(&cargo).display()))?;
    if !status.success() {
        let names: Vec<&str> = guests.iter().map(|guest| guest.dir).collect();
        return Err(format!(
            "building {} for {TARGET} failed ({status}); its compiler output is above",
            names.join(", ")
        ));
    }
    let built = target_dir.join(TARGET).join("release");
    guests
        .iter()
        .map(|guest| {
            let path = built.join(guest.artifact());
            check_component(&path, &format!("built from {}/", guest.dir))?;
            Ok(path)
        })
        .collect()
}

/// Fails unless the file at `path` is a WebAssembly component; `what` says
/// where it came from, for the message.
pub fn check_component(path: &Path, what: &str) -> Result<Vec<u8>, String> {
    let bytes =
        fs::read(path).map_err(|e| format!("cannot read {} ({what}): {e}", path.display()))?;
    // A component's preamble: "\0asm", version 0x0d, layer 1. A core module
    // (layer 0) here means the guest was built without the component linker.
    if bytes.get(..8) != Some(b"\0asm\x0d\x00\x01\x00".as_slice()) {
        return Err(format!(
            "{} ({what}) is not a WebAssembly component",
            path.display()
        ));
    }
    Ok(bytes)
}

/// Fails early, with the fix, when the standard library for the guests'
/// target is missing; otherwise the nested build fails with "can't find
/// crate for `core`".
fn check_target_installed() -> Result<(), String> {
    let rustc: OsString = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = Command::new(&rustc)
        .args(["--print", "target-libdir", "--target", TARGET])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", Path::new(&rustc).display()))?;
    let libdir = String::from_utf8_lossy(&output.stdout).trim().to_string();
    let has_core = output.status.success()
        && fs::read_dir(&libdir).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("libcore-"))
        });
    if has_core {
        Ok(())
    } else {
        Err(format!(
            "the {TARGET} target is not installed: run `rustup target add {TARGET}`"
        ))
    }
}

/// The policies that are only test fixtures: never embedded, never built by
/// a production build.
pub const FIXTURES: [Guest; 6] = [
    // An example policy on contract 0.2.0: the tests hold the host to
    // running older policies, and swap to it to see a new format.
    Guest {
        package: "idmint-policy-check-digit",
        dir: "guest/check-digit",
        features: &[],
    },
    // Tries to reach the environment, a file and the network from inside.
    Guest {
        package: "idmint-policy-sandbox-probe",
        dir: "guest/sandbox-probe",
        features: &[],
    },
    // The default policy, except that it never returns for sequence 42.
    Guest {
        package: "idmint-policy-runaway",
        dir: "guest/runaway",
        features: &[],
    },
    // The decimal policy on contract 0.3.0, the one before periods.
    Guest {
        package: "idmint-policy-decimal-0-3",
        dir: "guest/decimal-0.3",
        features: &[],
    },
    // The decimal policy, except that it reads every period back as its year.
    Guest {
        package: "idmint-policy-lossy-period",
        dir: "guest/lossy-period",
        features: &[],
    },
    // The uuidv7 policy, except that it reads no counter tag back.
    Guest {
        package: "idmint-policy-untagged",
        dir: "guest/untagged",
        features: &[],
    },
];

/// The component of the fixture policy in `guest/<name>` (`check-digit`,
/// `sandbox-probe`, `runaway`, `decimal-0.3`, `lossy-period`, `untagged`), built on the
/// first call in this process
/// (every fixture at once, one nested build) and kept. Panics with the
/// build's reason if it fails: for tests only.
pub fn fixture(name: &str) -> &'static Path {
    use std::sync::OnceLock;
    static BUILT: OnceLock<Result<Vec<PathBuf>, String>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        // This crate sits at host/guest-build, two levels below the root.
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .nth(2)
            .expect("host/guest-build is two levels below the workspace root");
        build_into(workspace, &fixtures_target_dir(workspace), &FIXTURES)
    });
    let paths = built
        .as_ref()
        .unwrap_or_else(|reason| panic!("cannot build the fixture policies: {reason}"));
    let dir = format!("guest/{name}");
    let index = FIXTURES
        .iter()
        .position(|guest| guest.dir == dir)
        .unwrap_or_else(|| panic!("no fixture policy {dir}"));
    &paths[index]
}
