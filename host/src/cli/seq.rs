//! `idmint seq NAME`: raw sequence values.

use clap::Args;
use idmint::sequence::{CounterName, CyclicCounter};
use idmint::{Clock, SystemClock};
use serde::Serialize;

use super::{ConnectArgs, Outcome, Output};

/// Arguments of `idmint seq`.
#[derive(Debug, Args)]
pub struct SeqCmd {
    /// The counter's name.
    pub name: String,
    /// How many values to hand out.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub count: u64,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Serialize)]
struct SeqReport<'a> {
    counter: &'a str,
    values: Vec<u64>,
}

impl SeqCmd {
    pub async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        let name = CounterName::new(&self.name).map_err(idmint::Error::from)?;
        let database = self.connect.connect().await?;
        let counter = CyclicCounter::new(&database, name);
        let mut values = Vec::new();
        for _ in 0..self.count {
            let issued = counter
                .next(SystemClock.now_micros())
                .await
                .map_err(idmint::Error::from)?;
            if output.is_json() {
                values.push(issued.value);
            } else {
                // Printed as soon as issued: a value handed out is never lost to a later error.
                output.lines([issued.value.to_string()])?;
            }
        }
        if output.is_json() {
            output.report(
                &SeqReport {
                    counter: &self.name,
                    values,
                },
                String::new,
            )?;
        }
        Ok(Outcome::Success)
    }
}
