//! A lane of a striped counter: a document `_id: "NAME#r"` whose `kind` is
//! `lane` (so that no path that does not know lanes takes from it), with
//! its place in its generation, its local counter and its seal. An autoinc
//! lane:
//!
//! ```text
//! { _id: "orders#2", kind: "lane",
//!   lane: { kind: "autoinc", generation: 1, b: 0, m: 4, r: 2 },
//!   seq: 3, last: 11, sealed: null, prefixes: [] }
//! ```
//!
//! `seq` is the lane's last local value (0: none yet) and `last` the value
//! it stands for, `b + (seq - 1) * m + r + 1` (`b` when none). A cyclic
//! lane is a cyclic counter over its residue class of its counter's cycle
//! `0..=top`:
//!
//! ```text
//! { _id: "serial#2", kind: "lane",
//!   lane: { kind: "cyclic", generation: 1, b: 1764000000000000, m: 4, r: 2, top: 99 },
//!   val: 3, maxval: 24, ts: 1764000000000123, last: 14, sealed: null, prefixes: [] }
//! ```
//!
//! Its local values `val` cycle `0..=maxval`, `maxval` being
//! `floor((top - r) / m)`, and stand for `last = r + val * m`: the lanes of
//! a generation hand out disjoint values, together the whole cycle. Its
//! `ts` moves as a cyclic counter's does, from `b`, the highest timestamp
//! the lanes it follows issued (a new lane's `val` is its `maxval`, so its
//! first take wraps and moves `ts` above `b`): each lane's (timestamp,
//! value) pairs strictly increase, and every pair of a generation is above
//! every pair of the one before.
//!
//! A periodic lane is an autoinc lane that starts again in each period of
//! its counter (`unit` and `zone`, as the counter's), decided by its own
//! server's clock as a periodic counter's is:
//!
//! ```text
//! { _id: "invoices#2", kind: "lane",
//!   lane: { kind: "periodic", generation: 1, b: 41, m: 4, r: 2,
//!           period: "year", zone: "UTC", base_period: "2026" },
//!   current: "2026", seq: 3, last: 52, sealed: null, prefixes: [] }
//! ```
//!
//! `current` is the period of its last value, `seq` the local value in
//! it. In `base_period`, the period its generation started in, its values
//! are above `b` as an autoinc lane's are; in every later one they start
//! again above 0: `last` is `(seq - 1) * m + r + 1`, plus `b` while
//! `current` is `base_period`. So the lanes of a generation hand out
//! disjoint values in every period, and a generation starts above the
//! highest (period, value) its lanes handed out, ordered by period first.
//!
//! A snowflake lane hands out no values: it is the gate of the worker ids
//! of its residue class (`worker % m == r`), leased in its deployment's
//! `workers` collection, and `last` is the last time unit any of their
//! holders may issue, raised before each claim and renewal of a lease
//! (`kinds/snowflake/gate.rs`); its holders issue only above `b`, the
//! highest `last` of the lanes before it:
//!
//! ```text
//! { _id: "ids#1", kind: "lane",
//!   lane: { kind: "snowflake", generation: 2, b: 90210, m: 2, r: 1 },
//!   last: 90377, sealed: null, prefixes: [] }
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

use mongodb::bson::{doc, Bson, Document};

pub use super::arithmetic::Mark;
use super::arithmetic::{Generation, Lane, MAX_LANES};
use super::map::StripeMap;
use crate::mongo::describe_value;
use crate::parts::Stamp;
use crate::parts::{Period, PeriodUnit};
use crate::sequence::counter::fields::{
    integer_in, read_document, read_integer, read_string, well_formed,
};
use crate::sequence::identity::Incarnation;
use crate::sequence::kind_trait::MAX_VALUE;
use crate::sequence::kinds::autoinc::AutoincKind;
use crate::sequence::kinds::cyclic::{
    closed_form, one_value, unfold_block, CyclicKind, MAX_MAXVAL,
};
use crate::sequence::kinds::periodic::{
    label_regex_of, now_label, read_label, zone_is_well_formed, PeriodicKind, ZONE_PATTERN,
};
use crate::sequence::kinds::segment::{SegmentKind, MAX_STEP};
use crate::sequence::kinds::snowflake::{SnowflakeKind, SnowflakeState};

/// The `kind` of a lane document.
pub const LANE_KIND: &str = "lane";

/// The `kind` of autoinc lanes.
const AUTOINC: &str = "autoinc";

/// The `kind` of cyclic lanes.
const CYCLIC: &str = "cyclic";

/// The `kind` of segment lanes: autoinc lanes whose takes are whole
/// segments, handed out from the taking process's memory.
const SEGMENT: &str = "segment";

/// The `kind` of periodic lanes.
const PERIODIC: &str = "periodic";

/// The `kind` of snowflake lanes.
const SNOWFLAKE: &str = "snowflake";

/// The kinds whose counters can be striped: those `LaneOf` makes lanes of.
pub const STRIPABLE: &[&str] = &[AUTOINC, SEGMENT, CYCLIC, PERIODIC, SNOWFLAKE];

