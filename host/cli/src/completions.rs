//! `idmint completions SHELL`: the shell's completion script, made from the
//! command line's own definition (clap_complete), so that it completes
//! every subcommand, flag and choice the binary has and no other.

use std::io::Write;

use clap::Args;
use clap_complete::Shell;

use super::Outcome;

/// Arguments of `idmint completions`.
#[derive(Debug, Args)]
pub struct CompletionsCmd {
    /// The shell the script is for.
    #[arg(value_enum)]
    pub shell: Shell,
}

impl CompletionsCmd {
    /// Prints the completion script of `command` (the whole command line,
    /// as `cli.rs` builds it) for the shell asked.
    pub fn execute(&self, mut command: clap::Command) -> anyhow::Result<Outcome> {
        let mut script = Vec::new();
        clap_complete::generate(self.shell, &mut command, "idmint", &mut script);
        std::io::stdout().lock().write_all(&script)?;
        Ok(Outcome::Success)
    }
}
