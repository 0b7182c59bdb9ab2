//! `idmint status`: what the server offers, and each installed item's state.

use std::fmt::Write;

use clap::Args;
use idmint::installer::{self, JsSupport, StatusReport, Topology};
use idmint::sequence::prefixes::Collision;
use idmint::sequence::{self, CounterHeadroom, HeadroomLimits};
use idmint::Clock;
use serde::Serialize;

use super::install::state_text;
use super::{ConnectArgs, Outcome, Output};

/// The status report, with the headroom of each counter that can run out
/// (`sequence::headrooms`) and every prefix more than one counter owns.
#[derive(Serialize)]
struct StatusView<'a> {
    #[serde(flatten)]
    report: &'a StatusReport,
    headroom: &'a [Judged],
    prefix_collisions: &'a [Collision],
}

/// A counter's headroom and, within the limits, why to act.
#[derive(Serialize)]
struct Judged {
    #[serde(flatten)]
    counter: CounterHeadroom,
    warning: Option<String>,
}

/// Arguments of `idmint status`.
#[derive(Debug, Args)]
pub struct StatusCmd {
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Warn (and exit 1) when a counter whose IDs carry the time (snowflake)
    /// has fewer days left than this.
    #[arg(long, value_name = "DAYS", default_value_t = HeadroomLimits::default().days)]
    pub warn_days: u64,
    /// Warn (and exit 1) when a counter has less than this share of its
    /// values left, in percent (0 to 100).
    #[arg(long, value_name = "PERCENT", default_value_t = HeadroomLimits::default().space_percent,
          value_parser = parse_percent)]
    pub warn_space: f64,
    /// Warn (and exit 1) when a cyclic counter's timestamps are more than
    /// this many milliseconds ahead of this machine's clock: it is taken
    /// faster than its pace, or a client's clock is ahead.
    #[arg(long, value_name = "MS", default_value_t = HeadroomLimits::default().ahead_ms)]
    pub warn_ahead_ms: u64,
}

/// A share in percent, 0 to 100.
fn parse_percent(text: &str) -> Result<f64, String> {
    let percent: f64 = text
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("{text:?} is not a number of percent"))?;
    if (0.0..=100.0).contains(&percent) {
        Ok(percent)
    } else {
        Err(format!("{text} is not 0 to 100 percent"))
    }
}

impl StatusCmd {
    pub async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        let database = self.connect.connect().await?;
        let report = installer::status(&database)
            .await
            .map_err(idmint::Error::from)?;
        let now_ms = idmint::SystemClock.now_micros() / 1000;
        let limits = HeadroomLimits {
            days: self.warn_days,
            space_percent: self.warn_space,
            ahead_ms: self.warn_ahead_ms,
        };
        let headroom: Vec<Judged> = sequence::headrooms(&database, now_ms)
            .await
            .map_err(idmint::Error::from)?
            .into_iter()
            .map(|counter| Judged {
                warning: counter.headroom.warning(now_ms, &limits),
                counter,
            })
            .collect();
        let near_end = headroom.iter().any(|judged| judged.warning.is_some());
        let collisions = sequence::prefixes::collisions(&database)
            .await
            .map_err(idmint::Error::from)?;
        let current = report.is_current() && collisions.is_empty();
        let view = StatusView {
            report: &report,
            headroom: &headroom,
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
                .chain(headroom.iter().map(|judged| judged.counter.counter.len()))
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
            for judged in &headroom {
                let counter = &judged.counter;
                let _ = writeln!(
                    text,
                    "{:<10}  {:<width$} {}",
                    counter.kind,
                    counter.counter,
                    counter.headroom.summary(),
                );
                if let Some(warning) = &judged.warning {
                    let _ = writeln!(text, "warning: counter '{}' {warning}", counter.counter);
                }
            }
            for collision in &collisions {
                let _ = writeln!(text, "conflict:   {}", collision.advice());
            }
            let verdict = if current && near_end {
                "NOT ready: counters near their end (see above)"
            } else if current {
                "everything is current"
            } else if report.is_current() {
                "NOT current: counters share a prefix (see above)"
            } else {
                "NOT current: run `idmint install`"
            };
            let _ = writeln!(text, "{verdict}");
            text
        })?;
        Ok(if current && !near_end {
            Outcome::Success
        } else {
            Outcome::Failure
        })
    }
}
