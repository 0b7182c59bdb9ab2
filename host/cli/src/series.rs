//! `idmint series create|next|reserve|confirm|void|audit|pipeline`: gap-free series
//! numbers for invoices with a record each, and the audit that proves none
//! is missing.

use clap::{Args, Subcommand};
use idmint::parts::rfc3339_millis;
use idmint::parts::PeriodUnit;
use idmint::sequence::CounterName;
use idmint::series::{
    audit_with, create_periodic_series, Against, Audit, Row, Series, SeriesError, SeriesPeriod,
};
use mongodb::bson::Bson;
use serde::Serialize;

use super::exit::UsageError;
use super::{ConnectArgs, Outcome, Output};

/// `idmint series ...`
#[derive(Debug, Subcommand)]
pub enum SeriesCmd {
    /// Make a gap-free series (its numbers are taken only in transactions, each with a
    /// record; a series is never deleted).
    Create(CreateArgs),
    /// Take the next number in a transaction of its own, confirmed with a reference, and
    /// print it (apps on MongoDB take it in their own transaction: `Series::next_in`).
    Next(NextArgs),
    /// Prove a series whole: every number from its first to its last is one record,
    /// confirmed or voided with a reason (exit 1 naming each hole otherwise).
    Audit(AuditArgs),
    /// Print the two commands an app in another language runs in its own transaction to
    /// take a number (the take, and the record with placeholders to fill); no database.
    Pipeline(PipelineArgs),
    /// Reserve the next number for a while (for apps that cannot hold a transaction): it is
    /// confirmed or voided later, and voided "expired" at its deadline; print it.
    Reserve(ReserveArgs),
    /// Confirm a reserved number with the business reference (before its deadline).
    Confirm(ConfirmArgs),
    /// Void a reserved number with a reason (it stays in the series, documented).
    Void(VoidArgs),
}

/// Arguments of `idmint series reserve`.
#[derive(Debug, Args)]
pub struct ReserveArgs {
    /// The series' name.
    pub name: String,
    /// Seconds until the reservation expires (1 to 604800): voided "expired" then.
    #[arg(long, default_value_t = 300, value_name = "SECS",
          value_parser = clap::value_parser!(u64).range(1..=604_800))]
    pub ttl: u64,
    /// A key of the caller's: a reserve retried with the same key (its answer lost) answers
    /// the number reserved the first time and takes none (1 to 128 characters).
    #[arg(long, value_name = "KEY")]
    pub client_key: Option<String>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// Arguments of `idmint series confirm`.
