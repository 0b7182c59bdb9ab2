//! The stored JavaScript twins' take from a striped counter (issue 34):
//! `getNextSequence(NAME)` (autoinc lanes), `getNextUniqueStamp(NAME,
//! clientMicros)` (cyclic lanes) and `getNextPeriodic(NAME, count)`
//! (periodic lanes), run by mongosh, take from the counter's lanes as the
//! host's `StripedCounter::take` does (all through the shared stored
//! `takeFromLanes`). Held equal to the host on a set of maps and lanes
//! (fresh, taken from, in a later period, sealed, gone, malformed, near
//! exhaustion, without a live lane, of another counter of the name): the
//! same values (and timestamps, or periods) or refusals, the same
//! documents left, and the very command of `lane_take_command` sent;
//! `readCounter` reads a lane (and a periodic map, its incarnation with
//! it) as the host's readers do; run at once with the host's takers held
//! mid-take (a periodic counter's across a period boundary of the
//! server's clock); and run while the counter's stripes change under it.

use std::collections::BTreeMap;
use std::process::Command;

use mongodb::bson::{doc, Bson, DateTime, Document};
use mongodb::Database;
use serde_json::{json, Value};

use idmint::installer;
use idmint::parts::PeriodUnit;
use idmint::sequence::identity::Incarnation;
use idmint::sequence::striping::hooks::{hold, Point};
use idmint::sequence::striping::{
    create_striped, lane_take_command, Generation, LaneOf, StripeMap,
};
use idmint::sequence::{
    AutoincCounter, ClientTime, CounterKind, CounterName, CounterSpec, CyclicCounter, OpenOptions,
    PeriodicCounter, Sequence,
};

use crate::support::takers::{
    assert_distinct, assert_each_lane_whole, joined, spawn_takers, spawn_takers_at,
};
use crate::support::{self, counter_name, database_name, mongosh::shell_in, FakeClockServer};

const MAX: i64 = (1 << 53) - 1;

/// The first value of a counter an upsert would create (none is created:
/// a striped counter exists).
const START: u64 = 500;

/// The clock both twins read in a cyclic case (microseconds): the host
/// takes with it, the twin calls `getNextUniqueStamp(NAME, CLIENT)`.
const CLIENT: u64 = 1_764_000_000_000_500;

/// A year the test server's clock is long before: a periodic lane in it
/// stays in it (a clock behind a lane's period never moves it back), so
/// that what a take of it hands out does not depend on the clock.
const FAR: &str = "9000";

/// A year the test server's clock is long after: a take of a periodic
/// lane in it starts the period of the server's clock, from 1.
const PAST: &str = "2001";

/// A counter's incarnation (issue 49), and another counter's of its name.
const MINE: &str = "0123456789abcdef0123456789abcdef";
const OTHER: &str = "fedcba9876543210fedcba9876543210";

/// Which stored function a case calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Twin {
    /// `getNextSequence(NAME)`: autoinc lanes.
    Sequence,
    /// `getNextUniqueStamp(NAME, CLIENT)`: cyclic lanes.
    Stamp,
    /// `getNextPeriodic(NAME, count)`: periodic lanes.
    Periodic,
}

impl Twin {
    /// The stored function's name.
    fn function(self) -> &'static str {
        match self {
            Self::Sequence => "getNextSequence",
            Self::Stamp => "getNextUniqueStamp",
            Self::Periodic => "getNextPeriodic",
        }
    }
}

/// A striped counter as a case seeds it: its map and its lanes, and the
/// calls each twin makes.
struct Case {
    name: &'static str,
    /// The stored function the twin calls (the host takes with `Sequence`,
    /// whatever the kind).
    twin: Twin,
    /// The map's fields (`_id` is the name).
    map: Document,
    /// Each lane's fields, by residue (`_id` is `NAME#r`).
    lanes: Vec<(u64, Document)>,
    /// How many takes: a case with several live lanes takes once per lane,
    /// the twin starting each call at the next lane and the host's handle
    /// going round its lanes, so that both take from every lane once.
    calls: usize,
    /// The twin takes with `{upsert: true, start}`: a counter that exists
    /// is taken from (the host: `seq --upsert` opens it as any counter).
    upsert: bool,
    /// How many values each call takes (`getNextPeriodic(NAME, count)`;
    /// the host: `take(count)`); 1 for the other twins.
    count: usize,
}

impl Case {
    /// What the case's lanes are made of, read from its map's own fields
    /// as the host reads them (a cyclic lane's take does not name its
    /// counter's cycle).
    fn lanes_of(&self) -> LaneOf {
        match self.twin {
            Twin::Sequence => LaneOf::Autoinc,
            Twin::Stamp => LaneOf::Cyclic { top: 9 },
            Twin::Periodic => LaneOf::Periodic {
                unit: self.map.get_str("period").unwrap().parse().unwrap(),
                zone: self.map.get_str("zone").unwrap().to_string(),
            },
        }
    }
}

/// The map of generation `generation`: `modulus` lanes above `base`,
/// every lane live, or none (a change of stripes under way).
fn map(generation: i64, base: i64, modulus: i64, live: bool) -> Document {
    let lanes: Vec<Document> = if live {
        (0..modulus)
            .map(|residue| doc! { "residue": residue })
            .collect()
    } else {
        Vec::new()
    };
    doc! {
        "kind": "striped", "seq": base, "prefixes": [],
        "striped": {
            "kind": "autoinc", "generation": generation, "base": base,
            "modulus": modulus, "lanes": lanes,
        },
    }
}

/// Lane `residue` of a generation of `modulus` lanes above `base`, with
/// local value `seq` (its `last` the value that stands for), sealed or
/// live.
fn lane(
    generation: i64,
    base: i64,
    modulus: i64,
    residue: i64,
    seq: i64,
    sealed: bool,
) -> Document {
    let last = if seq == 0 {
        base
    } else {
        base + (seq - 1) * modulus + residue + 1
    };
    let sealed = if sealed {
        Bson::Document(doc! { "at": DateTime::from_millis(0), "claim": generation + 1 })
    } else {
        Bson::Null
    };
    doc! {
        "kind": "lane",
        "lane": { "kind": "autoinc", "generation": generation, "b": base, "m": modulus, "r": residue },
        "seq": seq, "last": last, "sealed": sealed, "prefixes": [],
    }
}

/// `document` with `key` set to `value`.
fn with(mut document: Document, key: &str, value: impl Into<Bson>) -> Document {
    document.insert(key, value.into());
    document
}

/// `document` without `key`.
fn without(mut document: Document, key: &str) -> Document {
    document.remove(key);
    document
}

/// The map of a cyclic counter of cycle `0..=top`, generation
/// `generation`: `modulus` lanes whose timestamps start above `base`,
/// every lane live, or none. It keeps the counter's own fields, as the
/// host writes them (`val`, `maxval`, `ts`).
fn cyclic_map(generation: i64, base: i64, modulus: i64, top: i64, live: bool) -> Document {
    let mut document = map(generation, base, modulus, live);
    document.remove("seq");
    let striped = document.get_document_mut("striped").unwrap();
    striped.insert("kind", "cyclic");
    document.insert("val", 0_i64);
    document.insert("maxval", top);
    document.insert("ts", base);
    document
}

/// Cyclic lane `residue` of a generation of `modulus` lanes above `base`
/// over the cycle `0..=top`, with local value `val` and timestamp `ts`
/// (its `maxval` and `last` what they stand for), sealed or live.
#[allow(clippy::too_many_arguments)]
fn cyclic_lane(
    generation: i64,
    base: i64,
    modulus: i64,
    top: i64,
    residue: i64,
    val: i64,
    ts: i64,
    sealed: bool,
) -> Document {
    let sealed = if sealed {
        Bson::Document(doc! { "at": DateTime::from_millis(0), "claim": generation + 1 })
    } else {
        Bson::Null
    };
    doc! {
        "kind": "lane",
        "lane": { "kind": "cyclic", "generation": generation, "b": base, "m": modulus, "r": residue, "top": top },
        "val": val, "maxval": (top - residue) / modulus, "ts": ts, "last": residue + val * modulus,
        "sealed": sealed, "prefixes": [],
    }
}

/// A new cyclic lane, as the host makes one: at the end of its cycle, at
/// its floor `base`.
fn fresh_cyclic_lane(generation: i64, base: i64, modulus: i64, top: i64, residue: i64) -> Document {
    let maxval = (top - residue) / modulus;
    cyclic_lane(generation, base, modulus, top, residue, maxval, base, false)
}

/// The map of a periodic counter of years in UTC, generation
/// `generation`: `modulus` lanes above `base` in `base_period` ("": no
/// period yet), every lane live, or none. It keeps the counter's own
/// fields, as the host writes them (`period`, `zone`, `current`, `seq`).
fn periodic_map(
    generation: i64,
    base: i64,
    base_period: &str,
    modulus: i64,
    live: bool,
) -> Document {
    let mut document = map(generation, base, modulus, live);
    document.remove("seq");
    let striped = document.get_document_mut("striped").unwrap();
    striped.insert("kind", "periodic");
    if !base_period.is_empty() {
        striped.insert("base_period", base_period);
    }
    document.insert("period", "year");
    document.insert("zone", "UTC");
    document.insert("current", base_period);
    document.insert("seq", base);
    document
}

/// Periodic lane `residue` (of years in UTC) of a generation of `modulus`
/// lanes above `base` in `base_period`, in period `current` with local
/// value `seq` (its `last` the value that stands for: above `base` in the
/// base period, above 0 in a later one), sealed or live.
#[allow(clippy::too_many_arguments)]
fn periodic_lane(
    generation: i64,
    base: i64,
    modulus: i64,
    residue: i64,
    base_period: &str,
    current: &str,
    seq: i64,
    sealed: bool,
) -> Document {
    let floor = if current == base_period { base } else { 0 };
    let last = if seq == 0 {
        floor
    } else {
        floor + (seq - 1) * modulus + residue + 1
    };
    let sealed = if sealed {
        Bson::Document(doc! { "at": DateTime::from_millis(0), "claim": generation + 1 })
    } else {
        Bson::Null
    };
    doc! {
        "kind": "lane",
        "lane": {
            "kind": "periodic", "generation": generation, "b": base, "m": modulus, "r": residue,
            "period": "year", "zone": "UTC", "base_period": base_period,
        },
        "current": current, "seq": seq, "last": last, "sealed": sealed, "prefixes": [],
    }
}

/// `document` (a periodic map or lane) counting periods of `unit` in
/// `zone`.
fn periods_of(document: Document, unit: &str, zone: &str) -> Document {
    if document.contains_key("lane") {
        with_place(with_place(document, "period", unit), "zone", zone)
    } else {
        with(with(document, "period", unit), "zone", zone)
    }
}

/// The map of a striped snowflake counter of one lane, its own fields as
/// the host writes them, with `fields` set.
fn snowflake_map(fields: Document) -> Document {
    let mut document = map(1, 0, 1, true);
    document.remove("seq");
    document
        .get_document_mut("striped")
        .unwrap()
        .insert("kind", "snowflake");
    document.extend(doc! {
        "time_bits": 41_i64, "worker_bits": 10_i64, "seq_bits": 12_i64, "unit": "ms",
        "epoch_ms": 1_288_834_974_657_i64,
    });
    document.extend(fields);
    document
}

/// `lane` without its `lane.KEY`.
fn without_place(mut lane: Document, key: &str) -> Document {
    lane.get_document_mut("lane").unwrap().remove(key);
    lane
}

/// `lane` with its `lane.KEY` set to `value`.
fn with_place(mut lane: Document, key: &str, value: impl Into<Bson>) -> Document {
    lane.get_document_mut("lane")
        .unwrap()
        .insert(key, value.into());
    lane
}

