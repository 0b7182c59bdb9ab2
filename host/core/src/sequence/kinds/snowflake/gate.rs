//! The gate of a counter's worker leases: the one document every claim and
//! renewal of a worker lease first records its time reservation in, so
//! that one write, a change of stripes sealing that document, bounds every
//! time unit any holder may ever issue under it.
//!
//! - An unstriped counter's gate is its own document: `reserved`, the last
//!   time unit any holder of one of its worker ids may issue, raised with
//!   `$max` while the document is still a snowflake counter's. Striping the
//!   counter turns the document into a map (its `kind` changes), after
//!   which no raise matches, and the map's base is that `reserved`.
//! - A striped counter's lane is the gate of the worker ids of its residue
//!   class (`worker % m == r`): its `last` is raised while the lane is
//!   live (the filter the striping module gives), and its holders issue
//!   only above the lane's generation's floor `b`, the highest time any
//!   lane before it reserved.
//!
//! A claim raises the gate to the time it will reserve, then reserves no
//! more than the gate holds; a renewal raises it before it extends the
//! lease. A raise that matches nothing means the gate is sealed: the
//! holder stops at the reservation it has, which the seal counted.
//!
//! A lane of a counter across deployments has a ceiling (`ceiling`, a time
//! unit): its `last` is raised only up to it, so every time unit its
//! holders may issue is at or below a ceiling another deployment recorded
//! first, which `--forget` starts above. A raise that would pass it raises
//! the ceiling first ([`GateCeiling`]), [`GATE_CEILING_CHUNK_MS`] ahead, and
//! a raise that leaves less than half of that below it raises it too.

use mongodb::bson::{doc, Bson, Document};
use mongodb::options::ReturnDocument;
use mongodb::Collection;

use crate::mongo::durable_write_concern;
use crate::sequence::error::striping;
use crate::sequence::kind_trait::MAX_VALUE;
use crate::sequence::lane_ceiling::LaneCeiling;
use crate::sequence::striping::counting::CEILING;
use crate::sequence::striping::StripingError;
use crate::sequence::{CounterName, SequenceError};

/// The `kind` of an unstriped snowflake counter's document (the kind's
/// name: `mod.rs` names this file's users, which may not name it back).
const COUNTER_KIND: &str = "snowflake";

/// Where a holder's reservations are recorded first (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub enum Gate {
    /// An unstriped counter's own document.
    Counter,
    /// One lane of a striped counter.
    Lane(LaneGate),
}

/// How far above a lane's `last` a raise of its ceiling puts it: ten
/// minutes of time units. While no other deployment answers, the holders
/// of a lane of a counter across deployments issue for five to ten
/// minutes after its last raise, then stop as at a lost lease.
pub const GATE_CEILING_CHUNK_MS: u64 = 600_000;

/// A lane gate's ceiling: what raises it, and by how many time units.
#[derive(Debug, Clone, PartialEq)]
pub struct GateCeiling {
    /// What raises it (the striping module's).
    pub raise: LaneCeiling,
    /// How many time units above `last` a raise puts it.
    pub chunk: u64,
}

/// A lane as the gate of its worker ids.
#[derive(Debug, Clone, PartialEq)]
pub struct LaneGate {
    /// The filter that matches the lane while it is live (the striping
    /// module's), `_id` included.
    pub live: Document,
    /// Its worker ids are those `residue` modulo `modulus`.
    pub residue: u64,
    /// The number of lanes of its generation.
    pub modulus: u64,
    /// Its generation's floor: its holders issue only above it.
    pub floor: u64,
    /// Its ceiling, across deployments (none: it has none).
    pub ceiling: Option<GateCeiling>,
}

impl Gate {
    /// Whether a holder under this gate may lease `worker`.
    pub(crate) fn owns(&self, worker: u64) -> bool {
        match self {
            Gate::Counter => true,
            Gate::Lane(lane) => worker % lane.modulus == lane.residue,
        }
    }

    /// The first time unit a holder under this gate may issue.
    pub(crate) fn first_unit(&self) -> u64 {
        match self {
            Gate::Counter => 0,
            Gate::Lane(lane) => lane.floor + 1,
        }
    }

