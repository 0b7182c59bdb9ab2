//! The segment counter document `{_id, kind: "segment", max, step}`: its
//! fields ([`SegmentState`]), its bounds, and the two writes made on it:
//! taking a segment, and giving its unused tail back. [`SegmentKind`], the
//! kind's marker, is declared here so that the writes can name it; its
//! `Kind` impl, which names the handle, is in `mod.rs`.

use std::ops::Range;

use mongodb::bson::{doc, Document};
use mongodb::options::WriteConcern;
use mongodb::Collection;
use serde::Serialize;

use crate::sequence::advance::{advance, Unmatched};
use crate::sequence::counter::document::read;
use crate::sequence::counter::fields::well_formed;
use crate::sequence::error::SequenceError;
use crate::sequence::kind_trait::{Kind, MAX_VALUE};
use crate::sequence::name::CounterName;

/// A segment counter's default step: the smallest segment a process takes.
pub const DEFAULT_STEP: u64 = 1000;

/// The largest segment step a counter document may ask for.
pub const MAX_STEP: u64 = 100_000_000;

/// The segment kind (see the docs of `mod.rs`, where its `Kind` impl is).
#[derive(Debug)]
pub struct SegmentKind;

/// A segment counter's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SegmentState {
    /// The first value no process has taken yet.
    pub max: u64,
    /// The smallest segment a process takes.
    pub step: u64,
}

/// One past the largest value a segment counter hands out.
const LIMIT: u64 = MAX_VALUE + 1;

/// Matches the counter only if a segment of `max(step, $step)` values fits
/// below the limit (a non-number never matches, and never reaches `$add`).
pub(crate) fn fits_filter(name: &CounterName, step: u64) -> Document {
    doc! {
        "_id": name.as_str(),
        "$expr": { "$and": [
            { "$isNumber": "$max" },
            { "$isNumber": "$step" },
            { "$lte": [{ "$add": ["$max", { "$max": [step as i64, "$step"] }] }, LIMIT as i64] },
        ]},
    }
}

/// `max += max(step, $step)` on a well-formed segment counter; any other
/// document is left as it is.
pub(crate) fn take_pipeline(step: u64) -> Vec<Document> {
    let advanced =
        doc! { "max": { "$toLong": { "$add": ["$max", { "$max": [step as i64, "$step"] }] } } };
    vec![doc! { "$replaceWith": {
        "$cond": [
            well_formed::<SegmentKind>(),
            { "$mergeObjects": ["$$ROOT", advanced] },
            "$$ROOT",
        ],
    }}]
}

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
