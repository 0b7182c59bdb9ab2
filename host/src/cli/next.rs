//! `idmint next NAME`: formatted IDs.

use std::sync::Arc;

use clap::Args;
use idmint::policy::PolicyInfo;
use idmint::sequence::{CounterName, CyclicCounter};
use idmint::{Minter, SystemClock};
use serde::Serialize;

use super::policy_args::PolicyArgs;
use super::{ConnectArgs, Outcome, Output};

/// IDs are taken and printed in chunks of this many: one policy call each.
const CHUNK: u64 = 256;

/// Arguments of `idmint next`.
#[derive(Debug, Args)]
pub struct NextCmd {
    /// The counter's name.
    pub name: String,
    /// How many IDs to hand out.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub count: u64,
    /// Prefix of the IDs (default: the counter's own, else none).
    #[arg(long)]
    pub prefix: Option<String>,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Serialize)]
struct NextReport<'a> {
    counter: &'a str,
    prefix: &'a str,
    policy: &'a PolicyInfo,
    ids: Vec<String>,
}

impl NextCmd {
    pub async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        let name = CounterName::new(&self.name).map_err(idmint::Error::from)?;
        let policy = self.policy.load()?;
        let database = self.connect.connect().await?;
        let counter = CyclicCounter::new(&database, name);
        let minter =
            Minter::prepare(counter, policy, self.prefix.clone(), Arc::new(SystemClock)).await?;
        let mut all = Vec::new();
        let mut left = self.count;
        while left > 0 {
            let chunk = left.min(CHUNK);
            let ids = minter.next_ids(chunk as usize).await?;
            if output.is_json() {
                all.extend(ids);
            } else {
                output.lines(&ids)?;
            }
            left -= chunk;
        }
        if output.is_json() {
            let report = NextReport {
                counter: &self.name,
                prefix: minter.prefix(),
                policy: minter.policy().info(),
                ids: all,
            };
            output.report(&report, String::new)?;
        }
        Ok(Outcome::Success)
    }
}
