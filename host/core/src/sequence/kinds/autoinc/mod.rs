//! The auto-increment counter (seed 002): `{_id, kind: "autoinc", seq}`,
//! advanced by one atomic `findOneAndUpdate` per request, which reserves
//! `n` consecutive values at once. This folder owns the kind's document
//! rules, settings, wire command and handle; it must not touch another
//! kind's documents.
//!
//! The filter only matches a counter with `n` values left below
//! [`MAX_VALUE`]; the update is a pipeline like the cyclic one, which
//! replaces a document that is not a well-formed autoinc counter by itself,
//! so leaves it exactly as it was. It returns the document *after* the
//! update, from which the values follow (`seq - n + 1 ..= seq`). When
//! nothing matched, the document is read to say why (missing, of another
//! kind, corrupt, exhausted). A handle that has taken values once takes the
//! next ones with the short guard of [`KnownShape`], as the cyclic kind
//! does.
//!
//! [`AutoincCounter::take_or_create`] creates a missing counter on first use.
//! Many processes may do so at once: one insert wins, every other one fails
//! with a duplicate key and takes from the counter that now exists, so all
//! of them succeed with distinct values. The duplicate key never reaches the
//! caller (mongoose-sequence, for one, lets it through).

mod lanes;

use std::ops::RangeInclusive;

use mongodb::bson::{doc, Document};
use mongodb::options::WriteConcern;
use mongodb::{Collection, Database};

use std::ops::Range;

use mongodb::bson::Bson;
use serde::Serialize;

use crate::mongo::collections::COUNTERS as COUNTERS_COLLECTION;
use crate::mongo::{self, durable_write_concern};
use crate::parts::Stamp;
use crate::sequence::advance::{advance, Unmatched};
use crate::sequence::counter::document::{new_document, read};
use crate::sequence::counter::fields::database_of;
use crate::sequence::counter::fields::{integer_in, read_integer, well_formed};
use crate::sequence::error::SequenceError;
use crate::sequence::headroom::Headroom;
use crate::sequence::kind_trait::{
    CommandOptions, Fact, Handle, Kind, Repeats, ValueShape, MAX_VALUE,
};
use crate::sequence::known_shape::{KnownShape, ShapeCache};
use crate::sequence::name::CounterName;
use crate::sequence::settings::{Setting, Settings};

/// The fields a take never changes.
const FIXED: &[&str] = &["kind", "prefix", "prefixes"];

/// The field every take writes.
const MOVING: &[&str] = &["seq"];

/// The auto-increment kind (see the module docs).
#[derive(Debug)]
pub struct AutoincKind;

/// An auto-increment counter's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AutoincState {
    /// The last value handed out (0: none yet).
    pub seq: u64,
}

impl Kind for AutoincKind {
    const NAME: &'static str = "autoinc";
    const SUMMARY: &'static str =
        "$inc auto-increment (seed 002): 1, 2, 3, ... one round trip per request";
    const SETTINGS: &'static [Setting] = &[Setting::Start];
    const RUNS: bool = true;
    const FIT_ADVICE: &'static str = "use a policy that holds 2^53 values, such as the built-in \
         decimal policy (--policy builtin:decimal)";
    type State = AutoincState;
    type Options = ();
    type Handle = AutoincCounter;

    fn read(document: &Document) -> Result<AutoincState, String> {
        Ok(AutoincState {
            seq: read_integer(document, "seq", 0, MAX_VALUE)?,
        })
    }

    fn guard() -> Vec<Bson> {
        vec![integer_in("seq", 0, MAX_VALUE)]
    }

    fn fields(settings: &Settings, _now_ms: u64) -> Result<Document, SequenceError> {
        let start = settings.start.unwrap_or(1);
        if !(1..=MAX_VALUE).contains(&start) {
            return Err(SequenceError::InvalidSpec(format!(
                "start {start} is out of range 1..={MAX_VALUE}"
            )));
        }
        Ok(doc! { "seq": (start - 1) as i64 })
    }

    fn shape(_state: &AutoincState) -> ValueShape {
        ValueShape {
            largest_value: MAX_VALUE,
            repeats: Repeats::Never,
            server_timestamp: false,
        }
    }

    fn facts(state: &AutoincState, _now_ms: u64) -> Vec<Fact> {
        vec![Fact::text(
            "seq",
            format!("{} (the next value is {})", state.seq, state.seq + 1),
        )]
    }

    fn headroom(state: &AutoincState, _now_ms: u64) -> Option<Headroom> {
        Some(Headroom::of_values(state.seq, MAX_VALUE))
    }