/// A lane document, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneDocument {
    /// Its counter's kind.
    pub kind: String,
    /// The generation it belongs to.
    pub generation: u64,
    /// Its place in its generation.
    pub lane: Lane,
    /// Its local counter.
    pub local: Local,
    /// The value its last local value stands for (an autoinc lane's
    /// [`Lane::high_water`]; a cyclic lane's `r + val * m`).
    pub last: u64,
    /// Whether it is sealed: no take matches it any more.
    pub sealed: bool,
    /// The highest value it may hand out (autoinc and segment lanes of a
    /// counter across deployments: a value another deployment recorded
    /// first, its `ceiling` field); none: no bound.
    pub ceiling: Option<u64>,
}

/// A lane's local counter, by its counter's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Local {
    /// An autoinc lane's: its last local value (0: none yet).
    Autoinc {
        /// Its last local value.
        seq: u64,
    },
    /// A cyclic lane's: a cyclic counter over its residue class.
    Cyclic {
        /// Its last local value, `0..=maxval`.
        val: u64,
        /// Its cycle's last local value, `floor((top - r) / m)`.
        maxval: u64,
        /// The timestamp issued with `val` (`b`, the lane's floor, until
        /// its first take).
        ts: u64,
        /// The counter's cycle's last value.
        top: u64,
    },
    /// A periodic lane's: an autoinc lane's local value in `current`.
    Periodic {
        /// Its last local value in `current` (0: none yet).
        seq: u64,
        /// The period of its last value (none: it never handed one out
        /// and nor did the counter before it).
        current: Option<Period>,
        /// The period its generation's base counts in (none: no value was
        /// handed out before it): its values are above the base there,
        /// above 0 in every later period.
        base_period: Option<Period>,
    },
    /// A snowflake lane's: the last time unit its worker ids' holders may
    /// issue (its generation's floor `b` until the first claim).
    Snowflake {
        /// That time unit.
        reserved: u64,
    },
}

impl Local {
    /// The last local value: an autoinc or periodic lane's `seq`, a
    /// cyclic lane's `val`.
    pub fn value(self) -> u64 {
        match self {
            Local::Autoinc { seq } | Local::Periodic { seq, .. } => seq,
            Local::Cyclic { val, .. } => val,
            Local::Snowflake { reserved } => reserved,
        }
    }
}

impl LaneDocument {
    /// Its last local value, as `counter show` says it.
    pub fn local_value(&self) -> u64 {
        self.local.value()
    }

    /// Whether it has handed out nothing yet.
    fn untouched(&self) -> bool {
        match self.local {
            Local::Autoinc { seq } | Local::Periodic { seq, .. } => seq == 0,
            Local::Cyclic { ts, .. } => ts == self.lane.generation().base,
            Local::Snowflake { reserved } => reserved == self.lane.generation().base,
        }
    }

    /// What it has handed out, in words, as `counter show` and the monitor
    /// page say it: "nothing handed out yet", or its local and last values
    /// (and a cyclic lane's timestamp), and whether it is sealed.
    pub fn describe(&self) -> String {
        let sealed = if self.sealed { ", sealed" } else { "" };
        if self.untouched() {
            return format!("nothing handed out yet{sealed}");
        }
        match self.local {
            Local::Autoinc { seq } => {
                format!("local value {seq}, last value {}{sealed}", self.last)
            }
            Local::Cyclic {
                val, maxval, ts, ..
            } => format!(
                "local value {val} of 0..={maxval}, last value {} at {}{sealed}",
                self.last,
                crate::parts::rfc3339_micros(ts)
            ),
            Local::Periodic { seq, current, .. } => format!(
                "local value {seq} in {}, last value {}{sealed}",
                current.map_or_else(String::new, |period| period.to_string()),
                self.last
            ),
            Local::Snowflake { reserved } => {
                let Generation { base, modulus } = self.lane.generation();
                format!(
                    "worker ids {} modulo {modulus}, time reserved up to unit {reserved} \
                     (from unit {}){sealed}",
                    self.lane.residue(),
                    base + 1
                )
            }
        }
    }

    /// The highest mark of what it handed out, which the next generation
    /// starts above: an autoinc lane's last value, a periodic lane's last
    /// value in its current period, a cyclic lane's last timestamp (its
    /// floor if none).
    pub fn high_water(&self) -> Mark {
        match self.local {
            Local::Autoinc { .. } | Local::Snowflake { .. } => Mark::of(self.last),
            Local::Cyclic { ts, .. } => Mark::of(ts),
            Local::Periodic { current, .. } => Mark {
                period: current.map(|period| period.to_string()),
                value: self.last,
            },
        }
    }

    /// What its last take of `count` handed out, in order, read from the
    /// lane after that take: each value with `client_micros` (autoinc; a
    /// periodic lane's in its current period), or each (timestamp, value)
    /// pair (cyclic).
    pub fn taken(&self, count: u64, client_micros: u64) -> Vec<Stamp> {
        let modulus = self.lane.generation().modulus;
        let values = (0..count)
            .map(move |index| Stamp::new(client_micros, self.last - (count - 1 - index) * modulus));
        match self.local {
            Local::Autoinc { .. } => values.collect(),
            // Its IDs come from its holders' memory, not from a take.
            Local::Snowflake { .. } => Vec::new(),
            Local::Periodic { current, .. } => values
                .map(|stamp| match current {
                    Some(period) => stamp.in_period(period),
                    None => stamp,
                })
                .collect(),
            Local::Cyclic {
                val, maxval, ts, ..
            } => unfold_block(ts, val, maxval, count as usize)
                .into_iter()
                .map(|local| {
                    Stamp::new(
                        local.timestamp_micros,
                        self.lane.residue() + local.sequence * modulus,
                    )
                })
                .collect(),
        }
    }

