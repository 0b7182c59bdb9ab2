//! `idmint pipeline NAME`: the exact command that takes values of a counter,
//! for an application in another language to run with its own driver.
//!
//! With a database (`--uri` or `MONGODB_URI`) the counter is read first and
//! the command is built for its kind, period and zone: a flag that says
//! otherwise is refused, naming the difference, since a command printed for
//! other settings takes nothing from this counter. Without one, or when the
//! counter does not exist yet, the flags say it all, and a warning says so.
//!
//! A striped counter has one command per lane (`--lane R`, read from its
//! map): the lane's take, which computes the value on the server, so the
//! command hands out values and never a lane's local ones; a warning says
//! how to read the value and that a change of stripes can seal the lane.

use clap::Args;
use idmint::parts::PeriodUnit;
use idmint::sequence::striping::{how_to_read_a_lane_take, lane_id, lane_take_command, StripeMap};
use idmint::sequence::{
    command_takes_count, take_command, ClientTime, CommandOptions, CounterKind, CounterName,
    SequenceError, Setting, DEFAULT_STEP, DEFAULT_ZONE,
};
use mongodb::bson::{Bson, Document};

use super::exit::UsageError;
use super::setting_help::{kinds_help, setting_help};
use super::{ConnectArgs, Outcome, Output};

/// Arguments of `idmint pipeline`.
#[derive(Debug, Args)]
pub struct PipelineCmd {
    /// The counter's name.
    pub name: String,
    #[arg(long, value_parser = clap::value_parser!(CounterKind), help = format!("The counter's kind [default: the counter's, else {}]", CounterKind::DEFAULT))]
    pub kind: Option<CounterKind>,
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1_000_000), help = kinds_help(
        CounterKind::ALL.iter().copied().filter(|kind| command_takes_count(*kind)),
        "how many values one call takes",
    ))]
    pub count: u64,
    #[arg(long, value_name = "N", help = setting_help(Setting::Step, "the smallest segment to take (the document's step wins if larger) [default: 1000]"))]
    pub step: Option<u64>,
    #[arg(long, value_name = "MICROS", help = kinds_help(
        CounterKind::ALL.iter().copied().filter(|kind| kind.reads_client_clock()),
        "a fixed client clock reading, microseconds since the epoch (default: the server's clock, `$$NOW`, so the app reads none)",
    ))]
    pub client_micros: Option<u64>,
    #[arg(long, value_parser = clap::value_parser!(PeriodUnit), help = setting_help(Setting::Period, "the counter's period, day, month or year [default: the counter's, else year]"))]
    pub period: Option<PeriodUnit>,
    #[arg(long, value_name = "ZONE", help = setting_help(Setting::Zone, "the counter's time zone, an IANA name or UTC [default: the counter's, else UTC]"))]
    pub zone: Option<String>,
    /// A striped counter: the lane whose command to print, 0 to its lanes
    /// less one (each lane has its own; read from the counter's map).
    #[arg(long, value_name = "R")]
    pub lane: Option<u64>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// What the command is built for: the counter's settings that it names.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    kind: CounterKind,
    /// The period and zone of a counter whose values restart each period.
    period: (PeriodUnit, String),
    /// A striped counter's map (its lanes' kind is `kind`).
    striped: Option<StripeMap>,
}