fn cases() -> Vec<Case> {
    let case = |name, map, lanes: Vec<(u64, Document)>, calls| Case {
        name,
        twin: Twin::Sequence,
        map,
        lanes,
        calls,
        upsert: false,
        count: 1,
    };
    let stamp_case = |name, map, lanes: Vec<(u64, Document)>, calls| Case {
        twin: Twin::Stamp,
        ..case(name, map, lanes, calls)
    };
    // Every lane of a generation, live, each with its local value.
    let live = |generation, base, seqs: &[i64]| -> Vec<(u64, Document)> {
        let modulus = seqs.len() as i64;
        seqs.iter()
            .enumerate()
            .map(|(r, seq)| {
                (
                    r as u64,
                    lane(generation, base, modulus, r as i64, *seq, false),
                )
            })
            .collect()
    };
    let periodic_case = |name, map, lanes: Vec<(u64, Document)>, calls| Case {
        twin: Twin::Periodic,
        ..case(name, map, lanes, calls)
    };
    // Every periodic lane of a generation, live, each with its period and
    // local value.
    let periodic_live =
        |generation, base, base_period: &str, lanes: &[(&str, i64)]| -> Vec<(u64, Document)> {
            let modulus = lanes.len() as i64;
            lanes
                .iter()
                .enumerate()
                .map(|(r, (current, seq))| {
                    (
                        r as u64,
                        periodic_lane(
                            generation,
                            base,
                            modulus,
                            r as i64,
                            base_period,
                            current,
                            *seq,
                            false,
                        ),
                    )
                })
                .collect()
        };
    let one = |document: Document| vec![(0, document)];
    let fresh_one = || lane(1, 0, 1, 0, 0, false);
    let periodic_one = || periodic_lane(1, 0, 1, 0, FAR, FAR, 3, false);
    // The year of the server's clock (the test's: one machine), unless
    // the year ends while the test runs.
    let micros = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64;
    let this_year = idmint::parts::rfc3339_micros(micros)[..4].to_string();
    let this_year = this_year.as_str();
    let ts = CLIENT as i64;
    vec![
        case("s_fresh", map(1, 0, 3, true), live(1, 0, &[0, 0, 0]), 3),
        case(
            "s_taken",
            map(2, 100, 4, true),
            live(2, 100, &[2, 5, 0, 7]),
            4,
        ),
        // A lane with a ceiling (of a counter across deployments): taken
        // from up to it, refused past it (only the host raises it, and only
        // across deployments).
        case(
            "s_under_ceiling",
            map(1, 0, 2, true),
            live(1, 0, &[2, 3])
                .into_iter()
                .map(|(r, lane)| (r, with(lane, "ceiling", 9_i64)))
                .collect(),
            4,
        ),
        case(
            "s_at_ceiling",
            map(1, 0, 1, true),
            one(with(lane(1, 0, 1, 0, 3, false), "ceiling", 3_i64)),
            2,
        ),
        case(
            "s_int32",
            map(1, 0, 2, true),
            vec![
                (
                    0,
                    doc! { "kind": "lane", "lane": { "kind": "autoinc", "generation": 1_i32, "b": 0_i32, "m": 2_i32, "r": 0_i32 },
                    "seq": 3_i32, "last": 5_i32, "sealed": null, "prefixes": [] },
                ),
                (1, lane(1, 0, 2, 1, 0, false)),
            ],
            2,
        ),
        // A sealed lane (a change of stripes passed it) beside a live one:
        // a take that meets it reads the map again and goes on.
        case(
            "s_sealed_beside",
            map(3, 40, 4, true),
            vec![
                (0, lane(3, 40, 4, 0, 2, true)),
                (1, lane(3, 40, 4, 1, 0, true)),
                (2, lane(3, 40, 4, 2, 5, false)),
                (3, lane(3, 40, 4, 3, 9, true)),
            ],
            2,
        ),
        case(
            "s_gone_beside",
            map(1, 0, 2, true),
            vec![(0, lane(1, 0, 2, 0, 3, false))],
            2,
        ),
        case(
            "s_older_generation_beside",
            map(2, 30, 2, true),
            vec![
                (0, lane(1, 0, 3, 0, 10, true)),
                (1, lane(2, 30, 2, 1, 1, false)),
            ],
            2,
        ),
        // Malformed lanes: named, left unchanged, whichever lane is met.
        case(
            "s_lane_last_wrong",
            map(1, 0, 2, true),
            vec![
                (0, with(lane(1, 0, 2, 0, 2, false), "last", 7_i64)),
                (1, lane(1, 0, 2, 1, 2, false)),
            ],
            2,
        ),
        case(
            "s_lane_seq_string",
            map(1, 0, 1, true),
            one(with(fresh_one(), "seq", "1")),
            1,
        ),
        case(
            "s_lane_seq_fraction",
            map(1, 0, 1, true),
            one(with(fresh_one(), "seq", 1.5)),
            1,
        ),
        case(
            "s_lane_sealed_true",
            map(1, 0, 1, true),
            one(with(fresh_one(), "sealed", true)),
            1,
        ),
        case(
            "s_lane_sealed_missing",
            map(1, 0, 1, true),
            one({
                let mut document = fresh_one();
                document.remove("sealed");
                document
            }),
            1,
        ),
        case(
            "s_lane_residue_out",
            map(1, 0, 1, true),
            one(with(
                fresh_one(),
                "lane",
                doc! { "kind": "autoinc", "generation": 1, "b": 0, "m": 2, "r": 2 },
            )),
            1,
        ),
        case(
            "s_lane_of_cyclic",
            map(1, 0, 1, true),
            one(with(
                fresh_one(),
                "lane",
                doc! { "kind": "cyclic", "generation": 1, "b": 0, "m": 1, "r": 0 },
            )),
            1,
        ),
        case(
            "s_lane_not_a_lane",
            map(1, 0, 1, true),
            one(with(fresh_one(), "kind", "autoinc")),
            1,
        ),
        case(
            "s_lane_past_capacity",
            map(1, MAX - 10, 2, true),
            vec![
                (0, lane(1, MAX - 10, 2, 0, 1, false)),
                (1, with(lane(1, MAX - 10, 2, 1, 5, false), "seq", 6_i64)),
            ],
            2,
        ),
        // Near the end: lane 0 has one value left, lane 1 none.
        case(
            "s_near_exhaustion",
            map(1, MAX - 10, 2, true),
            live(1, MAX - 10, &[4, 5]),
            3,
        ),
        // A change of stripes under way: no live lane, so both wait,
        // then fail having taken nothing.
        case(
            "s_no_live_lane",
            map(2, 20, 2, false),
            vec![
                (0, lane(1, 0, 2, 0, 10, true)),
                (1, lane(1, 0, 2, 1, 10, true)),
            ],
            1,
        ),
        // Malformed maps, and a map of lanes of a kind this idmint does not
        // know. (Every kind it knows can be striped: a map given to the
        // twin of another kind is refused as the host's kind readers
        // refuse it, which the host's `Sequence` does not, so that is a
        // test of its own below.)
        case(
            "s_map_modulus_zero",
            with(
                map(1, 0, 1, true),
                "striped",
                doc! { "kind": "autoinc", "generation": 1, "base": 0, "modulus": 0, "lanes": [] },
            ),
            vec![],
            1,
        ),
        case(
            "s_map_lanes_short",
            with(
                map(1, 0, 2, true),
                "striped",
                doc! { "kind": "autoinc", "generation": 1, "base": 0, "modulus": 3,
                "lanes": [{ "residue": 0 }, { "residue": 1 }] },
            ),
            live(1, 0, &[0, 0]),
            1,
        ),
        case(
            "s_map_residue_out_of_order",
            with(
                map(1, 0, 2, true),
                "striped",
                doc! { "kind": "autoinc", "generation": 1, "base": 0, "modulus": 2,
                "lanes": [{ "residue": 1 }, { "residue": 0 }] },
            ),
            live(1, 0, &[0, 0]),
            1,
        ),
        case(
            "s_map_base_too_high",
            with(
                map(1, 0, 2, true),
                "striped",
                doc! { "kind": "autoinc", "generation": 1, "base": MAX - 1, "modulus": 2,
                "lanes": [{ "residue": 0 }, { "residue": 1 }] },
            ),
            vec![],
            1,
        ),
        case(
            "s_map_missing",
            {
                let mut document = map(1, 0, 1, true);
                document.remove("striped");
                document
            },
            vec![],
            1,
        ),
        case(
            "s_map_seq_missing",
            {
                let mut document = map(1, 0, 1, true);
                document.remove("seq");
                document
            },
            one(fresh_one()),
            1,
        ),
        case(
            "s_map_of_unknown_kind",
            with(
                map(1, 0, 1, true),
                "striped",
                doc! { "kind": "hilo", "generation": 1, "base": 0, "modulus": 1,
                "lanes": [{ "residue": 0 }] },
            ),
            vec![],
            1,
        ),
        Case {
            upsert: true,
            ..case("s_upsert", map(1, 7, 2, true), live(1, 7, &[0, 4]), 2)
        },
        // Maps of counters across deployments, read alike.
        case(
            "s_deployment_name",
            with(
                map(1, 0, 1, true),
                "striped",
                doc! { "kind": "autoinc", "generation": 1, "base": 0, "modulus": 1,
                "lanes": [{ "residue": 0, "deployment": "EU" }], "spans": ["eu"], "here": "eu" },
            ),
            one(fresh_one()),
            1,
        ),
        case(
            "s_deployment_number",
            with(
                map(1, 0, 1, true),
                "striped",
                doc! { "kind": "autoinc", "generation": 1, "base": 0, "modulus": 1,
                "lanes": [{ "residue": 0, "deployment": 3 }], "spans": ["eu"], "here": "eu" },
            ),
            one(fresh_one()),
            1,
        ),
        case(
            "s_deployment_unlisted",
            with(
                map(1, 0, 2, true),
                "striped",
                doc! { "kind": "autoinc", "generation": 1, "base": 0, "modulus": 2,
                "lanes": [{ "residue": 0, "deployment": "eu" }, { "residue": 1, "deployment": "us" }],
                "spans": ["eu"], "here": "eu" },
            ),
            live(1, 0, &[0, 0]),
            1,
        ),
        case(
            "s_spans_without_here",
            with(
                map(1, 0, 1, true),
                "striped",
                doc! { "kind": "autoinc", "generation": 1, "base": 0, "modulus": 1,
                "lanes": [{ "residue": 0, "deployment": "eu" }], "spans": ["eu"] },
            ),
            one(fresh_one()),
            1,
        ),
        // Cyclic lanes, taken by getNextUniqueStamp(NAME, CLIENT): the
        // value is the lane's `last`, with its `ts`.
        // Fresh lanes at their floor, below the clock and above it: each
        // first take wraps, to the lane's first value.
        stamp_case(
            "c_fresh",
            cyclic_map(1, ts - 1000, 3, 9, true),
            (0..3)
                .map(|r| (r as u64, fresh_cyclic_lane(1, ts - 1000, 3, 9, r)))
                .collect(),
            3,
        ),
        stamp_case(
            "c_fresh_ahead",
            cyclic_map(1, ts + 1000, 3, 9, true),
            (0..3)
                .map(|r| (r as u64, fresh_cyclic_lane(1, ts + 1000, 3, 9, r)))
                .collect(),
            3,
        ),
        // Taken from: a lane that wraps ahead of the clock (its ts moves
        // on by one), one behind it, one ahead that does not wrap, one
        // that reaches its maxval.
        stamp_case(
            "c_taken",
            cyclic_map(2, ts - 5000, 4, 99, true),
            vec![
                (0, cyclic_lane(2, ts - 5000, 4, 99, 0, 24, ts + 50, false)),
                (1, cyclic_lane(2, ts - 5000, 4, 99, 1, 3, ts - 10, false)),
                (2, cyclic_lane(2, ts - 5000, 4, 99, 2, 0, ts + 7, false)),
                (3, cyclic_lane(2, ts - 5000, 4, 99, 3, 23, ts, false)),
            ],
            4,
        ),
        stamp_case(
            "c_int32",
            cyclic_map(1, 0, 2, 9, true),
            vec![
                (
                    0,
                    doc! { "kind": "lane", "lane": { "kind": "cyclic", "generation": 1_i32, "b": 0_i32, "m": 2_i32, "r": 0_i32, "top": 9_i32 },
                    "val": 2_i32, "maxval": 4_i32, "ts": 5_i32, "last": 4_i32, "sealed": null, "prefixes": [] },
                ),
                (1, fresh_cyclic_lane(1, 0, 2, 9, 1)),
            ],
            2,
        ),
        stamp_case(
            "c_double",
            cyclic_map(1, 0, 2, 9, true),
            vec![
                (
                    0,
                    doc! { "kind": "lane", "lane": { "kind": "cyclic", "generation": 1.0, "b": 0.0, "m": 2.0, "r": 0.0, "top": 9.0 },
                    "val": 1.0, "maxval": 4.0, "ts": (ts + 3) as f64, "last": 2.0, "sealed": null, "prefixes": [] },
                ),
                (1, fresh_cyclic_lane(1, 0, 2, 9, 1)),
            ],
            2,
        ),
        stamp_case(
            "c_sealed_beside",
            cyclic_map(3, ts - 100, 4, 99, true),
            vec![
                (0, cyclic_lane(3, ts - 100, 4, 99, 0, 2, ts, true)),
                (1, cyclic_lane(3, ts - 100, 4, 99, 1, 0, ts - 100, true)),
                (2, cyclic_lane(3, ts - 100, 4, 99, 2, 5, ts + 9, false)),
                (3, cyclic_lane(3, ts - 100, 4, 99, 3, 9, ts, true)),
            ],
            2,
        ),
        stamp_case(
            "c_gone_beside",
            cyclic_map(1, 0, 2, 9, true),
            vec![(0, cyclic_lane(1, 0, 2, 9, 0, 1, ts - 1, false))],
            2,
        ),
        stamp_case(
            "c_older_generation_beside",
            cyclic_map(2, ts - 100, 2, 9, true),
            vec![
                (0, cyclic_lane(1, 0, 3, 9, 0, 2, ts - 100, true)),
                (1, cyclic_lane(2, ts - 100, 2, 9, 1, 0, ts - 50, false)),
            ],
            2,
        ),
        // Malformed cyclic lanes: named, left unchanged.
        stamp_case(
            "c_lane_last_wrong",
            cyclic_map(1, 0, 2, 9, true),
            vec![
                (
                    0,
                    with(cyclic_lane(1, 0, 2, 9, 0, 2, ts, false), "last", 2_i64),
                ),
                (1, cyclic_lane(1, 0, 2, 9, 1, 2, ts, false)),
            ],
            2,
        ),
        stamp_case(
            "c_lane_maxval_wrong",
            cyclic_map(1, 0, 1, 9, true),
            one(with(
                cyclic_lane(1, 0, 1, 9, 0, 3, ts, false),
                "maxval",
                10_i64,
            )),
            1,
        ),
        stamp_case(
            "c_lane_val_past_maxval",
            cyclic_map(1, 0, 2, 9, true),
            vec![
                (
                    0,
                    with(cyclic_lane(1, 0, 2, 9, 0, 4, ts, false), "val", 5_i64),
                ),
                (1, cyclic_lane(1, 0, 2, 9, 1, 4, ts, false)),
            ],
            2,
        ),
        stamp_case(
            "c_lane_val_fraction",
            cyclic_map(1, 0, 1, 9, true),
            one(with(cyclic_lane(1, 0, 1, 9, 0, 3, ts, false), "val", 2.5)),
            1,
        ),
        stamp_case(
            "c_lane_ts_missing",
            cyclic_map(1, 0, 1, 9, true),
            one(without(cyclic_lane(1, 0, 1, 9, 0, 3, ts, false), "ts")),
            1,
        ),
        stamp_case(
            "c_lane_ts_string",
            cyclic_map(1, 0, 1, 9, true),
            one(with(cyclic_lane(1, 0, 1, 9, 0, 3, ts, false), "ts", "1764")),
            1,
        ),
        stamp_case(
            "c_lane_ts_negative",
            cyclic_map(1, 0, 1, 9, true),
            one(with(cyclic_lane(1, 0, 1, 9, 0, 3, ts, false), "ts", -1_i64)),
            1,
        ),
        stamp_case(
            "c_lane_top_missing",
            cyclic_map(1, 0, 1, 9, true),
            one({
                let mut lane = cyclic_lane(1, 0, 1, 9, 0, 3, ts, false);
                lane.get_document_mut("lane").unwrap().remove("top");
                lane
            }),
            1,
        ),
        // Lane 2 of 3 over 0..=1 has no value.
        stamp_case(
            "c_lane_r_above_top",
            cyclic_map(1, 0, 3, 1, true),
            vec![
                (0, cyclic_lane(1, 0, 3, 1, 0, 0, ts, false)),
                (1, cyclic_lane(1, 0, 3, 1, 1, 0, ts, false)),
                (
                    2,
                    with(
                        with(cyclic_lane(1, 0, 3, 9, 2, 0, ts, false), "maxval", 0_i64),
                        "lane",
                        doc! { "kind": "cyclic", "generation": 1, "b": 0, "m": 3, "r": 2, "top": 1 },
                    ),
                ),
            ],
            3,
        ),
        stamp_case(
            "c_lane_sealed_missing",
            cyclic_map(1, 0, 1, 9, true),
            one(without(cyclic_lane(1, 0, 1, 9, 0, 3, ts, false), "sealed")),
            1,
        ),
        stamp_case(
            "c_lane_of_autoinc",
            cyclic_map(1, 0, 1, 9, true),
            one(fresh_one()),
            1,
        ),
        stamp_case(
            "c_lane_not_a_lane",
            cyclic_map(1, 0, 1, 9, true),
            one(with(
                cyclic_lane(1, 0, 1, 9, 0, 3, ts, false),
                "kind",
                "cyclic",
            )),
            1,
        ),
        stamp_case(
            "c_lane_m_int32_top_double",
            cyclic_map(1, 0, 2, 9, true),
            vec![
                (
                    0,
                    with_place(
                        with_place(cyclic_lane(1, 0, 2, 9, 0, 1, ts, false), "m", 2_i32),
                        "top",
                        9.5,
                    ),
                ),
                (1, cyclic_lane(1, 0, 2, 9, 1, 1, ts, false)),
            ],
            2,
        ),
        // Cyclic maps: malformed, and of a kind that cannot be striped.
        stamp_case(
            "c_map_val_missing",
            without(cyclic_map(1, 0, 1, 9, true), "val"),
            one(fresh_cyclic_lane(1, 0, 1, 9, 0)),
            1,
        ),
        stamp_case(
            "c_map_maxval_zero",
            with(cyclic_map(1, 0, 1, 9, true), "maxval", 0_i64),
            one(fresh_cyclic_lane(1, 0, 1, 9, 0)),
            1,
        ),
        // Periodic lanes, taken by getNextPeriodic(NAME, count): the
        // values are the lane's `last` and those `m` apart below it, in
        // its `current` period. A lane in FAR stays there whatever the
        // server's clock; one in PAST, or in none, starts the clock's
        // period (both twins ask the same server, which says it).
        // Fresh lanes of a counter striped before its first value.
        periodic_case(
            "p_fresh",
            periodic_map(1, 0, "", 3, true),
            (0..3)
                .map(|r| (r as u64, periodic_lane(1, 0, 3, r, "", "", 0, false)))
                .collect(),
            3,
        ),
        // Taken from in the base period: above the base.
        periodic_case(
            "p_base_period",
            periodic_map(2, 40, FAR, 4, true),
            periodic_live(2, 40, FAR, &[(FAR, 2), (FAR, 0), (FAR, 5), (FAR, 1)]),
            4,
        ),
        // In a later period than the base's: above 0.
        periodic_case(
            "p_later_period",
            periodic_map(2, 40, "8999", 2, true),
            periodic_live(2, 40, "8999", &[(FAR, 1), (FAR, 4)]),
            2,
        ),
        // In the base period, in a later one and in the base period with
        // nothing handed out, all before the server's clock: each take
        // starts the clock's period, above 0.
        periodic_case(
            "p_new_period",
            periodic_map(1, 100, PAST, 3, true),
            periodic_live(1, 100, PAST, &[(PAST, 3), ("2002", 2), (PAST, 0)]),
            3,
        ),
        // In the server's period: takes go on in it (a new period is a
        // later one, not the same).
        periodic_case(
            "p_this_period",
            periodic_map(1, 40, this_year, 2, true),
            periodic_live(1, 40, this_year, &[(this_year, 2), (this_year, 0)]),
            2,
        ),
        periodic_case(
            "p_this_period_later",
            periodic_map(1, 40, PAST, 2, true),
            periodic_live(1, 40, PAST, &[(this_year, 3), (this_year, 1)]),
            2,
        ),
        // Near the end of the base period: lane 0 has one value left,
        // lane 1 none; a take from a lane in a later period than its
        // base's never runs out so.
        periodic_case(
            "p_near_exhaustion",
            periodic_map(1, MAX - 10, FAR, 2, true),
            periodic_live(1, MAX - 10, FAR, &[(FAR, 4), (FAR, 5)]),
            3,
        ),
        periodic_case(
            "p_near_exhaustion_new_period",
            periodic_map(1, MAX - 10, PAST, 2, true),
            periodic_live(1, MAX - 10, PAST, &[(PAST, 4), (PAST, 5)]),
            2,
        ),
        // Blocks: `count` values of one lane, in one take.
        Case {
            count: 3,
            ..periodic_case(
                "p_count",
                periodic_map(1, 40, FAR, 2, true),
                periodic_live(1, 40, FAR, &[(FAR, 3), (FAR, 0)]),
                2,
            )
        },
        Case {
            count: 4,
            ..periodic_case(
                "p_count_new_period",
                periodic_map(1, 0, "", 2, true),
                periodic_live(1, 0, "", &[("", 0), ("", 0)]),
                2,
            )
        },
        // More than one request takes (the host's MAX_BLOCK).
        Case {
            count: 1001,
            ..periodic_case(
                "p_count_past_block",
                periodic_map(1, 0, "", 1, true),
                periodic_live(1, 0, "", &[("", 0)]),
                1,
            )
        },
        // Months in Paris, days at +05:30.
        periodic_case(
            "p_months",
            periods_of(
                periodic_map(1, 7, "9000-05", 2, true),
                "month",
                "Europe/Paris",
            ),
            periodic_live(1, 7, "9000-05", &[("9000-05", 2), ("9000-06", 1)])
                .into_iter()
                .map(|(r, lane)| (r, periods_of(lane, "month", "Europe/Paris")))
                .collect(),
            2,
        ),
        periodic_case(
            "p_days",
            periods_of(periodic_map(1, 7, "9000-05-17", 2, true), "day", "+05:30"),
            periodic_live(1, 7, "9000-05-17", &[("9000-05-18", 3), ("9000-05-17", 0)])
                .into_iter()
                .map(|(r, lane)| (r, periods_of(lane, "day", "+05:30")))
                .collect(),
            2,
        ),
        periodic_case(
            "p_int32_double",
            periodic_map(1, 10, FAR, 2, true),
            vec![
                (
                    0,
                    doc! { "kind": "lane", "lane": { "kind": "periodic", "generation": 1_i32, "b": 10_i32, "m": 2_i32, "r": 0_i32,
                    "period": "year", "zone": "UTC", "base_period": FAR },
                    "current": FAR, "seq": 3_i32, "last": 15_i32, "sealed": null, "prefixes": [] },
                ),
                (
                    1,
                    doc! { "kind": "lane", "lane": { "kind": "periodic", "generation": 1.0, "b": 10.0, "m": 2.0, "r": 1.0,
                    "period": "year", "zone": "UTC", "base_period": "8999" },
                    "current": FAR, "seq": 2.0, "last": 4.0, "sealed": null, "prefixes": [] },
                ),
            ],
            2,
        ),
        // A change of stripes passed some lanes: sealed, gone, of the
        // generation before; a lane of another generation that no change
        // sealed is a live lane, as its guard says.
        periodic_case(
            "p_sealed_beside",
            periodic_map(3, 40, FAR, 4, true),
            vec![
                (0, periodic_lane(3, 40, 4, 0, FAR, FAR, 2, true)),
                (1, periodic_lane(3, 40, 4, 1, FAR, FAR, 0, true)),
                (2, periodic_lane(3, 40, 4, 2, FAR, FAR, 5, false)),
                (3, periodic_lane(3, 40, 4, 3, "8999", FAR, 9, true)),
            ],
            2,
        ),
        periodic_case(
            "p_gone_beside",
            periodic_map(1, 0, FAR, 2, true),
            vec![(0, periodic_lane(1, 0, 2, 0, FAR, FAR, 3, false))],
            2,
        ),
        periodic_case(
            "p_older_generation_beside",
            periodic_map(2, 30, FAR, 2, true),
            vec![
                (0, periodic_lane(1, 0, 3, 0, FAR, FAR, 10, true)),
                (1, periodic_lane(2, 30, 2, 1, FAR, FAR, 1, false)),
            ],
            2,
        ),
        periodic_case(
            "p_generation_mismatch_live",
            periodic_map(2, 30, FAR, 1, true),
            vec![(0, periodic_lane(1, 0, 1, 0, FAR, FAR, 10, false))],
            1,
        ),
        // Malformed periodic lanes: named, left unchanged.
        periodic_case(
            "p_lane_unit_week",
            periodic_map(1, 0, FAR, 1, true),
            one(with_place(periodic_one(), "period", "week")),
            1,
        ),
        periodic_case(
            "p_lane_unit_missing",
            periodic_map(1, 0, FAR, 1, true),
            one(without_place(periodic_one(), "period")),
            1,
        ),
        periodic_case(
            "p_lane_zone_spaces",
            periodic_map(1, 0, FAR, 1, true),
            one(with_place(periodic_one(), "zone", "Europe Paris")),
            1,
        ),
        periodic_case(
            "p_lane_zone_number",
            periodic_map(1, 0, FAR, 1, true),
            one(with_place(periodic_one(), "zone", 1_i32)),
            1,
        ),
        periodic_case(
            "p_lane_base_period_short",
            periodic_map(1, 0, FAR, 1, true),
            one(with_place(periodic_one(), "base_period", "900")),
            1,
        ),
        periodic_case(
            "p_lane_base_period_missing",
            periodic_map(1, 0, FAR, 1, true),
            one(without_place(periodic_one(), "base_period")),
            1,
        ),
        periodic_case(
            "p_lane_current_month",
            periodic_map(1, 0, FAR, 1, true),
            one(with(periodic_one(), "current", "9000-01")),
            1,
        ),
        periodic_case(
            "p_lane_current_number",
            periodic_map(1, 0, FAR, 1, true),
            one(with(periodic_one(), "current", 9000_i32)),
            1,
        ),
        periodic_case(
            "p_lane_current_before_base",
            periodic_map(1, 0, FAR, 2, true),
            vec![
                (0, periodic_lane(1, 0, 2, 0, FAR, "8999", 1, false)),
                (1, periodic_lane(1, 0, 2, 1, FAR, "", 0, false)),
            ],
            2,
        ),
        periodic_case(
            "p_lane_last_wrong",
            periodic_map(1, 20, FAR, 2, true),
            vec![
                (
                    0,
                    with(
                        periodic_lane(1, 20, 2, 0, FAR, FAR, 2, false),
                        "last",
                        22_i64,
                    ),
                ),
                // Above the base in a later period than the base's.
                (
                    1,
                    with(
                        periodic_lane(1, 20, 2, 1, "8999", FAR, 2, false),
                        "last",
                        24_i64,
                    ),
                ),
            ],
            2,
        ),
        // A later period has a value: local value 0 is not one.
        periodic_case(
            "p_lane_seq_zero_later",
            periodic_map(1, 0, "8999", 1, true),
            one(periodic_lane(1, 0, 1, 0, "8999", FAR, 0, false)),
            1,
        ),
        periodic_case(
            "p_lane_seq_past_capacity",
            periodic_map(1, MAX - 10, FAR, 2, true),
            vec![
                (0, periodic_lane(1, MAX - 10, 2, 0, FAR, FAR, 1, false)),
                (
                    1,
                    with(
                        periodic_lane(1, MAX - 10, 2, 1, FAR, FAR, 5, false),
                        "seq",
                        6_i64,
                    ),
                ),
            ],
            2,
        ),
        periodic_case(
            "p_lane_sealed_missing",
            periodic_map(1, 0, FAR, 1, true),
            one(without(periodic_one(), "sealed")),
            1,
        ),
        periodic_case(
            "p_lane_of_autoinc",
            periodic_map(1, 0, FAR, 1, true),
            one(fresh_one()),
            1,
        ),
        periodic_case(
            "p_lane_not_a_lane",
            periodic_map(1, 0, FAR, 1, true),
            one(with(periodic_one(), "kind", "periodic")),
            1,
        ),
        // Well formed, but not of its map's zone: the take (whose zone is
        // the map's) matches nothing, and the map is read again until
        // neither twin has a lane left to try.
        periodic_case(
            "p_lane_zone_not_the_maps",
            periodic_map(1, 0, FAR, 1, true),
            one(with_place(periodic_one(), "zone", "Europe/Paris")),
            1,
        ),
        // Identities (issue 49): a lane of another incarnation than its
        // map's is another counter's of the name, which neither twin takes
        // from; a lane of the map's, or of none (written before
        // incarnations), is taken from. A map's malformed one is named.
        case(
            "s_lane_of_another_counter",
            with(map(1, 0, 1, true), "incarnation", MINE),
            one(with_place(fresh_one(), "incarnation", OTHER)),
            1,
        ),
        case(
            "s_lane_of_its_counter",
            with(map(1, 0, 2, true), "incarnation", MINE),
            vec![
                (
                    0,
                    with_place(lane(1, 0, 2, 0, 3, false), "incarnation", MINE),
                ),
                (1, lane(1, 0, 2, 1, 0, false)),
            ],
            2,
        ),
        stamp_case(
            "c_lane_of_its_counter",
            with(cyclic_map(1, 0, 1, 9, true), "incarnation", MINE),
            one(with_place(
                fresh_cyclic_lane(1, 0, 1, 9, 0),
                "incarnation",
                MINE,
            )),
            1,
        ),
        periodic_case(
            "p_lane_of_its_counter",
            with(periodic_map(1, 0, FAR, 1, true), "incarnation", MINE),
            one(with_place(periodic_one(), "incarnation", MINE)),
            1,
        ),
        case(
            "s_map_incarnation_number",
            with(map(1, 0, 1, true), "incarnation", 49_i64),
            one(fresh_one()),
            1,
        ),
        // Periodic maps, malformed: their own fields are what their lanes
        // are made of, read with the map.
        periodic_case(
            "p_map_unit_week",
            with(periodic_map(1, 0, FAR, 1, true), "period", "week"),
            one(periodic_one()),
            1,
        ),
        periodic_case(
            "p_map_zone_missing",
            without(periodic_map(1, 0, FAR, 1, true), "zone"),
            one(periodic_one()),
            1,
        ),
        periodic_case(
            "p_map_current_short",
            with(periodic_map(1, 0, FAR, 1, true), "current", "90"),
            one(periodic_one()),
            1,
        ),
        periodic_case(
            "p_map_seq_missing",
            without(periodic_map(1, 0, FAR, 1, true), "seq"),
            one(periodic_one()),
            1,
        ),
        // Its own fields are read before its modulus.
        periodic_case(
            "p_map_unit_and_modulus",
            {
                let mut document = with(periodic_map(1, 0, FAR, 1, true), "period", 3_i32);
                document
                    .get_document_mut("striped")
                    .unwrap()
                    .insert("modulus", 0_i64);
                document
            },
            one(periodic_one()),
            1,
        ),
        periodic_case(
            "p_map_base_period_number",
            {
                let mut document = periodic_map(1, 0, FAR, 1, true);
                document
                    .get_document_mut("striped")
                    .unwrap()
                    .insert("base_period", 9000_i32);
                document
            },
            one(periodic_one()),
            1,
        ),
        // Cyclic maps' own fields are read with the map too.
        stamp_case(
            "c_map_maxval_string",
            with(cyclic_map(1, 0, 1, 9, true), "maxval", "9"),
            one(fresh_cyclic_lane(1, 0, 1, 9, 0)),
            1,
        ),
        // Lanes in this deployment (here: eu) and in another: the twin
        // takes from this one's; the host, given no deployment, refuses.
        // (Not a case: their answers differ by design; see
        // striped_deployments.rs.)
    ]
}

