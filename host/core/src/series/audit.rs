//! The audit of a series: proof that no number is missing.
//!
//! [`audit`] reads the series' `first` and `last`, then its records in
//! number order (one pass, their `_id`s sort so), and names every way the
//! series is not whole: numbers from `first` to `last` with no record
//! ([`Finding::Missing`], as ranges), records past the series' `last`
//! ([`Finding::Beyond`]: written by hand, or a series restored backwards),
//! a second record of a number filed under another `_id`
//! ([`Finding::Duplicate`]),
//! numbers neither confirmed nor voided ([`Finding::Open`]), a confirmed
//! number with no reference or a voided one with no reason, and records it
//! cannot read. Reservations past their deadline are voided
//! [`EXPIRED`](super::EXPIRED) first ([`void_expired`]), and said so; a
//! number still reserved before its deadline is pending
//! ([`Audit::reserved`]), not a hole: it will be confirmed or voided. Numbers taken while it reads (past the `last` it read
//! first) are not judged, except that a record past the `last` read again
//! at the end is [`Finding::Beyond`].
//!
//! [`audit_with`] also hands each record and each hole to a caller in
//! number order as it reads (the CSV register of `idmint series audit
//! --csv`), and, given [`Against`] (`COLLECTION.FIELD` of the business
//! records), reconciles the series with them: every confirmed number's
//! reference is a value of FIELD in COLLECTION ([`Finding::NotInCollection`]
//! otherwise), and every value of FIELD there is the reference of a
//! confirmed number ([`Finding::UnknownReference`] otherwise: a business
//! record numbered by hand, or by another series).

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use mongodb::Database;
use serde::Serialize;

use super::document::read_series;
use super::document::SeriesState;
use super::error::SeriesError;
use super::record::{read, record_id, records_of_period, NumberRecord, NumberState};
use super::reserve::void_expired;
use crate::mongo::collections::SERIES_NUMBERS;
use crate::sequence::CounterName;

/// What the audit of a series found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Audit {
    /// The series.
    pub series: String,
    /// The period audited (empty: a series without periods).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub period: String,
    /// Its first number.
    pub first: u64,
    /// Its last number (of the period) when the audit began.
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
    /// The business collection and field it was reconciled with, and how
    /// many values of the field it read there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub against: Option<Reconciled>,
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

/// What the audit reconciled the series with.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reconciled {
    /// `COLLECTION.FIELD`.
    pub field: String,
    /// The values of the field read (documents without it are not counted).
    pub references: u64,
}

/// The business records a series is reconciled with: `COLLECTION.FIELD`,
/// FIELD (a dotted path) holding the reference each record's number was
/// confirmed with (e.g. `invoices._id`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Against {
    /// The collection.
    pub collection: String,
    /// The field, dotted.
    pub field: String,
}

impl FromStr for Against {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (collection, field) = text
            .split_once('.')
            .filter(|(collection, field)| !collection.is_empty() && !field.is_empty())
            .ok_or_else(|| format!("{text:?} is not COLLECTION.FIELD (e.g. invoices._id)"))?;
        if collection.starts_with("system.") || field.split('.').any(str::is_empty) {
            return Err(format!(
                "{text:?} is not COLLECTION.FIELD (e.g. invoices._id)"
            ));
        }
        Ok(Self {
            collection: collection.to_string(),
            field: field.to_string(),
        })
    }
}

impl fmt::Display for Against {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.collection, self.field)
    }
}