    /// Records that a holder may issue up to time unit `until`; the gate's
    /// reservation after (at least `until`), or `None` when it is sealed
    /// (a counter striped since, a lane sealed by a change of stripes).
    pub(crate) async fn raise(
        &self,
        counters: &Collection<Document>,
        name: &CounterName,
        until: u64,
    ) -> Result<Option<u64>, SequenceError> {
        let (filter, field) = match self {
            Gate::Counter => (
                doc! { "_id": name.as_str(), "kind": COUNTER_KIND },
                "reserved",
            ),
            Gate::Lane(lane) => (lane.live.clone(), "last"),
        };
        let ceiling = match self {
            Gate::Lane(LaneGate {
                ceiling: Some(ceiling),
                ..
            }) => ceiling,
            _ => {
                let after = raise_to(counters, name, filter, field, until).await?;
                return Ok(after.map(|after| reserved_in(&after, field, until)));
            }
        };
        let lane = || filter.get_str("_id").unwrap_or_default().to_string();
        let mut at = until;
        // At most one raise of the ceiling: a second refusal is another
        // process's doing, or a lane changed meanwhile.
        for raised in [false, true] {
            let bounded = doc! { "$and": [filter.clone(), under_ceiling(until)] };
            if let Some(after) = raise_to(counters, name, bounded, field, until).await? {
                let reserved = reserved_in(&after, field, until);
                if let Some(top) = ceiling_in(&after) {
                    if top.saturating_sub(reserved) < ceiling.chunk / 2 {
                        // Ahead of need: a failure is the next raise's.
                        let _ = ceiling.raise.raise(reserved + ceiling.chunk).await;
                    }
                }
                return Ok(Some(reserved));
            }
            // Sealed (the holder stops), or at its ceiling.
            let Some(top) = read_ceiling(counters, name, &filter).await? else {
                return Ok(None);
            };
            let Some(top) = top.filter(|top| *top < until) else {
                continue;
            };
            at = top;
            if raised {
                break;
            }
            let to = until.max(top).saturating_add(ceiling.chunk);
            if let Err(why) = ceiling.raise.raise(to).await {
                return Err(striping(
                    name,
                    StripingError::CeilingNotRaised {
                        lane: lane(),
                        ceiling: top,
                        why,
                    },
                ));
            }
        }
        Err(striping(
            name,
            StripingError::AtCeiling {
                lane: lane(),
                ceiling: at,
            },
        ))
    }
}

/// Raises `field` of the document `filter` matches to `until` (`$max`,
/// durable): the document after, or `None` when nothing matched.
async fn raise_to(
    counters: &Collection<Document>,
    name: &CounterName,
    filter: Document,
    field: &str,
    until: u64,
) -> Result<Option<Document>, SequenceError> {
    let until = until as i64;
    let update = vec![doc! { "$set": { field: { "$toLong": {
        "$max": [{ "$ifNull": [format!("${field}"), 0_i64] }, until],
    }}}}];
    counters
        .find_one_and_update(filter, update)
        .return_document(ReturnDocument::After)
        .write_concern(durable_write_concern())
        .await
        .map_err(|source| {
            SequenceError::from_database(name, "reserve time for", "find and update", source)
        })
}

/// The gate's reservation in `after`, the gate's document after a raise
/// of `field` to `until`: at least `until`.
fn reserved_in(after: &Document, field: &str, until: u64) -> u64 {
    match after.get(field) {
        Some(Bson::Int64(reserved)) => (*reserved).max(until as i64) as u64,
        _ => until,
    }
}

/// A lane's ceiling, if it has one.
fn ceiling_in(lane: &Document) -> Option<u64> {
    match lane.get(CEILING) {
        Some(Bson::Int64(ceiling)) => Some((*ceiling).max(0) as u64),
        Some(Bson::Int32(ceiling)) => Some(i64::from(*ceiling).max(0) as u64),
        _ => None,
    }
}

/// The filter term that keeps a lane's `last` at or below its ceiling
/// after a raise to `until` (true when it has none).
fn under_ceiling(until: u64) -> Document {
    doc! { "$expr": { "$lte": [
        until as i64,
        { "$ifNull": [format!("${CEILING}"), MAX_VALUE as i64] },
    ]}}
}

/// The ceiling of the live lane `live` matches: `None` when none matches
/// (sealed, or another generation's), `Some(None)` when it has none.
async fn read_ceiling(
    counters: &Collection<Document>,
    name: &CounterName,
    live: &Document,
) -> Result<Option<Option<u64>>, SequenceError> {
    let found = counters
        .find_one(live.clone())
        .await
        .map_err(|source| SequenceError::from_database(name, "read", "find", source))?;
    Ok(found.as_ref().map(ceiling_in))
}

#[cfg(test)]
mod tests {
    use crate::sequence::kind_trait::Kind;

    #[test]
    fn the_counter_gate_names_the_kind() {
        assert_eq!(super::COUNTER_KIND, super::super::SnowflakeKind::NAME);
    }
}
