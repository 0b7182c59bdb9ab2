//! `idmint pipeline NAME`: the exact command idmint sends to take values of
//! a counter, for an application in another language to run with its own
//! driver.

use clap::Args;
use idmint::parts::PeriodUnit;
use idmint::sequence::{
    take_command, ClientTime, CommandOptions, CounterKind, CounterName, DEFAULT_STEP, DEFAULT_ZONE,
};
use mongodb::bson::Bson;

use super::{Outcome, Output};

/// Arguments of `idmint pipeline`.
#[derive(Debug, Args)]
pub struct PipelineCmd {
    /// The counter's name.
    pub name: String,
    /// The counter's kind.
    #[arg(long, default_value = "cyclic", value_parser = clap::value_parser!(CounterKind))]
    pub kind: CounterKind,
    /// cyclic, autoinc: how many values one call takes.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub count: u64,
    /// segment: the smallest segment to take (the document's step wins if larger).
    #[arg(long, default_value_t = DEFAULT_STEP, value_name = "N")]
    pub step: u64,
    /// cyclic: a fixed client clock reading, microseconds since the epoch
    /// (default: the server's clock, `$$NOW`, so the app reads none).
    #[arg(long, value_name = "MICROS")]
    pub client_micros: Option<u64>,
    /// periodic: the counter's period, day, month or year (the command applies
    /// only while the document says the same).
    #[arg(long, default_value = "year", value_parser = clap::value_parser!(PeriodUnit))]
    pub period: PeriodUnit,
    /// periodic: the counter's time zone (the command applies only while the
    /// document says the same).
    #[arg(long, default_value = DEFAULT_ZONE, value_name = "ZONE")]
    pub zone: String,
}

impl PipelineCmd {
    pub fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        let name = CounterName::new(&self.name).map_err(idmint::Error::from)?;
        let client = self
            .client_micros
            .map_or(ClientTime::ServerNow, ClientTime::Micros);
        let options = CommandOptions::default()
            .step(self.step)
            .client(client)
            .period(self.period, &self.zone);
        let command =
            take_command(self.kind, &name, self.count, &options).map_err(idmint::Error::from)?;
        let json = Bson::Document(command).into_relaxed_extjson();
        output.report(&json, || {
            serde_json::to_string_pretty(&json).unwrap_or_default()
        })?;
        Ok(Outcome::Success)
    }
}