/// What [`audit_with`] hands its caller, in number order.
#[derive(Debug, Clone, Copy)]
pub enum Row<'a> {
    /// A record.
    Record(&'a NumberRecord),
    /// Numbers `from..=to`, which have no record.
    Missing {
        /// The first missing.
        from: u64,
        /// The last missing.
        to: u64,
    },
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
    /// A second record of a number (filed under another number's `_id`).
    Duplicate {
        /// The number.
        number: u64,
        /// The second record's `_id`.
        id: String,
    },
    /// A record the audit cannot read.
    Unreadable {
        /// Its `_id`.
        id: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A confirmed number whose reference no business record holds.
    NotInCollection {
        /// Its number.
        number: u64,
        /// Its reference.
        reference: String,
    },
    /// A business record whose reference no confirmed number has: numbered
    /// by hand, or by another series.
    UnknownReference {
        /// The reference.
        reference: String,
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
            Self::Duplicate { number, id } => write!(
                f,
                "number {number} has a second record, {id:?} (filed under another number's _id)"
            ),
            Self::Unreadable { id, reason } => write!(f, "record {id:?} cannot be read: {reason}"),
            Self::NotInCollection { number, reference } => write!(
                f,
                "number {number} is confirmed with reference {reference:?}, which no business \
                 record holds"
            ),
            Self::UnknownReference { reference } => write!(
                f,
                "a business record holds reference {reference:?}, which no confirmed number has"
            ),
        }
    }
}

/// Audits series `name` (see the module docs).
pub async fn audit(database: &Database, name: &CounterName) -> Result<Audit, SeriesError> {
    audit_with(database, name, None, None, |_| {}).await
}

/// Audits period `period` of series `name` (`None`: its current period;
/// a series without periods has one, `""`), handing `each` every record
/// and every hole in number order as it reads them, and reconciles it with
/// `against` if given (see the module docs).
pub async fn audit_with(
    database: &Database,
    name: &CounterName,
    period: Option<&str>,
    against: Option<&Against>,
    mut each: impl FnMut(Row<'_>),
) -> Result<Audit, SeriesError> {
    let expired_now = void_expired(database, Some(name)).await?;
    let series = read_series(database, name, None).await?;
    let label = period.unwrap_or(&series.current).to_string();
    let Some(last) = series.last_of(&label) else {
        let mut periods: Vec<&str> = series
            .closed
            .iter()
            .map(|(label, _)| label.as_str())
            .collect();
        periods.push(&series.current);
        return Err(SeriesError::BadInput {
            name: name.clone(),
            reason: format!(
                "it has no period {label:?} (its periods: {})",
                periods.join(", ")
            ),
        });
    };
    let state = SeriesState {
        last,
        ..series.clone()
    };
    let mut audit = Audit {
        series: name.as_str().to_string(),
        period: label.clone(),
        first: state.first,
        last: state.last,
        records: 0,
        confirmed: 0,
        voided: 0,
        reserved: 0,
        expired_now,
        against: None,
        findings: Vec::new(),
    };
    // The confirmed references, to reconcile with the business records.
    let mut confirmed: HashMap<String, u64> = HashMap::new();
    let mut cursor = database
        .collection::<Document>(SERIES_NUMBERS)
        .find(records_of_period(name, &label))
        .sort(mongodb::bson::doc! { "_id": 1 })
        .await
        .map_err(|error| SeriesError::database(name, "read the records", error))?;
    let mut expected = state.first;
    let mut misfiled = Vec::new();
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
                match filed_under_another(name, &label, &document) {
                    Some(number) => misfiled.push((number, id)),
                    None => audit.findings.push(Finding::Unreadable { id, reason }),
                }
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
            each(Row::Missing {
                from: expected,
                to: number - 1,
            });
            audit.findings.push(Finding::Missing {
                from: expected,
                to: number - 1,
            });
        }
        each(Row::Record(&record));
        if let (Some(_), NumberState::Confirmed, Some(reference)) =
            (against, record.state, &record.reference)
        {
            confirmed.insert(reference.clone(), number);
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
        each(Row::Missing {
            from: expected,
            to: state.last,
        });
        audit.findings.push(Finding::Missing {
            from: expected,
            to: state.last,
        });
    }
    // A record of this period filed under another number's `_id`: a
    // second record of its number when that number has its own, else one
    // written by hand in the wrong place.
    for (number, id) in misfiled {
        let own = database
            .collection::<Document>(SERIES_NUMBERS)
            .find_one(doc! { "_id": record_id(name, &label, number) })
            .await
            .map_err(|error| SeriesError::database(name, "read the records", error))?;
        audit.findings.push(match own {
            Some(_) => Finding::Duplicate { number, id },
            None => Finding::Unreadable {
                id,
                reason: format!("it holds number {number} under another number's _id"),
            },
        });
    }
    if let Some(against) = against {
        audit.against =
            Some(reconcile(database, name, against, confirmed, &mut audit.findings).await?);
    }
    if !later.is_empty() {
        // Numbers taken while the audit read are past the last it read
        // first; only those past the last now are findings.
        let now = read_series(database, name, None).await?;
        let last_now = now.last_of(&label).unwrap_or(state.last);
        audit.findings.extend(
            later
                .into_iter()
                .filter(|number| *number > last_now)
                .map(|number| Finding::Beyond { number }),
        );
    }
    Ok(audit)
}

