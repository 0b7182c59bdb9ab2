//! The counters collection: creating a counter, reading one, listing them.

use mongodb::bson::Document;
use mongodb::Database;
use serde::Serialize;

use super::counter::document::find_counters;
use super::error::SequenceError;
use super::headroom::Headroom;
use super::kinds::cyclic::{CyclicKind, CyclicState};
use super::kinds::periodic::PeriodicKind;
use super::kinds::snowflake::{CounterTag, SnowflakeKind};
use super::name::CounterName;
use super::registry::{read_state, CounterState};
use super::spec::{create_in, CounterSpec};
use crate::mongo::collections::COUNTERS as COUNTERS_COLLECTION;

/// The counters collection of `database`.
fn counters(database: &Database) -> mongodb::Collection<Document> {
    database.collection(COUNTERS_COLLECTION)
}

/// Creates counter `name` in `database` as `spec` says (write concern
/// majority with journal). Fails with [`SequenceError::CounterExists`] if a
/// counter of that name exists, of any kind; a bad setting is refused
/// before anything is written.
pub async fn create(
    database: &Database,
    name: &CounterName,
    spec: &CounterSpec,
) -> Result<CounterState, SequenceError> {
    let write_concern = crate::mongo::durable_write_concern();
    create_in(&counters(database), name, spec, &write_concern).await
}

/// One counter as [`list`] found it.
#[derive(Debug, Clone)]
pub struct Listed {
    /// The document's `_id`, as text (an `_id` that is not a string is
    /// shown as the server prints it).
    pub name: String,
    /// The counter, or what is wrong with its document.
    pub state: Result<CounterState, String>,
}