async fn seed(database: &Database, cases: &[Case]) {
    let counters = database.collection::<Document>("counters");
    for case in cases {
        let mut map = doc! { "_id": case.name };
        map.extend(case.map.clone());
        counters.insert_one(map).await.unwrap();
        for (residue, fields) in &case.lanes {
            let mut lane = doc! { "_id": format!("{}#{residue}", case.name) };
            lane.extend(fields.clone());
            counters.insert_one(lane).await.unwrap();
        }
    }
}

/// Every document of `collection`, each as canonical extended JSON (BSON
/// types kept: an int32 left where the other twin wrote an int64 differs).
async fn documents(database: &Database, collection: &str) -> Vec<Value> {
    support::documents(database, collection)
        .await
        .into_iter()
        .map(|document| Bson::Document(document).into_canonical_extjson())
        .collect()
}

/// The outcomes of a case, in an order that does not depend on which
/// lane each twin met first (nor on the order of an outcome's fields).
fn sorted(mut outcomes: Vec<Value>) -> Vec<Value> {
    outcomes.sort_by_key(|outcome| {
        let fields: BTreeMap<&String, &Value> = outcome.as_object().unwrap().iter().collect();
        format!("{fields:?}")
    });
    outcomes
}

/// The modulus a case's map says, for the twin's first lane (1 when it
/// says none).
fn modulus(case: &Case) -> i64 {
    case.map
        .get_document("striped")
        .ok()
        .and_then(|striped| striped.get("modulus"))
        .and_then(Bson::as_i64)
        .filter(|modulus| *modulus > 0)
        .unwrap_or(1)
}