    fn take_command(
        name: &CounterName,
        count: u64,
        _options: &CommandOptions,
    ) -> Result<(Document, Vec<Document>), SequenceError> {
        Ok((take_filter(name, count), advance_pipeline(count)))
    }

    async fn open(
        database: &Database,
        name: CounterName,
        _state: &AutoincState,
        _options: &(),
    ) -> Result<AutoincCounter, SequenceError> {
        Ok(AutoincCounter::new(database, name))
    }
}

/// Handle on one auto-increment counter in `<db>.counters`.
#[derive(Debug, Clone)]
pub struct AutoincCounter {
    collection: Collection<Document>,
    name: CounterName,
    write_concern: WriteConcern,
    known: ShapeCache,
}

impl AutoincCounter {
    /// A handle on counter `name` in `database`, writing with majority + journal.
    pub fn new(database: &Database, name: CounterName) -> Self {
        Self {
            collection: database.collection(COUNTERS_COLLECTION),
            name,
            write_concern: durable_write_concern(),
            known: ShapeCache::new(FIXED, MOVING),
        }
    }

    /// The counter's name.
    pub fn name(&self) -> &CounterName {
        &self.name
    }

    /// Reserves the next `count` values in one round trip and returns them.
    pub async fn take(&self, count: u64) -> Result<RangeInclusive<u64>, SequenceError> {
        if count == 0 || count > MAX_VALUE {
            return Err(SequenceError::InvalidCount {
                name: self.name.clone(),
                requested: count,
                max: MAX_VALUE,
            });
        }
        let unmatched = |counter: &AutoincState| {
            if counter.seq + count > MAX_VALUE {
                Unmatched::Fail(SequenceError::Exhausted {
                    name: self.name.clone(),
                    requested: count,
                    limit: MAX_VALUE,
                })
            } else {
                // Replaced between the update and the read: try again.
                Unmatched::Retry
            }
        };
        #[cfg(feature = "soak-broken")]
        if crate::broken::unguarded_takes() {
            return self.take_unguarded(count).await;
        }
        let filter = take_filter(&self.name, count);
        self.known
            .take(
                |shape| Some(short_pipeline(shape, count)),
                || advance_pipeline(count),
                |update| {
                    advance::<AutoincKind>(
                        &self.collection,
                        &self.name,
                        &self.write_concern,
                        filter.clone(),
                        update,
                        &unmatched,
                    )
                },
                |after| self.taken(after, count),
            )
            .await
    }

    /// A take with its guard disabled, for the soak's broken build
    /// (`crate::broken`): it reads `seq`, then sets it `count` further,
    /// with nothing between to stop another take reading the same `seq`.
    #[cfg(feature = "soak-broken")]
    async fn take_unguarded(&self, count: u64) -> Result<RangeInclusive<u64>, SequenceError> {
        let database_error =
            |source| SequenceError::from_database(&self.name, "take", "find", source);
        let document = self
            .collection
            .find_one(doc! { "_id": self.name.as_str() })
            .await
            .map_err(database_error)?
            .ok_or_else(|| SequenceError::UnknownCounter(self.name.clone()))?;
        let seq = read::<AutoincKind>(&self.name, &document)?.kind.seq;
        self.collection
            .update_one(
                doc! { "_id": self.name.as_str() },
                doc! { "$set": { "seq": (seq + count) as i64 } },
            )
            .write_concern(self.write_concern.clone())
            .await
            .map_err(|source| SequenceError::from_database(&self.name, "take", "update", source))?;
        Ok(seq + 1..=seq + count)
    }

    /// The values a take reserved, from the counter after it: a malformed
    /// counter came back as it was; a well-formed one was advanced by
    /// `count`.
    fn taken(&self, after: &Document, count: u64) -> Result<RangeInclusive<u64>, SequenceError> {
        let counter = read::<AutoincKind>(&self.name, after)?.kind;
        if counter.seq < count {
            return Err(SequenceError::CorruptCounter {
                name: self.name.clone(),
                reason: format!("seq is {} after a take of {count}", counter.seq),
            });
        }
        Ok(counter.seq - count + 1..=counter.seq)
    }

