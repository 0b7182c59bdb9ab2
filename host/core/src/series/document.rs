//! The series document, one per series in `series`:
//!
//! ```text
//! { _id: "invoices", kind: "series", first: 1, last: 41, created_at: ISODate(...) }
//! ```
//!
//! `first` is its first number; `last` the last number taken (`first - 1`:
//! none yet). A series numbered per period (a fiscal year, a month) has
//! also `period` (`year` or `month`), `period_start` (a year's first day,
//! `MMDD` as a number: 401 for 1 April), `zone`, `current` (the label of
//! the period of `last`: `2026` for the fiscal year that starts in 2026)
//! and `closed` (each earlier period's last number, by label): every take
//! computes the period of the server's clock in the zone, and a new period
//! starts again at `first`, the old one's last kept in `closed`. It moves only inside a
//! transaction that also writes the number's record (`next.rs`), so the
//! records of numbers `1..=last` are all there once their transactions
//! committed. It lives apart from the counters: no counter path (`seq`,
//! `next`, `serve`, `pipeline`, the stored functions) can take from it.

use mongodb::bson::{doc, Bson, DateTime, Document};
use mongodb::options::UpdateModifications;
use mongodb::{ClientSession, Collection, Database};

use super::error::SeriesError;
use super::indexes::ensure_indexes;
use crate::mongo::collections::SERIES;
use crate::mongo::{durable_write_concern, is_duplicate_key};
use crate::parts::{zone_is_well_formed, PeriodUnit};
use crate::sequence::{CounterName, MAX_VALUE};

/// The `kind` of a series document.
pub const SERIES_KIND: &str = "series";

/// A series as read.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SeriesState {
    /// Its first number (of each period).
    pub first: u64,
    /// The last number taken (`first - 1`: none yet), in period `current`.
    pub last: u64,
    /// How it is numbered per period, if it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<SeriesPeriod>,
    /// The label of the period of `last` (`""`: a series without periods,
    /// or none taken yet).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub current: String,
    /// Each earlier period's last number, by label, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub closed: Vec<(String, u64)>,
    /// When the last number was taken (the server's clock).
    #[serde(skip)]
    pub taken_at: Option<DateTime>,
}

impl SeriesState {
    /// The last number of period `label` (`None`: the series has no such
    /// period yet).
    pub fn last_of(&self, label: &str) -> Option<u64> {
        if label == self.current {
            return Some(self.last);
        }
        self.closed
            .iter()
            .find(|(closed, _)| closed == label)
            .map(|(_, last)| *last)
    }
}

/// How a series is numbered per period: from `first` again in each.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SeriesPeriod {
    /// A year or a month.
    pub unit: PeriodUnit,
    /// The first day of a year, `MMDD` (101: 1 January; 401: 1 April). A
    /// year is labelled by the calendar year it starts in.
    pub start: u16,
    /// The time zone its days are counted in (an IANA name, `UTC`, or an
    /// offset).
    pub zone: String,
}

impl SeriesPeriod {
    /// A fiscal year starting on `month`-`day` in `zone` (1 January: the
    /// calendar year), or a calendar month (`start` 101).
    pub fn new(unit: PeriodUnit, start: (u8, u8), zone: &str) -> Result<Self, String> {
        let (month, day) = start;
        if unit == PeriodUnit::Day {
            return Err("a series is numbered per year or per month, not per day".to_string());
        }
        if unit == PeriodUnit::Month && start != (1, 1) {
            return Err(
                "only a year has a first day of its own (a month starts on the 1st)".into(),
            );
        }
        let days = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
        if !(1..=12).contains(&month) || day == 0 || day > days[usize::from(month) - 1] {
            return Err(format!(
                "{month:02}-{day:02} is not the first day of a year: use MM-DD, 01-01 to 12-31 \
                 (not 02-29)"
            ));
        }
        if !zone_is_well_formed(zone) {
            return Err(format!(
                "zone {zone:?} is not a time zone name: use an IANA name such as Europe/Paris, \
                 UTC, or an offset such as +05:30"
            ));
        }
        Ok(Self {
            unit,
            start: u16::from(month) * 100 + u16::from(day),
            zone: zone.to_string(),
        })
    }
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
    create_periodic_series(database, name, start, None).await
}