/// `getNextSequence` (autoinc lanes), `getNextUniqueStamp` (cyclic lanes,
/// at the clock `CLIENT`), `getNextPeriodic` (periodic lanes, `count`
/// values a call) and the host's take (`Sequence::open`, then `take`) on
/// the same striped counters give the same values (a cyclic lane's with
/// the same timestamps, a periodic lane's in the same period) and refusals
/// (in whichever order their lanes came), leave the same documents, leave
/// a counter that refused every call as it was, and the twin sends, for
/// every lane it takes from, the command `lane_take_command` prints for
/// its map and count: filter and update, BSON types included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stored_function_and_the_host_take_alike_from_a_striped_counter() {
    let cases = cases();
    let host_db = support::database("striped_twin_host").await;
    let twin_db = support::database("striped_twin_js").await;
    seed(&host_db, &cases).await;
    seed(&twin_db, &cases).await;
    installer::install(&twin_db, &Default::default())
        .await
        .unwrap();

    let mut host: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for case in &cases {
        let name = CounterName::new(case.name).unwrap();
        let opened = Sequence::open(&host_db, name, &OpenOptions::default()).await;
        let outcomes = host.entry(case.name).or_default();
        let client = match case.twin {
            Twin::Sequence | Twin::Periodic => 0,
            Twin::Stamp => CLIENT,
        };
        for _ in 0..case.calls {
            let outcome = match &opened {
                Ok((sequence, _)) => sequence
                    .take(case.count, client)
                    .await
                    .map_err(|error| error.to_string()),
                Err(error) => Err(error.to_string()),
            };
            outcomes.push(match (outcome, case.twin) {
                (Ok(taken), Twin::Sequence) => json!({ "val": taken[0].sequence }),
                (Ok(taken), Twin::Stamp) => {
                    json!({ "ts": taken[0].timestamp_micros, "val": taken[0].sequence })
                }
                (Ok(taken), Twin::Periodic) => json!({
                    "period": taken[0].period.expect("a periodic value has its period").to_string(),
                    "values": taken.iter().map(|stamp| stamp.sequence).collect::<Vec<_>>(),
                }),
                (Err(error), _) => json!({ "error": error }),
            });
        }
    }

    // The twin, one mongosh session for every call: call i of a case
    // starts at lane i (its random first lane chosen so), and every lane
    // take it sends is kept, as the server received it, in `sent`.
    let calls: Vec<Value> = cases
        .iter()
        .flat_map(|case| {
            (0..case.calls).map(|call| {
                json!([
                    case.name,
                    case.twin.function(),
                    case.upsert,
                    modulus(case),
                    call,
                    case.count
                ])
            })
        })
        .collect();
    let script = format!(
        r##"
        const sent = db.getCollection("sent");
        const send = db.runCommand.bind(db);
        db.runCommand = function (command, ...rest) {{
          if (command.findAndModify && String(command.query._id).includes("#")) {{
            sent.insertOne({{ query: command.query, update: command.update }});
          }}
          return send(command, ...rest);
        }};
        for (const [name, fn, upsert, modulus, call, count] of {calls}) {{
          const random = Math.random;
          Math.random = () => ((call % modulus) + 0.5) / modulus;
          try {{
            if (fn === "getNextUniqueStamp") {{
              const taken = getNextUniqueStamp(name, {CLIENT});
              print(JSON.stringify({{ case: name, ts: taken.ts, val: taken.val }}));
              continue;
            }}
            if (fn === "getNextPeriodic") {{
              const taken = getNextPeriodic(name, count);
              print(JSON.stringify({{ case: name, period: taken.period, values: taken.values }}));
              continue;
            }}
            const val = upsert ? getNextSequence(name, {{ upsert: true, start: {START} }})
              : getNextSequence(name);
            print(JSON.stringify({{ case: name, val: val }}));
          }} catch (e) {{
            print(JSON.stringify({{ case: name, error: e.message }}));
          }} finally {{
            Math.random = random;
          }}
        }}
        "##,
        calls = Value::Array(calls)
    );
    let twin_db_name = database_name("striped_twin_js");
    let lines = tokio::task::spawn_blocking(move || {
        support::mongosh::json_lines(&mut shell_in(&twin_db_name, &script))
    })
    .await
    .unwrap();
    let mut twin: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for line in &lines {
        let case = cases
            .iter()
            .find(|case| line["case"] == case.name)
            .unwrap_or_else(|| panic!("{line}"));
        let mut outcome = line.clone();
        outcome.as_object_mut().unwrap().remove("case");
        twin.entry(case.name).or_default().push(outcome);
    }
    for case in &cases {
        assert_eq!(
            sorted(twin.remove(case.name).unwrap_or_default()),
            sorted(host[case.name].clone()),
            "{}: the twin (left) and the host (right) disagree",
            case.name
        );
    }
    assert_eq!(
        documents(&twin_db, "counters").await,
        documents(&host_db, "counters").await,
        "the twin (left) and the host (right) left different documents"
    );

    // A case that refused every call left its documents as they were.
    let pristine = support::database("striped_twin_pristine").await;
    seed(&pristine, &cases).await;
    let pristine = documents(&pristine, "counters").await;
    let after = documents(&host_db, "counters").await;
    let mut refused = 0;
    for case in &cases {
        if host[case.name]
            .iter()
            .all(|outcome| outcome.get("error").is_some())
        {
            refused += 1;
            let of_case = |documents: &[Value]| -> Vec<Value> {
                documents
                    .iter()
                    .filter(|document| {
                        let id = document["_id"].as_str().unwrap();
                        id == case.name || id.starts_with(&format!("{}#", case.name))
                    })
                    .cloned()
                    .collect()
            };
            assert_eq!(of_case(&after), of_case(&pristine), "{}", case.name);
        }
    }
    assert!(refused > 5, "too few cases refused every call: {refused}");
    // Another counter's lane was refused; its counter's own taken from.
    let errors = |case: &str| {
        host[case]
            .iter()
            .filter(|o| o.get("error").is_some())
            .count()
    };
    assert_eq!(errors("s_lane_of_another_counter"), 1, "{host:?}");
    for case in [
        "s_lane_of_its_counter",
        "c_lane_of_its_counter",
        "p_lane_of_its_counter",
    ] {
        assert_eq!(errors(case), 0, "{case}: {:?}", host[case]);
    }

    // Every lane take the twin sent is the host's command for that lane
    // (a periodic lane's of the map's period and zone, and of the case's
    // count).
    let sent = support::documents(&twin_db, "sent").await;
    let taken: usize = host
        .values()
        .flatten()
        .filter(|outcome| outcome.get("val").is_some() || outcome.get("values").is_some())
        .count();
    assert!(
        sent.len() >= taken,
        "{} takes sent, {taken} values",
        sent.len()
    );
    let mut compared: BTreeMap<&str, usize> = BTreeMap::new();
    for command in sent {
        let query = command.get_document("query").unwrap();
        let (name, residue) = query.get_str("_id").unwrap().split_once('#').unwrap();
        let residue: u64 = residue.parse().unwrap();
        let case = cases
            .iter()
            .find(|case| case.name == name)
            .unwrap_or_else(|| panic!("{name}: no such case"));
        let mut map = StripeMap::live(
            &case.lanes_of(),
            1,
            Generation::new(0, residue + 1).unwrap(),
        );
        map.incarnation = case
            .map
            .get_str("incarnation")
            .ok()
            .and_then(Incarnation::parse);
        let expected = lane_take_command(
            &CounterName::new(name).unwrap(),
            &map,
            residue,
            case.count as u64,
            ClientTime::Micros(CLIENT),
        )
        .unwrap();
        for field in ["query", "update"] {
            assert_eq!(
                command.get(field).unwrap().clone().into_canonical_extjson(),
                expected
                    .get(field)
                    .unwrap()
                    .clone()
                    .into_canonical_extjson(),
                "{name}#{residue}: the twin's {field} (left) is not the host's (right)"
            );
        }
        *compared.entry(case.twin.function()).or_default() += 1;
    }
    // Every twin's takes were compared (a periodic lane's of each unit).
    assert_eq!(compared.len(), 3, "{compared:?}");
    assert!(compared["getNextPeriodic"] >= 30, "{compared:?}");
}

