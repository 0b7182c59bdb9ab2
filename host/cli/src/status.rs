//! `idmint status`: what the server offers, and each installed item's state.

use std::fmt::Write;

use clap::Args;
use idmint::installer::{self, JsSupport, StatusReport, Topology};
use idmint::sequence::prefixes::Collision;
use idmint::sequence::{self, Lifetime};
use idmint::Clock;
use serde::Serialize;

use super::install::state_text;
use super::{ConnectArgs, Outcome, Output};

/// The status report, with the layout lifetime of each counter whose IDs
/// carry the time (`sequence::lifetimes`) and every prefix more than one
/// counter owns.
#[derive(Serialize)]
struct StatusView<'a> {
    #[serde(flatten)]
    report: &'a StatusReport,
    snowflake_counters: &'a [Lifetime],
    prefix_collisions: &'a [Collision],
}

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
        let now_ms = idmint::SystemClock.now_micros() / 1000;
        let lifetimes = sequence::lifetimes(&database, now_ms)
            .await
            .map_err(idmint::Error::from)?;
        let collisions = sequence::prefixes::collisions(&database)
            .await
            .map_err(idmint::Error::from)?;
        let current = report.is_current() && collisions.is_empty();
        let view = StatusView {
            report: &report,
            snowflake_counters: &lifetimes,
            prefix_collisions: &collisions,
        };
        output.report(&view, || {
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
            // One column for the names, as wide as the widest.
            let width = report
                .plan
                .items
                .iter()
                .map(|item| item.name.len())
                .chain(lifetimes.iter().map(|lifetime| lifetime.counter.len()))
                .max()
                .unwrap_or(0)
                .max(20);
            for item in &report.plan.items {
                let _ = writeln!(
                    text,
                    "{:<10}  {:<width$} {:<8} {}",
                    item.kind.as_str(),
                    item.name,
                    item.version,
                    state_text(&item.state)
                );
            }
            for lifetime in &lifetimes {
                let _ = writeln!(
                    text,
                    "{:<10}  {:<width$} runs out on {}",
                    lifetime.kind, lifetime.counter, lifetime.runs_out_on
                );
                if let Some(warning) = &lifetime.warning {
                    let _ = writeln!(text, "warning: counter '{}': {warning}", lifetime.counter);
                }
            }
            for collision in &collisions {
                let _ = writeln!(text, "conflict:   {}", collision.advice());
            }
            let verdict = if current {
                "everything is current"
            } else if report.is_current() {
                "NOT current: counters share a prefix (see above)"
            } else {
                "NOT current: run `idmint install`"
            };
            let _ = writeln!(text, "{verdict}");
            text
        })?;
        Ok(if current {
            Outcome::Success
        } else {
            Outcome::Failure
        })
    }
}
