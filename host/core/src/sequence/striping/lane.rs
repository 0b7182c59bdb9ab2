//! A lane of a striped counter: a document `_id: "NAME#r"` whose `kind` is
//! `lane` (so that no path that does not know lanes takes from it), with
//! its place in its generation, its local counter and its seal:
//!
//! ```text
//! { _id: "orders#2", kind: "lane",
//!   lane: { kind: "autoinc", generation: 1, b: 0, m: 4, r: 2 },
//!   seq: 3, last: 11, sealed: null, prefixes: [] }
//! ```
//!
//! `seq` is the lane's last local value (0: none yet) and `last` the value
//! it stands for, `b + (seq - 1) * m + r + 1` (`b` when none): a take
//! computes both on the server in one update ([`take_command`]), so that
//! whatever runs the command gets values, never local ones. `sealed` is
//! null while the lane is live; a change of stripes sets it
//! ([`seal_command`]), after which no take matches the lane. A lane owns
//! no prefix (`prefixes: []`): its counter owns them.
//!
//! [`read`] and [`guard`] are twins, as every counter's reader and guard
//! are: the take's filter holds only while the document is a well-formed,
//! live lane.

use mongodb::bson::{doc, Bson, Document};

use super::arithmetic::{Generation, Lane, MAX_LANES};
use crate::mongo::describe_value;
use crate::sequence::counter::fields::{integer_in, read_document, read_integer, read_string};
use crate::sequence::kind_trait::MAX_VALUE;

/// The `kind` of a lane document.
pub const LANE_KIND: &str = "lane";

/// A lane document, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneDocument {
    /// Its counter's kind.
    pub kind: String,
    /// The generation it belongs to.
    pub generation: u64,
    /// Its place in its generation.
    pub lane: Lane,
    /// Its last local value (0: none yet).
    pub seq: u64,
    /// The value `seq` stands for ([`Lane::high_water`]).
    pub last: u64,
    /// Whether it is sealed: no take matches it any more.
    pub sealed: bool,
}

impl LaneDocument {
    /// What it has handed out, in words, as `counter show` and the monitor
    /// page say it: "nothing handed out yet", or its local and last values,
    /// and whether it is sealed.
    pub fn describe(&self) -> String {
        let sealed = if self.sealed { ", sealed" } else { "" };
        if self.seq == 0 {
            format!("nothing handed out yet{sealed}")
        } else {
            format!("local value {}, last value {}{sealed}", self.seq, self.last)
        }
    }

    /// The values its last take of `count` handed out, in order, read from
    /// the lane after that take.
    pub fn taken(&self, count: u64) -> Vec<u64> {
        let modulus = self.lane.generation().modulus;
        (0..count)
            .map(|index| self.last - (count - 1 - index) * modulus)
            .collect()
    }
}

/// Reads a lane document, or says what is wrong with it.
pub fn read(document: &Document) -> Result<LaneDocument, String> {
    match document.get("kind") {
        Some(Bson::String(kind)) if kind == LANE_KIND => {}
        Some(other) => {
            return Err(format!(
                "kind is {}, not \"{LANE_KIND}\"",
                describe_value(other)
            ))
        }
        None => return Err(format!("kind is missing, not \"{LANE_KIND}\"")),
    }
    let place = read_document(document, "lane")?;
    let within = |reason: String| format!("lane.{reason}");
    let kind = read_string(place, "kind").map_err(within)?.to_string();
    let generation = read_integer(place, "generation", 1, MAX_VALUE).map_err(within)?;
    let base = read_integer(place, "b", 0, MAX_VALUE).map_err(within)?;
    let modulus = read_integer(place, "m", 1, MAX_LANES).map_err(within)?;
    let residue = read_integer(place, "r", 0, MAX_LANES - 1).map_err(within)?;
    let lane = Generation::new(base, modulus)
        .and_then(|generation| generation.lane(residue))
        .map_err(|error| format!("lane: {error}"))?;
    let seq = read_integer(document, "seq", 0, lane.capacity())?;
    let last = read_integer(document, "last", 0, MAX_VALUE)?;
    if last != lane.high_water(seq) {
        return Err(format!(
            "last is {last}, not {}, the value of its local value {seq}",
            lane.high_water(seq)
        ));
    }
    let sealed = match document.get("sealed") {
        Some(Bson::Null) => false,
        Some(Bson::Document(_)) => true,
        Some(other) => {
            return Err(format!(
                "sealed is {}, not null or a document",
                describe_value(other)
            ))
        }
        None => return Err("sealed is missing".to_string()),
    };
    Ok(LaneDocument {
        kind,
        generation,
        lane,
        seq,
        last,
        sealed,
    })
}

/// The server-side twin of [`read`] for a live lane of `kind`: true only
/// while the document is a well-formed lane of that kind and not sealed.
pub(crate) fn guard(kind: &str) -> Document {
    doc! { "$and": [
        { "$eq": ["$kind", LANE_KIND] },
        { "$eq": ["$lane.kind", kind] },
        integer_in("lane.generation", 1, MAX_VALUE),
        integer_in("lane.b", 0, MAX_VALUE),
        integer_in("lane.m", 1, MAX_LANES),
        integer_in("lane.r", 0, MAX_LANES - 1),
        { "$lt": ["$lane.r", "$lane.m"] },
        integer_in("seq", 0, MAX_VALUE),
        integer_in("last", 0, MAX_VALUE),
        { "$eq": ["$last", { "$cond": [
            { "$eq": ["$seq", 0] },
            "$lane.b",
            { "$add": ["$lane.b", { "$multiply": [{ "$subtract": ["$seq", 1] }, "$lane.m"] }, "$lane.r", 1] },
        ]}]},
        // Live: sealed is null (a missing one is malformed).
        { "$eq": [{ "$type": "$sealed" }, "null"] },
    ]}
}