impl PipelineCmd {
    pub async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        let name = CounterName::new(&self.name).map_err(idmint::Error::from)?;
        let target = match self.stored(&name).await? {
            Some(stored) => {
                self.check_against(&name, &stored)?;
                stored
            }
            None if self.lane.is_some() => {
                return Err(UsageError(format!(
                    "--lane names a lane of a striped counter, read from its map: {}",
                    self.unread_reason(&name)
                ))
                .into())
            }
            None => {
                let target = self.target_of_flags();
                output.warning(&self.unread_note(&name, &target));
                target
            }
        };
        self.check_flags_apply(&target)?;
        let command = match &target.striped {
            Some(map) => self.lane_command(&name, map, output)?,
            None => self.counter_command(&name, &target)?,
        };
        let json = Bson::Document(command).into_relaxed_extjson();
        output.report(&json, || {
            serde_json::to_string_pretty(&json).unwrap_or_default()
        })?;
        Ok(Outcome::Success)
    }

    /// The command of an unstriped counter of `target`'s settings.
    fn counter_command(&self, name: &CounterName, target: &Target) -> anyhow::Result<Document> {
        if self.lane.is_some() {
            return Err(UsageError(format!(
                "--lane applies to striped counters; counter '{name}' is not striped: \
                 leave --lane out to print the command of its one document"
            ))
            .into());
        }
        let client = self
            .client_micros
            .map_or(ClientTime::ServerNow, ClientTime::Micros);
        let (period, zone) = &target.period;
        let options = CommandOptions::default()
            .step(self.step.unwrap_or(DEFAULT_STEP))
            .client(client)
            .period(*period, zone);
        Ok(take_command(target.kind, name, self.count, &options).map_err(idmint::Error::from)?)
    }

    /// The command of the lane `--lane` names of striped counter `name`,
    /// whose map is `map`, and a warning that says how to read its value
    /// and when it takes nothing.
    fn lane_command(
        &self,
        name: &CounterName,
        map: &StripeMap,
        output: &Output,
    ) -> anyhow::Result<Document> {
        let Some(residue) = self.lane else {
            let (lanes, choose) = match map.modulus {
                1 => ("1 lane".to_string(), "--lane 0".to_string()),
                modulus => (
                    format!("{modulus} lanes"),
                    format!("--lane 0..{}", modulus - 1),
                ),
            };
            return Err(UsageError(format!(
                "counter '{name}' is striped over {lanes}, each taken from by a command of its \
                 own: choose one with {choose}"
            ))
            .into());
        };
        let client = self
            .client_micros
            .map_or(ClientTime::ServerNow, ClientTime::Micros);
        let command = lane_take_command(name, map, residue, self.count, client)
            .map_err(idmint::Error::from)?;
        let read = how_to_read_a_lane_take(&map.kind);
        output.warning(&format!(
            "this command takes from lane {residue} of counter '{name}' (document '{id}'): \
             {read}. A change of stripes seals the lane: the command then matches nothing (value: null) \
             until the new generation has a lane {residue}; if it has fewer lanes, run `idmint \
             pipeline` again{place}",
            id = lane_id(name, residue),
            place = map
                .deployment_of(residue)
                .map(|deployment| format!(
                    ". The lane is in deployment '{deployment}': run the command there"
                ))
                .unwrap_or_default(),
        ));
        Ok(command)
    }

    /// The counter's own settings, read from the database; `None` without
    /// a database or when the counter does not exist.
    async fn stored(&self, name: &CounterName) -> anyhow::Result<Option<Target>> {
        if !self.connect.is_given() {
            return Ok(None);
        }
        let database = self.connect.connect().await?;
        let state = match idmint::sequence::state(&database, name).await {
            Ok(state) => state,
            Err(SequenceError::UnknownCounter(_)) => return Ok(None),
            Err(error) => return Err(idmint::Error::from(error).into()),
        };
        let period = state
            .period()
            .map_or_else(Self::default_period, |(unit, zone)| {
                (unit, zone.to_string())
            });
        Ok(Some(Target {
            kind: state.kind(),
            period,
            striped: state.striped,
        }))
    }

    /// The settings the flags give, with the defaults for the others.
    fn target_of_flags(&self) -> Target {
        let (period, zone) = Self::default_period();
        Target {
            kind: self.kind.unwrap_or(CounterKind::DEFAULT),
            period: (
                self.period.unwrap_or(period),
                self.zone.clone().unwrap_or(zone),
            ),
            striped: None,
        }
    }

    fn default_period() -> (PeriodUnit, String) {
        (PeriodUnit::Year, DEFAULT_ZONE.to_string())
    }

    /// Refuses a flag that contradicts the counter as stored.
    fn check_against(&self, name: &CounterName, stored: &Target) -> anyhow::Result<()> {
        let differs = |flag: &str, given: &str, stored: &str| {
            Err(UsageError(format!(
                "counter '{name}' has {flag} {stored}, not {given} (--{flag} {given}): \
                 a command printed for another {flag} would take nothing from it; \
                 leave --{flag} out to print the command for the counter as it is"
            ))
            .into())
        };
        if let Some(kind) = self.kind.filter(|kind| *kind != stored.kind) {
            return differs("kind", kind.as_str(), stored.kind.as_str());
        }
        let takes = |setting| stored.kind.settings().contains(&setting);
        let (period, zone) = &stored.period;
        if let Some(given) = self
            .period
            .filter(|given| takes(Setting::Period) && given != period)
        {
            return differs("period", given.as_str(), period.as_str());
        }
        if let Some(given) = self
            .zone
            .as_deref()
            .filter(|given| takes(Setting::Zone) && given != zone)
        {
            return differs("zone", given, zone);
        }
        Ok(())
    }

    /// Refuses a flag of another kind than the command's, which would be
    /// ignored.
    fn check_flags_apply(&self, target: &Target) -> anyhow::Result<()> {
        let settings = [
            ("--period", self.period.is_some(), Setting::Period),
            ("--zone", self.zone.is_some(), Setting::Zone),
            ("--step", self.step.is_some(), Setting::Step),
        ]
        .into_iter()
        .filter(|(_, given, _)| *given)
        .find(|(_, _, setting)| !target.kind.settings().contains(setting))
        .map(|(flag, _, setting)| {
            (
                flag,
                CounterKind::names_where(|kind| kind.settings().contains(&setting)),
            )
        });
        let client_time =
            (self.client_micros.is_some() && !target.kind.reads_client_clock()).then(|| {
                (
                    "--client-micros",
                    CounterKind::names_where(CounterKind::reads_client_clock),
                )
            });
        match settings.or(client_time) {
            Some((flag, kinds)) => Err(UsageError(format!(
                "{flag} applies to {kinds} counters; counter '{}' is {}",
                self.name,
                with_article(target.kind)
            ))
            .into()),
            None => Ok(()),
        }
    }

    /// Why the counter was not read: no database, or no such counter.
    fn unread_reason(&self, name: &CounterName) -> String {
        if !self.connect.is_given() {
            "no database was given (--uri or MONGODB_URI)".to_string()
        } else {
            format!(
                "counter '{name}' does not exist in database '{}'",
                self.connect.db
            )
        }
    }

    /// Says that the command was built from the flags alone, and why.
    fn unread_note(&self, name: &CounterName, target: &Target) -> String {
        let why = self.unread_reason(name);
        let settings = if target.kind.settings().contains(&Setting::Period) {
            format!(
                "{} of a {} in {}",
                with_article(target.kind),
                target.period.0,
                target.period.1
            )
        } else {
            with_article(target.kind)
        };
        format!(
            "{why}: the command is built from the flags alone, for {settings}; it takes \
             nothing (value: null) from a counter with other settings"
        )
    }
}

/// `a cyclic counter`, `an autoinc counter`.
fn with_article(kind: CounterKind) -> String {
    let article = if kind.as_str().starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {kind} counter")
}
