//! `idmint status`: what the server offers and what idmint installed.

use std::fmt::Write;

use clap::Args;
use idmint::installer::{self, FunctionState, JsSupport, Topology};

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
                    format!("replica set '{name}' ({members} members)")
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
            let _ = writeln!(text, "server:      MongoDB {} , {topology}", server.version);
            let _ = writeln!(text, "server JS:   {js}");
            let _ = writeln!(text, "host path:   {}", report.host_path);
            let _ = writeln!(text, "database:    {}", report.database);
            let counters = if report.counters_collection {
                "present"
            } else {
                "missing"
            };
            let _ = writeln!(text, "counters:    collection {counters}");
            for function in &report.functions {
                let state = match function.state {
                    FunctionState::Current => "current",
                    FunctionState::Missing => "missing (run `idmint install`)",
                    FunctionState::Differs => "differs from this idmint's version",
                };
                let _ = writeln!(text, "function:    {} {state}", function.name);
            }
            text
        })?;
        Ok(if report.is_current() {
            Outcome::Success
        } else {
            Outcome::Failure
        })
    }
}