/// The number a record of period `period` of series `name` holds when it
/// is well formed but filed under another number's `_id`.
fn filed_under_another(name: &CounterName, period: &str, document: &Document) -> Option<u64> {
    let number = match document.get("number")? {
        Bson::Int64(number) => u64::try_from(*number).ok()?,
        Bson::Int32(number) => u64::try_from(*number).ok()?,
        _ => return None,
    };
    let state = document.get_str("state").ok()?;
    let filed = document.get_str("_id").ok()?;
    (document.get_str("period").unwrap_or("") == period
        && ["confirmed", "voided", "reserved"].contains(&state)
        && filed != record_id(name, period, number))
    .then_some(number)
}

/// Reads FIELD of every document of the business collection and matches
/// each value with the confirmed references of the series (`confirmed`,
/// reference to number): the findings both ways, and how many it read.
async fn reconcile(
    database: &Database,
    name: &CounterName,
    against: &Against,
    mut confirmed: HashMap<String, u64>,
    findings: &mut Vec<Finding>,
) -> Result<Reconciled, SeriesError> {
    let read_error = |error| SeriesError::database(name, "read the business records", error);
    let mut cursor = database
        .collection::<Document>(&against.collection)
        .find(doc! { against.field.as_str(): { "$exists": true } })
        .projection(doc! { against.field.as_str(): 1 })
        .await
        .map_err(read_error)?;
    let mut references = 0;
    let mut unknown = Vec::new();
    while let Some(document) = cursor.try_next().await.map_err(read_error)? {
        let Some(value) = field(&document, &against.field) else {
            continue;
        };
        references += 1;
        let reference = reference_text(value);
        if confirmed.remove(&reference).is_none() {
            unknown.push(reference);
        }
    }
    // In order, whatever order the collection was read in.
    unknown.sort();
    findings.extend(
        unknown
            .into_iter()
            .map(|reference| Finding::UnknownReference { reference }),
    );
    let mut unmatched: Vec<(u64, String)> = confirmed
        .into_iter()
        .map(|(reference, number)| (number, reference))
        .collect();
    unmatched.sort();
    findings.extend(
        unmatched
            .into_iter()
            .map(|(number, reference)| Finding::NotInCollection { number, reference }),
    );
    Ok(Reconciled {
        field: against.to_string(),
        references,
    })
}

/// The value at dotted path `path` of `document`.
fn field<'d>(document: &'d Document, path: &str) -> Option<&'d Bson> {
    let mut parts = path.split('.');
    let mut value = document.get(parts.next()?)?;
    for part in parts {
        value = value.as_document()?.get(part)?;
    }
    Some(value)
}

/// A business record's reference as text, as a number is confirmed with:
/// a string as it is, a number in decimal, an ObjectId in hex, anything
/// else as relaxed extended JSON.
fn reference_text(value: &Bson) -> String {
    match value {
        Bson::String(text) => text.clone(),
        Bson::Int32(number) => number.to_string(),
        Bson::Int64(number) => number.to_string(),
        Bson::ObjectId(id) => id.to_hex(),
        other => other.clone().into_relaxed_extjson().to_string(),
    }
}