/// `readCounter(NAME, LANE, "lane")` reads each lane as the host's lane
/// reader does (`striping::lanes`, which reads each with `lane::read`):
/// the same fields of a well-formed cyclic (or autoinc) lane, whatever
/// its numbers' BSON types, and the same reason, in the host's words, for
/// a malformed one.
#[tokio::test]
async fn the_stored_reader_reads_a_lane_as_the_host_does() {
    const TEST: &str = "striped_twin_lane_reader";
    let database = support::database(TEST).await;
    installer::install(&database, &Default::default())
        .await
        .unwrap();
    let ts = CLIENT as i64;
    // Lane 2 of 4 over 0..=99, as lane.rs shows it: maxval 24, val 3,
    // last 14.
    let good = || cyclic_lane(1, ts - 123, 4, 99, 2, 3, ts, false);
    let lanes: Vec<Document> = vec![
        good(),
        fresh_cyclic_lane(3, ts, 4, 99, 2),
        cyclic_lane(1, 0, 4, 99, 2, 24, ts, true),
        doc! { "kind": "lane", "lane": { "kind": "cyclic", "generation": 1_i32, "b": 0_i32, "m": 4_i32, "r": 2_i32, "top": 99_i32 },
        "val": 0_i32, "maxval": 24_i32, "ts": 7_i32, "last": 2_i32, "sealed": null, "prefixes": [] },
        doc! { "kind": "lane", "lane": { "kind": "cyclic", "generation": 1.0, "b": 0.0, "m": 4.0, "r": 2.0, "top": 99.0 },
        "val": 1.0, "maxval": 24.0, "ts": ts as f64, "last": 6.0, "sealed": null, "prefixes": [] },
        // The whole cycle in one lane, and its largest cycle.
        cyclic_lane(1, 0, 1, 1, 0, 1, 0, false),
        cyclic_lane(
            1,
            0,
            1,
            9_007_199_254_740_990,
            0,
            9_007_199_254_740_990,
            ts,
            false,
        ),
        // Malformed: one field each.
        with_place(good(), "top", 0_i64),
        with_place(good(), "top", 9_007_199_254_740_991_i64),
        with_place(good(), "top", "99"),
        with_place(good(), "top", 99.5),
        {
            let mut lane = good();
            lane.get_document_mut("lane").unwrap().remove("top");
            lane
        },
        with(with_place(good(), "top", 1_i64), "maxval", 0_i64),
        with(good(), "maxval", 25_i64),
        with(good(), "maxval", -1_i64),
        with(good(), "maxval", Bson::Null),
        without(good(), "maxval"),
        with(good(), "val", 25_i64),
        with(good(), "val", -3_i64),
        with(good(), "val", 3.5),
        with(good(), "val", "3"),
        without(good(), "val"),
        with(good(), "ts", -1_i64),
        with(good(), "ts", "now"),
        with(good(), "ts", 1.5),
        with(good(), "ts", DateTime::from_millis(1)),
        without(good(), "ts"),
        with(good(), "last", 15_i64),
        with(good(), "last", 3_i64),
        without(good(), "last"),
        with(good(), "sealed", true),
        without(good(), "sealed"),
        with(good(), "kind", "cyclic"),
        with_place(good(), "r", 4_i64),
        with_place(good(), "m", 0_i64),
        with_place(good(), "b", 9_007_199_254_740_990_i64),
        with_place(good(), "kind", 7_i64),
        without(good(), "lane"),
        // A cyclic lane read as an autoinc one (its kind says so), and an
        // autoinc lane with neither seq nor last: last is read first.
        with_place(good(), "kind", "autoinc"),
        without(without(lane(1, 0, 2, 1, 3, false), "seq"), "last"),
        lane(2, 40, 3, 1, 5, false),
    ];
    let name = counter_name("lanes");
    let counters = database.collection::<Document>("counters");
    for (residue, fields) in lanes.iter().enumerate() {
        let mut document = doc! { "_id": format!("lanes#{residue}") };
        document.extend(fields.clone());
        counters.insert_one(document).await.unwrap();
    }
    let map = StripeMap::live(
        &LaneOf::Cyclic { top: 9 },
        1,
        Generation::new(0, lanes.len() as u64).unwrap(),
    );
    let host: Vec<Value> = idmint::sequence::striping::lanes(&database, None, &name, &map)
        .await
        .unwrap()
        .into_iter()
        .map(|report| match report.lane {
            Ok(lane) => json!({
                "kind": lane.kind,
                "generation": lane.generation,
                "b": lane.lane.generation().base,
                "m": lane.lane.generation().modulus,
                "r": lane.lane.residue(),
                "local": format!("{:?}", lane.local),
                "last": lane.last,
                "sealed": lane.sealed,
            }),
            Err(reason) => {
                let reason = reason
                    .strip_prefix("corrupt: ")
                    .unwrap_or_else(|| panic!("lane {}: {reason}", report.residue));
                json!({ "error": format!(
                    "counter 'lanes': lane 'lanes#{}' is corrupt: {reason}; it was left unchanged",
                    report.residue
                ) })
            }
        })
        .collect();
    let script = format!(
        r#"
        for (let r = 0; r < {count}; r++) {{
          try {{
            const lane = readCounter("lanes", db.getCollection("counters").findOne({{ _id: "lanes#" + r }}), "lane");
            print(JSON.stringify({{ r: r, lane: lane }}));
          }} catch (e) {{
            print(JSON.stringify({{ r: r, error: e.message }}));
          }}
        }}
        "#,
        count = lanes.len()
    );
    let lines = twin(TEST, script).await;
    assert_eq!(lines.len(), lanes.len(), "{lines:?}");
    let twin: Vec<Value> = lines
        .iter()
        .map(|line| {
            if let Some(error) = line.get("error") {
                return json!({ "error": error });
            }
            let lane = &line["lane"];
            // The host's Local, as Debug shows it.
            let local = if lane.get("val").is_some() {
                format!(
                    "Cyclic {{ val: {}, maxval: {}, ts: {}, top: {} }}",
                    lane["val"], lane["maxval"], lane["ts"], lane["top"]
                )
            } else {
                format!("Autoinc {{ seq: {} }}", lane["seq"])
            };
            json!({
                "kind": lane["kind"],
                "generation": lane["generation"],
                "b": lane["b"],
                "m": lane["m"],
                "r": lane["r"],
                "local": local,
                "last": lane["last"],
                "sealed": lane["sealed"],
            })
        })
        .collect();
    for (residue, (twin, host)) in twin.iter().zip(&host).enumerate() {
        assert_eq!(
            twin, host,
            "lane {residue} ({}): the twin (left) and the host (right) disagree",
            lanes[residue]
        );
    }
    // Both kinds of answer were compared.
    let read = host
        .iter()
        .filter(|lane| lane.get("error").is_none())
        .count();
    assert!(read >= 8 && host.len() - read >= 30, "{host:?}");
}

