//! The segment counter document `{_id, kind: "segment", max, step}` and the
//! two writes made on it: taking a segment, and giving its unused tail back.

use std::ops::Range;

use mongodb::bson::{doc, Document};
use mongodb::options::WriteConcern;
use mongodb::Collection;

use super::{fits_filter, take_pipeline, SegmentKind, LIMIT, MAX_STEP};
use crate::sequence::advance::{advance, Unmatched};
use crate::sequence::counter::document::read;
use crate::sequence::error::SequenceError;
use crate::sequence::kind_trait::{Kind, MAX_VALUE};
use crate::sequence::name::CounterName;

/// A taken segment, with the counter's settings as they were.
#[derive(Debug, Clone)]
pub(crate) struct Taken {
    /// The values: `[max, max + step)` of the counter before the update.
    pub values: Range<u64>,
    /// The counter document's `step` (the floor of the adaptive step).
    pub floor: u64,
}

/// The database side of a segment counter.
#[derive(Debug, Clone)]
pub(crate) struct SegmentStore {
    pub collection: Collection<Document>,
    pub name: CounterName,
    pub write_concern: WriteConcern,
}

impl SegmentStore {
    /// Takes the next segment of `step` values (at least the document's own
    /// step) with one atomic update; the values are consumed from then on,
    /// whatever becomes of this process.
    pub async fn take(&self, step: u64) -> Result<Taken, SequenceError> {
        let step = step.min(MAX_STEP);
        let after = advance::<SegmentKind>(
            &self.collection,
            &self.name,
            &self.write_concern,
            fits_filter(&self.name, step),
            take_pipeline(step),
            |counter| {
                if counter.max.saturating_add(step.max(counter.step)) > LIMIT {
                    Unmatched::Fail(SequenceError::Exhausted {
                        name: self.name.clone(),
                        requested: step.max(counter.step),
                        limit: MAX_VALUE,
                    })
                } else {
                    // Replaced between the update and the read: try again.
                    Unmatched::Retry
                }
            },
        )
        .await?;
        // A malformed counter came back as it was; a well-formed one was
        // advanced by max(step, its step), which it still holds.
        let counter = read::<SegmentKind>(&self.name, &after)?.kind;
        let taken = step.max(counter.step);
        Ok(Taken {
            values: counter.max - taken..counter.max,
            floor: counter.step,
        })
    }

    /// Gives `[from, end)` back: sets `max` to `from` if it is still `end`,
    /// that is if no process took a segment since this one. Returns whether
    /// it did.
    pub async fn give_back(&self, from: u64, end: u64) -> Result<bool, SequenceError> {
        let result = self
            .collection
            .update_one(
                doc! { "_id": self.name.as_str(), "kind": SegmentKind::NAME, "max": end as i64 },
                doc! { "$set": { "max": from as i64 } },
            )
            .write_concern(self.write_concern.clone())
            .await
            .map_err(|source| {
                SequenceError::from_database(&self.name, "give back", "update", source)
            })?;
        Ok(result.modified_count == 1)
    }
}
