//! The `--policy FILE` flag and loading the policy it names.

use std::path::{Path, PathBuf};

use clap::Args;
use idmint::{Policy, PolicyRuntime};

/// Which ID policy to use.
#[derive(Debug, Clone, Args)]
pub struct PolicyArgs {
    /// A policy component (.wasm), or a built-in one: builtin:default (prefix +
    /// time + 2 digits, the default), builtin:decimal (prefix + at least 9
    /// digits, no time: for autoinc and segment counters), builtin:base32
    /// (prefix + 13 base32 characters: for snowflake counters), builtin:uuidv7
    /// and builtin:ulid (standard IDs, no prefix: for snowflake counters).
    #[arg(long, env = "IDMINT_POLICY", value_name = "FILE")]
    pub policy: Option<PathBuf>,
}

/// How `--policy builtin:NAME` names a built-in policy.
const BUILTIN: &str = "builtin:";

impl PolicyArgs {
    /// Compiles and pre-instantiates the chosen policy.
    pub fn load(&self) -> anyhow::Result<Policy> {
        let runtime = PolicyRuntime::new()?;
        self.load_with(&runtime)
    }

    /// [`PolicyArgs::load`] with a runtime of the caller's, which a process
    /// that swaps policies later keeps for them.
    pub fn load_with(&self, runtime: &PolicyRuntime) -> anyhow::Result<Policy> {
        let policy = match (self.builtin(), &self.policy) {
            (Some(name), _) => runtime.load_builtin(name),
            (None, Some(path)) => runtime.load_file(path),
            (None, None) => runtime.load_default(),
        };
        Ok(policy.map_err(idmint::Error::from)?)
    }

    /// The built-in policy named, if `--policy` is `builtin:NAME`.
    fn builtin(&self) -> Option<&str> {
        self.policy.as_ref()?.to_str()?.strip_prefix(BUILTIN)
    }

    /// The policy file named, if `--policy` names a file (not a built-in).
    pub fn file(&self) -> Option<&Path> {
        self.policy.as_deref().filter(|_| self.builtin().is_none())
    }
}