/// How the host's `Local` (Debug) shows the period of `label` ("": none)
/// of `unit`.
fn period_debug(unit: &str, label: &str) -> String {
    if label.is_empty() {
        return "None".to_string();
    }
    let unit: PeriodUnit = unit.parse().unwrap();
    let part = |range: std::ops::Range<usize>| {
        label
            .get(range)
            .map_or(1, |text| text.parse::<u16>().unwrap())
    };
    format!(
        "Some(Period {{ unit: {unit:?}, year: {}, month: {}, day: {} }})",
        part(0..4),
        part(5..7),
        part(8..10)
    )
}

/// `readCounter(NAME, LANE, "lane")` reads each periodic lane as the
/// host's lane reader does, and `readCounter(NAME, MAP, "striped")` each
/// map (of periodic lanes above all, its `base_period` and its own fields
/// with it) as `StripeMap::read`: the same fields of a well-formed one,
/// whatever its numbers' BSON types, and the same reason, in the host's
/// words, for a malformed one, the first one the host meets when several
/// fields are wrong.
#[tokio::test]
async fn the_stored_reader_reads_periodic_lanes_and_maps_as_the_host_does() {
    const TEST: &str = "striped_twin_periodic_reader";
    let database = support::database(TEST).await;
    installer::install(&database, &Default::default())
        .await
        .unwrap();
    // Lane 2 of 4 above 41 in 2026, as lane.rs shows it: seq 3, last 52.
    let good = || periodic_lane(1, 41, 4, 2, "2026", "2026", 3, false);
    // The same in 2027, a later period: last 7.
    let later = || periodic_lane(1, 41, 4, 2, "2026", "2027", 2, false);
    // The most local values of lane 2 of 4 in a later period.
    let most_later = (MAX - 3) / 4 + 1;
    let lanes: Vec<Document> = vec![
        good(),
        later(),
        periodic_lane(1, 0, 4, 2, "", "", 0, false),
        periodic_lane(1, 0, 4, 2, "", "2026", 1, false),
        periodic_lane(2, 41, 4, 2, "2026", "2026", 0, true),
        periods_of(
            periodic_lane(1, 5, 4, 2, "2026-11", "2026-12", 1, false),
            "month",
            "Europe/Paris",
        ),
        periods_of(
            periodic_lane(1, 5, 4, 2, "2026-11-23", "2026-11-23", 4, false),
            "day",
            "+05:30",
        ),
        doc! { "kind": "lane", "lane": { "kind": "periodic", "generation": 1_i32, "b": 41_i32, "m": 4_i32, "r": 2_i32,
        "period": "year", "zone": "UTC", "base_period": "2026" },
        "current": "2026", "seq": 3_i32, "last": 52_i32, "sealed": null, "prefixes": [] },
        doc! { "kind": "lane", "lane": { "kind": "periodic", "generation": 1.0, "b": 41.0, "m": 4.0, "r": 2.0,
        "period": "year", "zone": "UTC", "base_period": "2026" },
        "current": "2027", "seq": 2.0, "last": 7.0, "sealed": null, "prefixes": [] },
        // The last value of the base period, and of a later one.
        periodic_lane(1, MAX - 4, 4, 2, "2026", "2026", 1, false),
        periodic_lane(1, 41, 4, 2, "2026", "2027", most_later, false),
        // Read as an autoinc lane, as its kind says.
        with_place(good(), "kind", "autoinc"),
        // Malformed: one field each.
        with_place(good(), "period", "week"),
        with_place(good(), "period", 1_i64),
        without_place(good(), "period"),
        with_place(good(), "zone", "Europe Paris"),
        with_place(good(), "zone", ""),
        with_place(good(), "zone", Bson::Null),
        without_place(good(), "zone"),
        with_place(good(), "base_period", "26"),
        with_place(good(), "base_period", "2026-11"),
        with_place(good(), "base_period", 2026_i32),
        without_place(good(), "base_period"),
        periods_of(good(), "month", "UTC"),
        with(good(), "current", "2026-13"),
        with(good(), "current", "2025"),
        with(good(), "current", ""),
        with(good(), "current", 2026_i64),
        without(good(), "current"),
        with(good(), "seq", -1_i64),
        with(good(), "seq", 2.5),
        with(good(), "seq", "3"),
        without(good(), "seq"),
        with(good(), "seq", 0_i64),
        periodic_lane(1, 41, 4, 2, "2026", "2027", 0, false),
        with(
            periodic_lane(1, MAX - 4, 4, 2, "2026", "2026", 1, false),
            "seq",
            2_i64,
        ),
        with(later(), "seq", most_later + 1),
        with(good(), "last", 53_i64),
        // A later period's last counted above the base.
        with(later(), "last", 52_i64),
        with(good(), "sealed", true),
        without(good(), "sealed"),
        with(good(), "kind", "periodic"),
        with_place(good(), "r", 4_i64),
        // Several fields wrong: the first the host reads is named.
        with_place(with_place(good(), "period", "week"), "zone", "x y"),
        with(with_place(good(), "base_period", "x"), "current", "y"),
        with(with(good(), "current", "x"), "seq", -1_i64),
        with(with(good(), "seq", "x"), "last", "y"),
    ];
    let name = counter_name("lanes");
    let counters = database.collection::<Document>("counters");
    for (residue, fields) in lanes.iter().enumerate() {
        let mut document = doc! { "_id": format!("lanes#{residue}") };
        document.extend(fields.clone());
        counters.insert_one(document).await.unwrap();
    }
    let of_lanes = StripeMap::live(
        &LaneOf::Periodic {
            unit: PeriodUnit::Year,
            zone: "UTC".to_string(),
        },
        1,
        Generation::new(0, lanes.len() as u64).unwrap(),
    );
    let host_lanes: Vec<Value> =
        idmint::sequence::striping::lanes(&database, None, &name, &of_lanes)
            .await
            .unwrap()
            .into_iter()
            .map(|report| match report.lane {
                Ok(lane) => json!({
                    "kind": lane.kind,
                    "generation": lane.generation,
                    "b": lane.lane.generation().base,
                    "m": lane.lane.generation().modulus,
                    "r": lane.lane.residue(),
                    "local": format!("{:?}", lane.local),
                    "last": lane.last,
                    "sealed": lane.sealed,
                }),
                Err(reason) => {
                    let reason = reason
                        .strip_prefix("corrupt: ")
                        .unwrap_or_else(|| panic!("lane {}: {reason}", report.residue));
                    json!({ "error": format!(
                    "counter 'lanes': lane 'lanes#{}' is corrupt: {reason}; it was left unchanged",
                    report.residue
                ) })
                }
            })
            .collect();

    // Maps, each read alone.
    let periodic = || periodic_map(2, 41, "2026", 4, true);
    let base_period = |value: Bson| {
        let mut document = periodic();
        document
            .get_document_mut("striped")
            .unwrap()
            .insert("base_period", value);
        document
    };
    let modulus_zero = |mut document: Document| {
        document
            .get_document_mut("striped")
            .unwrap()
            .insert("modulus", 0_i64);
        document
    };
    let maps: Vec<Document> = vec![
        periodic(),
        periodic_map(1, 0, "", 3, true),
        periodic_map(2, 41, "2026", 4, false),
        periods_of(
            periodic_map(1, 7, "2026-11", 2, true),
            "month",
            "Europe/Paris",
        ),
        base_period(Bson::String(String::new())),
        // Not a label of its unit: the map reads it as a string only.
        base_period(Bson::String("someday".into())),
        base_period(Bson::Int32(2026)),
        base_period(Bson::Null),
        with(periodic(), "period", "week"),
        without(periodic(), "period"),
        with(periodic(), "zone", "Europe Paris"),
        without(periodic(), "zone"),
        with(periodic(), "current", "2026-01"),
        with(periodic(), "current", 2026_i64),
        with(periodic(), "seq", -1_i64),
        without(periodic(), "seq"),
        modulus_zero(periodic()),
        // Its own fields, then base_period, are read before its modulus.
        modulus_zero(with(periodic(), "period", "week")),
        modulus_zero(base_period(Bson::Int32(2026))),
        // Other kinds' own fields, read with their map.
        snowflake_map(doc! {}),
        snowflake_map(doc! { "tag": 7_i64, "salt": "+0123456789abcde" }),
        snowflake_map(doc! { "unit": "us" }),
        snowflake_map(doc! { "seq_bits": 11_i64 }),
        snowflake_map(doc! { "time_bits": 19_i64, "worker_bits": 32_i64 }),
        snowflake_map(doc! { "epoch_ms": -1_i64 }),
        snowflake_map(doc! { "tag": 7_i64 }),
        snowflake_map(doc! { "tag": 7_i64, "salt": "0123456789abcdeg" }),
        snowflake_map(doc! { "tag": 0_i64, "salt": "0123456789abcdef" }),
        cyclic_map(1, 0, 2, 9, true),
        with(cyclic_map(1, 0, 2, 9, true), "maxval", 0_i64),
        map(1, 0, 2, true),
        with(
            with(with(map(1, 0, 2, true), "max", 1_i64), "step", 0_i64),
            "striped",
            doc! { "kind": "segment", "generation": 1, "base": 0, "modulus": 2,
            "lanes": [{ "residue": 0 }, { "residue": 1 }] },
        ),
        // Its incarnation (issue 49): none (absent or null), or 32
        // lowercase hex digits, read once striped is found, before the
        // rest.
        with(periodic(), "incarnation", MINE),
        with(periodic(), "incarnation", Bson::Null),
        with(periodic(), "incarnation", "xyz"),
        with(periodic(), "incarnation", MINE.to_uppercase()),
        with(periodic(), "incarnation", 49_i32),
        with(without(periodic(), "striped"), "incarnation", 49_i32),
        modulus_zero(with(
            with(periodic(), "period", "week"),
            "incarnation",
            "xyz",
        )),
    ];
    for (index, fields) in maps.iter().enumerate() {
        let mut document = doc! { "_id": format!("maps-{index}") };
        document.extend(fields.clone());
        counters.insert_one(document).await.unwrap();
    }
    let host_maps: Vec<Value> = maps
        .iter()
        .map(|document| match StripeMap::read(document) {
            Ok(map) => json!({
                "kind": map.kind,
                "generation": map.generation,
                "base": map.base,
                "base_period": map.base_period,
                "modulus": map.modulus,
                "live": map.live,
                "incarnation": map.incarnation,
            }),
            Err(reason) => json!({ "error": format!(
                "counter 'maps': its stripe map is corrupt: {reason}; it was left unchanged"
            ) }),
        })
        .collect();

    let script = format!(
        r#"
        const counters = db.getCollection("counters");
        for (let r = 0; r < {lanes}; r++) {{
          try {{
            const lane = readCounter("lanes", counters.findOne({{ _id: "lanes#" + r }}), "lane");
            print(JSON.stringify({{ r: r, lane: lane }}));
          }} catch (e) {{
            print(JSON.stringify({{ r: r, error: e.message }}));
          }}
        }}
        for (let i = 0; i < {maps}; i++) {{
          try {{
            const map = readCounter("maps", counters.findOne({{ _id: "maps-" + i }}), "striped");
            print(JSON.stringify({{ i: i, map: map }}));
          }} catch (e) {{
            print(JSON.stringify({{ i: i, error: e.message }}));
          }}
        }}
        "#,
        lanes = lanes.len(),
        maps = maps.len()
    );
    let lines = twin(TEST, script).await;
    assert_eq!(lines.len(), lanes.len() + maps.len(), "{lines:?}");
    let (lane_lines, map_lines) = lines.split_at(lanes.len());
    let twin_lanes: Vec<Value> = lane_lines
        .iter()
        .map(|line| {
            if let Some(error) = line.get("error") {
                return json!({ "error": error });
            }
            let lane = &line["lane"];
            // The host's Local, as Debug shows it.
            let local = match lane["kind"].as_str().unwrap() {
                "periodic" => {
                    let unit = lane["period"].as_str().unwrap();
                    format!(
                        "Periodic {{ seq: {}, current: {}, base_period: {} }}",
                        lane["seq"],
                        period_debug(unit, lane["current"].as_str().unwrap()),
                        period_debug(unit, lane["basePeriod"].as_str().unwrap())
                    )
                }
                _ => format!("Autoinc {{ seq: {} }}", lane["seq"]),
            };
            json!({
                "kind": lane["kind"],
                "generation": lane["generation"],
                "b": lane["b"],
                "m": lane["m"],
                "r": lane["r"],
                "local": local,
                "last": lane["last"],
                "sealed": lane["sealed"],
            })
        })
        .collect();
    for (residue, (twin, host)) in twin_lanes.iter().zip(&host_lanes).enumerate() {
        assert_eq!(
            twin, host,
            "lane {residue} ({}): the twin (left) and the host (right) disagree",
            lanes[residue]
        );
    }
    let twin_maps: Vec<Value> = map_lines
        .iter()
        .map(|line| {
            if let Some(error) = line.get("error") {
                return json!({ "error": error });
            }
            let map = &line["map"];
            json!({
                "kind": map["kind"],
                "generation": map["generation"],
                "base": map["base"],
                "base_period": map["basePeriod"],
                "modulus": map["modulus"],
                "live": map["live"],
                "incarnation": map["incarnation"],
            })
        })
        .collect();
    for (index, (twin, host)) in twin_maps.iter().zip(&host_maps).enumerate() {
        assert_eq!(
            twin, host,
            "map {index} ({}): the twin (left) and the host (right) disagree",
            maps[index]
        );
    }
    // Both kinds of answer were compared.
    let read = |answers: &[Value]| {
        answers
            .iter()
            .filter(|answer| answer.get("error").is_none())
            .count()
    };
    assert!(
        read(&host_lanes) >= 12 && host_lanes.len() - read(&host_lanes) >= 30,
        "{host_lanes:?}"
    );
    assert!(
        read(&host_maps) >= 8 && host_maps.len() - read(&host_maps) >= 12,
        "{host_maps:?}"
    );
}

