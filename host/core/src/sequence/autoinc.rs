//! The auto-increment counter (seed 002): `{_id, kind: "autoinc", seq}`,
//! advanced by one atomic `findOneAndUpdate` per request, which reserves
//! `n` consecutive values at once.
//!
//! The filter only matches a counter with `n` values left below
//! [`MAX_VALUE`]; the update is a pipeline like the cyclic one, which
//! replaces a document that is not a well-formed autoinc counter by itself,
//! so leaves it exactly as it was. It returns the document *after* the
//! update, from which the values follow (`seq - n + 1 ..= seq`). When
//! nothing matched, the document is read to say why (missing, of another
//! kind, corrupt, exhausted).
//!
//! [`AutoIncrement::take_or_create`] creates a missing counter on first use.
//! Many processes may do so at once: one insert wins, every other one fails
//! with a duplicate key and takes from the counter that now exists, so all
//! of them succeed with distinct values. The duplicate key never reaches the
//! caller (mongoose-sequence, for one, lets it through).

use std::ops::RangeInclusive;

use mongodb::bson::{doc, Document};
use mongodb::options::WriteConcern;
use mongodb::{Collection, Database};

use super::advance::{advance, Unmatched};
use super::counter_doc::well_formed_expr;
use super::kind::{CounterKind, MAX_VALUE};
use super::COUNTERS_COLLECTION;
use super::{read_state, spec, CounterName, CounterSpec, CounterState, KindState, SequenceError};
use crate::mongo::{self, durable_write_concern};

/// Handle on one auto-increment counter in `<db>.counters`.
#[derive(Debug, Clone)]
pub struct AutoIncrement {
    collection: Collection<Document>,
    name: CounterName,
    write_concern: WriteConcern,
}

impl AutoIncrement {
    /// A handle on counter `name` in `database`, writing with majority + journal.
    pub fn new(database: &Database, name: CounterName) -> Self {
        Self {
            collection: database.collection(COUNTERS_COLLECTION),
            name,
            write_concern: durable_write_concern(),
        }
    }

    /// The counter's name.
    pub fn name(&self) -> &CounterName {
        &self.name
    }

    /// Creates the counter; `spec` must be of kind autoinc.
    pub async fn create(&self, spec: &CounterSpec) -> Result<CounterState, SequenceError> {
        if spec.kind != CounterKind::Autoinc {
            return Err(SequenceError::InvalidSpec(format!(
                "a {} spec given to an autoinc counter handle",
                spec.kind
            )));
        }
        spec::create(&self.collection, &self.name, spec, &self.write_concern).await
    }

    /// Reads the counter as it is now.
    pub async fn state(&self) -> Result<CounterState, SequenceError> {
        read_state(&self.collection, &self.name).await
    }

    /// Reserves the next `count` values in one round trip and returns them.
    pub async fn take(&self, count: u64) -> Result<RangeInclusive<u64>, SequenceError> {
        if count == 0 || count > MAX_VALUE {
            return Err(SequenceError::InvalidSpec(format!(
                "count {count} is out of range 1..={MAX_VALUE}"
            )));
        }
        let after = advance(
            &self.collection,
            &self.name,
            &self.write_concern,
            take_filter(&self.name, count),
            advance_pipeline(count),
            |state| match state.kind {
                KindState::Autoinc(counter) if counter.seq + count > MAX_VALUE => {
                    Unmatched::Fail(SequenceError::Exhausted {
                        name: self.name.clone(),
                        requested: count,
                        limit: MAX_VALUE,
                    })
                }
                // Replaced between the update and the read: try again.
                KindState::Autoinc(_) => Unmatched::Retry,
                _ => Unmatched::Fail(self.wrong_kind(&state)),
            },
        )
        .await?;
        // A malformed counter came back as it was; a well-formed one was
        // advanced by `count`.
        let state = CounterState::from_document(&self.name, &after)?;
        match state.kind {
            KindState::Autoinc(counter) if counter.seq >= count => {
                Ok(counter.seq - count + 1..=counter.seq)
            }
            _ => Err(self.wrong_kind(&state)),
        }
    }

    fn wrong_kind(&self, state: &CounterState) -> SequenceError {
        SequenceError::WrongKind {
            name: self.name.clone(),
            expected: CounterKind::Autoinc,
            found: state.kind(),
        }
    }

    /// [`AutoIncrement::take`], creating the counter first if it does not
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
        let spec = CounterSpec::of(CounterKind::Autoinc).start(start);
        let mut document = spec.document(&self.name)?;
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

/// The update that reserves `count` values (see the module docs).
pub(crate) fn advance_pipeline(count: u64) -> Vec<Document> {
    let count = count as i64;
    vec![doc! { "$replaceWith": {
        "$cond": [
            well_formed_expr(CounterKind::Autoinc),
            { "$mergeObjects": ["$$ROOT", { "seq": { "$toLong": { "$add": ["$seq", count] } } }] },
            "$$ROOT",
        ],
    }}]
}
