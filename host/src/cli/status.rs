//! `idmint status`: what the server offers, and each installed item's state.

use std::fmt::Write;

use clap::Args;
use idmint::installer::{self, JsSupport, Topology};

use super::install::state_text;
use super::{ConnectArgs, Outcome, Output};

/// Arguments of `idmint status`.
#[derive(Debug, Args)]
pub struct StatusCmd {
    #[command(flatten)]
    pub connect: ConnectArgs,
}

impl StatusCmd {
    pub async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        let database = self.connect.connect().await?;
        let report = installer::status(&database)
            .await
            .map_err(idmint::Error::from)?;
        output.report(&report, || {
            let server = &report.server;
            let topology = match &server.topology {
                Topology::Standalone => "standalone".to_string(),
                Topology::ReplicaSet { name, members } => {
                    let plural = if *members == 1 { "" } else { "s" };
                    format!("replica set '{name}' ({members} member{plural})")
                }
                Topology::Sharded => "sharded cluster (mongos)".to_string(),
            };
            let js = match &server.server_js {
                JsSupport::QueriesOnly => {
                    "runs in queries ($where) only; stored JS cannot write".to_string()
                }
                JsSupport::Unavailable { reason } => format!("not available ({reason})"),
            };
            let mut text = String::new();
            let _ = writeln!(text, "server:     MongoDB {}, {topology}", server.version);
            let _ = writeln!(text, "server JS:  {js}");
            let _ = writeln!(text, "host path:  {}", report.host_path);
            let _ = writeln!(text, "database:   {}", report.plan.database);
            for item in &report.plan.items {
                let _ = writeln!(
                    text,
                    "{:<10}  {:<20} {:<8} {}",
                    item.kind.as_str(),
                    item.name,
                    item.version,
                    state_text(&item.state)
                );
            }
            let verdict = if report.is_current() {
                "everything is current"
            } else {
                "NOT current: run `idmint install`"
            };
            let _ = writeln!(text, "{verdict}");
            text
        })?;
        Ok(if report.is_current() {
            Outcome::Success
        } else {
            Outcome::Failure
        })
    }
}