#[derive(Debug, Args)]
pub struct ConfirmArgs {
    /// The series' name.
    pub name: String,
    /// The reserved number.
    pub number: u64,
    /// The business reference it is confirmed with (the invoice's id).
    #[arg(long)]
    pub reference: String,
    /// The period of the number, as its reservation said it (a series numbered per period).
    #[arg(long, value_name = "LABEL", default_value = "")]
    pub period: String,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// Arguments of `idmint series void`.
#[derive(Debug, Args)]
pub struct VoidArgs {
    /// The series' name.
    pub name: String,
    /// The reserved number.
    pub number: u64,
    /// Why it is not used (kept in its record for the audit).
    #[arg(long)]
    pub reason: String,
    /// The period of the number, as its reservation said it (a series numbered per period).
    #[arg(long, value_name = "LABEL", default_value = "")]
    pub period: String,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// Arguments of `idmint series pipeline`.
#[derive(Debug, Args)]
pub struct PipelineArgs {
    /// The series' name.
    pub name: String,
    /// The series' period, as it was made with (the take matches only a series made so).
    #[command(flatten)]
    pub period: PeriodArgs,
}

/// Arguments of `idmint series create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The series' name (as a counter's: letters, digits, _ - . :).
    pub name: String,
    /// Its first number (of each period, with --period).
    #[arg(long, default_value_t = 1)]
    pub start: u64,
    #[command(flatten)]
    pub period: PeriodArgs,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// How a series is numbered per period (`series create`, `series pipeline`).
#[derive(Debug, Args)]
pub struct PeriodArgs {
    /// Number per period, from --start again in each: year (a fiscal year with
    /// --period-start) or month; the period is the server's clock's, in --zone.
    #[arg(long, value_name = "year|month", value_parser = clap::value_parser!(PeriodUnit))]
    pub period: Option<PeriodUnit>,
    /// The first day of each year, MM-DD (04-01: April to March; a year is labelled by
    /// the calendar year it starts in) [default: 01-01].
    #[arg(long, value_name = "MM-DD", requires = "period", value_parser = parse_month_day)]
    pub period_start: Option<(u8, u8)>,
    /// The time zone periods are counted in: an IANA name such as Europe/Paris, UTC, or an
    /// offset such as +05:30 [default: UTC].
    #[arg(long, value_name = "ZONE", requires = "period")]
    pub zone: Option<String>,
}

impl PeriodArgs {
    /// The period the series is numbered per, if any.
    fn period(&self) -> Result<Option<SeriesPeriod>, UsageError> {
        let Some(unit) = self.period else {
            return Ok(None);
        };
        SeriesPeriod::new(
            unit,
            self.period_start.unwrap_or((1, 1)),
            self.zone.as_deref().unwrap_or("UTC"),
        )
        .map(Some)
        .map_err(UsageError)
    }
}

fn parse_month_day(text: &str) -> Result<(u8, u8), String> {
    text.split_once('-')
        .filter(|(month, day)| month.len() == 2 && day.len() == 2)
        .and_then(|(month, day)| Some((month.parse().ok()?, day.parse().ok()?)))
        .ok_or_else(|| format!("{text:?} is not MM-DD (e.g. 04-01)"))
}

/// Arguments of `idmint series next`.
#[derive(Debug, Args)]
pub struct NextArgs {
    /// The series' name.
    pub name: String,
    /// The business reference the number is confirmed with (the invoice's id).
    #[arg(long)]
    pub reference: String,
    /// Testing aid: print the number taken, then stop (SIGSTOP) inside the
    /// transaction, before its commit, for a test to kill. Only in builds
    /// with the `test-hooks` feature (the test suite's).
    #[cfg(feature = "test-hooks")]
    #[arg(long, hide = true)]
    pub stop_before_commit: bool,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

impl NextArgs {
    /// Takes the number (see [`SeriesCmd::Next`]).
    async fn take(&self, series: &Series) -> Result<idmint::series::Taken, SeriesError> {
        #[cfg(feature = "test-hooks")]
        if self.stop_before_commit {
            let mut session =
                series
                    .database()
                    .client()
                    .start_session()
                    .await
                    .map_err(|error| SeriesError::Database {
                        name: series.name().clone(),
                        action: "start a session",
                        source: error,
                    })?;
            return series
                .number_with(&mut session, &self.reference, |_, number| {
                    println!("{number}");
                    use std::io::Write;
                    let _ = std::io::stdout().flush();
                    // SAFETY: raise only sends this process a signal.
                    unsafe { libc::raise(libc::SIGSTOP) };
                    Box::pin(async { Ok(()) })
                })
                .await;
        }
        series.take(&self.reference).await
    }
}

/// Arguments of `idmint series audit`.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The series' name.
    pub name: String,
    /// The period to audit, by its label (2026, 2026-11) [default: the current one].
    #[arg(long, value_name = "LABEL")]
    pub period: Option<String>,
    /// Also reconcile with the business records: FIELD of COLLECTION holds the reference
    /// each number is confirmed with (e.g. invoices._id); each confirmed reference must be
    /// there, and each value there a confirmed reference.
    #[arg(long, value_name = "COLLECTION.FIELD", value_parser = parse_against)]
    pub against: Option<Against>,
    /// Print the register as CSV for an auditor (a row per record, a row per hole), the
    /// findings on stderr; the exit code as without it.
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

fn parse_against(text: &str) -> Result<Against, String> {
    text.parse()
}

#[derive(Serialize)]
struct Created<'a> {
    series: &'a str,
    first: u64,
}

#[derive(Serialize)]
struct Taken<'a> {
    series: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    period: &'a str,
    number: u64,
    reference: &'a str,
    /// How many times its transaction ran (more than once: it conflicted
    /// with another transaction on the series and ran again).
    attempts: u32,
}

impl SeriesCmd {
    /// The connection the command uses, if any.
    pub fn connect(&self) -> Option<&ConnectArgs> {
        match self {
            SeriesCmd::Create(args) => Some(&args.connect),
            SeriesCmd::Next(args) => Some(&args.connect),
            SeriesCmd::Audit(args) => Some(&args.connect),
            SeriesCmd::Reserve(args) => Some(&args.connect),
            SeriesCmd::Confirm(args) => Some(&args.connect),
            SeriesCmd::Void(args) => Some(&args.connect),
            SeriesCmd::Pipeline(_) => None,
        }
    }