/// The filter and update that take `count` values of lane `lane_id` of
/// kind `kind` in one `findAndModify` (returning the lane after): the
/// filter holds only for a well-formed live lane with `count` values left;
/// the update advances `seq` and sets `last` to the value of its new
/// local value, on the server.
pub(crate) fn take_command(lane_id: &str, kind: &str, count: u64) -> (Document, Vec<Document>) {
    let count = count as i64;
    let filter = doc! {
        "_id": lane_id,
        "$expr": { "$and": [
            guard(kind),
            { "$lte": ["$last", { "$subtract": [MAX_VALUE as i64, { "$multiply": [count, "$lane.m"] }] }] },
        ]},
    };
    let update = vec![doc! { "$set": {
        "seq": { "$toLong": { "$add": ["$seq", count] } },
        "last": { "$toLong": { "$add": [
            "$lane.b",
            { "$multiply": [{ "$add": ["$seq", count - 1] }, "$lane.m"] },
            "$lane.r",
            1,
        ]}},
    }}];
    (filter, update)
}

/// The filter and update that seal lane `lane_id` for the change of
/// stripes that claimed generation `claim` (a lane sealed already keeps
/// the time of its seal, and takes the new claim if it is the later): after it no take
/// matches the lane, the lane after the update says the last value it
/// handed out, and only that change writes a lane in its place
/// ([`claimed`]).
pub(crate) fn seal_command(lane_id: &str, claim: u64) -> (Document, Vec<Document>) {
    let filter = doc! { "_id": lane_id, "kind": LANE_KIND };
    let update = vec![doc! { "$set": {
        "sealed": {
            "at": { "$ifNull": ["$sealed.at", "$$NOW"] },
            // A later change's claim stays: only the latest change that
            // sealed a lane writes in its place.
            "claim": { "$max": [{ "$ifNull": ["$sealed.claim", 0_i64] }, claim as i64] },
        },
    }}];
    (filter, update)
}

/// The filter of lane `lane_id` sealed for the change that claimed
/// generation `claim`, and for no later one.
pub(crate) fn claimed(lane_id: &str, claim: u64) -> Document {
    doc! { "_id": lane_id, "kind": LANE_KIND, "sealed.claim": claim as i64 }
}

/// A lane `lane_id` that hands out nothing, sealed for the change that
/// claimed generation `claim`: what that change writes where it will
/// write a lane and none is, so that its seals cover every lane it writes.
pub(crate) fn placeholder(lane_id: &str, kind: &str, claim: u64, lane: Lane) -> Document {
    let mut document = new_lane(lane_id, kind, claim, lane);
    document.insert(
        "sealed",
        doc! { "at": mongodb::bson::DateTime::now(), "claim": claim as i64 },
    );
    document
}

/// The document of a new lane `lane_id` of kind `kind`: `lane` of
/// generation `generation`, nothing handed out yet.
pub(crate) fn new_lane(lane_id: &str, kind: &str, generation: u64, lane: Lane) -> Document {
    let Generation { base, modulus } = lane.generation();
    doc! {
        "_id": lane_id,
        "kind": LANE_KIND,
        "lane": {
            "kind": kind,
            "generation": generation as i64,
            "b": base as i64,
            "m": modulus as i64,
            "r": lane.residue() as i64,
        },
        "seq": 0_i64,
        "last": base as i64,
        "sealed": Bson::Null,
        // A lane owns no prefix: its counter owns them.
        "prefixes": [],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane_two() -> Lane {
        Generation::new(100, 4).unwrap().lane(2).unwrap()
    }

    #[test]
    fn a_new_lane_reads_back_live_and_empty() {
        let document = new_lane("orders#2", "autoinc", 3, lane_two());
        let read = read(&document).unwrap();
        assert_eq!(
            (read.generation, read.seq, read.last, read.sealed),
            (3, 0, 100, false)
        );
        assert_eq!(read.lane, lane_two());
    }

    #[test]
    fn a_take_hands_out_the_values_before_last() {
        let mut document = new_lane("orders#2", "autoinc", 1, lane_two());
        document.insert("seq", 3_i64);
        document.insert("last", lane_two().value(3).unwrap() as i64);
        let read = read(&document).unwrap();
        assert_eq!(read.taken(3), lane_two().values(1..=3).unwrap());
    }

    #[test]
    fn names_what_is_wrong() {
        let good = || new_lane("orders#2", "autoinc", 1, lane_two());
        let with = |key: &str, value: Bson| {
            let mut document = good();
            document.insert(key, value);
            document
        };
        for (document, needle) in [
            (
                with("kind", Bson::String("autoinc".into())),
                "kind is the string \"autoinc\", not \"lane\"",
            ),
            (with("last", Bson::Int64(7)), "last is 7, not 100"),
            (
                with("sealed", Bson::Boolean(true)),
                "sealed is the boolean true",
            ),
            (with("seq", Bson::Int64(-1)), "seq is -1"),
            (
                with(
                    "lane",
                    Bson::Document(
                        doc! { "kind": "autoinc", "generation": 1, "b": 0, "m": 2, "r": 2 },
                    ),
                ),
                "lane 2 does not exist",
            ),
        ] {
            let error = read(&document).unwrap_err();
            assert!(error.contains(needle), "{document}: {error}");
        }
        let mut missing = good();
        missing.remove("sealed");
        assert_eq!(read(&missing).unwrap_err(), "sealed is missing");
        let mut sealed = good();
        sealed.insert("sealed", doc! { "at": 1 });
        assert!(read(&sealed).unwrap().sealed);
    }
}
