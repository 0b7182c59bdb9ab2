//! The stored JavaScript twins' take from a striped counter (issue 34),
//! held equal to the host's on a table of maps and lanes (fresh, taken
//! from, in a later period, sealed, gone, malformed, near exhaustion,
//! without a live lane, of another counter of the name):
//! `getNextSequence(NAME)` (autoinc lanes), `getNextUniqueStamp(NAME,
//! clientMicros)` (cyclic lanes) and `getNextPeriodic(NAME, count)`
//! (periodic lanes), run by mongosh, give the same values (and
//! timestamps, or periods) or refusals as the host's `Sequence::take`,
//! leave the same documents, and send the very command of
//! `lane_take_command`.

use std::collections::BTreeMap;

use mongodb::bson::{doc, Bson, Document};
use serde_json::{json, Value};

use idmint::installer;
use idmint::sequence::identity::Incarnation;
use idmint::sequence::striping::{lane_take_command, lanes_of, Generation, LaneOf, StripeMap};
use idmint::sequence::{ClientTime, CounterName, OpenOptions, Sequence};

use crate::support;
use crate::support::stripe_documents::{
    cyclic_lane, cyclic_map, fresh_cyclic_lane, lane, map, periodic_lane, periodic_map, periods_of,
    with, with_place, without, without_place, MAX, MINE, OTHER,
};
use crate::support::twin::{
    assert_refused_left_unchanged, canonical_documents, seed_counters, twin, Twin, CLIENT,
};

/// The first value of a counter an upsert would create (none is created:
/// a striped counter exists).
const START: u64 = 500;

/// A year the test server's clock is long before: a periodic lane in it
/// stays in it (a clock behind a lane's period never moves it back), so
/// that what a take of it hands out does not depend on the clock.
const FAR: &str = "9000";

/// A year the test server's clock is long after: a take of a periodic
/// lane in it starts the period of the server's clock, from 1.
const PAST: &str = "2001";

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
            Twin::Sequence => lanes_of("autoinc", &self.map),
            Twin::Stamp => lanes_of("cyclic", &doc! { "maxval": 9_i64 }),
            Twin::Periodic => lanes_of("periodic", &self.map),
        }
        .unwrap()
    }
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
    // A periodic lane of a counter across deployments: its ceiling, in a
    // period.
    let under_ceiling = |lane: Document, ceiling: i64, period: &str| {
        with(with(lane, "ceiling", ceiling), "ceiling_period", period)
    };
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
        // Lanes with a ceiling on their timestamps (of a counter across
        // deployments): a take whose timestamp may reach past it is
        // refused (only the host raises it, and only across deployments).
        stamp_case(
            "c_under_ceiling",
            cyclic_map(1, ts - 1000, 2, 9, true),
            (0..2)
                .map(|r| {
                    let lane = fresh_cyclic_lane(1, ts - 1000, 2, 9, r);
                    (r as u64, with(lane, "ceiling", ts + 2))
                })
                .collect(),
            2,
        ),
        stamp_case(
            "c_at_ceiling",
            cyclic_map(1, ts - 1000, 1, 9, true),
            one(with(
                cyclic_lane(1, ts - 1000, 1, 9, 0, 3, ts + 5, false),
                "ceiling",
                ts + 6,
            )),
            2,
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
        // Lanes with a ceiling (of a counter across deployments): taken
        // from up to it in a period up to its ceiling's; refused past the
        // value, and in a later period (FAR's lane stays in FAR; PAST's
        // moves to the server's, past its ceiling's PAST).
        periodic_case(
            "p_under_ceiling",
            periodic_map(2, 40, FAR, 2, true),
            periodic_live(2, 40, FAR, &[(FAR, 2), (FAR, 0)])
                .into_iter()
                .map(|(r, lane)| (r, under_ceiling(lane, 60, FAR)))
                .collect(),
            2,
        ),
        periodic_case(
            "p_at_ceiling",
            periodic_map(2, 40, FAR, 1, true),
            one(under_ceiling(
                periodic_lane(2, 40, 1, 0, FAR, FAR, 3, false),
                43,
                FAR,
            )),
            2,
        ),
        periodic_case(
            "p_period_past_ceiling",
            periodic_map(1, 100, PAST, 1, true),
            one(under_ceiling(
                periodic_lane(1, 100, 1, 0, PAST, PAST, 3, false),
                100_000,
                PAST,
            )),
            2,
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

/// Seeds `database` with every case's map and lanes.
async fn seed(database: &mongodb::Database, cases: &[Case]) {
    let documents = cases.iter().flat_map(|case| {
        let lanes = case
            .lanes
            .iter()
            .map(|(residue, fields)| (format!("{}#{residue}", case.name), fields.clone()));
        std::iter::once((case.name.to_string(), case.map.clone())).chain(lanes)
    });
    seed_counters(database, documents).await;
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
/// The cases whose takes wait for a live lane until they give up (64
/// tries, about 6 s): each twin runs them beside the other cases, so that
/// the test waits for them once, not once each.
const WAITING: [&str; 3] = [
    "s_no_live_lane",
    "s_lane_of_another_counter",
    "p_lane_zone_not_the_maps",
];

/// The host's outcome of each of `case`'s calls, in order: what
/// `Sequence::take` handed out, or its refusal.
async fn host_takes(database: &mongodb::Database, case: &Case) -> (&'static str, Vec<Value>) {
    let name = CounterName::new(case.name).unwrap();
    let opened = Sequence::open(database, name, &OpenOptions::default()).await;
    let client = match case.twin {
        Twin::Sequence | Twin::Periodic => 0,
        Twin::Stamp => CLIENT,
    };
    let mut outcomes = Vec::new();
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
    (case.name, outcomes)
}

/// The twin's script for `cases`, one mongosh session for every call of
/// them: call i of a case starts at lane i (its random first lane chosen
/// so), and every lane take it sends is kept, as the server received it,
/// in `sent`.
fn twin_script(cases: &[&Case]) -> String {
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
    format!(
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
    )
}

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

    // The cases side by side (each has documents of its own): a case that
    // waits for a live lane until its takes give up waits beside the others.
    let host: BTreeMap<&str, Vec<Value>> =
        futures_util::future::join_all(cases.iter().map(|case| host_takes(&host_db, case)))
            .await
            .into_iter()
            .collect();

    // The twin: the cases that wait in mongosh sessions of their own, the
    // others in one, side by side.
    let (waiting, others): (Vec<&Case>, Vec<&Case>) =
        cases.iter().partition(|case| WAITING.contains(&case.name));
    let sessions = waiting
        .into_iter()
        .map(|case| vec![case])
        .chain([others])
        .map(|cases| twin("striped_twin_js", twin_script(&cases)));
    let lines: Vec<Value> = futures_util::future::join_all(sessions)
        .await
        .into_iter()
        .flatten()
        .collect();
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
        canonical_documents(&twin_db, "counters").await,
        canonical_documents(&host_db, "counters").await,
        "the twin (left) and the host (right) left different documents"
    );

    // A case that refused every call left its documents as they were.
    let pristine = support::database("striped_twin_pristine").await;
    seed(&pristine, &cases).await;
    let pristine = canonical_documents(&pristine, "counters").await;
    let after = canonical_documents(&host_db, "counters").await;
    let refused = cases.iter().map(|case| case.name).filter(|name| {
        host[name]
            .iter()
            .all(|outcome| outcome.get("error").is_some())
    });
    let refused = assert_refused_left_unchanged(refused, &after, &pristine);
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
