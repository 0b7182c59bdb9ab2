//! The record of one number of a series, one document per number in
//! `series_numbers`:
//!
//! ```text
//! { _id: "invoices//0000000000000000042",   // series, period, number
//!   series: "invoices", period: "", number: 42,
//!   state: "confirmed", reference: "order 7731",
//!   at: ISODate(...), by: "billing@host-3" }
//! ```
//!
//! The `_id` makes one record per number by construction, and sorts the
//! records of a series in number order (the number zero-padded), so that
//! the audit reads them in one pass. A voided number (`state: "voided"`)
//! carries a `reason` instead of a reference. A number reserved
//! (`reserve.rs`) has `state: "reserved"`, its `deadline`, `reserved_at`
//! and `reserved_by`, and its `client_key` if it was given one; confirmed or
//! voided later, `at` and `by` say when and by whom.

use mongodb::bson::{doc, Bson, DateTime, Document};
use serde::Serialize;

use crate::sequence::{CounterName, MAX_VALUE};

/// The state of a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NumberState {
    /// Used by the business record named by its reference.
    Confirmed,
    /// Not used, for the reason it gives.
    Voided,
    /// Held for a caller that has not confirmed or voided it yet.
    Reserved,
}

impl NumberState {
    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Confirmed => "confirmed",
            Self::Voided => "voided",
            Self::Reserved => "reserved",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        [Self::Confirmed, Self::Voided, Self::Reserved]
            .into_iter()
            .find(|state| state.as_str() == text)
    }
}

/// The `_id` of the record of number `number` of series `name` in period
/// `period` (`""`: a series without periods).
pub fn record_id(name: &CounterName, period: &str, number: u64) -> String {
    format!("{}/{period}/{number:019}", name.as_str())
}

/// The range of `_id`s that holds the records of period `period` of series
/// `name` (`""`: a series without periods).
pub(crate) fn records_of_period(name: &CounterName, period: &str) -> Document {
    let prefix = format!("{}/{period}", name.as_str());
    doc! { "_id": { "$gt": format!("{prefix}/"), "$lt": format!("{prefix}0") } }
}

/// A confirmed number's record, as written in the transaction that took it.
pub(crate) fn confirmed(
    name: &CounterName,
    period: &str,
    number: u64,
    reference: &str,
    by: &str,
) -> Document {
    confirmed_with(
        name,
        Bson::from(record_id(name, period, number)),
        Bson::from(period),
        Bson::Int64(number as i64),
        Bson::from(reference),
        Bson::DateTime(DateTime::now()),
        Bson::from(by),
    )
}

/// The fields of a confirmed record, each given (a value, or a
/// placeholder an app fills: `commands.rs`).
pub(crate) fn confirmed_with(
    name: &CounterName,
    id: Bson,
    period: Bson,
    number: Bson,
    reference: Bson,
    at: Bson,
    by: Bson,
) -> Document {
    doc! {
        "_id": id,
        "series": name.as_str(),
        "period": period,
        "number": number,
        "state": NumberState::Confirmed.as_str(),
        "reference": reference,
        "at": at,
        "by": by,
    }
}

/// A record as read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NumberRecord {
    /// Its number.
    pub number: u64,
    /// Its period's label (`""`: a series without periods).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub period: String,
    /// Its state.
    pub state: NumberState,
    /// The business reference, once confirmed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// Why it was voided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Until when a reserved number may be confirmed (server time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<DateTime>,
    /// When it took its state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<DateTime>,
    /// Who gave it its state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// Reads the record `document` of series `name`, or says what is wrong
/// with it (its `_id` is not the one its fields make, a field missing).
pub(crate) fn read(name: &CounterName, document: &Document) -> Result<NumberRecord, String> {
    let number = match document.get("number") {
        Some(Bson::Int64(number)) if (1..=MAX_VALUE as i64).contains(number) => *number as u64,
        Some(Bson::Int32(number)) if *number >= 1 => *number as u64,
        other => {
            return Err(format!(
                "number is {other:?}, not an integer in 1..={MAX_VALUE}"
            ))
        }
    };
    let period = document.get_str("period").unwrap_or("");
    let id = document.get_str("_id").unwrap_or("");
    if id != record_id(name, period, number) {
        return Err(format!(
            "its _id {id:?} is not {:?}, the one its series, period and number make",
            record_id(name, period, number)
        ));
    }
    let state = document
        .get_str("state")
        .ok()
        .and_then(NumberState::parse)
        .ok_or_else(|| {
            format!(
                "state is {:?}, not confirmed, voided or reserved",
                document.get("state")
            )
        })?;
    let text = |field| {
        document
            .get_str(field)
            .ok()
            .filter(|text| !text.is_empty())
            .map(str::to_string)
    };
    Ok(NumberRecord {
        number,
        period: period.to_string(),
        state,
        reference: text("reference"),
        reason: text("reason"),
        deadline: document.get_datetime("deadline").ok().copied(),
        at: document.get_datetime("at").ok().copied(),
        by: text("by"),
    })
}