/// The twin and the host take (timestamp, value) pairs from one striped
/// cyclic counter at once, every taker's clock frozen at one instant (so
/// that only the lanes' rule keeps the pairs apart), the overlap made
/// certain by the library's test hooks as for autoinc lanes above: host
/// takers held before their take is sent, then after it is applied and
/// not answered, while the twin takes 24 pairs from the same lanes. Every
/// pair is handed out once, each value in its lane's residue class of the
/// cycle, and each lane's pairs are exactly its first ones: from its
/// floor, one wrap to the frozen clock, then its values in turn, a wrap
/// moving the timestamp on by one.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_stored_function_and_the_host_take_from_one_striped_cyclic_counter_at_once() {
    const TEST: &str = "striped_twin_cyclic_at_once";
    const FROZEN: u64 = 1_767_225_600_000_000;
    const TOP: u64 = 9;
    const LANES: u64 = 3;
    let database = support::database(TEST).await;
    installer::install(&database, &Default::default())
        .await
        .unwrap();
    let name = counter_name("serial");
    let spec = CounterSpec::of(CounterKind::Cyclic)
        .maxval(TOP)
        .prefixes(Vec::new());
    create_striped(&database, &name, &spec, LANES)
        .await
        .unwrap();
    let (sequence, _) = Sequence::open(&database, name.clone(), &OpenOptions::default())
        .await
        .unwrap();
    let script = format!(
        "for (let i = 0; i < 24; i++) {{ const s = getNextUniqueStamp('serial', {FROZEN}); \
         print(JSON.stringify({{ ts: s.ts, val: s.val }})); }}"
    );
    let mut all: Vec<(u64, u64)> = Vec::new();
    let mut twins = 0;
    for point in [Point::BeforeTake, Point::AfterTake] {
        let held = hold(&database_name(TEST), "serial", point, 3);
        let takers = spawn_takers_at::<(u64, u64)>(&sequence, 3, 4, FROZEN);
        held.arrived().await;
        for line in twin(TEST, script.clone()).await {
            twins += 1;
            all.push((line["ts"].as_u64().unwrap(), line["val"].as_u64().unwrap()));
        }
        held.release().await;
        all.extend(joined(takers).await);
        drop(held);
    }
    assert_eq!((twins, all.len()), (48, 2 * (24 + 3 * 4)));
    assert_distinct(&all);
    // Each lane's pairs, sorted, are its first ones.
    let mut by_lane: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
    for &(ts, value) in &all {
        assert!(value <= TOP, "{value} is outside the cycle 0..={TOP}");
        by_lane.entry(value % LANES).or_default().push((ts, value));
    }
    for (residue, mut pairs) in by_lane {
        pairs.sort_unstable();
        let cycle = (TOP - residue) / LANES + 1;
        let first: Vec<(u64, u64)> = (0..pairs.len() as u64)
            .map(|k| (FROZEN + k / cycle, residue + (k % cycle) * LANES))
            .collect();
        assert_eq!(pairs, first, "lane {residue}");
    }
}

/// A (period, value) pair of a periodic counter.
type Pair = (String, u64);

/// The twin and the host take (period, value) pairs from one striped
/// periodic counter at once, on a server of the test's own whose clock
/// the test holds, the overlap made certain by the library's test hooks
/// as for the other kinds above: host takers held with their take not
/// sent while the twin takes 24 values, one a call, in 2030; then host
/// takers held with their take applied (in 2030) and not answered, while
/// the server's clock moves to 2031 and the twin takes 12 blocks of 2
/// there. Every (period, value) is handed out once, each in its period,
/// and in each year each lane handed out its residue class from 1, none
/// skipped: the twin's and the host's takes of one lane queue on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_stored_function_and_the_host_take_from_one_striped_periodic_counter_at_once() {
    const DB: &str = "t_striped_twin_periodic_at_once";
    const LANES: u64 = 3;
    let clock = FakeClockServer::start("2030-12-31 23:00:00");
    let database = mongodb::Client::with_uri_str(&clock.server.uri)
        .await
        .unwrap()
        .database(DB);
    installer::install(&database, &Default::default())
        .await
        .unwrap();
    let name = counter_name("inv");
    let spec = CounterSpec::of(CounterKind::Periodic).prefixes(Vec::new());
    create_striped(&database, &name, &spec, LANES)
        .await
        .unwrap();
    let (sequence, _) = Sequence::open(&database, name, &OpenOptions::default())
        .await
        .unwrap();
    let twin_takes = |calls: usize, count: usize| {
        let uri = clock.server.uri.clone();
        let script = format!(
            "for (let i = 0; i < {calls}; i++) print(JSON.stringify(getNextPeriodic('inv', {count})));"
        );
        async move {
            let lines = tokio::task::spawn_blocking(move || {
                support::mongosh::json_lines(&mut support::mongosh::shell_on(&uri, DB, &script))
            })
            .await
            .unwrap();
            assert_eq!(lines.len(), calls, "{lines:?}");
            let mut pairs: Vec<Pair> = Vec::new();
            for line in &lines {
                let values = line["values"].as_array().unwrap();
                assert_eq!(values.len(), count, "{line}");
                let period = line["period"].as_str().unwrap();
                pairs.extend(
                    values
                        .iter()
                        .map(|value| (period.to_string(), value.as_u64().unwrap())),
                );
            }
            pairs
        }
    };
    let in_year = |pairs: &[Pair], year: &str| pairs.iter().all(|(period, _)| period == year);

    // Not sent yet: the twin takes in 2030 meanwhile.
    let unsent = hold(DB, "inv", Point::BeforeTake, 3);
    let takers = spawn_takers::<Pair>(&sequence, 3, 4);
    unsent.arrived().await;
    let twin_before = twin_takes(24, 1).await;
    unsent.release().await;
    let host_before = joined(takers).await;
    drop(unsent);
    // Applied in 2030, not answered: the clock moves to 2031, where the
    // twin takes blocks meanwhile.
    let applied = hold(DB, "inv", Point::AfterTake, 3);
    let takers = spawn_takers::<Pair>(&sequence, 3, 4);
    applied.arrived().await;
    clock.freeze("2031-01-01 00:00:01");
    let twin_after = twin_takes(12, 2).await;
    applied.release().await;
    let host_after = joined(takers).await;
    drop(applied);

    assert!(in_year(&twin_before, "2030"), "{twin_before:?}");
    assert!(in_year(&host_before, "2030"), "{host_before:?}");
    assert!(in_year(&host_after, "2030"), "{host_after:?}");
    assert!(in_year(&twin_after, "2031"), "{twin_after:?}");
    let mut all = twin_before;
    all.extend(host_before);
    all.extend(host_after);
    all.extend(twin_after);
    assert_eq!(all.len(), 24 + 12 + 12 + 24);
    assert_distinct(&all);
    assert_each_lane_whole(&all, "2030", 0, LANES);
    assert_each_lane_whole(&all, "2031", 0, LANES);
}

