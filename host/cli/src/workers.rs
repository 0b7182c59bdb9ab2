//! `idmint workers NAME`: the worker leases of a snowflake counter.

use std::fmt::Write;

use clap::Args;
use idmint::sequence::CounterName;
use idmint::sequence::{self as snowflake, WorkerLease};
use serde::Serialize;

use super::counter::rfc3339_micros;
use super::{ConnectArgs, Outcome, Output};

/// Arguments of `idmint workers`.
#[derive(Debug, Args)]
pub struct WorkersCmd {
    /// The snowflake counter's name.
    pub name: String,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Serialize)]
struct WorkersReport<'a> {
    counter: &'a str,
    /// The server's time when the leases were read.
    server_time: String,
    leases: Vec<LeaseView<'a>>,
}

#[derive(Serialize)]
struct LeaseView<'a> {
    #[serde(flatten)]
    lease: &'a WorkerLease,
    expires: String,
}

impl WorkersCmd {
    pub async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        let name = CounterName::new(&self.name).map_err(idmint::Error::from)?;
        let database = self.connect.connect().await?;
        let (leases, now_ms) = snowflake::workers(&database, &name)
            .await
            .map_err(idmint::Error::from)?;
        let time = |ms: i64| rfc3339_micros(u64::try_from(ms).unwrap_or(0) * 1000);
        let report = WorkersReport {
            counter: &self.name,
            server_time: time(now_ms),
            leases: leases
                .iter()
                .map(|lease| LeaseView {
                    lease,
                    expires: time(lease.expires_ms),
                })
                .collect(),
        };
        output.report(&report, || {
            let mut text = format!(
                "{:>6}  {:<8} {:<32} {:<20} {:>8}  {:<27} {:>14}\n",
                "worker", "state", "owner", "host", "pid", "expires", "last time"
            );
            for view in &report.leases {
                let lease = view.lease;
                let _ = writeln!(
                    text,
                    "{:>6}  {:<8} {:<32} {:<20} {:>8}  {:<27} {:>14}",
                    lease.worker,
                    if lease.live { "live" } else { "expired" },
                    lease.owner,
                    lease.host,
                    lease.pid,
                    view.expires,
                    lease.last_time
                );
            }
            if report.leases.is_empty() {
                let _ = writeln!(text, "(no leases yet)");
            }
            text
        })?;
        Ok(Outcome::Success)
    }
}
