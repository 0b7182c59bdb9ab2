//! The stored reader `readCounter` reads a striped counter's lanes and
//! maps as the host's readers do (issue 34): a cyclic, autoinc or periodic
//! lane as `striping::lanes` reads it, a map (a periodic one above all,
//! its incarnation with it) as `StripeMap::read`, the same fields of a
//! well-formed one whatever its numbers' BSON types, and the same reason,
//! in the host's words, for a malformed one.

use mongodb::bson::{doc, Bson, DateTime, Document};
use mongodb::Database;
use serde_json::{json, Value};

use idmint::installer;
use idmint::parts::PeriodUnit;
use idmint::sequence::striping::{lanes_of, Generation, StripeMap};

use crate::support::stripe_documents::{
    cyclic_lane, cyclic_map, fresh_cyclic_lane, lane, map, periodic_lane, periodic_map, periods_of,
    snowflake_map, with, with_place, without, without_place, MAX, MINE,
};
use crate::support::twin::{seed_counters, twin, CLIENT};
use crate::support::{self, counter_name};

/// Seeds `database` with `lanes`, each lane `lanes#r` of counter `lanes`
/// (`r` its place in the list).
async fn seed_lanes(database: &Database, lanes: &[Document]) {
    let documents = lanes
        .iter()
        .enumerate()
        .map(|(residue, fields)| (format!("lanes#{residue}"), fields.clone()));
    seed_counters(database, documents).await;
}

/// What the host's lane reader (`striping::lanes`) reads of each lane of
/// counter `lanes` that `map` has: its fields, or the reason it is
/// malformed, in the words a take says it.
async fn host_lanes(database: &Database, map: &StripeMap) -> Vec<Value> {
    idmint::sequence::striping::lanes(database, None, &counter_name("lanes"), map)
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
        .collect()
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
    seed_lanes(&database, &lanes).await;
    let map = StripeMap::live(
        &lanes_of("cyclic", &doc! { "maxval": 9_i64 }).unwrap(),
        1,
        Generation::new(0, lanes.len() as u64).unwrap(),
    );
    let host = host_lanes(&database, &map).await;
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
    seed_lanes(&database, &lanes).await;
    let of_lanes = StripeMap::live(
        &lanes_of(
            "periodic",
            &doc! { "period": PeriodUnit::Year.as_str(), "zone": "UTC", "current": "", "seq": 0_i64 },
        )
        .unwrap(),
        1,
        Generation::new(0, lanes.len() as u64).unwrap(),
    );
    let host_lanes = host_lanes(&database, &of_lanes).await;

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
    let documents = maps
        .iter()
        .enumerate()
        .map(|(index, fields)| (format!("maps-{index}"), fields.clone()));
    seed_counters(&database, documents).await;
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
