//! `idmint shell-loader`: print the mongosh loader script.

use clap::Args;
use serde::Serialize;

use super::{Outcome, Output};

/// Arguments of `idmint shell-loader` (none).
#[derive(Debug, Args)]
pub struct ShellLoaderCmd {}

#[derive(Serialize)]
struct LoaderReport {
    script: &'static str,
}

impl ShellLoaderCmd {
    pub fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        let script = idmint::installer::shell_loader();
        output.report(&LoaderReport { script }, || script.to_string())?;
        Ok(Outcome::Success)
    }
}