    fn name(&self) -> &str {
        match self {
            SeriesCmd::Create(args) => &args.name,
            SeriesCmd::Next(args) => &args.name,
            SeriesCmd::Audit(args) => &args.name,
            SeriesCmd::Pipeline(args) => &args.name,
            SeriesCmd::Reserve(args) => &args.name,
            SeriesCmd::Confirm(args) => &args.name,
            SeriesCmd::Void(args) => &args.name,
        }
    }

    pub async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        let name = CounterName::new(self.name()).map_err(idmint::Error::from)?;
        let Some(connect) = self.connect() else {
            let SeriesCmd::Pipeline(args) = self else {
                unreachable!("only `series pipeline` runs without a database")
            };
            let commands = idmint::series::commands(&name, args.period.period()?.as_ref());
            let json = serde_json::json!({
                "take": Bson::Document(commands.take).into_relaxed_extjson(),
                "record": Bson::Document(commands.record).into_relaxed_extjson(),
            });
            output.report(&json, || {
                serde_json::to_string_pretty(&json).unwrap_or_default()
            })?;
            output.warning(&format!(
                "run both in one transaction committed with w: \"majority\", j: true, and run it \
                 again whole after an error labelled TransientTransactionError; value.last of the \
                 take is the number and value.current its period (value null: nothing was taken); \
                 fill the record's {}, {}, {}, {}, {} and {}",
                idmint::series::NUMBER,
                idmint::series::PADDED,
                idmint::series::PERIOD,
                idmint::series::REFERENCE,
                idmint::series::NOW,
                idmint::series::BY
            ));
            return Ok(Outcome::Success);
        };
        let database = connect.connect().await?;
        match self {
            SeriesCmd::Create(args) => {
                let period = args.period.period()?;
                create_periodic_series(&database, &name, args.start, period.as_ref())
                    .await
                    .map_err(idmint::Error::from)?;
                let created = Created {
                    series: name.as_str(),
                    first: args.start,
                };
                output.report(&created, || {
                    let again = match &period {
                        None => String::new(),
                        Some(period) => format!(
                            ", again each {} from {:02}-{:02} ({}), the period of the server's \
                             clock",
                            period.unit,
                            period.start / 100,
                            period.start % 100,
                            period.zone
                        ),
                    };
                    format!(
                        "created series '{name}'; its first number is {}{again}",
                        args.start
                    )
                })?;
                Ok(Outcome::Success)
            }
            SeriesCmd::Next(args) => {
                let series = Series::new(&database, name.clone());
                let taken = args.take(&series).await.map_err(idmint::Error::from)?;
                let report = Taken {
                    series: name.as_str(),
                    period: &taken.period,
                    number: taken.number,
                    reference: &args.reference,
                    attempts: taken.attempts,
                };
                output.report(&report, || with_period(&taken.period, taken.number))?;
                Ok(Outcome::Success)
            }
            SeriesCmd::Pipeline(_) => unreachable!("answered without a database above"),
            SeriesCmd::Reserve(args) => {
                let series = Series::new(&database, name.clone());
                let reservation = series
                    .reserve(
                        std::time::Duration::from_secs(args.ttl),
                        args.client_key.as_deref(),
                    )
                    .await
                    .map_err(idmint::Error::from)?;
                output.report(&reservation, || {
                    with_period(&reservation.period, reservation.number)
                })?;
                if reservation.reused {
                    output.warning(&format!(
                        "number {} was reserved by an earlier call with this client key \
                         (it is {} now); nothing was taken",
                        reservation.number,
                        reservation.state.as_str()
                    ));
                }
                Ok(Outcome::Success)
            }
            SeriesCmd::Confirm(args) => {
                let series = Series::new(&database, name.clone()).in_period(&args.period);
                let settled = series
                    .confirm(args.number, &args.reference)
                    .await
                    .map_err(idmint::Error::from)?;
                output.report(&settled, || settled_text(&settled))?;
                Ok(Outcome::Success)
            }
            SeriesCmd::Void(args) => {
                let series = Series::new(&database, name.clone()).in_period(&args.period);
                let settled = series
                    .void(args.number, &args.reason)
                    .await
                    .map_err(idmint::Error::from)?;
                output.report(&settled, || settled_text(&settled))?;
                Ok(Outcome::Success)
            }
            SeriesCmd::Audit(args) if args.csv => {
                let audit = audit_csv(
                    &database,
                    &name,
                    args.period.as_deref(),
                    args.against.as_ref(),
                )
                .await?;
                for finding in &audit.findings {
                    output.warning(&finding.to_string());
                }
                if audit.is_whole() {
                    Ok(Outcome::Success)
                } else {
                    Ok(Outcome::Failure)
                }
            }
            SeriesCmd::Audit(args) => {
                let audit = audit_with(
                    &database,
                    &name,
                    args.period.as_deref(),
                    args.against.as_ref(),
                    |_| {},
                )
                .await
                .map_err(idmint::Error::from)?;
                output.report(&audit, || {
                    let of = if audit.period.is_empty() {
                        format!("series '{name}'")
                    } else {
                        format!("series '{name}', period {}", audit.period)
                    };
                    let mut text = if audit.last < audit.first {
                        format!(
                            "{of}: no number taken yet (the first will be {})",
                            audit.first
                        )
                    } else {
                        format!(
                            "{of}: numbers {} to {}, {} confirmed, {} voided",
                            audit.first, audit.last, audit.confirmed, audit.voided
                        )
                    };
                    if audit.reserved > 0 {
                        text.push_str(&format!(
                            ", {} reserved (pending: confirmed or voided \"expired\" by their \
                             deadline)",
                            audit.reserved
                        ));
                    }
                    if let Some(against) = &audit.against {
                        text.push_str(&format!(
                            "; reconciled with {} ({} reference(s) read)",
                            against.field, against.references
                        ));
                    }
                    if audit.expired_now > 0 {
                        text.push_str(&format!(
                            "; {} reservation(s) past their deadline voided \"expired\" first",
                            audit.expired_now
                        ));
                    }
                    if audit.is_whole() {
                        text.push_str("; whole: every number has one record");
                    } else {
                        text.push_str(&format!(
                            "; NOT whole, {} finding(s):",
                            audit.findings.len()
                        ));
                        for finding in &audit.findings {
                            text.push_str(&format!("\n  {finding}"));
                        }
                    }
                    text
                })?;
                if audit.is_whole() {
                    Ok(Outcome::Success)
                } else {
                    Ok(Outcome::Failure)
                }
            }
        }
    }
}