/// Makes series `name` as [`create_series`] does, numbered from `start`
/// again in each period of `period` if given. A zone the server does not
/// know is refused, and the series is not left made.
pub async fn create_periodic_series(
    database: &Database,
    name: &CounterName,
    start: u64,
    period: Option<&SeriesPeriod>,
) -> Result<(), SeriesError> {
    if !(1..=MAX_VALUE).contains(&start) {
        return Err(SeriesError::BadInput {
            name: name.clone(),
            reason: format!("start {start} is out of range 1..={MAX_VALUE}"),
        });
    }
    ensure_indexes(database, name).await?;
    let mut document = doc! {
        "_id": name.as_str(),
        "kind": SERIES_KIND,
        "first": start as i64,
        "last": (start - 1) as i64,
        "current": "",
        "created_at": DateTime::now(),
    };
    if let Some(period) = period {
        document.insert("period", period.unit.as_str());
        document.insert("period_start", i32::from(period.start));
        document.insert("zone", period.zone.as_str());
        document.insert("closed", Document::new());
    }
    let collection = series_collection(database);
    match collection
        .insert_one(document)
        .write_concern(durable_write_concern())
        .await
    {
        Ok(_) => {}
        Err(error) if is_duplicate_key(&error) => {
            return Err(SeriesError::SeriesExists(name.clone()))
        }
        Err(error) => return Err(SeriesError::database(name, "create", error)),
    }
    // The period of now, as every take computes it: a zone the server
    // does not know fails here, and the series, which nothing has taken
    // from, is removed again.
    let Some(period) = period else {
        return Ok(());
    };
    let check = collection
        .aggregate([
            doc! { "$match": { "_id": name.as_str() } },
            doc! { "$project": { "label": period_label(Some(period)) } },
        ])
        .await;
    let known = match check {
        Ok(mut cursor) => futures_util::TryStreamExt::try_next(&mut cursor)
            .await
            .is_ok(),
        Err(_) => false,
    };
    if known {
        return Ok(());
    }
    let _ = collection
        .delete_one(doc! { "_id": name.as_str(), "last": (start - 1) as i64 })
        .write_concern(durable_write_concern())
        .await;
    Err(SeriesError::BadInput {
        name: name.clone(),
        reason: format!("zone {:?} is not a time zone the server knows", period.zone),
    })
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
    let current = document.get_str("current").unwrap_or_default().to_string();
    let period = match document.get_str("period") {
        Err(_) => None,
        Ok(unit) => {
            let unit: PeriodUnit = unit.parse().map_err(|_| format!("period is {unit:?}"))?;
            let start = match document.get("period_start") {
                Some(Bson::Int32(start)) => *start,
                Some(Bson::Int64(start)) => i32::try_from(*start).unwrap_or(0),
                _ => 101,
            };
            let (month, day) = (start / 100, start % 100);
            let zone = document
                .get_str("zone")
                .map_err(|_| "zone is missing".to_string())?;
            Some(
                SeriesPeriod::new(
                    unit,
                    (
                        u8::try_from(month).unwrap_or(0),
                        u8::try_from(day).unwrap_or(0),
                    ),
                    zone,
                )
                .map_err(|reason| format!("its period: {reason}"))?,
            )
        }
    };
    let mut closed = Vec::new();
    if let Ok(periods) = document.get_document("closed") {
        for (label, last) in periods {
            let last = match last {
                Bson::Int64(last) => u64::try_from(*last).ok(),
                Bson::Int32(last) => u64::try_from(*last).ok(),
                _ => None,
            }
            .ok_or_else(|| format!("closed.{label} is {last:?}, not a number"))?;
            closed.push((label.clone(), last));
        }
    }
    closed.sort();
    Ok(SeriesState {
        first,
        last,
        period,
        current,
        closed,
        taken_at: document.get_datetime("taken_at").ok().copied(),
    })
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

/// The label of the period of the server's clock for a series numbered
/// per `period` (`None`: none, `""`): a month's `YYYY-MM`; a year's
/// `YYYY`, the calendar year the (fiscal) year starts in: the year of now
/// in the zone, less one before the year's first day. The zone and the
/// first day are written into the expression (a server takes a time zone
/// as a constant, not from a field).
pub(crate) fn period_label(period: Option<&SeriesPeriod>) -> Bson {
    let Some(period) = period else {
        return Bson::from("");
    };
    let zone = period.zone.as_str();
    match period.unit {
        PeriodUnit::Month | PeriodUnit::Day => Bson::Document(doc! {
            "$dateToString": { "format": "%Y-%m", "date": "$$NOW", "timezone": zone }
        }),
        PeriodUnit::Year => Bson::Document(doc! { "$let": {
            "vars": { "now": { "$dateToParts": { "date": "$$NOW", "timezone": zone } } },
            "in": { "$toString": { "$subtract": [
                "$$now.year",
                { "$cond": [
                    { "$lt": [
                        { "$add": [{ "$multiply": ["$$now.month", 100] }, "$$now.day"] },
                        i32::from(period.start),
                    ] },
                    1,
                    0,
                ] },
            ] } },
        } }),
    }
}

/// The filter that matches series `name` only while it is well formed
/// with a number left and numbered per `period` (or per none): a take
/// built for another shape takes nothing.
pub(crate) fn takes_filter(name: &CounterName, period: Option<&SeriesPeriod>) -> Document {
    let mut filter = doc! {
        "_id": name.as_str(),
        "kind": SERIES_KIND,
        "last": { "$type": ["long", "int"], "$gte": 0_i64, "$lt": MAX_VALUE as i64 },
    };
    match period {
        None => {
            filter.insert("period", doc! { "$exists": false });
        }
        Some(period) => {
            filter.insert("period", period.unit.as_str());
            filter.insert("period_start", i32::from(period.start));
            filter.insert("zone", period.zone.as_str());
        }
    }
    filter
}

/// The update that takes the next number of a series numbered per
/// `period` (its filter is [`takes_filter`]); `taken_at` is the server's
/// clock, which a reservation's deadline is counted from. A series without
/// periods: `last` moves up by one (`$inc`, and `$currentDate`: no
/// pipeline, the cheapest update a server runs). One numbered per period:
/// a pipeline that computes the period of now ([`period_label`]); in a
/// period after `current`, `last` starts again at `first` and the old
/// period's last is kept in `closed`; else `last` moves up by one.
pub(crate) fn take_update(period: Option<&SeriesPeriod>) -> UpdateModifications {
    if period.is_none() {
        return UpdateModifications::Document(doc! {
            "$inc": { "last": 1_i64 },
            "$currentDate": { "taken_at": true },
        });
    }
    UpdateModifications::Pipeline(take_pipeline(period))
}

/// The pipeline of [`take_update`] for a series numbered per period.
fn take_pipeline(period: Option<&SeriesPeriod>) -> Vec<Document> {
    let current = doc! { "$ifNull": ["$current", ""] };
    let new_period = doc! { "$gt": ["$_label", current.clone()] };
    vec![
        doc! { "$set": { "_label": period_label(period), "taken_at": "$$NOW" } },
        doc! { "$set": {
            "closed": { "$cond": [
                { "$and": [new_period.clone(), { "$ne": [current.clone(), ""] }] },
                { "$mergeObjects": [
                    { "$ifNull": ["$closed", {}] },
                    { "$arrayToObject": [[{ "k": current, "v": "$last" }]] },
                ] },
                "$closed",
            ] },
            "last": { "$cond": [new_period, "$first", { "$add": ["$last", 1_i64] }] },
            "current": "$_label",
        } },
        doc! { "$unset": "_label" },
    ]
}
