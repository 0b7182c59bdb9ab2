//! A lane of a striped counter: a document `_id: "NAME#r"` whose `kind` is
//! `lane` (so that no path that does not know lanes takes from it), with
//! its place in its generation (`lane: { kind, generation, b, m, r }`, its
//! counter's kind first), its local counter (its kind's fields: the kind's
//! `kinds/<kind>/lanes.rs` says what they are), `last`, the value its last
//! local value stands for, and its seal. A counting lane
//! (`counting.rs`), an autoinc counter's:
//!
//! ```text
//! { _id: "orders#2", kind: "lane",
//!   lane: { kind: "autoinc", generation: 1, b: 0, m: 4, r: 2 },
//!   seq: 3, last: 11, sealed: null, prefixes: [] }
//! ```
//!
//! A take computes the local value and the value it stands for on the
//! server in one update ([`take_command`]), so that whatever runs the
//! command gets values, never local ones. `sealed` is null while the lane
//! is live; a change of stripes sets it ([`seal_command`]), after which no
//! take matches the lane. A lane owns no prefix (`prefixes: []`): its
//! counter owns them.
//!
//! [`read`] and [`guard`] are twins, as every counter's reader and guard
//! are: the take's filter holds only while the document is a well-formed,
//! live lane.

use std::sync::LazyLock;

use mongodb::bson::{doc, Bson, Document};

pub use super::arithmetic::Mark;
use super::arithmetic::{Generation, Lane, MAX_LANES};
pub(crate) use super::counting::CEILING;
pub use super::counting::CEILING_CHUNK;
use super::error::StripingError;
use crate::mongo::describe_value;
use crate::parts::Stamp;
use crate::sequence::counter::fields::{integer_in, read_document, read_integer, read_string};
use crate::sequence::error::{striping, SequenceError};
use crate::sequence::identity::Incarnation;
use crate::sequence::kind_trait::MAX_VALUE;
use crate::sequence::kinds;
pub use crate::sequence::lane_kind::LANE_KIND;
use crate::sequence::lane_kind::{KindLanes, LaneOf, Local};
use crate::sequence::name::CounterName;

/// The names of the kinds whose counters can be striped: those whose
/// folder says what their lanes are (`kinds/<kind>/lanes.rs`). Iterate it,
/// or use it as the slice of their names.
pub const STRIPABLE: StripableKinds = StripableKinds;

/// The names of the kinds whose counters can be striped ([`STRIPABLE`]).
#[derive(Debug, Clone, Copy)]
pub struct StripableKinds;

impl StripableKinds {
    /// Their names, in the order the registry lists them.
    pub fn names(self) -> &'static [&'static str] {
        static NAMES: LazyLock<Vec<&'static str>> = LazyLock::new(kinds::stripable_names);
        NAMES.as_slice()
    }
}

impl std::ops::Deref for StripableKinds {
    type Target = [&'static str];

    fn deref(&self) -> &[&'static str] {
        self.names()
    }
}

impl IntoIterator for StripableKinds {
    type Item = &'static &'static str;
    type IntoIter = std::slice::Iter<'static, &'static str>;

    fn into_iter(self) -> Self::IntoIter {
        self.names().iter()
    }
}

/// What the lanes of a counter of kind `kind` whose own fields (an
/// unstriped counter's document, or its map's) are `fields` are made of,
/// or why it has none.
pub fn lanes_of(kind: &str, fields: &Document) -> Result<LaneOf, String> {
    match kinds::lanes(kind) {
        Some(lanes) => lanes.of(fields),
        None => Err(format!("{kind} counters cannot be striped")),
    }
}

/// A lane document, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneDocument {
    /// Its counter's kind.
    pub kind: String,
    /// The generation it belongs to.
    pub generation: u64,
    /// Its place in its generation.
    pub lane: Lane,
    /// Its local counter, its kind's.
    pub local: Local,
    /// The value its last local value stands for (a counting lane's
    /// [`Lane::high_water`]; a cyclic lane's `r + val * m`).
    pub last: u64,
    /// Whether it is sealed: no take matches it any more.
    pub sealed: bool,
    /// The highest value it may hand out (counting lanes of a counter
    /// across deployments: a value another deployment recorded first, its
    /// `ceiling` field); none: no bound.
    pub ceiling: Option<u64>,
}