/// A number as printed: `PERIOD NUMBER` in a series numbered per period
/// (as `idmint seq` prints a periodic counter's values), else the number.
fn with_period(period: &str, number: u64) -> String {
    if period.is_empty() {
        number.to_string()
    } else {
        format!("{period} {number}")
    }
}

/// A confirmed or voided number, in words.
fn settled_text(settled: &idmint::series::Settled) -> String {
    let what = match (&settled.reference, &settled.reason) {
        (Some(reference), _) => format!("confirmed with reference {reference:?}"),
        (None, Some(reason)) => format!("voided ({reason:?})"),
        (None, None) => settled.state.as_str().to_string(),
    };
    let already = if settled.already { " already" } else { "" };
    let period = if settled.period.is_empty() {
        String::new()
    } else {
        format!(" of period {}", settled.period)
    };
    format!(
        "series '{}': number {}{period} is{already} {what}",
        settled.series, settled.number
    )
}

/// The columns of the CSV register.
const CSV_HEADER: [&str; 7] = ["number", "to", "state", "reference", "reason", "at", "by"];

/// Audits series `name`, writing its register to stdout as CSV as it
/// reads: a row per record (`to` empty), a row per hole (`state`
/// `missing`, from `number` to `to`).
async fn audit_csv(
    database: &mongodb::Database,
    name: &CounterName,
    period: Option<&str>,
    against: Option<&Against>,
) -> anyhow::Result<Audit> {
    let mut writer = csv::Writer::from_writer(std::io::stdout().lock());
    let mut failed: Option<csv::Error> = writer.write_record(CSV_HEADER).err();
    let audit = audit_with(database, name, period, against, |row| {
        if failed.is_some() {
            return;
        }
        let written = match row {
            Row::Record(record) => writer.write_record([
                record.number.to_string(),
                String::new(),
                record.state.as_str().to_string(),
                record.reference.clone().unwrap_or_default(),
                record.reason.clone().unwrap_or_default(),
                record
                    .at
                    .map(|at| rfc3339_millis(at.timestamp_millis()))
                    .unwrap_or_default(),
                record.by.clone().unwrap_or_default(),
            ]),
            Row::Missing { from, to } => writer.write_record([
                from.to_string(),
                to.to_string(),
                "missing".to_string(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ]),
        };
        failed = written.err();
    })
    .await
    .map_err(idmint::Error::from)?;
    if let Some(error) = failed {
        return Err(error.into());
    }
    writer.flush()?;
    Ok(audit)
}