    /// [`AutoincCounter::take`], creating the counter first if it does not
    /// exist, so that its first value is `start` (race-safe: see the module
    /// docs). An existing counter is used as it is, whatever its start.
    pub async fn take_or_create(
        &self,
        count: u64,
        start: u64,
    ) -> Result<RangeInclusive<u64>, SequenceError> {
        match self.take(count).await {
            Err(SequenceError::UnknownCounter(_)) => {}
            other => return other,
        }
        // A counter made on first use owns no prefix: many processes make
        // counters this way, and none of them chose one.
        let settings = Settings {
            start: Some(start),
            ..Settings::default()
        };
        let now_ms = crate::sequence::Clock::now_micros(&crate::sequence::SystemClock) / 1000;
        let mut document = new_document::<AutoincKind>(&self.name, &settings, &[], now_ms)?;
        let first = start;
        let last = first
            .checked_add(count - 1)
            .filter(|&last| last <= MAX_VALUE)
            .ok_or_else(|| SequenceError::Exhausted {
                name: self.name.clone(),
                requested: count,
                limit: MAX_VALUE,
            })?;
        // Created with these values already taken: one insert, no second trip.
        document.insert("seq", last as i64);
        match self
            .collection
            .insert_one(&document)
            .write_concern(self.write_concern.clone())
            .await
        {
            Ok(_) => Ok(first..=last),
            // Another process created it first: take from it.
            Err(error) if mongo::is_duplicate_key(&error) => self.take(count).await,
            Err(source) => Err(SequenceError::from_database(
                &self.name, "create", "insert", source,
            )),
        }
    }
}

/// The filter of a request for `count` values: the counter, if it has them
/// left below [`MAX_VALUE`].
pub(crate) fn take_filter(name: &CounterName, count: u64) -> Document {
    doc! { "_id": name.as_str(), "seq": { "$lte": MAX_VALUE.saturating_sub(count) as i64 } }
}

/// The update that takes `count` values of a counter known to have `shape`:
/// `seq` is a long whenever the short guard holds, and the filter leaves
/// room for `count`, so no conversion is needed.
fn short_pipeline(shape: &KnownShape, count: u64) -> Vec<Document> {
    vec![doc! { "$replaceWith": { "$cond": [
        shape.expression().clone(),
        { "$mergeObjects": ["$$ROOT", { "seq": { "$add": ["$seq", count as i64] } }] },
        "$$ROOT",
    ]}}]
}

/// The update that reserves `count` values (see the module docs).
pub(crate) fn advance_pipeline(count: u64) -> Vec<Document> {
    let count = count as i64;
    vec![doc! { "$replaceWith": {
        "$cond": [
            well_formed::<AutoincKind>(),
            { "$mergeObjects": ["$$ROOT", { "seq": { "$toLong": { "$add": ["$seq", count] } } }] },
            "$$ROOT",
        ],
    }}]
}

impl Handle for AutoincCounter {
    type Of = AutoincKind;

    fn name(&self) -> &CounterName {
        &self.name
    }

    fn database(&self) -> Database {
        database_of(&self.collection)
    }

    async fn take(&self, count: usize, client_micros: u64) -> Result<Vec<Stamp>, SequenceError> {
        let taken = AutoincCounter::take(self, count as u64).await?;
        Ok(taken
            .map(|value| Stamp::new(client_micros, value))
            .collect())
    }

    async fn take_ranges(&self, count: u64) -> Result<Vec<Range<u64>>, SequenceError> {
        let taken = AutoincCounter::take(self, count).await?;
        // One round trip takes one run.
        Ok(std::iter::once(*taken.start()..*taken.end() + 1).collect())
    }

    /// The last run only, and only while `seq` is still its last value (no
    /// process took a value since): one conditional update, durable like a
    /// take.
    async fn give_back(&self, runs: &[Range<u64>]) -> Result<u64, SequenceError> {
        let Some(run) = runs
            .last()
            .filter(|run| run.start >= 1 && run.start < run.end)
        else {
            return Ok(0);
        };
        let result = self
            .collection
            .update_one(
                doc! { "_id": self.name.as_str(), "kind": AutoincKind::NAME, "seq": (run.end - 1) as i64 },
                doc! { "$set": { "seq": (run.start - 1) as i64 } },
            )
            .write_concern(self.write_concern.clone())
            .await
            .map_err(|source| {
                SequenceError::from_database(&self.name, "give back", "update", source)
            })?;
        Ok(if result.modified_count == 1 {
            run.end - run.start
        } else {
            0
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sequence::counter::fields::SHARED_FIELDS;

    #[test]
    fn the_fixed_fields_are_the_shared_ones() {
        assert_eq!(FIXED, SHARED_FIELDS);
        assert!(!FIXED.iter().any(|field| MOVING.contains(field)));
    }
}
