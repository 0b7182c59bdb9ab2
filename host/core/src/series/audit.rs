//! The audit of a series: proof that no number is missing.
//!
//! [`audit`] reads the series' `first` and `last`, then its records in
//! number order (one pass, their `_id`s sort so), and names every way the
//! series is not whole: numbers from `first` to `last` with no record
//! ([`Finding::Missing`], as ranges), records past the series' `last`
//! ([`Finding::Beyond`]: written by hand, or a series restored backwards),
//! numbers neither confirmed nor voided ([`Finding::Open`]), a confirmed
//! number with no reference or a voided one with no reason, and records it
//! cannot read. Reservations past their deadline are voided
//! [`EXPIRED`](super::EXPIRED) first ([`void_expired`]), and said so; a
//! number still reserved before its deadline is pending
//! ([`Audit::reserved`]), not a hole: it will be confirmed or voided. Numbers taken while it reads (past the `last` it read
//! first) are not judged, except that a record past the `last` read again
//! at the end is [`Finding::Beyond`].

use std::fmt;

use futures_util::TryStreamExt;
use mongodb::bson::Document;
use mongodb::Database;
use serde::Serialize;

use super::document::read_series;
use super::error::SeriesError;
use super::record::{read, records_of, NumberState};
use super::reserve::void_expired;
use crate::mongo::collections::SERIES_NUMBERS;
use crate::sequence::CounterName;

/// What the audit of a series found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Audit {
    /// The series.
    pub series: String,
    /// Its first number.
    pub first: u64,
    /// Its last number when the audit began.
    pub last: u64,
    /// The records read of numbers `first..=last`.
    pub records: u64,
    /// Of those, confirmed.
    pub confirmed: u64,
    /// Of those, voided.
    pub voided: u64,
    /// Of those, reserved and before their deadline: pending.
    pub reserved: u64,
    /// Reservations past their deadline that the audit voided first.
    pub expired_now: u64,
    /// Every way it is not whole (none: it is).
    pub findings: Vec<Finding>,
}

impl Audit {
    /// Whether the series is whole: every number from its first to its
    /// last is one record, confirmed with a reference or voided with a
    /// reason, and no record lies past its last.
    pub fn is_whole(&self) -> bool {
        self.findings.is_empty()
    }
}

/// One way a series is not whole.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "finding", rename_all = "kebab-case")]
pub enum Finding {
    /// Numbers `from..=to` have no record.
    Missing {
        /// The first missing.
        from: u64,
        /// The last missing.
        to: u64,
    },
    /// A record of a number past the series' last.
    Beyond {
        /// Its number.
        number: u64,
    },
    /// A number reserved with no deadline (written by hand): neither
    /// confirmed nor voided, and nothing will void it.
    Open {
        /// Its number.
        number: u64,
        /// Its state.
        state: NumberState,
    },
    /// A confirmed number with no reference.
    NoReference {
        /// Its number.
        number: u64,
    },
    /// A voided number with no reason.
    NoReason {
        /// Its number.
        number: u64,
    },
    /// A record the audit cannot read.
    Unreadable {
        /// Its `_id`.
        id: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing { from, to } if from == to => write!(f, "number {from} has no record"),
            Self::Missing { from, to } => write!(f, "numbers {from} to {to} have no record"),
            Self::Beyond { number } => {
                write!(
                    f,
                    "number {number} has a record but is past the series' last"
                )
            }
            Self::Open { number, state } => {
                write!(
                    f,
                    "number {number} is {} with no deadline, neither confirmed nor voided",
                    state.as_str()
                )
            }
            Self::NoReference { number } => {
                write!(f, "number {number} is confirmed with no reference")
            }
            Self::NoReason { number } => write!(f, "number {number} is voided with no reason"),
            Self::Unreadable { id, reason } => write!(f, "record {id:?} cannot be read: {reason}"),
        }
    }
}

/// Audits series `name` (see the module docs).
pub async fn audit(database: &Database, name: &CounterName) -> Result<Audit, SeriesError> {
    let expired_now = void_expired(database, Some(name)).await?;
    let state = read_series(database, name, None).await?;
    let mut audit = Audit {
        series: name.as_str().to_string(),
        first: state.first,
        last: state.last,
        records: 0,
        confirmed: 0,
        voided: 0,
        reserved: 0,
        expired_now,
        findings: Vec::new(),
    };
    let mut cursor = database
        .collection::<Document>(SERIES_NUMBERS)
        .find(records_of(name))
        .sort(mongodb::bson::doc! { "_id": 1 })
        .await
        .map_err(|error| SeriesError::database(name, "read the records", error))?;
    let mut expected = state.first;
    let mut later = Vec::new();
    while let Some(document) = cursor
        .try_next()
        .await
        .map_err(|error| SeriesError::database(name, "read the records", error))?
    {
        let record = match read(name, &document) {
            Ok(record) => record,
            Err(reason) => {
                let id = document.get_str("_id").unwrap_or("?").to_string();
                audit.findings.push(Finding::Unreadable { id, reason });
                continue;
            }
        };
        let number = record.number;
        if number > state.last {
            later.push(number);
            continue;
        }
        if number < state.first {
            audit.findings.push(Finding::Beyond { number });
            continue;
        }
        if number > expected {
            audit.findings.push(Finding::Missing {
                from: expected,
                to: number - 1,
            });
        }
        expected = number + 1;
        audit.records += 1;
        match record.state {
            NumberState::Confirmed if record.reference.is_none() => {
                audit.findings.push(Finding::NoReference { number })
            }
            NumberState::Voided if record.reason.is_none() => {
                audit.findings.push(Finding::NoReason { number })
            }
            NumberState::Confirmed => audit.confirmed += 1,
            NumberState::Voided => audit.voided += 1,
            NumberState::Reserved if record.deadline.is_some() => audit.reserved += 1,
            state @ NumberState::Reserved => audit.findings.push(Finding::Open { number, state }),
        }
    }
    if expected <= state.last {
        audit.findings.push(Finding::Missing {
            from: expected,
            to: state.last,
        });
    }
    if !later.is_empty() {
        // Numbers taken while the audit read are past the last it read
        // first; only those past the last now are findings.
        let now = read_series(database, name, None).await?;
        audit.findings.extend(
            later
                .into_iter()
                .filter(|number| *number > now.last)
                .map(|number| Finding::Beyond { number }),
        );
    }
    Ok(audit)
}
