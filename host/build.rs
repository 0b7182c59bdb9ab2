//! Builds the default ID policy (`guest/`, crate `idmint-policy-default`) as a
//! WebAssembly component and leaves it in `OUT_DIR` as
//! `idmint_policy_default.wasm`, where `src/policy/mod.rs` embeds it with
//! `include_bytes!` as `DEFAULT_POLICY_WASM`.
//!
//! The guest is built by a nested
//! `cargo build -p idmint-policy-default --release --target wasm32-wasip2`
//! into its own target directory, `<workspace>/target/policy-build`, so that it
//! never contends for the lock of the outer build's directory and stays
//! incremental across host builds.
//!
//! The same nested build also builds the second policy, `guest/check-digit/`
//! (crate `idmint-policy-check-digit`), which idmint does not embed: it is
//! copied to `OUT_DIR/idmint_policy_check_digit.wasm`, and its path is given
//! to the crate's targets (the tests use it to prove a swap changes the
//! format) as the compile-time variable `IDMINT_CHECK_DIGIT_POLICY_WASM`.
//!
//! The decimal and base32 policies, `guest/decimal/` and `guest/base32/`
//! (crates `idmint-policy-decimal`, `idmint-policy-base32`), are built by
//! the same nested build and embedded too, from `OUT_DIR`
//! (`--policy builtin:decimal`, `--policy builtin:base32`).
//!
//! Set `IDMINT_DEFAULT_POLICY_WASM` (and `IDMINT_DECIMAL_POLICY_WASM`,
//! `IDMINT_BASE32_POLICY_WASM`) to the
//! paths of prebuilt components to embed those instead and skip the nested
//! build (for packagers, or machines without the `wasm32-wasip2` target). A
//! relative path is taken from the workspace root.

use std::env;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The guest's target triple.
const TARGET: &str = "wasm32-wasip2";
/// The artifact the nested build produces, and the name it has in `OUT_DIR`.
const ARTIFACT: &str = "idmint_policy_default.wasm";
/// Overrides the nested build with a prebuilt component.
const PREBUILT_ENV: &str = "IDMINT_DEFAULT_POLICY_WASM";
/// With [`PREBUILT_ENV`]: the prebuilt decimal policy, embedded too.
const DECIMAL_PREBUILT_ENV: &str = "IDMINT_DECIMAL_POLICY_WASM";
/// The second policy's artifact.
const CHECK_DIGIT_ARTIFACT: &str = "idmint_policy_check_digit.wasm";
/// The compile-time variable naming where the second policy was left.
const CHECK_DIGIT_ENV: &str = "IDMINT_CHECK_DIGIT_POLICY_WASM";
/// The decimal policy's artifact, embedded like the default one.
const DECIMAL_ARTIFACT: &str = "idmint_policy_decimal.wasm";
/// The sandbox probe, a test fixture (not embedded): its artifact, and the
/// compile-time variable naming where it was left.
const PROBE_ARTIFACT: &str = "idmint_policy_sandbox_probe.wasm";
const PROBE_ENV: &str = "IDMINT_SANDBOX_PROBE_WASM";
/// The runaway policy, a test fixture (not embedded): its artifact, and the
/// compile-time variable naming where it was left.
const RUNAWAY_ARTIFACT: &str = "idmint_policy_runaway.wasm";
const RUNAWAY_ENV: &str = "IDMINT_RUNAWAY_POLICY_WASM";
/// The base32 policy's artifact, embedded like the default one.
const BASE32_ARTIFACT: &str = "idmint_policy_base32.wasm";
/// With [`PREBUILT_ENV`]: the prebuilt base32 policy, embedded too.
const BASE32_PREBUILT_ENV: &str = "IDMINT_BASE32_POLICY_WASM";

