//! `idmint uninstall`: remove what idmint installed, and only that.

use std::fmt::Write as _;
use std::io::{self, BufRead, IsTerminal, Write};

use clap::Args;
use idmint::installer::{self, UninstallAction, UninstallOptions};

use super::exit::UsageError;
use super::{ConnectArgs, Outcome, Output};

/// Arguments of `idmint uninstall`.
#[derive(Debug, Args)]
pub struct UninstallCmd {
    /// Print what would be removed and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Also remove functions and roles changed by hand since install.
    #[arg(long)]
    pub force: bool,
    /// Also drop the counters collection: every counter's state is lost.
    #[arg(long)]
    pub drop_counters: bool,
    /// Also drop the policies collection.
    #[arg(long)]
    pub drop_policies: bool,
    /// Do not ask for confirmation of --drop-counters / --drop-policies.
    #[arg(long, short = 'y')]
    pub yes: bool,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

impl UninstallCmd {
    pub async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        let destructive = self.drop_counters || self.drop_policies;
        if destructive && !self.dry_run && !self.yes {
            confirm(&self.connect.db)?;
        }
        let database = self.connect.connect().await?;
        let mut options = UninstallOptions::default();
        options.dry_run = self.dry_run;
        options.force = self.force;
        options.drop_counters = self.drop_counters;
        options.drop_policies = self.drop_policies;
        let report = installer::uninstall(&database, &options)
            .await
            .map_err(idmint::Error::from)?;
        output.report(&report, || {
            let mut text = String::new();
            for item in &report.items {
                let action = match item.action {
                    UninstallAction::Remove => "remove",
                    UninstallAction::Keep => "keep",
                    UninstallAction::Refuse => "REFUSE",
                    UninstallAction::Forget => "forget",
                };
                let _ = write!(text, "{action:7} {} {}", item.kind.as_str(), item.name);
                if let Some(reason) = &item.reason {
                    let _ = write!(text, " ({reason})");
                }
                text.push('\n');
            }
            if report.items.is_empty() {
                text.push_str("nothing recorded as installed by idmint\n");
            } else if report.dry_run {
                text.push_str("dry run: nothing was removed\n");
            }
            text
        })?;
        Ok(Outcome::Success)
    }
}

/// Asks on the terminal; without one, refuses (use --yes in scripts).
fn confirm(database: &str) -> anyhow::Result<()> {
    let stdin = io::stdin();
    if !stdin.is_terminal() {
        return Err(UsageError(
            "--drop-counters/--drop-policies delete data: confirm with --yes (stdin is not a terminal)".into(),
        )
        .into());
    }
    eprint!(
        "This deletes data in database '{database}' for good. Type the database name to confirm: "
    );
    io::stderr().flush()?;
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer)?;
    if answer.trim() != database {
        return Err(UsageError("not confirmed: nothing was removed".into()).into());
    }
    Ok(())
}
