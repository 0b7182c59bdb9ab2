//! A counting lane: a lane whose local counter is how many values it
//! handed out, `seq`, each local value `k` standing for
//! `b + (k - 1) * m + r + 1` ([`Lane::value`]), so that its `last` is
//! [`Lane::high_water`] of its `seq`. The lanes of the kinds that count
//! (autoinc, segment) are such lanes; this file is what they share, knowing
//! no kind:
//!
//! ```text
//! { _id: "orders#2", kind: "lane",
//!   lane: { kind: "autoinc", generation: 1, b: 0, m: 4, r: 2 },
//!   seq: 3, last: 11, sealed: null, prefixes: [] }
//! ```
//!
//! A counting lane of a counter across deployments may have a ceiling
//! ([`CEILING`]), which its takes stop at.

use mongodb::bson::{doc, Bson, Document};

use super::arithmetic::{Generation, Lane};
use crate::parts::Stamp;
use crate::sequence::counter::fields::{integer_in, read_integer};
use crate::sequence::kind_trait::MAX_VALUE;

/// The field of a counting lane that bounds what it hands out: its takes
/// stop at it (`last + count * m <= ceiling`) until it is raised, which is
/// done only once a deployment other than the lane's recorded a ceiling at
/// least as high (`ceilings.rs`). A lane without one (in
/// one deployment, or written by an idmint before ceilings) is not
/// bounded.
pub(crate) const CEILING: &str = "ceiling";

/// The field of a periodic lane that bounds the periods it hands out in
/// (a label, `""`: none yet): its takes stay in periods at or before it,
/// and at or below [`CEILING`] in any.
pub(crate) const CEILING_PERIOD: &str = "ceiling_period";

/// The fewest local values of a lane a raise of its ceiling allows above
/// its `last`: what a lane may hand out while no other deployment answers
/// is half of it at least (a taker raises it ahead once less than half is
/// left), all of it at most.
pub const CEILING_CHUNK: u64 = 65_536;

/// Reads a counting lane's `seq` in `document`, lane `lane`: it and the
/// value its `last` must be, or what is wrong.
pub(crate) fn read(document: &Document, lane: Lane) -> Result<(u64, u64), String> {
    let seq = read_integer(document, "seq", 0, lane.capacity())?;
    Ok((seq, lane.high_water(seq)))
}

/// The server-side twin of [`read`].
pub(crate) fn guard_terms() -> Vec<Bson> {
    vec![
        integer_in("seq", 0, MAX_VALUE),
        Bson::Document(doc! { "$eq": ["$last", { "$cond": [
            { "$eq": ["$seq", 0] },
            "$lane.b",
            { "$add": ["$lane.b", { "$multiply": [{ "$subtract": ["$seq", 1] }, "$lane.m"] }, "$lane.r", 1] },
        ]}]}),
    ]
}

/// The filter and update that take `count` values of counting lane
/// `lane_id`, whose full guard is `guard`, in one `findAndModify`: the
/// filter holds only for a well-formed live lane with `count` values left
/// at or below `largest` and at or below its ceiling, if it has one.
pub(crate) fn take_command(
    lane_id: &str,
    count: u64,
    guard: Document,
    largest: u64,
) -> (Document, Vec<Document>) {
    let count = count as i64;
    let filter = doc! {
        "_id": lane_id,
        "$expr": { "$and": [
            guard,
            { "$lte": ["$last", { "$subtract": [largest as i64, { "$multiply": [count, "$lane.m"] }] }] },
            under_ceiling(Bson::Document(doc! { "$multiply": [count, "$lane.m"] })),
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

/// The take's term that keeps it at or below the lane's ceiling, `span`
/// (an expression: `count * m`) above its `last`; true when the lane has
/// none.
pub(crate) fn under_ceiling(span: Bson) -> Document {
    doc! { "$lte": [
        { "$add": ["$last", span] },
        { "$ifNull": [format!("${CEILING}"), MAX_VALUE as i64] },
    ]}
}

/// Narrows `filter`, which matches a counting lane `lane` while it is live
/// in its place ([`super::lane::unsealed_in_place`]), to the lane whose
/// `seq` is still `to`, and returns the update that gives back its local
/// values `from..=to`, the last a taker took and did not hand out: its
/// `seq` goes back to `from - 1`. A lane taken from since, sealed or
/// rewritten matches nothing, and the values stay a gap; what a seal
/// counted stays counted.
pub(crate) fn give_back(filter: &mut Document, lane: Lane, from: u64, to: u64) -> Document {
    filter.insert("seq", to as i64);
    let seq = from.saturating_sub(1);
    doc! { "$set": {
        "seq": seq as i64,
        "last": lane.high_water(seq) as i64,
    }}
}

/// The fields of a new counting lane `lane`: nothing handed out yet.
pub(crate) fn new_lane(lane: Lane) -> Document {
    doc! { "seq": 0_i64, "last": lane.generation().base as i64 }
}

/// What a counting lane handed out, in words.
pub(crate) fn describe(seq: u64, last: u64) -> String {
    format!("local value {seq}, last value {last}")
}

/// The values a take of `count` from lane `lane` handed out, its `last`
/// being `last` after it: `count` values `m` apart up to `last`.
pub(crate) fn values(lane: Lane, last: u64, count: u64) -> impl Iterator<Item = u64> {
    let modulus = lane.generation().modulus;
    (0..count).map(move |index| last - (count - 1 - index) * modulus)
}

/// [`values`], each with `client_micros`.
pub(crate) fn taken(lane: Lane, last: u64, count: u64, client_micros: u64) -> Vec<Stamp> {
    values(lane, last, count)
        .map(|value| Stamp::new(client_micros, value))
        .collect()
}

/// How many more values a take from lane `lane` may ask for, its `last`
/// being `last` and its values at most `largest`.
pub(crate) fn room(lane: Lane, last: u64, largest: u64) -> u64 {
    largest.saturating_sub(last) / lane.generation().modulus
}

/// Narrows `filter`, the short filter of a take of `count` from counting
/// lane `lane` whose ceiling was `ceiling` (none: it has none), to its
/// local values up to `seq + count` existing and at or below the ceiling;
/// none when it has not `count` values left whatever its `seq`. A raise of
/// the ceiling changes it: a raised lane is taken with the full guard.
pub(crate) fn short_filter(
    lane: Lane,
    ceiling: Option<u64>,
    count: u64,
    filter: &mut Document,
) -> Option<()> {
    let mut most = lane.capacity().checked_sub(count)?;
    match ceiling {
        Some(ceiling) => {
            let below = local_values_up_to(lane, ceiling);
            most = most.min(below.checked_sub(count)?);
            filter.insert(CEILING, ceiling as i64);
        }
        None => {
            filter.insert(CEILING, doc! { "$exists": false });
        }
    }
    filter.insert(
        "seq",
        doc! { "$type": "long", "$gte": 0_i64, "$lte": most as i64 },
    );
    Some(())
}

/// How many of lane `lane`'s local values stand for values at or below
/// `ceiling`: `k` such that `b + (k - 1) * m + r + 1 <= ceiling`.
fn local_values_up_to(lane: Lane, ceiling: u64) -> u64 {
    let Generation { base, modulus } = lane.generation();
    match ceiling.checked_sub(base + lane.residue() + 1) {
        Some(above) => above / modulus + 1,
        None => 0,
    }
}
