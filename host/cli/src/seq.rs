//! `idmint seq NAME`: raw sequence values, from a counter of any kind.

use clap::Args;
use idmint::sequence::{AutoincCounter, CounterName, Sequence, SequenceError, MAX_BLOCK};
use idmint::{Clock, SystemClock};
use serde::Serialize;

use super::open_args::OpenArgs;
use super::{ConnectArgs, Outcome, Output};

/// Arguments of `idmint seq`.
#[derive(Debug, Args)]
pub struct SeqCmd {
    /// The counter's name.
    pub name: String,
    /// How many values to hand out.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub count: u64,
    /// Create the counter as an auto-increment one if it does not exist
    /// (safe when many processes do so at once).
    #[arg(long)]
    pub upsert: bool,
    /// With --upsert: the first value of a counter created now [default: 1].
    #[arg(long, value_name = "N", requires = "upsert")]
    pub start: Option<u64>,
    #[command(flatten)]
    pub open: OpenArgs,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// One value, a JSON line with --json.
#[derive(Serialize)]
struct SeqLine<'a> {
    counter: &'a str,
    value: u64,
    /// A periodic counter's values restart each period: the value's.
    #[serde(skip_serializing_if = "Option::is_none")]
    period: Option<String>,
}

impl SeqCmd {
    pub async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        let name = CounterName::new(&self.name).map_err(idmint::Error::from)?;
        let mut options = self.open.options()?;
        // A bounded run: a segment counter fetches no more than it will use.
        options.segment = options.segment.wants(Some(self.count));
        let database = self.connect.connect().await?;
        let mut left = self.count;
        let sequence = match Sequence::open(&database, name.clone(), &options).await {
            Ok((sequence, _)) => sequence,
            Err(SequenceError::UnknownCounter(_)) if self.upsert => {
                let created = AutoincCounter::new(&database, name);
                let first = left.min(MAX_BLOCK as u64);
                let taken = created
                    .take_or_create(first, self.start.unwrap_or(1))
                    .await
                    .map_err(idmint::Error::from)?;
                self.emit(output, taken.map(|value| (value, None)))?;
                left -= first;
                Sequence::from(created)
            }
            Err(error) => return Err(idmint::Error::from(error).into()),
        };
        let result = self.take_all(&sequence, left, output).await;
        // A segment counter gives back what it did not hand out, even after an error.
        let closed = sequence.close().await.map_err(idmint::Error::from);
        result?;
        closed?;
        Ok(Outcome::Success)
    }

    async fn take_all(
        &self,
        sequence: &Sequence,
        mut left: u64,
        output: &Output,
    ) -> anyhow::Result<()> {
        while left > 0 {
            let block = left.min(MAX_BLOCK as u64);
            let issued = sequence
                .take(block as usize, SystemClock.now_micros())
                .await
                .map_err(idmint::Error::from)?;
            self.emit(
                output,
                issued
                    .into_iter()
                    .map(|stamp| (stamp.sequence, stamp.period.map(|p| p.to_string()))),
            )?;
            left -= block;
        }
        Ok(())
    }

    /// Prints values as soon as they are issued, one per line (a JSON line
    /// each with --json): a value handed out is never lost to a later error.
    /// A periodic counter's value is printed after its period (`2026 41`):
    /// its values restart each period, so the value alone is not unique.
    fn emit(
        &self,
        output: &Output,
        taken: impl IntoIterator<Item = (u64, Option<String>)>,
    ) -> anyhow::Result<()> {
        if output.is_json() {
            output.json_lines(taken.into_iter().map(|(value, period)| SeqLine {
                counter: &self.name,
                value,
                period,
            }))
        } else {
            output.lines(taken.into_iter().map(|(value, period)| match period {
                Some(period) => format!("{period} {value}"),
                None => value.to_string(),
            }))
        }
    }
}