impl Listed {
    /// A counter document as listed.
    fn of(document: &Document) -> Self {
        let id = match document.get("_id") {
            Some(mongodb::bson::Bson::String(id)) => id.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let state = CounterName::new(&id)
            .map_err(|error| error.to_string())
            .and_then(|name| {
                CounterState::from_document(&name, document).map_err(|error| error.to_string())
            });
        Listed { name: id, state }
    }
}

/// Every counter in `database`, by name: a malformed document is listed
/// with what is wrong with it rather than failing the list. A striped
/// counter's lanes are not counters: its map is listed, they are not.
/// Reads only.
pub async fn list(database: &Database) -> Result<Vec<Listed>, SequenceError> {
    let documents =
        find_counters(database, names_starting_with(""), mongodb::bson::doc! {}).await?;
    Ok(documents.iter().map(Listed::of).collect())
}

/// One page of the counters whose name starts with `start` (every counter
/// when it is empty), by name: the `limit` after the first `skip`, listed
/// as [`list`] lists them. A range of `_id`, so the server answers from its
/// index whatever the number of counters. Reads only.
pub async fn list_page(
    database: &Database,
    start: &str,
    skip: u64,
    limit: u64,
) -> Result<Vec<Listed>, SequenceError> {
    use futures_util::TryStreamExt;
    let documents: Vec<Document> = counters(database)
        .find(names_starting_with(start))
        .sort(mongodb::bson::doc! { "_id": 1 })
        .skip(skip)
        .limit(i64::try_from(limit).unwrap_or(i64::MAX))
        .await
        .map_err(|source| SequenceError::ListCounters { source })?
        .try_collect()
        .await
        .map_err(|source| SequenceError::ListCounters { source })?;
    Ok(documents.iter().map(Listed::of).collect())
}

/// How many counters' names start with `start` (every counter when it is
/// empty). Reads only.
pub async fn count(database: &Database, start: &str) -> Result<u64, SequenceError> {
    counters(database)
        .count_documents(names_starting_with(start))
        .await
        .map_err(|source| SequenceError::ListCounters { source })
}

/// The filter of the counters whose name starts with `start`: the names
/// from `start` up to the first string after every name that starts with
/// it (the server compares strings by code point), or every counter when
/// `start` is empty; never a striped counter's lane nor the tags document.
fn names_starting_with(start: &str) -> Document {
    // A striped counter's lanes are not counters.
    let not_a_lane = mongodb::bson::doc! { "$ne": crate::sequence::lane_kind::LANE_KIND };
    // Nor is the document snowflake counters' tags are drawn from.
    let not_the_tags = crate::sequence::kinds::snowflake::TAGS_ID;
    if start.is_empty() {
        return mongodb::bson::doc! { "_id": { "$ne": not_the_tags }, "kind": not_a_lane };
    }
    let mut range = mongodb::bson::doc! { "$gte": start, "$ne": not_the_tags };
    if let Some(after) = successor(start) {
        range.insert("$lt", after);
    }
    mongodb::bson::doc! { "_id": range, "kind": not_a_lane }
}

/// The least string greater than every string that starts with `start`:
/// `start` with its last character that has a next one raised by one and
/// what follows it dropped; `None` when there is none.
fn successor(start: &str) -> Option<String> {
    let mut chars: Vec<char> = start.chars().collect();
    while let Some(last) = chars.pop() {
        let next = (last as u32 + 1..=char::MAX as u32).find_map(char::from_u32);
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

impl CounterState {
    /// The cyclic fields, if this is a cyclic counter.
    pub fn cyclic(&self) -> Option<&CyclicState> {
        self.of::<CyclicKind>()
    }

    /// The layout its IDs are read with, if this is a snowflake counter.
    pub fn snowflake_layout(&self) -> Option<&crate::parts::Layout> {
        self.of::<SnowflakeKind>().map(|state| &state.layout)
    }

    /// Its tag and salt, if this is a snowflake counter that has them.
    pub fn counter_tag(&self) -> Option<CounterTag> {
        self.of::<SnowflakeKind>().and_then(|state| state.tag)
    }

    /// The period its values restart in and the time zone it is counted
    /// in, if its values restart each period.
    pub fn period(&self) -> Option<(crate::parts::PeriodUnit, &str)> {
        self.of::<PeriodicKind>()
            .map(|state| (state.period, state.zone.as_str()))
    }

    /// Whether its values are made under leased worker ids, which
    /// [`workers`](crate::sequence::workers) lists.
    pub fn has_worker_leases(&self) -> bool {
        self.of::<SnowflakeKind>().is_some()
    }
}

/// Reads counter `name` in `database`.
pub async fn state(database: &Database, name: &CounterName) -> Result<CounterState, SequenceError> {
    read_state(&counters(database), name).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_successor_of_a_start_bounds_every_name_that_starts_with_it() {
        assert_eq!(successor("cust-1").as_deref(), Some("cust-2"));
        assert_eq!(successor("a:z").as_deref(), Some("a:{"));
        assert_eq!(successor("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(successor("\u{10FFFF}"), None);
        // The character after U+D7FF is U+E000: surrogates are skipped.
        assert_eq!(successor("\u{D7FF}").as_deref(), Some("\u{E000}"));
        let after = successor("cust-1").unwrap();
        for name in ["cust-1", "cust-1.2026", "cust-1zzz", "cust-1\u{10FFFF}"] {
            assert!(name >= "cust-1" && name < after.as_str(), "{name}");
        }
        for name in ["cust", "cust-", "cust-0zzz", "cust-2"] {
            assert!(!(name >= "cust-1" && name < after.as_str()), "{name}");
        }
        assert_eq!(
            names_starting_with(""),
            mongodb::bson::doc! { "_id": { "$ne": "_idmint.tags" }, "kind": { "$ne": "lane" } }
        );
    }
}

/// A counter's headroom, for `idmint status` and the metrics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterHeadroom {
    /// The counter.
    pub counter: String,
    /// Its kind.
    pub kind: &'static str,
    /// What is left of it.
    #[serde(flatten)]
    pub headroom: Headroom,
}

/// The headroom of every counter of `database` that can run out or short, by name.
/// A cyclic counter, which wraps, has its pace (`Headroom`'s docs); a
/// striped one (each lane is a counter of its own, with its own end) and a
/// corrupt one (`counter show` names what is wrong) are left out.
pub async fn headrooms(
    database: &Database,
    now_ms: u64,
) -> Result<Vec<CounterHeadroom>, SequenceError> {
    Ok(list(database)
        .await?
        .into_iter()
        .filter_map(|listed| {
            let state = listed.state.ok()?;
            let headroom = state.headroom(now_ms)?;
            Some(CounterHeadroom {
                counter: listed.name,
                kind: state.kind().as_str(),
                headroom,
            })
        })
        .collect())
}