/// Each stored twin refuses the map of a striped counter of another kind
/// (which the host's `Sequence` takes from, so that it is no case of the
/// table above) as the host's reader of the twin's own kind does
/// (`AutoincCounter`, `CyclicCounter`, `PeriodicCounter`): in its words,
/// saying the counter is striped, and leaving every document as it was.
/// `getNextSequence` refuses a map of periodic lanes as it does one of
/// cyclic lanes, `getNextPeriodic` a map of autoinc or cyclic lanes, and
/// each a map of snowflake lanes.
#[tokio::test]
async fn each_stored_function_refuses_the_map_of_another_kind_as_the_hosts_reader_does() {
    const TEST: &str = "striped_twin_other_kind";
    let database = support::database(TEST).await;
    installer::install(&database, &Default::default())
        .await
        .unwrap();
    for (name, spec) in [
        ("orders", CounterSpec::of(CounterKind::Autoinc)),
        ("serial", CounterSpec::of(CounterKind::Cyclic).maxval(9)),
        ("inv", CounterSpec::of(CounterKind::Periodic)),
        ("ids", CounterSpec::of(CounterKind::Snowflake)),
    ] {
        create_striped(
            &database,
            &counter_name(name),
            &spec.prefixes(Vec::new()),
            2,
        )
        .await
        .unwrap();
    }
    let before = documents(&database, "counters").await;
    let calls = [
        ("getNextSequence", "serial"),
        ("getNextSequence", "inv"),
        ("getNextUniqueStamp", "orders"),
        ("getNextUniqueStamp", "inv"),
        ("getNextPeriodic", "orders"),
        ("getNextPeriodic", "serial"),
        ("getNextSequence", "ids"),
        ("getNextUniqueStamp", "ids"),
        ("getNextPeriodic", "ids"),
    ];
    let mut host = Vec::new();
    for (function, name) in calls {
        let name = counter_name(name);
        let refused = match function {
            "getNextSequence" => AutoincCounter::new(&database, name)
                .take(1)
                .await
                .map(|_| ()),
            "getNextUniqueStamp" => CyclicCounter::new(&database, name)
                .next(CLIENT)
                .await
                .map(|_| ()),
            _ => match PeriodicCounter::open(&database, name).await {
                Ok(counter) => counter.take(1).await.map(|_| ()),
                Err(error) => Err(error),
            },
        };
        host.push(json!({ "error": refused.unwrap_err().to_string() }));
    }
    let script: String = calls
        .iter()
        .map(|(function, name)| {
            let call = match *function {
                "getNextUniqueStamp" => format!("{function}('{name}', {CLIENT})"),
                _ => format!("{function}('{name}')"),
            };
            format!(
                "try {{ print(JSON.stringify({{ value: {call} }})); }} \
                 catch (e) {{ print(JSON.stringify({{ error: e.message }})); }}\n"
            )
        })
        .collect();
    let lines = twin(TEST, script).await;
    assert_eq!(lines, host, "the twin (left) and the host (right) disagree");
    for line in &lines {
        let error = line["error"].as_str().unwrap();
        assert!(
            error.contains("is striped: its values come from its lanes"),
            "{error}"
        );
    }
    assert_eq!(documents(&database, "counters").await, before);
}

/// The test's database with the functions installed, and the autoinc
/// counter `orders` striped over `lanes` lanes, opened by the host.
async fn striped_orders(test: &str, lanes: u64) -> (Database, Sequence) {
    let database = support::database(test).await;
    installer::install(&database, &Default::default())
        .await
        .unwrap();
    let name = counter_name("orders");
    let spec = CounterSpec::of(CounterKind::Autoinc).prefixes(Vec::new());
    create_striped(&database, &name, &spec, lanes)
        .await
        .unwrap();
    let (sequence, _) = Sequence::open(&database, name, &OpenOptions::default())
        .await
        .unwrap();
    (database, sequence)
}

/// The JSON lines `script` prints, run by mongosh in `test`'s database
/// (after the functions' loader) in a blocking task, with `idmint` and
/// its database in its environment for scripts that run it.
async fn twin(test: &str, script: String) -> Vec<Value> {
    let mut command: Command = support::mongosh::shell(test, &script);
    command
        .env("IDMINT_BIN", env!("CARGO_BIN_EXE_idmint"))
        .env("MONGODB_URI", support::server::uri())
        .env("IDMINT_DB", database_name(test));
    tokio::task::spawn_blocking(move || support::mongosh::json_lines(&mut command))
        .await
        .unwrap()
}

/// `count` values of counter `orders` taken by the twin, one call each.
async fn twin_takes(test: &str, count: usize) -> Vec<u64> {
    let script = format!(
        "for (let i = 0; i < {count}; i++) print(JSON.stringify({{ val: getNextSequence('orders') }}));"
    );
    twin(test, script)
        .await
        .iter()
        .map(|line| line["val"].as_u64().unwrap())
        .collect()
}

/// Fails unless `values` are, generation by generation (`generations`, in
/// order, each above the last), exactly the first local values of each
/// lane: every value in one lane's residue class, none twice, none of a
/// lane's skipped.
#[track_caller]
fn assert_lanes_hand_out(values: &[u64], generations: &[Generation]) {
    let mut lanes: BTreeMap<(usize, u64), Vec<u64>> = BTreeMap::new();
    for &value in values {
        let (index, generation) = generations
            .iter()
            .enumerate()
            .rev()
            .find(|(_, generation)| value > generation.base)
            .unwrap_or_else(|| panic!("{value} is below every generation"));
        let residue = (value - generation.base - 1) % generation.modulus;
        lanes.entry((index, residue)).or_default().push(value);
    }
    for ((index, residue), mut taken) in lanes {
        taken.sort_unstable();
        let lane = generations[index].lane(residue).unwrap();
        assert_eq!(
            Some(taken.clone()),
            lane.values(1..=taken.len() as u64),
            "generation {index} ({:?}), lane {residue}",
            generations[index]
        );
    }
}

/// The twin and the host take from one striped counter at once, the
/// overlap made certain by the library's test hooks: host takers are held
/// with their lane chosen and their take not sent, then with their take
/// applied by the server and not answered, while the twin takes 24 values
/// from the same lanes; then let go. Every value is handed out once, each
/// lane's values are its first local values, and the lanes' local values
/// add up to all of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_stored_function_and_the_host_take_from_one_striped_counter_at_once() {
    const TEST: &str = "striped_twin_at_once";
    let (database, sequence) = striped_orders(TEST, 3).await;
    let mut all = Vec::new();
    for point in [Point::BeforeTake, Point::AfterTake] {
        let held = hold(&database_name(TEST), "orders", point, 3);
        let takers = spawn_takers::<u64>(&sequence, 3, 4);
        held.arrived().await;
        all.extend(twin_takes(TEST, 24).await);
        held.release().await;
        all.extend(joined(takers).await);
        drop(held);
    }
    assert_eq!(all.len(), 2 * (24 + 3 * 4));
    assert_distinct(&all);
    assert_lanes_hand_out(&all, &[Generation::new(0, 3).unwrap()]);
    let map = sequence_map(&database).await;
    let locals: u64 =
        idmint::sequence::striping::lanes(&database, None, &counter_name("orders"), &map)
            .await
            .unwrap()
            .iter()
            .map(|lane| lane.lane.as_ref().unwrap().local_value())
            .sum();
    assert_eq!(locals, all.len() as u64);
}

/// A host process takes from the very lane the twin chose between the
/// twin's choice and its take, every time: the twin's session runs
/// `idmint seq solo --count 2` just before each command it sends to a
/// lane, `solo` having one lane. Had the twin read the lane and written
/// what it read plus one, the host's values would come out again; its
/// take is one atomic update, so every value is handed out once, the
/// lane's first ones in turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_takes_between_the_stored_functions_choice_of_a_lane_and_its_take() {
    const TEST: &str = "striped_twin_between";
    let (database, _) = striped_orders(TEST, 2).await;
    let name = counter_name("solo");
    let spec = CounterSpec::of(CounterKind::Autoinc).prefixes(Vec::new());
    create_striped(&database, &name, &spec, 2).await.unwrap();
    let one = idmint::sequence::striping::set_stripes(&database, &name, 1)
        .await
        .unwrap();
    let script = r##"
        const { execFileSync } = require("child_process");
        const send = db.runCommand.bind(db);
        db.runCommand = function (command, ...rest) {
          const target = command.findAndModify ? command.query._id
            : command.update ? command.updates[0].q._id : null;
          if (String(target).includes("#")) {
            const taken = execFileSync(process.env.IDMINT_BIN, ["seq", "solo", "--count", "2"]).toString();
            print(JSON.stringify({ host: taken.trim().split(/\s+/).map(Number) }));
          }
          return send(command, ...rest);
        };
        for (let call = 0; call < 12; call++) print(JSON.stringify({ twin: getNextSequence("solo") }));
    "##;
    let lines = twin(TEST, script.to_string()).await;
    let mut all = Vec::new();
    let (mut host, mut twin_values) = (0, 0);
    for line in &lines {
        if let Some(values) = line["host"].as_array() {
            host += values.len();
            all.extend(values.iter().map(|value| value.as_u64().unwrap()));
        } else {
            twin_values += 1;
            all.push(line["twin"].as_u64().unwrap());
        }
    }
    assert_eq!((host, twin_values), (24, 12), "{lines:?}");
    assert_distinct(&all);
    assert_lanes_hand_out(&all, &[one.map.lanes_generation()]);
}

/// Counter `orders`' map as it is now.
async fn sequence_map(database: &Database) -> StripeMap {
    let name = counter_name("orders");
    idmint::sequence::state(database, &name)
        .await
        .unwrap()
        .striped
        .unwrap()
}

/// The counter's stripes change between the twin's choice of a lane and
/// its take (`idmint counter stripes orders --set N`, run by the twin's
/// own session just before it sends the take): to fewer lanes, so that
/// the lane it chose (the last) is sealed, and it must read the map again
/// and take from a lane of the new generation; and to more, so that the
/// lane it chose is a lane of the new generation when it gets there.
/// Every value is handed out once, each in its lane's residue class of
/// the generation it came from, each lane's first values in turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stored_function_takes_across_changes_of_stripes() {
    const TEST: &str = "striped_twin_restripe";
    let (_database, _sequence) = striped_orders(TEST, 4).await;
    // Call -> the lanes it changes to; the twin starts that call at the
    // last lane of the map it reads.
    let changes = json!({ "5": 2, "12": 5, "20": 1, "28": 3 });
    let script = format!(
        r##"
        const {{ execFileSync }} = require("child_process");
        const changes = {changes};
        let pending = null, takes = 0;
        const send = db.runCommand.bind(db);
        db.runCommand = function (command, ...rest) {{
          if (command.findAndModify && String(command.query._id).includes("#")) {{
            takes += 1;
            if (pending !== null) {{
              const shown = JSON.parse(execFileSync(process.env.IDMINT_BIN,
                ["counter", "stripes", "orders", "--set", String(pending), "--json"]).toString());
              print(JSON.stringify({{ changed: shown.striped }}));
              pending = null;
            }}
          }}
          return send(command, ...rest);
        }};
        for (let call = 0; call < 36; call++) {{
          pending = changes[call] === undefined ? null : changes[call];
          const random = Math.random;
          if (pending !== null) Math.random = () => 0.999;
          takes = 0;
          try {{
            const val = getNextSequence("orders");
            print(JSON.stringify({{ call: call, val: val, takes: takes }}));
          }} finally {{
            Math.random = random;
          }}
        }}
        "##
    );
    let lines = twin(TEST, script).await;
    let mut generations = vec![Generation::new(0, 4).unwrap()];
    let mut values = Vec::new();
    for line in &lines {
        if let Some(map) = line.get("changed") {
            let generation = Generation::new(
                map["base"].as_u64().unwrap(),
                map["modulus"].as_u64().unwrap(),
            )
            .unwrap();
            generations.push(generation);
            continue;
        }
        values.push(line["val"].as_u64().unwrap());
        let takes = line["takes"].as_u64().unwrap();
        match line["call"].as_u64().unwrap() {
            // To fewer lanes: the chosen lane was sealed, and another one
            // took.
            5 | 20 => assert!(takes >= 2, "{line}"),
            _ => assert_eq!(takes, 1, "{line}"),
        }
    }
    assert_eq!(generations.len(), 5, "{lines:?}");
    assert_eq!(values.len(), 36);
    assert_distinct(&values);
    assert_lanes_hand_out(&values, &generations);
}
