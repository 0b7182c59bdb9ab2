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

use mongodb::bson::{doc, Bson, Document};
use mongodb::options::ReturnDocument;
use mongodb::Collection;

use crate::mongo::durable_write_concern;
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
        let until = until as i64;
        let (filter, field) = match self {
            Gate::Counter => (
                doc! { "_id": name.as_str(), "kind": COUNTER_KIND },
                "reserved",
            ),
            Gate::Lane(lane) => (lane.live.clone(), "last"),
        };
        let update = vec![doc! { "$set": { field: { "$toLong": {
            "$max": [{ "$ifNull": [format!("${field}"), 0_i64] }, until],
        }}}}];
        let after = counters
            .find_one_and_update(filter, update)
            .return_document(ReturnDocument::After)
            .write_concern(durable_write_concern())
            .await
            .map_err(|source| {
                SequenceError::from_database(name, "reserve time for", "find and update", source)
            })?;
        Ok(after.map(|after| match after.get(field) {
            Some(Bson::Int64(reserved)) => (*reserved).max(until) as u64,
            _ => until as u64,
        }))
    }
}

#[cfg(test)]
mod tests {
    use crate::sequence::kind_trait::Kind;

    #[test]
    fn the_counter_gate_names_the_kind() {
        assert_eq!(super::COUNTER_KIND, super::super::SnowflakeKind::NAME);
    }
}
