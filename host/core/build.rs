//! Builds the policies idmint embeds as WebAssembly components and leaves
//! them in `OUT_DIR`, where `src/policy/mod.rs` embeds them with
//! `include_bytes!`: [`EMBEDDED`] lists them, once.
//!
//! The nested `cargo build` is `idmint-guest-build`'s (shared with the test
//! suite, which builds the fixture policies the same way on first use: no
//! production build compiles a fixture).
//!
//! For packagers, or machines without the `wasm32-wasip2` target: set each
//! policy's variable (`IDMINT_DEFAULT_POLICY_WASM`, ...) to the path of a
//! prebuilt component to embed it instead; setting one requires all. A
//! relative path is taken from the workspace root.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

use idmint_guest_build::{check_component, Guest};

/// One embedded policy: its crate, the name `src/policy/mod.rs` finds it by
/// in `OUT_DIR`, and the variable naming a prebuilt one.
struct Embedded {
    guest: Guest,
    out_name: &'static str,
    prebuilt_env: &'static str,
}

/// Every policy idmint embeds.
const EMBEDDED: [Embedded; 5] = [
    Embedded {
        guest: Guest {
            package: "idmint-policy-default",
            dir: "guest/default",
            features: &["export"],
        },
        out_name: "idmint_policy_default.wasm",
        prebuilt_env: "IDMINT_DEFAULT_POLICY_WASM",
    },
    Embedded {
        guest: Guest {
            package: "idmint-policy-decimal",
            dir: "guest/decimal",
            features: &["export"],
        },
        out_name: "idmint_policy_decimal.wasm",
        prebuilt_env: "IDMINT_DECIMAL_POLICY_WASM",
    },
    Embedded {
        guest: Guest {
            package: "idmint-policy-base32",
            dir: "guest/base32",
            features: &["export"],
        },
        out_name: "idmint_policy_base32.wasm",
        prebuilt_env: "IDMINT_BASE32_POLICY_WASM",
    },
    Embedded {
        guest: Guest {
            package: "idmint-policy-uuidv7",
            dir: "guest/uuidv7",
            features: &["export"],
        },
        out_name: "idmint_policy_uuidv7.wasm",
        prebuilt_env: "IDMINT_UUIDV7_POLICY_WASM",
    },
    Embedded {
        guest: Guest {
            package: "idmint-policy-ulid",
            dir: "guest/ulid",
            features: &["export"],
        },
        out_name: "idmint_policy_ulid.wasm",
        prebuilt_env: "IDMINT_ULID_POLICY_WASM",
    },
];

/// What every guest depends on besides its own directory: the contract, the
/// policy kit the shipped policies are built on, and the workspace manifest
/// (it pins wit-bindgen and the release profile).
const SHARED_INPUTS: [&str; 3] = ["guest/wit", "guest/kit", "Cargo.toml"];

fn main() {
    if let Err(message) = run() {
        // Cargo prints a failed build script's stderr; keep it to one clear line.
        eprintln!("error: {message}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let manifest_dir = PathBuf::from(var("CARGO_MANIFEST_DIR")?);
    // host/core -> the workspace root.
    let workspace = manifest_dir
        .ancestors()
        .nth(2)
        .ok_or("the core crate is not two levels below the workspace root")?
        .to_path_buf();
    let out_dir = PathBuf::from(var("OUT_DIR")?);
    // The stored functions, embedded by include_dir!: a function added to
    // mongo-js/ (a new file, which the macro does not track) recompiles the
    // crate.
    println!(
        "cargo::rerun-if-changed={}",
        workspace.join("mongo-js").display()
    );

    let prebuilt: Vec<Option<PathBuf>> = EMBEDDED
        .iter()
        .map(|embedded| {
            println!("cargo::rerun-if-env-changed={}", embedded.prebuilt_env);
            env::var_os(embedded.prebuilt_env)
                .filter(|path| !path.is_empty())
                .map(|path| workspace.join(path))
        })
        .collect();
    if prebuilt.iter().any(Option::is_some) {
        for (embedded, path) in EMBEDDED.iter().zip(prebuilt) {
            let path = path.ok_or_else(|| {
                let named: Vec<&str> = EMBEDDED.iter().map(|e| e.prebuilt_env).collect();
                format!(
                    "{} is not set: prebuilt policies replace the nested build only when all of {} are set",
                    embedded.prebuilt_env,
                    named.join(", ")
                )
            })?;
            println!("cargo::rerun-if-changed={}", path.display());
            let what = format!("named by {}", embedded.prebuilt_env);
            install(&path, &out_dir.join(embedded.out_name), &what)?;
        }
        return Ok(());
    }

    for input in SHARED_INPUTS
        .iter()
        .copied()
        .chain(EMBEDDED.iter().map(|embedded| embedded.guest.dir))
    {
        println!(
            "cargo::rerun-if-changed={}",
            workspace.join(input).display()
        );
    }
    let guests: Vec<Guest> = EMBEDDED.iter().map(|embedded| embedded.guest).collect();
    let built = idmint_guest_build::build(&workspace, &guests)?;
    for (embedded, path) in EMBEDDED.iter().zip(built) {
        let what = format!("built from {}/", embedded.guest.dir);
        install(&path, &out_dir.join(embedded.out_name), &what)?;
    }
    Ok(())
}

/// Reads an environment variable cargo always sets for build scripts.
fn var(name: &str) -> Result<String, String> {
    env::var(name).map_err(|_| format!("cargo did not set {name}"))
}

/// Copies a policy component to `out`, after checking that it is one.
fn install(from: &Path, out: &Path, what: &str) -> Result<(), String> {
    let bytes = check_component(from, what)?;
    fs::write(out, &bytes).map_err(|e| format!("cannot write {}: {e}", out.display()))
}
