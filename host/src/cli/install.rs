//! `idmint install`: deploy the server-side functions and the counters collection.

use std::fmt::Write;

use clap::Args;
use idmint::installer::{self, ItemAction};

use super::{ConnectArgs, Outcome, Output};

/// Arguments of `idmint install`.
#[derive(Debug, Args)]
pub struct InstallCmd {
    #[command(flatten)]
    pub connect: ConnectArgs,
}

impl InstallCmd {
    pub async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        let database = self.connect.connect().await?;
        let report = installer::install(&database)
            .await
            .map_err(idmint::Error::from)?;
        output.report(&report, || {
            let mut text = String::new();
            for item in &report.items {
                let action = match item.action {
                    ItemAction::Created => "created",
                    ItemAction::Updated => "updated",
                    ItemAction::Unchanged => "unchanged",
                };
                let _ = writeln!(text, "{action:9} {} {}", item.kind, item.name);
            }
            if report.changed_nothing() {
                let _ = writeln!(
                    text,
                    "database '{}' was already current: nothing written",
                    report.database
                );
            } else {
                let _ = writeln!(text, "installed into database '{}'", report.database);
            }
            text
        })?;
        Ok(Outcome::Success)
    }
}
