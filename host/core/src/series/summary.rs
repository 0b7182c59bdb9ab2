//! Every series at a glance, for the monitor page and the metrics of
//! `idmint serve`: how many numbers have no record (holes), how many are
//! reserved, and how many of those are past their deadline. Counts only,
//! each served by an index (the records' `_id`s from the first number to
//! the last; the partial index of open reservations), so that it costs a
//! few round trips per series however long the series. The audit
//! (`audit.rs`) is the proof; this is the watch.

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Document};
use mongodb::Database;
use serde::Serialize;

use super::document::{read, series_collection, SERIES_KIND};
use super::error::SeriesError;
use super::record::{record_id, NumberState};
use crate::mongo::collections::SERIES_NUMBERS;
use crate::sequence::CounterName;

/// One series at a glance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SeriesSummary {
    /// The series.
    pub series: String,
    /// Its first number.
    pub first: u64,
    /// Its last number taken (in its current period).
    pub last: u64,
    /// Numbers from the first to the last with no record, in every period:
    /// holes, which `idmint series audit` names.
    pub missing: u64,
    /// Numbers reserved, not yet confirmed or voided.
    pub reserved: u64,
    /// Of those, past their deadline (the next sweep voids them).
    pub expired: u64,
}

/// Every series, those with holes first (most first), then those with
/// expired reservations, then by name.
pub async fn summaries(database: &Database) -> Result<Vec<SeriesSummary>, SeriesError> {
    let sweep_error = |source| SeriesError::EverySeries {
        action: "reading the series",
        source,
    };
    let mut cursor = series_collection(database)
        .find(doc! { "kind": SERIES_KIND })
        .await
        .map_err(sweep_error)?;
    let records = database.collection::<Document>(SERIES_NUMBERS);
    let mut summaries = Vec::new();
    while let Some(document) = cursor.try_next().await.map_err(sweep_error)? {
        let (Ok(name), Ok(state)) = (
            CounterName::new(document.get_str("_id").unwrap_or_default()),
            read(&document),
        ) else {
            continue;
        };
        let count = |filter: Document| {
            let records = records.clone();
            let name = name.clone();
            async move {
                records
                    .count_documents(filter)
                    .await
                    .map_err(|error| SeriesError::database(&name, "count the records", error))
            }
        };
        // Each period's holes: its numbers less the records in its range.
        let mut missing = 0;
        let periods = state
            .closed
            .iter()
            .map(|(label, last)| (label.as_str(), *last))
            .chain([(state.current.as_str(), state.last)]);
        for (label, last) in periods {
            let taken = (last + 1).saturating_sub(state.first);
            if taken == 0 {
                continue;
            }
            let present = count(doc! { "_id": {
                "$gte": record_id(&name, label, state.first),
                "$lte": record_id(&name, label, last),
            } })
            .await?;
            missing += taken.saturating_sub(present);
        }
        let open = doc! { "series": name.as_str(), "state": NumberState::Reserved.as_str() };
        let reserved = count(open.clone()).await?;
        let expired = if reserved == 0 {
            0
        } else {
            let mut past = open;
            past.insert("$expr", doc! { "$lte": ["$deadline", "$$NOW"] });
            count(past).await?
        };
        summaries.push(SeriesSummary {
            series: name.to_string(),
            first: state.first,
            last: state.last,
            missing,
            reserved,
            expired,
        });
    }
    summaries.sort_by(|a, b| {
        (b.missing, b.expired)
            .cmp(&(a.missing, a.expired))
            .then_with(|| a.series.cmp(&b.series))
    });
    Ok(summaries)
}
