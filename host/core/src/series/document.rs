//! The series document, one per series in `series`:
//!
//! ```text
//! { _id: "invoices", kind: "series", first: 1, last: 41, created_at: ISODate(...) }
//! ```
//!
//! `first` is its first number; `last` the last number taken (`first - 1`:
//! none yet). It moves only inside a
//! transaction that also writes the number's record (`next.rs`), so the
//! records of numbers `1..=last` are all there once their transactions
//! committed. It lives apart from the counters: no counter path (`seq`,
//! `next`, `serve`, `pipeline`, the stored functions) can take from it.

use mongodb::bson::{doc, Bson, DateTime, Document};
use mongodb::{ClientSession, Collection, Database};

use super::error::SeriesError;
use super::indexes::ensure_indexes;
use crate::mongo::collections::SERIES;
use crate::mongo::{durable_write_concern, is_duplicate_key};
use crate::sequence::{CounterName, MAX_VALUE};

/// The `kind` of a series document.
pub const SERIES_KIND: &str = "series";

/// A series as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct SeriesState {
    /// Its first number.
    pub first: u64,
    /// The last number taken (`first - 1`: none yet).
    pub last: u64,
}

/// The series collection of `database`.
pub(crate) fn series_collection(database: &Database) -> Collection<Document> {
    database.collection(SERIES)
}

/// Makes series `name`, whose first number will be `start` (1 to
/// 2^53 - 1), with a durable write; a series of that name already there
/// is [`SeriesError::SeriesExists`]. A series is never deleted by idmint:
/// its numbers are an accounting record.
pub async fn create_series(
    database: &Database,
    name: &CounterName,
    start: u64,
) -> Result<(), SeriesError> {
    if !(1..=MAX_VALUE).contains(&start) {
        return Err(SeriesError::BadInput {
            name: name.clone(),
            reason: format!("start {start} is out of range 1..={MAX_VALUE}"),
        });
    }
    ensure_indexes(database, name).await?;
    let document = doc! {
        "_id": name.as_str(),
        "kind": SERIES_KIND,
        "first": start as i64,
        "last": (start - 1) as i64,
        "created_at": DateTime::now(),
    };
    match series_collection(database)
        .insert_one(document)
        .write_concern(durable_write_concern())
        .await
    {
        Ok(_) => Ok(()),
        Err(error) if is_duplicate_key(&error) => Err(SeriesError::SeriesExists(name.clone())),
        Err(error) => Err(SeriesError::database(name, "create", error)),
    }
}

/// Reads series `name` (in `session`, if one is given).
pub async fn read_series(
    database: &Database,
    name: &CounterName,
    session: Option<&mut ClientSession>,
) -> Result<SeriesState, SeriesError> {
    let collection = series_collection(database);
    let find = collection.find_one(doc! { "_id": name.as_str() });
    let found = match session {
        Some(session) => find.session(session).await,
        None => find.await,
    }
    .map_err(|error| SeriesError::database(name, "read", error))?;
    let Some(document) = found else {
        return Err(SeriesError::UnknownSeries(name.clone()));
    };
    read(&document).map_err(|reason| SeriesError::Corrupt {
        name: name.clone(),
        reason,
    })
}

/// Reads a series document, or says what is wrong with it.
pub(crate) fn read(document: &Document) -> Result<SeriesState, String> {
    match document.get("kind") {
        Some(Bson::String(kind)) if kind == SERIES_KIND => {}
        other => return Err(format!("kind is {other:?}, not \"{SERIES_KIND}\"")),
    }
    let first = integer(document, "first", 1)?;
    let last = integer(document, "last", first - 1)?;
    Ok(SeriesState { first, last })
}

/// Field `field` of `document`, an integer from `least` to 2^53 - 1.
fn integer(document: &Document, field: &str, least: u64) -> Result<u64, String> {
    let value = match document.get(field) {
        Some(Bson::Int64(value)) => *value,
        Some(Bson::Int32(value)) => i64::from(*value),
        other => return Err(format!("{field} is {other:?}, not an integer")),
    };
    u64::try_from(value)
        .ok()
        .filter(|value| (least..=MAX_VALUE).contains(value))
        .ok_or_else(|| format!("{field} is {value}, not in {least}..={MAX_VALUE}"))
}

/// The filter that matches series `name` only while it is well formed
/// with a number left.
pub(crate) fn takes_filter(name: &CounterName) -> Document {
    doc! {
        "_id": name.as_str(),
        "kind": SERIES_KIND,
        "last": { "$type": ["long", "int"], "$gte": 0_i64, "$lt": MAX_VALUE as i64 },
    }
}

/// The update that takes the next number of a series (its filter is
/// [`takes_filter`]).
pub(crate) fn take_update() -> Document {
    doc! { "$inc": { "last": 1_i64 } }
}