/// Variables the nested cargo must not inherit from this build script's
/// environment, in addition to every `CARGO_CFG_*`, `CARGO_FEATURE_*` and
/// `CARGO_PKG_*` one.
///
/// Cargo hands the outer build's flags to build scripts; a nested cargo would
/// apply them to the wasm build, where host flags (`-C target-cpu=native`,
/// `-C instrument-coverage` under cargo-llvm-cov, ...) break it. wasmtime's
/// `crates/test-programs/artifacts/build.rs` removes `CARGO_ENCODED_RUSTFLAGS`
/// for the same reason. `RUSTC_WORKSPACE_WRAPPER` is clippy-driver under
/// `cargo clippy`, which need not lint the guest a second time. The target
/// and profile are given on the command line, so their variables go too.
const SCRUBBED: &[&str] = &[
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

fn main() {
    if let Err(message) = run() {
        // Cargo prints a failed build script's stderr; keep it to one clear line.
        eprintln!("error: {message}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let manifest_dir = PathBuf::from(var("CARGO_MANIFEST_DIR")?);
    let workspace = manifest_dir
        .parent()
        .ok_or("the host crate has no parent directory")?
        .to_path_buf();
    let out_dir = PathBuf::from(var("OUT_DIR")?);
    let out = out_dir.join(ARTIFACT);
    let check_digit_out = out_dir.join(CHECK_DIGIT_ARTIFACT);
    let decimal_out = out_dir.join(DECIMAL_ARTIFACT);
    let base32_out = out_dir.join(BASE32_ARTIFACT);
    let probe_out = out_dir.join(PROBE_ARTIFACT);
    let runaway_out = out_dir.join(RUNAWAY_ARTIFACT);
    println!(
        "cargo::rustc-env={CHECK_DIGIT_ENV}={}",
        check_digit_out.display()
    );
    println!("cargo::rustc-env={PROBE_ENV}={}", probe_out.display());
    println!("cargo::rustc-env={RUNAWAY_ENV}={}", runaway_out.display());

    println!("cargo::rerun-if-env-changed={PREBUILT_ENV}");
    if let Some(prebuilt) = env::var_os(PREBUILT_ENV).filter(|p| !p.is_empty()) {
        let prebuilt = workspace.join(prebuilt);
        println!("cargo::rerun-if-changed={}", prebuilt.display());
        // No nested build: the check-digit policy is absent, and tests that
        // need it fail saying so when they read the path. The decimal and
        // base32 ones are embedded, so they must be prebuilt too.
        for (variable, out, crate_dir) in [
            (DECIMAL_PREBUILT_ENV, &decimal_out, "guest/decimal/"),
            (BASE32_PREBUILT_ENV, &base32_out, "guest/base32/"),
        ] {
            install_prebuilt(&workspace, variable, out, crate_dir)?;
        }
        return install(&prebuilt, &out, &format!("named by {PREBUILT_ENV}"));
    }

    let guest = workspace.join("guest");
    for input in [
        "src",
        "wit",
        "Cargo.toml",
        "check-digit/src",
        "check-digit/Cargo.toml",
        "decimal/src",
        "decimal/Cargo.toml",
        "base32/src",
        "base32/Cargo.toml",
        "sandbox-probe/src",
        "sandbox-probe/Cargo.toml",
        "runaway/src",
        "runaway/Cargo.toml",
    ] {
        println!("cargo::rerun-if-changed={}", guest.join(input).display());
    }
    // The workspace manifest pins wit-bindgen and the release profile.
    println!(
        "cargo::rerun-if-changed={}",
        workspace.join("Cargo.toml").display()
    );

    check_target_installed()?;
    let target_dir = workspace.join("target").join("policy-build");
    build_guest(&workspace, &target_dir)?;
    let built = target_dir.join(TARGET).join("release");
    install(
        &built.join(CHECK_DIGIT_ARTIFACT),
        &check_digit_out,
        "built from guest/check-digit/",
    )?;
    install(
        &built.join(DECIMAL_ARTIFACT),
        &decimal_out,
        "built from guest/decimal/",
    )?;
    install(
        &built.join(BASE32_ARTIFACT),
        &base32_out,
        "built from guest/base32/",
    )?;
    install(
        &built.join(PROBE_ARTIFACT),
        &probe_out,
        "built from guest/sandbox-probe/",
    )?;
    install(
        &built.join(RUNAWAY_ARTIFACT),
        &runaway_out,
        "built from guest/runaway/",
    )?;
    install(&built.join(ARTIFACT), &out, "built from guest/")
}

/// With `IDMINT_DEFAULT_POLICY_WASM` set: installs the embedded policy
/// `variable` names (built from `crate_dir`), or says it is missing.
fn install_prebuilt(
    workspace: &Path,
    variable: &str,
    out: &Path,
    crate_dir: &str,
) -> Result<(), String> {
    println!("cargo::rerun-if-env-changed={variable}");
    let path = env::var_os(variable)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| {
            format!("{PREBUILT_ENV} is set, so {variable} must name the prebuilt policy of {crate_dir} too")
        })?;
    let path = workspace.join(path);
    println!("cargo::rerun-if-changed={}", path.display());
    install(&path, out, &format!("named by {variable}"))
}

/// Reads an environment variable cargo always sets for build scripts.
fn var(name: &str) -> Result<OsString, String> {
    env::var_os(name).ok_or_else(|| format!("cargo did not set {name}"))
}

/// Fails early, with the fix, when the standard library for the guest's target
/// is missing; otherwise the nested build fails with "can't find crate for `core`".
fn check_target_installed() -> Result<(), String> {
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
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
            "the {TARGET} target is not installed: run `rustup target add {TARGET}` \
             (or set {PREBUILT_ENV} to a prebuilt policy component)"
        ))
    }
}

/// Runs the nested `cargo build` of the guest.
fn build_guest(workspace: &Path, target_dir: &Path) -> Result<(), String> {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.current_dir(workspace)
        .arg("build")
        .arg("--manifest-path")
        .arg(workspace.join("Cargo.toml"))
        .args([
            "-p",
            "idmint-policy-default",
            "-p",
            "idmint-policy-check-digit",
            "-p",
            "idmint-policy-decimal",
            "-p",
            "idmint-policy-base32",
            "-p",
            "idmint-policy-sandbox-probe",
            "-p",
            "idmint-policy-runaway",
            "--release",
            "--target",
            TARGET,
        ])
        .arg("--target-dir")
        .arg(target_dir)
        // The outer cargo has already brought Cargo.lock up to date for the
        // whole workspace; the nested one must never rewrite it underneath.
        .arg("--locked")
        // The embedded policy needs no debug info, and an LTO'd, stripped guest
        // is ~25x smaller (65 KB instead of 2.5 MB with line tables).
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
        // Cargo reads a build script's stdout for `cargo::` directives: send the
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
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "building the default policy (guest/) for {TARGET} failed ({status}); \
             its compiler output is above"
        ))
    }
}

/// Copies a policy component to `out`, after checking that it is one.
fn install(from: &Path, out: &Path, what: &str) -> Result<(), String> {
    let bytes =
        fs::read(from).map_err(|e| format!("cannot read {} ({what}): {e}", from.display()))?;
    // A component's preamble: "\0asm", version 0x0d, layer 1. A core module
    // (layer 0) here means the guest was built without the component linker.
    if bytes.get(..8) != Some(b"\0asm\x0d\x00\x01\x00".as_slice()) {
        return Err(format!(
            "{} ({what}) is not a WebAssembly component",
            from.display()
        ));
    }
    fs::write(out, &bytes).map_err(|e| format!("cannot write {}: {e}", out.display()))
}
