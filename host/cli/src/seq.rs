//! `idmint seq NAME`: raw sequence values, from a counter of any kind.

use clap::Args;
use idmint::parts::Stamp;
use idmint::sequence::{AutoincCounter, CounterName, Repeats, Sequence, SequenceError, MAX_BLOCK};
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
    /// A cyclic counter's values come round again: the server-decided
    /// timestamp that makes the value unique.
    #[serde(skip_serializing_if = "Option::is_none")]
    timestamp_micros: Option<u64>,
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
        let (database, deployments) = self.connect.connect_all().await?;
        options.deployments = deployments;
        let mut left = self.count;
        let (sequence, repeats) = match Sequence::open(&database, name.clone(), &options).await {
            Ok((sequence, state)) => (sequence, state.shape().repeats),
            Err(SequenceError::UnknownCounter(_)) if self.upsert => {
                let created = AutoincCounter::new(&database, name);
                let first = left.min(MAX_BLOCK as u64);
                let taken = created
                    .take_or_create(first, self.start.unwrap_or(1))
                    .await
                    .map_err(idmint::Error::from)?;
                let now = SystemClock.now_micros();
                self.emit(
                    output,
                    Repeats::Never,
                    taken.map(|value| Stamp::new(now, value)),
                )?;
                left -= first;
                (Sequence::from(created), Repeats::Never)
            }
            Err(error) => return Err(idmint::Error::from(error).into()),
        };
        let result = self.take_all(&sequence, repeats, left, output).await;
        // A segment counter gives back what it did not hand out, even after an error.
        let closed = sequence.close().await.map_err(idmint::Error::from);
        result?;
        closed?;
        Ok(Outcome::Success)
    }

    async fn take_all(
        &self,
        sequence: &Sequence,
        repeats: Repeats,
        mut left: u64,
        output: &Output,
    ) -> anyhow::Result<()> {
        while left > 0 {
            let block = left.min(MAX_BLOCK as u64);
            let issued = sequence
                .take(block as usize, SystemClock.now_micros())
                .await
                .map_err(idmint::Error::from)?;
            self.emit(output, repeats, issued)?;
            left -= block;
        }
        Ok(())
    }

    /// Prints values as soon as they are issued, one per line (a JSON line
    /// each with --json): a value handed out is never lost to a later error.
    /// Where a kind's values repeat, what makes each unique comes first
    /// ([`Repeats::qualifier`]): a periodic value's period (`2026 41`), a
    /// cyclic value's server-decided timestamp (`1795425555000000 41`).
    fn emit(
        &self,
        output: &Output,
        repeats: Repeats,
        taken: impl IntoIterator<Item = Stamp>,
    ) -> anyhow::Result<()> {
        if output.is_json() {
            output.json_lines(taken.into_iter().map(|stamp| SeqLine {
                counter: &self.name,
                value: stamp.sequence,
                timestamp_micros: repeats.timestamp_of(&stamp),
                period: repeats.period_of(&stamp),
            }))
        } else {
            output.lines(
                taken
                    .into_iter()
                    .map(|stamp| match repeats.qualifier(&stamp) {
                        Some(qualifier) => format!("{qualifier} {}", stamp.sequence),
                        None => stamp.sequence.to_string(),
                    }),
            )
        }
    }
}
