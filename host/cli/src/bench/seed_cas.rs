//! The seed's original algorithm, kept as the benchmark's yardstick: read the
//! counter, then update it on the condition that `val` is still what was read,
//! and start over when another client won the race.
//!
//! It is correct but needs at least two round trips per value and retries
//! under contention; idmint's own path ([`CyclicCounter::take`](idmint::sequence::CyclicCounter::take)) is a
//! single atomic round trip. Semantics follow the seed: a counter at maxval is
//! first reset to 0 and the loop runs again, so values go 1, ..., maxval, 1, ...

use mongodb::bson::{doc, Document};
use mongodb::options::WriteConcern;
use mongodb::Collection;

use idmint::sequence::{CounterKind, CounterName, CounterState, SequenceError};

/// Gives up after this many lost races in a row (the seed loops forever).
pub const MAX_ATTEMPTS: u32 = 10_000;

/// Hands out the next value the seed's way.
pub async fn next_value(
    collection: &Collection<Document>,
    name: &CounterName,
    write_concern: &WriteConcern,
) -> Result<u64, SequenceError> {
    let database_error = |source| SequenceError::Database {
        name: name.clone(),
        source,
    };
    for _ in 0..MAX_ATTEMPTS {
        let current = match collection
            .find_one(doc! { "_id": name.as_str() })
            .await
            .map_err(database_error)?
        {
            Some(document) => CounterState::from_document(name, &document)?,
            None => return Err(SequenceError::UnknownCounter(name.clone())),
        };
        let Some(&current) = current.cyclic() else {
            return Err(SequenceError::WrongKind {
                name: name.clone(),
                expected: CounterKind::Cyclic.as_str(),
                found: current.kind().as_str(),
            });
        };
        let condition = doc! { "_id": name.as_str(), "val": current.val as i64 };
        let change = if current.val >= current.maxval {
            doc! { "$set": { "val": 0_i64 } }
        } else {
            doc! { "$inc": { "val": 1_i64 } }
        };
        let result = collection
            .update_one(condition, change)
            .write_concern(write_concern.clone())
            .await
            .map_err(database_error)?;
        if result.modified_count == 1 && current.val < current.maxval {
            return Ok(current.val + 1);
        }
        // Lost the race, or reset the counter: read it again and retry.
    }
    Err(SequenceError::Contended {
        name: name.clone(),
        attempts: MAX_ATTEMPTS,
    })
}
