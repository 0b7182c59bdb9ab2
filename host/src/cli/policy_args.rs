//! The `--policy FILE` flag and loading the policy it names.

use std::path::PathBuf;

use clap::Args;
use idmint::{Policy, PolicyRuntime};

/// Which ID policy to use.
#[derive(Debug, Clone, Args)]
pub struct PolicyArgs {
    /// A policy component (.wasm); default: the built-in default policy.
    #[arg(long, env = "IDMINT_POLICY", value_name = "FILE")]
    pub policy: Option<PathBuf>,
}

impl PolicyArgs {
    /// Compiles and pre-instantiates the chosen policy.
    pub fn load(&self) -> anyhow::Result<Policy> {
        let runtime = PolicyRuntime::new()?;
        self.load_with(&runtime)
    }

    /// [`PolicyArgs::load`] with a runtime of the caller's, which a process
    /// that swaps policies later keeps for them.
    pub fn load_with(&self, runtime: &PolicyRuntime) -> anyhow::Result<Policy> {
        Ok(match &self.policy {
            Some(path) => runtime.load_file(path).map_err(idmint::Error::from)?,
            None => runtime.load_default().map_err(idmint::Error::from)?,
        })
    }
}