impl LaneDocument {
    /// Its last local value, as `counter show` says it.
    pub fn local_value(&self) -> u64 {
        self.local.value()
    }

    /// What it has handed out, in words, as `counter show` and the monitor
    /// page say it: "nothing handed out yet", or its kind's words (its
    /// local and last values), and whether it is sealed.
    pub fn describe(&self) -> String {
        let sealed = if self.sealed { ", sealed" } else { "" };
        if self.local.untouched(self.lane) {
            return format!("nothing handed out yet{sealed}");
        }
        format!("{}{sealed}", self.local.describe(self.lane, self.last))
    }

    /// The highest mark of what it handed out, which the next generation
    /// starts above.
    pub fn high_water(&self) -> Mark {
        self.local.high_water(self.last)
    }

    /// What its last take of `count` handed out, in order, read from the
    /// lane after that take.
    pub fn taken(&self, count: u64, client_micros: u64) -> Vec<Stamp> {
        self.local.taken(self.lane, self.last, count, client_micros)
    }

    /// How many more values a take may ask for (none: it never runs out).
    pub fn room(&self) -> Option<u64> {
        self.local.room(self.lane, self.last)
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
    let Some(lanes) = kinds::lanes(&kind) else {
        return Err(format!(
            "lane.kind is {kind:?}, a kind whose counters cannot be striped"
        ));
    };
    let generation = read_integer(place, "generation", 1, MAX_VALUE).map_err(within)?;
    let base = read_integer(place, "b", 0, MAX_VALUE).map_err(within)?;
    let modulus = read_integer(place, "m", 1, MAX_LANES).map_err(within)?;
    let residue = read_integer(place, "r", 0, MAX_LANES - 1).map_err(within)?;
    let lane = Generation::new(base, modulus)
        .and_then(|generation| generation.lane(residue))
        .map_err(|error| format!("lane: {error}"))?;
    let last = read_integer(document, "last", 0, MAX_VALUE)?;
    let (local, expected) = lanes.read_local(document, place, lane)?;
    if last != expected {
        return Err(format!(
            "last is {last}, not {expected}, the value of its local value {}",
            local.value()
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
    let ceiling = match document.get(CEILING) {
        None | Some(Bson::Null) => None,
        Some(_) => Some(read_integer(document, CEILING, 0, MAX_VALUE)?),
    };
    Ok(LaneDocument {
        kind,
        generation,
        lane,
        local,
        last,
        sealed,
        ceiling,
    })
}

/// The error of lane `id` of counter `name`, which is malformed: `reason`.
pub(crate) fn corrupt_lane(id: &str, reason: String, name: &CounterName) -> SequenceError {
    striping(
        name,
        StripingError::CorruptLane {
            lane: id.to_string(),
            reason,
        },
    )
}

/// The server-side twin of [`read`] for a live lane of the kind whose
/// lanes are `lanes`: true only while the document is a well-formed lane of
/// that kind and not sealed.
pub(crate) fn guard(lanes: &dyn KindLanes) -> Document {
    let mut terms = vec![
        Bson::Document(doc! { "$eq": ["$kind", LANE_KIND] }),
        Bson::Document(doc! { "$eq": ["$lane.kind", lanes.name()] }),
        integer_in("lane.generation", 1, MAX_VALUE),
        integer_in("lane.b", 0, MAX_VALUE),
        integer_in("lane.m", 1, MAX_LANES),
        integer_in("lane.r", 0, MAX_LANES - 1),
        Bson::Document(doc! { "$lt": ["$lane.r", "$lane.m"] }),
        integer_in("last", 0, MAX_VALUE),
    ];
    terms.extend(lanes.guard_terms());
    // Live: sealed is null (a missing one is malformed).
    terms.push(Bson::Document(
        doc! { "$eq": [{ "$type": "$sealed" }, "null"] },
    ));
    doc! { "$and": terms }
}

/// The filter and update that take `count` values of lane `lane_id` of a
/// counter whose lanes are `of` in one `findAndModify` (returning the lane
/// after): the filter holds only for a well-formed live lane with `count`
/// values left (its kind says how: `kinds/<kind>/lanes.rs`); the update
/// advances the local counter and sets `last` to the value of its new
/// local value, on the server. A cyclic lane's timestamp is never below
/// `client_micros` (a long, or an expression of the server's clock).
pub(crate) fn take_command(
    lane_id: &str,
    of: &LaneOf,
    count: u64,
    client_micros: Bson,
) -> (Document, Vec<Document>) {
    of.take_command(lane_id, count, client_micros, guard(of.lanes()))
}

/// How far above where a lane stands a raise of its ceiling puts it, for
/// a take of `count` from a generation of `modulus` lanes: a counting
/// lane's [`CEILING_CHUNK`] local values (`m` apart), or more for a take of
/// more (its kind says how many, e.g. a segment lane's 64 segments), a
/// cyclic lane's five minutes; so one pair of writes per chunk, none per value.
pub(crate) fn ceiling_chunk(of: &LaneOf, count: u64, modulus: u64) -> u64 {
    of.ceiling_chunk(count, modulus)
}

/// The field of a lane that says whose it is: its counter's incarnation
/// (`sequence/identity.rs`), in its place.
pub(crate) const LANE_INCARNATION: &str = "lane.incarnation";

/// Marks `lane`, a lane document a change of stripes writes, as counter
/// `incarnation`'s (none: a counter made before incarnations, whose lanes
/// carry none).
pub(crate) fn owned_by(mut lane: Document, incarnation: Option<&Incarnation>) -> Document {
    if let (Some(incarnation), Ok(place)) = (incarnation, lane.get_document_mut("lane")) {
        place.insert("incarnation", incarnation);
    }
    lane
}

/// Narrows `filter`, a take's or a gate's of a lane, to a lane of counter
/// `incarnation`: a lane of another counter of the same name (made again
/// since, or in another deployment) matches nothing. A lane written before
/// incarnations (none) is its counter's still: a counter given its
/// incarnation late has such lanes until its next change of stripes.
pub(crate) fn of_counter(filter: &mut Document, incarnation: Option<&Incarnation>) {
    filter.insert(
        LANE_INCARNATION,
        crate::sequence::identity::its_own_or_unmarked(incarnation),
    );
}

/// The filter that matches lane `lane_id`, of the kind whose lanes are
/// `lanes`, while it is live and of generation `generation` above `base`:
/// what a lease held in it checks (a snowflake lane is the gate its
/// holders raise, `kinds/snowflake/gate.rs`).
pub(crate) fn live_lane(
    lane_id: &str,
    lanes: &dyn KindLanes,
    generation: u64,
    base: u64,
) -> Document {
    doc! {
        "_id": lane_id,
        "lane.generation": generation as i64,
        "lane.b": base as i64,
        "$expr": guard(lanes),
    }
}

/// The filter that matches lane `lane_id` (`lane`, of generation
/// `generation`) while it is unsealed in that place: what a give-back of
/// a run taken from it narrows (`counting.rs`).
pub(crate) fn unsealed_in_place(lane_id: &str, lane: Lane, generation: u64) -> Document {
    let place = lane.generation();
    doc! {
        "_id": lane_id,
        "kind": LANE_KIND,
        "lane.generation": generation as i64,
        "lane.b": place.base as i64,
        "lane.m": place.modulus as i64,
        "lane.r": lane.residue() as i64,
        "sealed": { "$type": "null" },
    }
}

/// What a handle learnt of a lane from its last take (the short guard):
/// the fields no take changes, exactly as the lane held them then. A take
/// of a lane it knows filters on those by equality, and on its moving
/// fields' types and bounds (its kind says which), with plain query
/// operators instead of the full guard's expression, which the server
/// evaluates on every take; a lane changed since (sealed, rewritten by a
/// change of stripes, edited) matches nothing, and its next take sends the
/// full guard.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KnownLane {
    lane: Lane,
    /// `lane` (the place, generation included), `prefixes`, and the
    /// kind's own fields no take changes (a cyclic lane's `maxval`), as
    /// read.
    fixed: Document,
    /// Its local counter as read.
    local: Local,
    /// Its ceiling ([`CEILING`]) as read (none: it has none; a lane gets
    /// one only when a change of stripes writes it, with a new place).
    ceiling: Option<u64>,
}

impl KnownLane {
    /// What `document`, a live lane just read well formed as `read`,
    /// tells of it (none if a field is not where a take left it).
    pub(crate) fn of(document: &Document, read: &LaneDocument) -> Option<Self> {
        if read.sealed {
            return None;
        }
        let mut fixed = doc! {
            "lane": document.get_document("lane").ok()?.clone(),
            "prefixes": document.get_array("prefixes").ok()?.clone(),
        };
        fixed.extend(read.local.fixed_fields(document)?);
        Some(Self {
            lane: read.lane,
            fixed,
            local: read.local.clone(),
            ceiling: read.ceiling,
        })
    }

    /// The short filter of a take of `count` at `client_micros` from lane
    /// `lane_id` (the update is the full take's), or none when the lane has not `count`
    /// values left whatever its local value.
    pub(crate) fn filter(&self, lane_id: &str, count: u64, client_micros: u64) -> Option<Document> {
        let mut filter = doc! { "_id": lane_id, "kind": LANE_KIND };
        filter.extend(self.fixed.clone());
        filter.insert("sealed", doc! { "$type": "null" });
        self.local
            .short_filter(self.lane, self.ceiling, count, client_micros, &mut filter)?;
        Some(filter)
    }
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
pub(crate) fn placeholder(lane_id: &str, of: &LaneOf, claim: u64, lane: Lane) -> Document {
    let mut document = new_lane(lane_id, of, claim, lane, None);
    document.insert(
        "sealed",
        doc! { "at": mongodb::bson::DateTime::now(), "claim": claim as i64 },
    );
    document
}

/// The document of a new lane `lane_id` of a counter whose lanes are
/// `of`: `lane` of generation `generation`, nothing handed out yet (a
/// periodic lane's base counts in `base_period`, none: no period yet). (A
/// cyclic lane's residue is within its counter's cycle: see
/// [`LaneOf::check_lanes`].)
pub(crate) fn new_lane(
    lane_id: &str,
    of: &LaneOf,
    generation: u64,
    lane: Lane,
    base_period: Option<&str>,
) -> Document {
    let Generation { base, modulus } = lane.generation();
    let mut place = doc! {
        "kind": of.kind(),
        "generation": generation as i64,
        "b": base as i64,
        "m": modulus as i64,
        "r": lane.residue() as i64,
    };
    let fields = of.new_lane(lane, base_period, &mut place);
    let mut document = doc! { "_id": lane_id, "kind": LANE_KIND, "lane": place };
    document.extend(fields);
    document.insert("sealed", Bson::Null);
    // A lane owns no prefix: its counter owns them.
    document.insert("prefixes", Bson::Array(Vec::new()));
    document
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sequence::striping::counting::under_ceiling;

    fn autoinc() -> LaneOf {
        lanes_of("autoinc", &doc! {}).unwrap()
    }

    fn cyclic(top: i64) -> LaneOf {
        lanes_of("cyclic", &doc! { "maxval": top }).unwrap()
    }

    fn lane_two() -> Lane {
        Generation::new(100, 4).unwrap().lane(2).unwrap()
    }

    #[test]
    fn a_new_lane_reads_back_live_and_empty() {
        let document = new_lane("orders#2", &autoinc(), 3, lane_two(), None);
        let read = read(&document).unwrap();
        assert_eq!(
            (read.generation, read.local_value(), read.last, read.sealed),
            (3, 0, 100, false)
        );
        assert_eq!(read.lane, lane_two());
        assert_eq!(read.describe(), "nothing handed out yet");
    }

    #[test]
    fn a_take_hands_out_the_values_before_last() {
        let mut document = new_lane("orders#2", &autoinc(), 1, lane_two(), None);
        document.insert("seq", 3_i64);
        document.insert("last", lane_two().value(3).unwrap() as i64);
        let read = read(&document).unwrap();
        let values: Vec<u64> = read.taken(3, 7).iter().map(|s| s.sequence).collect();
        assert_eq!(values, lane_two().values(1..=3).unwrap());
    }

    #[test]
    fn a_new_cyclic_lane_is_at_the_end_of_its_cycle_at_its_floor() {
        // 0..=9 over 4 lanes: lane 2 hands out 2 and 6 (local 0 and 1).
        let of = cyclic(9);
        let document = new_lane("serial#2", &of, 1, lane_two(), None);
        let read = read(&document).unwrap();
        assert_eq!(
            (
                read.local_value(),
                document.get_i64("maxval").unwrap(),
                document.get_i64("ts").unwrap()
            ),
            (1, 1, 100)
        );
        assert_eq!((read.last, read.high_water()), (6, Mark::of(100)));
        assert_eq!(read.describe(), "nothing handed out yet");
        // Its lanes cover the cycle, each value once.
        let mut values: Vec<u64> = (0..4)
            .flat_map(|r| {
                let maxval = (9 - r) / 4;
                (0..=maxval).map(move |k| r + k * 4)
            })
            .collect();
        values.sort_unstable();
        assert_eq!(values, (0..=9).collect::<Vec<_>>());
        assert!(of.check_lanes(10).is_ok() && of.check_lanes(11).is_err());
    }

    #[test]
    fn a_cyclic_take_unfolds_its_pairs_through_the_residue() {
        let mut document = new_lane("serial#2", &cyclic(9), 1, lane_two(), None);
        // Three values from the new lane at client time 500: (500, 2),
        // (500, 6), then a wrap: (501, 2).
        document.insert("val", 0_i64);
        document.insert("ts", 501_i64);
        document.insert("last", 2_i64);
        let read = read(&document).unwrap();
        let pairs: Vec<(u64, u64)> = read
            .taken(3, 0)
            .iter()
            .map(|s| (s.timestamp_micros, s.sequence))
            .collect();
        assert_eq!(pairs, [(500, 2), (500, 6), (501, 2)]);
        assert_eq!(read.room(), None);
    }

    #[test]
    fn a_lane_with_a_ceiling_is_taken_from_up_to_it_only() {
        let mut document = new_lane("orders#2", &autoinc(), 1, lane_two(), None);
        // No ceiling: unbounded, and the short filter says so.
        let read_plain = read(&document).unwrap();
        assert_eq!(read_plain.ceiling, None);
        let known = KnownLane::of(&document, &read_plain).unwrap();
        let short = known.filter("orders#2", 3, 0).unwrap();
        assert_eq!(
            short.get_document(CEILING).unwrap(),
            &doc! { "$exists": false }
        );
        // A ceiling: read, and in both filters, `count * m` above `last`.
        document.insert(CEILING, 112_i64);
        let bounded = read(&document).unwrap();
        assert_eq!(bounded.ceiling, Some(112));
        let known = KnownLane::of(&document, &bounded).unwrap();
        // Lane 2 of 4 above 100: 103, 107, 111, then 115 > 112.
        let short = known.filter("orders#2", 3, 0).unwrap();
        assert_eq!(short.get_i64(CEILING).unwrap(), 112);
        assert_eq!(
            short.get_document("seq").unwrap().get_i64("$lte").unwrap(),
            0
        );
        assert!(known.filter("orders#2", 4, 0).is_none());
        assert!(!short.contains_key("$expr"));
        let (full, _) = take_command("orders#2", &autoinc(), 3, Bson::Int64(0));
        let terms = full
            .get_document("$expr")
            .unwrap()
            .get_array("$and")
            .unwrap();
        assert_eq!(
            terms.last().unwrap(),
            &Bson::Document(under_ceiling(Bson::Document(
                doc! { "$multiply": [3_i64, "$lane.m"] }
            )))
        );
        // Not a number: malformed.
        document.insert(CEILING, "high");
        assert!(read(&document).unwrap_err().contains("ceiling"));
    }

    #[test]
    fn names_what_is_wrong() {
        let good = || new_lane("orders#2", &autoinc(), 1, lane_two(), None);
        let with = |key: &str, value: Bson| {
            let mut document = good();
            document.insert(key, value);
            document
        };
        let cyclic = |key: &str, value: Bson| {
            let mut document = new_lane("serial#2", &cyclic(9), 1, lane_two(), None);
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
            (cyclic("maxval", Bson::Int64(2)), "maxval is 2, not 1"),
            (cyclic("val", Bson::Int64(2)), "val is 2"),
            (cyclic("last", Bson::Int64(5)), "last is 5, not 6"),
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
