//! `idmint series create|next|audit`: gap-free series (`idmint::series`):
//! numbers for invoices with a record each, and the audit that proves none
//! is missing.

use clap::{Args, Subcommand};
use idmint::sequence::CounterName;
use idmint::series::{audit, create_series, Series, SeriesError};
use mongodb::bson::Bson;
use serde::Serialize;

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
}

/// Arguments of `idmint series pipeline`.
#[derive(Debug, Args)]
pub struct PipelineArgs {
    /// The series' name.
    pub name: String,
}

/// Arguments of `idmint series create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The series' name (as a counter's: letters, digits, _ - . :).
    pub name: String,
    /// Its first number.
    #[arg(long, default_value_t = 1)]
    pub start: u64,
    #[command(flatten)]
    pub connect: ConnectArgs,
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
    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Serialize)]
struct Created<'a> {
    series: &'a str,
    first: u64,
}

#[derive(Serialize)]
struct Taken<'a> {
    series: &'a str,
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
            SeriesCmd::Pipeline(_) => None,
        }
    }

    fn name(&self) -> &str {
        match self {
            SeriesCmd::Create(args) => &args.name,
            SeriesCmd::Next(args) => &args.name,
            SeriesCmd::Audit(args) => &args.name,
            SeriesCmd::Pipeline(args) => &args.name,
        }
    }

    pub async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        let name = CounterName::new(self.name()).map_err(idmint::Error::from)?;
        let Some(connect) = self.connect() else {
            let commands = idmint::series::commands(&name);
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
                 take is the number (value null: nothing was taken); fill the record's {}, {}, {}, \
                 {} and {}",
                idmint::series::NUMBER,
                idmint::series::PADDED,
                idmint::series::REFERENCE,
                idmint::series::NOW,
                idmint::series::BY
            ));
            return Ok(Outcome::Success);
        };
        let database = connect.connect().await?;
        match self {
            SeriesCmd::Create(args) => {
                create_series(&database, &name, args.start)
                    .await
                    .map_err(idmint::Error::from)?;
                let created = Created {
                    series: name.as_str(),
                    first: args.start,
                };
                output.report(&created, || {
                    format!(
                        "created series '{name}'; its first number is {}",
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
                    number: taken.number,
                    reference: &args.reference,
                    attempts: taken.attempts,
                };
                output.report(&report, || taken.number.to_string())?;
                Ok(Outcome::Success)
            }
            SeriesCmd::Pipeline(_) => unreachable!("answered without a database above"),
            SeriesCmd::Audit(_) => {
                let audit = audit(&database, &name).await.map_err(idmint::Error::from)?;
                output.report(&audit, || {
                    let mut text = if audit.last < audit.first {
                        format!(
                            "series '{name}': no number taken yet (the first will be {})",
                            audit.first
                        )
                    } else {
                        format!(
                            "series '{name}': numbers {} to {}, {} confirmed, {} voided",
                            audit.first, audit.last, audit.confirmed, audit.voided
                        )
                    };
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