    /// How many more values a take may ask for (none: it never runs out;
    /// a periodic lane's: in its current period).
    pub fn room(&self) -> Option<u64> {
        match self.local {
            Local::Autoinc { .. } | Local::Periodic { .. } => {
                Some(MAX_VALUE.saturating_sub(self.last) / self.lane.generation().modulus)
            }
            Local::Cyclic { .. } | Local::Snowflake { .. } => None,
        }
    }
}

/// The last local value of a cyclic lane `residue` of `modulus` over the
/// cycle `0..=top`, if it has one.
pub(crate) fn cyclic_maxval(top: u64, modulus: u64, residue: u64) -> Option<u64> {
    top.checked_sub(residue).map(|room| room / modulus)
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
    let last = read_integer(document, "last", 0, MAX_VALUE)?;
    let (local, expected) = match kind.as_str() {
        CYCLIC => {
            let top = read_integer(place, "top", 1, MAX_MAXVAL).map_err(within)?;
            let Some(cycle) = cyclic_maxval(top, modulus, residue) else {
                return Err(format!(
                    "lane.r is {residue}, above lane.top {top}: the lane has no value"
                ));
            };
            let maxval = read_integer(document, "maxval", 0, MAX_MAXVAL)?;
            if maxval != cycle {
                return Err(format!(
                    "maxval is {maxval}, not {cycle}, the last local value of lane {residue} \
                     of {modulus} over 0..={top}"
                ));
            }
            let val = read_integer(document, "val", 0, maxval)?;
            let ts = read_integer(document, "ts", 0, i64::MAX as u64)?;
            (
                Local::Cyclic {
                    val,
                    maxval,
                    ts,
                    top,
                },
                residue + val * modulus,
            )
        }
        SNOWFLAKE => {
            let reserved = read_integer(document, "last", base, MAX_VALUE)?;
            (Local::Snowflake { reserved }, reserved)
        }
        PERIODIC => read_periodic(document, place, lane).map_err(|reason| {
            if reason.starts_with("period") || reason.starts_with("zone") {
                within(reason)
            } else {
                reason
            }
        })?,
        _ => {
            let seq = read_integer(document, "seq", 0, lane.capacity())?;
            (Local::Autoinc { seq }, lane.high_water(seq))
        }
    };
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

/// Reads a periodic lane's local counter and the value its `seq` stands
/// for, or says what is wrong.
fn read_periodic(
    document: &Document,
    place: &Document,
    lane: Lane,
) -> Result<(Local, u64), String> {
    let unit: PeriodUnit = read_string(place, "period")?
        .parse()
        .map_err(|reason| format!("period: {reason}"))?;
    let zone = read_string(place, "zone")?;
    if !zone_is_well_formed(zone) {
        return Err(format!("zone {zone:?} is not a time zone name"));
    }
    let label = |document: &Document, key: &str| -> Result<Option<Period>, String> {
        let text = read_string(document, key)?;
        if text.is_empty() {
            return Ok(None);
        }
        read_label(unit, text).map(Some).ok_or_else(|| {
            format!(
                "{key} {text:?} is not a {unit} label ({})",
                unit.label_format()
            )
        })
    };
    let base_period = label(place, "base_period").map_err(|reason| format!("lane.{reason}"))?;
    let current = label(document, "current")?;
    if current < base_period {
        return Err(format!(
            "current is {}, before lane.base_period {}",
            describe_label(current),
            describe_label(base_period)
        ));
    }
    // Above the base in its period, above 0 in every later one.
    let in_period = if current == base_period {
        lane
    } else {
        Generation::new(0, lane.generation().modulus)
            .and_then(|generation| generation.lane(lane.residue()))
            .map_err(|error| format!("lane: {error}"))?
    };
    let least = u64::from(current != base_period);
    let seq = read_integer(document, "seq", least, in_period.capacity())?;
    Ok((
        Local::Periodic {
            seq,
            current,
            base_period,
        },
        in_period.high_water(seq),
    ))
}

/// A period's label as an error says it (`""`: none).
fn describe_label(period: Option<Period>) -> String {
    period.map_or_else(
        || "\"\"".to_string(),
        |period| format!("{:?}", period.to_string()),
    )
}

/// The server-side twin of [`read`] for a live lane of `kind`: true only
/// while the document is a well-formed lane of that kind and not sealed.
pub(crate) fn guard(kind: &str) -> Document {
    let mut terms = vec![
        Bson::Document(doc! { "$eq": ["$kind", LANE_KIND] }),
        Bson::Document(doc! { "$eq": ["$lane.kind", kind] }),
        integer_in("lane.generation", 1, MAX_VALUE),
        integer_in("lane.b", 0, MAX_VALUE),
        integer_in("lane.m", 1, MAX_LANES),
        integer_in("lane.r", 0, MAX_LANES - 1),
        Bson::Document(doc! { "$lt": ["$lane.r", "$lane.m"] }),
        integer_in("last", 0, MAX_VALUE),
    ];
    if kind == CYCLIC {
        terms.extend([
            integer_in("lane.top", 1, MAX_MAXVAL),
            integer_in("maxval", 0, MAX_MAXVAL),
            // maxval = floor((top - r) / m), in exact integer terms:
            // maxval * m + r <= top < (maxval + 1) * m + r.
            Bson::Document(doc! { "$lte": [
                { "$add": [{ "$multiply": ["$maxval", "$lane.m"] }, "$lane.r"] },
                "$lane.top",
            ]}),
            Bson::Document(doc! { "$lt": [
                "$lane.top",
                { "$add": [{ "$multiply": [{ "$add": ["$maxval", 1] }, "$lane.m"] }, "$lane.r"] },
            ]}),
            integer_in("val", 0, MAX_MAXVAL),
            Bson::Document(doc! { "$lte": ["$val", "$maxval"] }),
            integer_in("ts", 0, i64::MAX as u64),
            Bson::Document(doc! { "$eq": [
                "$last",
                { "$add": ["$lane.r", { "$multiply": ["$val", "$lane.m"] }] },
            ]}),
        ]);
    } else if kind == SNOWFLAKE {
        // Its holders reserve time above its floor.
        terms.push(Bson::Document(doc! { "$gte": ["$last", "$lane.b"] }));
    } else if kind == PERIODIC {
        let string = |field: &str| doc! { "$eq": [{ "$type": format!("${field}") }, "string"] };
        let label = |field: &str| {
            Bson::Document(doc! { "$and": [
                string(field),
                { "$regexMatch": { "input": format!("${field}"), "regex": label_regex_of("$lane.period") } },
            ]})
        };
        terms.extend([
            Bson::Document(
                doc! { "$in": ["$lane.period", PeriodUnit::ALL.map(PeriodUnit::as_str).to_vec()] },
            ),
            Bson::Document(doc! { "$and": [
                string("lane.zone"),
                { "$regexMatch": { "input": "$lane.zone", "regex": ZONE_PATTERN } },
            ]}),
            label("lane.base_period"),
            label("current"),
            Bson::Document(doc! { "$gte": ["$current", "$lane.base_period"] }),
            integer_in("seq", 0, MAX_VALUE),
            // A later period than the base's has a value.
            Bson::Document(doc! { "$or": [
                { "$eq": ["$current", "$lane.base_period"] },
                { "$gte": ["$seq", 1] },
            ]}),
            Bson::Document(doc! { "$eq": ["$last", periodic_last("$seq")] }),
        ]);
    } else {
        terms.extend([
            integer_in("seq", 0, MAX_VALUE),
            Bson::Document(doc! { "$eq": ["$last", { "$cond": [
                { "$eq": ["$seq", 0] },
                "$lane.b",
                { "$add": ["$lane.b", { "$multiply": [{ "$subtract": ["$seq", 1] }, "$lane.m"] }, "$lane.r", 1] },
            ]}]}),
        ]);
    }
    // Live: sealed is null (a missing one is malformed).
    terms.push(Bson::Document(
        doc! { "$eq": [{ "$type": "$sealed" }, "null"] },
    ));
    doc! { "$and": terms }
}

/// The value a periodic lane's local value `seq` (an expression) stands
/// for in its `current` period: `b` or 0 (the base of `current`) for none,
/// else that base plus `(seq - 1) * m + r + 1`.
fn periodic_last(seq: &str) -> Document {
    let base = doc! { "$cond": [{ "$eq": ["$current", "$lane.base_period"] }, "$lane.b", 0_i64] };
    doc! { "$cond": [
        { "$eq": [seq, 0] },
        base.clone(),
        { "$add": [base, { "$multiply": [{ "$subtract": [seq, 1] }, "$lane.m"] }, "$lane.r", 1] },
    ]}
}

/// The filter and update that take `count` values of lane `lane_id` of a
/// counter whose lanes are `of` in one `findAndModify` (returning the lane
/// after): the filter holds only for a well-formed live lane (of an
/// autoinc counter: with `count` values left; of a periodic one: of its
/// period and zone, with `count` values left in the period now); the
/// update advances the local counter and sets `last` to the value of its
/// new local value, on the server. A cyclic lane's timestamp is never
/// below `client_micros` (a long, or an expression of the server's clock).
pub(crate) fn take_command(
    lane_id: &str,
    of: &LaneOf,
    count: u64,
    client_micros: Bson,
) -> (Document, Vec<Document>) {
    let kind = of.kind();
    let count = count as i64;
    if kind == SNOWFLAKE {
        // Hands out no values (see `kinds/snowflake/gate.rs`): matches
        // nothing, changes nothing.
        return (
            doc! { "_id": lane_id, "$expr": false },
            vec![doc! { "$set": {} }],
        );
    }
    if kind == CYCLIC {
        let advanced = if count == 1 {
            one_value(client_micros)
        } else {
            closed_form(count, client_micros)
        };
        let filter = doc! { "_id": lane_id, "$expr": guard(kind) };
        let update = vec![
            doc! { "$replaceWith": { "$mergeObjects": ["$$ROOT", advanced] } },
            doc! { "$set": { "last": { "$toLong": {
                "$add": ["$lane.r", { "$multiply": ["$val", "$lane.m"] }],
            }}}},
        ];
        return (filter, update);
    }
    if let LaneOf::Periodic { unit, zone } = of {
        // A new period by this server's clock starts again at local value
        // `count`; the same period goes on, if it has `count` values left.
        // The period and zone are the command's own (a server's
        // `$dateToString` may take its zone from a constant only), and the
        // lane's must be them.
        let now = now_label(*unit, zone);
        let filter = doc! {
            "_id": lane_id,
            "$expr": { "$and": [
                guard(kind),
                { "$eq": ["$lane.period", unit.as_str()] },
                { "$eq": ["$lane.zone", zone] },
                { "$or": [
                    { "$gt": [now.clone(), "$current"] },
                    { "$lte": ["$last", { "$subtract": [MAX_VALUE as i64, { "$multiply": [count, "$lane.m"] }] }] },
                ]},
            ]},
        };
        let update = vec![
            doc! { "$replaceWith": { "$mergeObjects": ["$$ROOT", { "$let": {
                "vars": { "now": now },
                "in": { "$cond": [
                    { "$gt": ["$$now", "$current"] },
                    { "current": "$$now", "seq": { "$toLong": count } },
                    { "seq": { "$toLong": { "$add": ["$seq", count] } } },
                ]},
            }}]}},
            doc! { "$set": { "last": { "$toLong": periodic_last("$seq") } } },
        ];
        return (filter, update);
    }
    let filter = doc! {
        "_id": lane_id,
        "$expr": { "$and": [
            guard(kind),
            { "$lte": ["$last", { "$subtract": [MAX_VALUE as i64, { "$multiply": [count, "$lane.m"] }] }] },
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

/// The field of an autoinc or segment lane that bounds what it hands out:
/// its takes stop at it (`last + count * m <= ceiling`) until it is raised,
/// which is done only once a deployment other than the lane's recorded a
/// ceiling at least as high (`taker.rs`'s `raise_ceiling`). A lane without
/// one (in one deployment, or written by an idmint before ceilings) is not
/// bounded.
pub(crate) const CEILING: &str = "ceiling";

/// The fewest local values of a lane a raise of its ceiling allows above
/// its `last`: what a lane may hand out while no other deployment answers
/// is half of it at least (a taker raises it ahead once less than half is
/// left), all of it at most.
pub const CEILING_CHUNK: u64 = 65_536;

/// How many values above a lane's `last` a raise of its ceiling allows
/// (its local values are `m` apart): [`CEILING_CHUNK`] local values, or
/// more for a take of more (a segment lane's: 64 segments of
/// `max(count, step)`), so one pair of writes per chunk, none per value.
pub(crate) fn ceiling_chunk(of: &LaneOf, count: u64, modulus: u64) -> u64 {
    let local = match of {
        LaneOf::Segment { step } => count.max(*step).saturating_mul(64),
        _ => count,
    };
    local.max(CEILING_CHUNK).saturating_mul(modulus)
}

/// The take's term that keeps it at or below the lane's ceiling, `span`
/// (an expression: `count * m`) above its `last`; true when the lane has
/// none.
fn under_ceiling(span: Bson) -> Document {
    doc! { "$lte": [
        { "$add": ["$last", span] },
        { "$ifNull": [format!("${CEILING}"), MAX_VALUE as i64] },
    ]}
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

/// The filter that matches snowflake lane `lane_id` while it is live and
/// of generation `generation` above `base`: the gate its holders raise
/// (`kinds/snowflake/gate.rs`).
pub(crate) fn live_snowflake_lane(lane_id: &str, generation: u64, base: u64) -> Document {
    doc! {
        "_id": lane_id,
        "lane.generation": generation as i64,
        "lane.b": base as i64,
        "$expr": guard(SNOWFLAKE),
    }
}

/// What a handle learnt of a lane from its last take (the short guard):
/// the fields no take changes, exactly as the lane held them then. A take
/// of a lane it knows filters on those by equality, and on its moving
/// fields' types and bounds, with plain query operators instead of the
/// full guard's expression, which the server evaluates on every take; a
/// lane changed since (sealed, rewritten by a change of stripes, edited)
/// matches nothing, and its next take sends the full guard.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KnownLane {
    lane: Lane,
    /// `lane` (the place, generation included), `prefixes`, and a cyclic
    /// lane's `maxval`, as read.
    fixed: Document,
    cyclic: Option<u64>,
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
        let cyclic = match read.local {
            Local::Cyclic { maxval, .. } => {
                fixed.insert("maxval", document.get_i64("maxval").ok()?);
                Some(maxval)
            }
            Local::Autoinc { .. } | Local::Periodic { .. } | Local::Snowflake { .. } => None,
        };
        Some(Self {
            lane: read.lane,
            fixed,
            cyclic,
            ceiling: read.ceiling,
        })
    }

    /// How many of its local values stand for values at or below
    /// `ceiling`: `k` such that `b + (k - 1) * m + r + 1 <= ceiling`.
    fn local_values_up_to(&self, ceiling: u64) -> u64 {
        let Generation { base, modulus } = self.lane.generation();
        match ceiling.checked_sub(base + self.lane.residue() + 1) {
            Some(above) => above / modulus + 1,
            None => 0,
        }
    }

    /// The short filter of a take of `count` from lane `lane_id` (the
    /// update is the full take's), or none when the lane has not `count`
    /// values left whatever its local value.
    pub(crate) fn filter(&self, lane_id: &str, count: u64) -> Option<Document> {
        let mut filter = doc! { "_id": lane_id, "kind": LANE_KIND };
        filter.extend(self.fixed.clone());
        filter.insert("sealed", doc! { "$type": "null" });
        match self.cyclic {
            Some(maxval) => {
                filter.insert(
                    "val",
                    doc! { "$type": "long", "$gte": 0_i64, "$lte": maxval as i64 },
                );
                filter.insert("ts", doc! { "$type": "long", "$gte": 0_i64 });
            }
            None => {
                // Its values up to local value seq + count exist (a
                // periodic lane's, in its base period, where it has the
                // fewest: in a later one, a take that matches nothing is
                // sent again with the full guard).
                let mut most = self.lane.capacity().checked_sub(count)?;
                let kind = self.fixed.get_document("lane").ok()?.get_str("kind");
                if kind != Ok(PERIODIC) {
                    // At or below its ceiling as read, which a raise
                    // changes: a raised lane is taken with the full guard.
                    match self.ceiling {
                        Some(ceiling) => {
                            let below = self.local_values_up_to(ceiling);
                            most = most.min(below.checked_sub(count)?);
                            filter.insert(CEILING, ceiling as i64);
                        }
                        None => {
                            filter.insert(CEILING, doc! { "$exists": false });
                        }
                    }
                }
                filter.insert(
                    "seq",
                    doc! { "$type": "long", "$gte": 0_i64, "$lte": most as i64 },
                );
                if kind == Ok(PERIODIC) {
                    filter.insert("current", doc! { "$type": "string" });
                }
            }
        }
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

/// What the lanes of a counter are made of: its kind, and what a new lane
/// of that kind needs to know of the counter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaneOf {
    /// An autoinc counter's lanes.
    Autoinc,
    /// A cyclic counter's lanes, over its cycle `0..=top`.
    Cyclic {
        /// The counter's `maxval`.
        top: u64,
    },
    /// A segment counter's lanes: an autoinc lane's document, each take
    /// at least `step` values.
    Segment {
        /// The counter's `step`.
        step: u64,
    },
    /// A periodic counter's lanes, in its periods.
    Periodic {
        /// How long a period lasts.
        unit: PeriodUnit,
        /// The time zone periods are counted in.
        zone: String,
    },
    /// A snowflake counter's lanes: the gates of its worker ids.
    Snowflake {
        /// The counter's layout, and its tag.
        state: SnowflakeState,
    },
}

impl LaneOf {
    /// The lanes of a counter of `kind` whose own document (an unstriped
    /// counter's, or its map's) is `document`, or why it has none.
    pub(crate) fn of(kind: &str, document: &Document) -> Result<Self, String> {
        match kind {
            AUTOINC => Ok(Self::Autoinc),
            CYCLIC => Ok(Self::Cyclic {
                top: read_integer(document, "maxval", 1, MAX_MAXVAL)?,
            }),
            SEGMENT => Ok(Self::Segment {
                step: read_integer(document, "step", 1, MAX_STEP)?,
            }),
            SNOWFLAKE => Ok(Self::Snowflake {
                state: <SnowflakeKind as crate::sequence::kind_trait::Kind>::read(document)?,
            }),
            PERIODIC => {
                let state = <PeriodicKind as crate::sequence::kind_trait::Kind>::read(document)?;
                Ok(Self::Periodic {
                    unit: state.period,
                    zone: state.zone,
                })
            }
            other => Err(format!("{other} counters cannot be striped")),
        }
    }

    /// The counter's kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Autoinc => AUTOINC,
            Self::Cyclic { .. } => CYCLIC,
            Self::Segment { .. } => SEGMENT,
            Self::Periodic { .. } => PERIODIC,
            Self::Snowflake { .. } => SNOWFLAKE,
        }
    }

    /// The most lanes a generation of this counter can have: each must
    /// have a value of its own (a cyclic counter's cycle is `top + 1`
    /// values).
    pub(crate) fn most_lanes(&self) -> u64 {
        match self {
            Self::Autoinc | Self::Segment { .. } | Self::Periodic { .. } => MAX_LANES,
            Self::Cyclic { top } => MAX_LANES.min(top.saturating_add(1)),
            Self::Snowflake { state } => MAX_LANES.min(state.layout.max_worker() + 1),
        }
    }

    /// The guard of an unstriped counter of this kind: true only while
    /// it is a well-formed counter of the kind, which a change of stripes
    /// seals.
    pub(crate) fn unstriped_guard(&self) -> Document {
        match self {
            Self::Autoinc => well_formed::<AutoincKind>(),
            Self::Cyclic { .. } => well_formed::<CyclicKind>(),
            Self::Segment { .. } => well_formed::<SegmentKind>(),
            Self::Periodic { .. } => well_formed::<PeriodicKind>(),
            Self::Snowflake { .. } => well_formed::<SnowflakeKind>(),
        }
    }

    /// Reads `document`, an unstriped counter of the lanes' kind, as its
    /// kind reads it: what is wrong with it, if anything.
    pub(crate) fn read_unstriped(
        &self,
        name: &crate::sequence::name::CounterName,
        document: &Document,
    ) -> Result<(), crate::sequence::error::SequenceError> {
        use crate::sequence::counter::document::read;
        match self {
            Self::Autoinc => read::<AutoincKind>(name, document).map(drop),
            Self::Cyclic { .. } => read::<CyclicKind>(name, document).map(drop),
            Self::Segment { .. } => read::<SegmentKind>(name, document).map(drop),
            Self::Periodic { .. } => read::<PeriodicKind>(name, document).map(drop),
            Self::Snowflake { .. } => read::<SnowflakeKind>(name, document).map(drop),
        }
    }

    /// The base the lanes of an unstriped counter's next generation
    /// start above, as an expression of its document: an autoinc
    /// counter's last value, a segment counter's last value taken (its
    /// `max` is the first one no process took), a cyclic counter's last
    /// timestamp, a periodic counter's last value in its current period
    /// (see [`LaneOf::base_period_of_unstriped`]).
    pub(crate) fn base_of_unstriped(&self) -> Bson {
        match self {
            Self::Autoinc | Self::Periodic { .. } => Bson::Document(doc! { "$toLong": "$seq" }),
            Self::Segment { .. } => {
                Bson::Document(doc! { "$toLong": { "$subtract": ["$max", 1_i64] } })
            }
            Self::Cyclic { .. } => {
                Bson::Document(doc! { "$toLong": { "$ifNull": ["$ts", 0_i64] } })
            }
            // The time its holders recorded in it (`kinds/snowflake/gate.rs`).
            Self::Snowflake { .. } => {
                Bson::Document(doc! { "$toLong": { "$ifNull": ["$reserved", 0_i64] } })
            }
        }
    }

    /// The period an unstriped counter's base counts in, as an
    /// expression of its document: a periodic counter's current period
    /// (empty: none yet); none for the other kinds.
    pub(crate) fn base_period_of_unstriped(&self) -> Option<Bson> {
        match self {
            Self::Periodic { .. } => Some(Bson::String("$current".to_string())),
            _ => None,
        }
    }

    /// The kind's own fields of a map whose generation is above `base`
    /// (the kind's reader reads them; every value, or timestamp, up to
    /// `base` belongs to earlier generations, and a periodic counter's up
    /// to `base` in its period).
    pub(crate) fn map_fields(&self, base: &Mark) -> Document {
        let value = base.value;
        match self {
            Self::Autoinc => doc! { "seq": value as i64 },
            Self::Segment { step } => doc! { "max": (value + 1) as i64, "step": *step as i64 },
            Self::Cyclic { top } => {
                doc! { "val": 0_i64, "maxval": *top as i64, "ts": value as i64 }
            }
            Self::Periodic { unit, zone } => doc! {
                "period": unit.as_str(),
                "zone": zone,
                "current": base.period.clone().unwrap_or_default(),
                "seq": value as i64,
            },
            Self::Snowflake { state } => {
                let layout = state.layout;
                let mut fields = doc! {
                    "time_bits": i64::from(layout.time_bits),
                    "worker_bits": i64::from(layout.worker_bits),
                    "seq_bits": i64::from(layout.seq_bits),
                    "unit": layout.unit.as_str(),
                    "epoch_ms": layout.epoch_ms as i64,
                    "reserved": value as i64,
                };
                if let Some(tag) = &state.tag {
                    fields.extend(tag.fields());
                }
                fields
            }
        }
    }
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
/// [`LaneOf::most_lanes`].)
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
    let mut document = doc! { "_id": lane_id, "kind": LANE_KIND };
    match of {
        LaneOf::Autoinc | LaneOf::Segment { .. } => {
            document.insert("lane", place);
            document.insert("seq", 0_i64);
            document.insert("last", base as i64);
        }
        LaneOf::Snowflake { .. } => {
            document.insert("lane", place);
            // No time reserved above its floor yet.
            document.insert("last", base as i64);
        }
        LaneOf::Periodic { unit, zone } => {
            let base_period = base_period.unwrap_or_default();
            place.insert("period", unit.as_str());
            place.insert("zone", zone);
            place.insert("base_period", base_period);
            document.insert("lane", place);
            // In its base period, above the base.
            document.insert("current", base_period);
            document.insert("seq", 0_i64);
            document.insert("last", base as i64);
        }
        LaneOf::Cyclic { top } => {
            let top = *top;
            place.insert("top", top as i64);
            let maxval = cyclic_maxval(top, modulus, lane.residue()).unwrap_or(0);
            document.insert("lane", place);
            // At the end of its cycle, at its floor: its first take wraps
            // and moves its timestamp above every one before.
            document.insert("val", maxval as i64);
            document.insert("maxval", maxval as i64);
            document.insert("ts", base as i64);
            document.insert("last", (lane.residue() + maxval * modulus) as i64);
        }
    }
    document.insert("sealed", Bson::Null);
    // A lane owns no prefix: its counter owns them.
    document.insert("prefixes", Bson::Array(Vec::new()));
    document
}

impl StripeMap {
    /// Reads the `striped` field of `document`, a map whose own fields
    /// say what its lanes are made of (a kind that can be striped: its
    /// reader's fields), or says what is wrong.
    pub fn read(document: &Document) -> Result<Self, String> {
        Self::read_with(document, |kind, document| {
            if STRIPABLE.contains(&kind) {
                LaneOf::of(kind, document).map(drop)
            } else {
                Ok(())
            }
        })
    }

    /// The map of generation `generation` of lanes made of `of`, live.
    pub fn live(of: &LaneOf, generation: u64, lanes: Generation) -> Self {
        StripeMap {
            kind: of.kind().to_string(),
            generation,
            base: lanes.base,
            base_period: None,
            modulus: lanes.modulus,
            live: true,
            placement: Vec::new(),
            spans: Vec::new(),
            here: None,
            change: None,
            bounded: false,
            incarnation: None,
            fields: of.map_fields(&Mark::of(lanes.base)),
        }
    }

    /// What its lanes are made of, read from its own fields; none for a
    /// kind that cannot be striped or fields that say nothing of it.
    pub(crate) fn lanes_of(&self) -> Option<LaneOf> {
        if !STRIPABLE.contains(&self.kind.as_str()) {
            return None;
        }
        LaneOf::of(&self.kind, &self.fields).ok()
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
        let document = new_lane("orders#2", &LaneOf::Autoinc, 3, lane_two(), None);
        let read = read(&document).unwrap();
        assert_eq!(
            (read.generation, read.local, read.last, read.sealed),
            (3, Local::Autoinc { seq: 0 }, 100, false)
        );
        assert_eq!(read.lane, lane_two());
        assert_eq!(read.describe(), "nothing handed out yet");
    }

    #[test]
    fn a_take_hands_out_the_values_before_last() {
        let mut document = new_lane("orders#2", &LaneOf::Autoinc, 1, lane_two(), None);
        document.insert("seq", 3_i64);
        document.insert("last", lane_two().value(3).unwrap() as i64);
        let read = read(&document).unwrap();
        let values: Vec<u64> = read.taken(3, 7).iter().map(|s| s.sequence).collect();
        assert_eq!(values, lane_two().values(1..=3).unwrap());
    }

    #[test]
    fn a_new_cyclic_lane_is_at_the_end_of_its_cycle_at_its_floor() {
        // 0..=9 over 4 lanes: lane 2 hands out 2 and 6 (local 0 and 1).
        let of = LaneOf::Cyclic { top: 9 };
        let document = new_lane("serial#2", &of, 1, lane_two(), None);
        let read = read(&document).unwrap();
        assert_eq!(
            read.local,
            Local::Cyclic {
                val: 1,
                maxval: 1,
                ts: 100,
                top: 9
            }
        );
        assert_eq!((read.last, read.high_water()), (6, Mark::of(100)));
        assert_eq!(read.describe(), "nothing handed out yet");
        // Its lanes cover the cycle, each value once.
        let mut values: Vec<u64> = (0..4)
            .flat_map(|r| {
                let maxval = cyclic_maxval(9, 4, r).unwrap();
                (0..=maxval).map(move |k| r + k * 4)
            })
            .collect();
        values.sort_unstable();
        assert_eq!(values, (0..=9).collect::<Vec<_>>());
        assert_eq!(of.most_lanes(), 10);
    }

    #[test]
    fn a_cyclic_take_unfolds_its_pairs_through_the_residue() {
        let mut document = new_lane("serial#2", &LaneOf::Cyclic { top: 9 }, 1, lane_two(), None);
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
        let mut document = new_lane("orders#2", &LaneOf::Autoinc, 1, lane_two(), None);
        // No ceiling: unbounded, and the short filter says so.
        let read_plain = read(&document).unwrap();
        assert_eq!(read_plain.ceiling, None);
        let known = KnownLane::of(&document, &read_plain).unwrap();
        let short = known.filter("orders#2", 3).unwrap();
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
        let short = known.filter("orders#2", 3).unwrap();
        assert_eq!(short.get_i64(CEILING).unwrap(), 112);
        assert_eq!(
            short.get_document("seq").unwrap().get_i64("$lte").unwrap(),
            0
        );
        assert!(known.filter("orders#2", 4).is_none());
        assert!(!short.contains_key("$expr"));
        let (full, _) = take_command("orders#2", &LaneOf::Autoinc, 3, Bson::Int64(0));
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
        let good = || new_lane("orders#2", &LaneOf::Autoinc, 1, lane_two(), None);
        let with = |key: &str, value: Bson| {
            let mut document = good();
            document.insert(key, value);
            document
        };
        let cyclic = |key: &str, value: Bson| {
            let mut document =
                new_lane("serial#2", &LaneOf::Cyclic { top: 9 }, 1, lane_two(), None);
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
