//! One algorithm, two implementations held equal, for each kind that has a
//! stored-JavaScript twin: the host's pipeline updates (`kinds/cyclic`,
//! `kinds/autoinc`, `kinds/periodic`) and the stored functions
//! `getNextUniqueStamp`, `getNextSequence` and `getNextPeriodic` (run by
//! mongosh after the shell loader) get the same counters and, for the cyclic
//! one, the same client clock readings, and must return the same values
//! (a cyclic counter's with the timestamp issued with it), fail with the
//! same messages, and leave the same documents behind, the counters an
//! upsert creates included. (The
//! periodic cases are worded so that their results do not depend on which
//! year or month it is, only on both twins running in the same one; the
//! crossing of a boundary has its own tests, with the server's clock moved.)

use idmint::installer;
use idmint::sequence::{
    AutoincCounter, CounterKind, CounterName, CounterSpec, CyclicCounter, PeriodicCounter,
};
use mongodb::bson::{doc, Decimal128, Document};
use mongodb::Database;
use serde_json::{json, Value};

use crate::support;
use crate::support::mongosh::shell_in;
use crate::support::twin::{
    assert_refused_left_unchanged, canonical_documents, seed_counters, twin, Twin,
};

/// 2026-11-22T03:14:57.123456Z
const T: i64 = 1_795_317_297_123_456;

/// The first value of the counters the upsert cases create.
const START: u64 = 500;

/// A counter as a case seeds it, and the calls each twin makes.
struct Case {
    /// The stored function the twin calls, and the host's twin of it:
    /// `CyclicCounter::next` and `getNextUniqueStamp(name, clock)` (the
    /// pair (ts, val)); `AutoincCounter::take(1)` and
    /// `getNextSequence(name)`; `PeriodicCounter::take(1)` and
    /// `getNextPeriodic(name)`.
    twin: Twin,
    /// An autoinc case with upsert, from START:
    /// `AutoincCounter::take_or_create(1, START)` and
    /// `getNextSequence(name, {upsert: true, start: START})`.
    upsert: bool,
    name: &'static str,
    /// The counter document's fields; `None`: no counter at all.
    fields: Option<Document>,
    /// Client clock readings, one call each.
    clock: Vec<i64>,
}

fn cases() -> Vec<Case> {
    let case = |name, fields: Option<Document>, clock: Vec<i64>| Case {
        twin: Twin::Stamp,
        upsert: false,
        name,
        fields,
        clock,
    };
    // An autoinc case: the clock entries only count the calls.
    let autoinc = |name, fields: Option<Document>, calls: usize| Case {
        twin: Twin::Sequence,
        upsert: false,
        name,
        fields,
        clock: vec![T; calls],
    };
    // An autoinc case with upsert, from START.
    let upsert = |name, fields: Option<Document>, calls: usize| Case {
        upsert: true,
        ..autoinc(name, fields, calls)
    };
    // A periodic case: the clock entries only count the calls.
    let periodic = |name, fields: Option<Document>, calls: usize| Case {
        twin: Twin::Periodic,
        upsert: false,
        name,
        fields,
        clock: vec![T; calls],
    };
    let per = |period: &str, zone: &str, current: &str, seq: i64| {
        doc! { "kind": "periodic", "period": period, "zone": zone, "current": current, "seq": seq }
    };
    const MAX: i64 = (1 << 53) - 1;
    vec![
        // Created by the first call (as `counter create` would, owning no
        // prefix), then taken from; an existing counter is used as it is.
        upsert("ai_upsert_missing", None, 2),
        upsert(
            "ai_upsert_existing",
            Some(doc! { "kind": "autoinc", "seq": 7_i64, "prefixes": ["U-"] }),
            1,
        ),
        upsert("ai_upsert_cyclic", Some(doc! { "val": 0, "maxval": 9 }), 1),
        // Fresh and past periods start at 1 in the period the server is in.
        periodic("p_fresh", Some(per("year", "UTC", "", 0)), 3),
        periodic(
            "p_past_month",
            Some(per("month", "Europe/Paris", "2001-02", 41)),
            2,
        ),
        // A later period than the server's clock (its clock went back): the
        // counter stays in it and goes on.
        periodic(
            "p_later_day",
            Some(per("day", "Asia/Tokyo", "9999-12-31", 7)),
            2,
        ),
        periodic(
            "p_prefix",
            Some({
                let mut d = per("year", "UTC", "9999", 0);
                d.insert("prefix", "INV-");
                d
            }),
            1,
        ),
        periodic(
            "p_int32",
            Some(
                doc! { "kind": "periodic", "period": "year", "zone": "UTC", "current": "9999", "seq": 5_i32 },
            ),
            1,
        ),
        periodic("p_exhausted", Some(per("year", "UTC", "9999", MAX - 1)), 2),
        periodic("p_missing", None, 1),
        periodic("p_cyclic", Some(doc! { "val": 0, "maxval": 9 }), 1),
        periodic(
            "p_period_missing",
            Some(doc! { "kind": "periodic", "zone": "UTC", "current": "", "seq": 0 }),
            1,
        ),
        periodic("p_period_week", Some(per("week", "UTC", "", 0)), 1),
        periodic(
            "p_zone_number",
            Some(doc! { "kind": "periodic", "period": "year", "zone": 1, "current": "", "seq": 0 }),
            1,
        ),
        periodic("p_zone_spaces", Some(per("year", "Europe Paris", "", 0)), 1),
        periodic(
            "p_current_number",
            Some(
                doc! { "kind": "periodic", "period": "year", "zone": "UTC", "current": 2026, "seq": 0 },
            ),
            1,
        ),
        periodic(
            "p_current_month13",
            Some(per("month", "UTC", "2026-13", 0)),
            1,
        ),
        periodic(
            "p_current_wrong_unit",
            Some(per("day", "UTC", "2026", 0)),
            1,
        ),
        periodic(
            "p_seq_string",
            Some(
                doc! { "kind": "periodic", "period": "year", "zone": "UTC", "current": "", "seq": "1" },
            ),
            1,
        ),
        periodic("p_seq_negative", Some(per("year", "UTC", "", -1)), 1),
        periodic(
            "p_prefixes_owned",
            Some({
                let mut d = per("year", "UTC", "9999", 0);
                d.insert("prefix", "INV-");
                d.insert("prefixes", vec!["X-", "INV-"]);
                d
            }),
            1,
        ),
        // The prefixes a counter owns: an array of distinct strings holding
        // the default (document.rs and readCounter.js).
        case(
            "prefixes_ok",
            Some(doc! { "val": 0, "maxval": 9, "prefixes": ["", "A1-"] }),
            vec![T],
        ),
        case(
            "prefixes_string",
            Some(doc! { "val": 0, "maxval": 9, "prefixes": "A-" }),
            vec![T],
        ),
        case(
            "prefixes_number_element",
            Some(doc! { "val": 0, "maxval": 9, "prefixes": ["A2-", 3] }),
            vec![T],
        ),
        autoinc(
            "ai_prefixes_twice",
            Some(doc! { "kind": "autoinc", "seq": 0, "prefixes": ["A3-", "A3-"] }),
            1,
        ),
        autoinc(
            "ai_prefix_not_owned",
            Some(doc! { "kind": "autoinc", "seq": 0, "prefix": "B4-", "prefixes": ["A4-"] }),
            1,
        ),
        autoinc(
            "ai_raw",
            Some(doc! { "kind": "autoinc", "seq": 0, "prefixes": [] }),
            1,
        ),
        periodic(
            "p_prefixes_twice",
            Some({
                let mut d = per("year", "UTC", "", 0);
                d.insert("prefixes", vec!["A5-", "A5-"]);
                d
            }),
            1,
        ),
        case(
            "kind_cyclic",
            Some(doc! { "kind": "cyclic", "val": 0_i64, "maxval": 9_i64 }),
            vec![T, T],
        ),
        case(
            "kind_null",
            Some(doc! { "kind": null, "val": 0_i64, "maxval": 9_i64 }),
            vec![T],
        ),
        case(
            "kind_autoinc_as_cyclic",
            Some(doc! { "kind": "autoinc", "seq": 3_i64 }),
            vec![T],
        ),
        case(
            "kind_unknown",
            Some(doc! { "kind": "hilo", "val": 0, "maxval": 9 }),
            vec![T],
        ),
        case(
            "kind_number",
            Some(doc! { "kind": 2, "val": 0, "maxval": 9 }),
            vec![T],
        ),
        autoinc(
            "ai_fresh",
            Some(doc! { "kind": "autoinc", "seq": 0_i64 }),
            3,
        ),
        autoinc(
            "ai_int32",
            Some(doc! { "kind": "autoinc", "seq": 41_i32 }),
            2,
        ),
        autoinc("ai_double", Some(doc! { "kind": "autoinc", "seq": 7.0 }), 1),
        autoinc(
            "ai_prefix",
            Some(doc! { "kind": "autoinc", "seq": 0_i64, "prefix": "INV-" }),
            1,
        ),
        autoinc("ai_missing", None, 1),
        autoinc("ai_seq_missing", Some(doc! { "kind": "autoinc" }), 1),
        autoinc(
            "ai_seq_string",
            Some(doc! { "kind": "autoinc", "seq": "7" }),
            1,
        ),
        autoinc(
            "ai_seq_fraction",
            Some(doc! { "kind": "autoinc", "seq": 2.5 }),
            1,
        ),
        autoinc(
            "ai_seq_decimal",
            Some(doc! { "kind": "autoinc", "seq": "7".parse::<Decimal128>().unwrap() }),
            1,
        ),
        autoinc(
            "ai_seq_negative",
            Some(doc! { "kind": "autoinc", "seq": -1_i64 }),
            1,
        ),
        autoinc(
            "ai_prefix_number",
            Some(doc! { "kind": "autoinc", "seq": 0_i64, "prefix": 5 }),
            1,
        ),
        autoinc(
            "ai_exhausted",
            Some(doc! { "kind": "autoinc", "seq": MAX - 1 }),
            2,
        ),
        autoinc(
            "ai_cyclic_as_autoinc",
            Some(doc! { "val": 0, "maxval": 9 }),
            1,
        ),
        autoinc(
            "ai_segment_as_autoinc",
            Some(doc! { "kind": "segment", "max": 1, "step": 10 }),
            1,
        ),
        case(
            "fresh",
            Some(doc! { "val": 0_i64, "maxval": 99_i64 }),
            vec![T, T + 1, T + 2],
        ),
        case(
            "seed_style_int32",
            Some(doc! { "val": 5_i32, "maxval": 9_i32 }),
            vec![T],
        ),
        case(
            "wraps",
            Some(doc! { "val": 1_i64, "maxval": 3_i64, "ts": T }),
            vec![T; 6],
        ),
        case(
            "wraps_at_once",
            Some(doc! { "val": 3_i64, "maxval": 3_i64, "ts": T }),
            vec![T],
        ),
        case(
            "above_maxval",
            Some(doc! { "val": 12, "maxval": 9, "ts": T }),
            vec![T],
        ),
        case(
            "frozen_clock",
            Some(doc! { "val": 0_i64, "maxval": 2_i64, "ts": T }),
            vec![T; 7],
        ),
        case(
            "clock_behind",
            Some(doc! { "val": 4_i64, "maxval": 99_i64, "ts": T }),
            vec![T - 3_600_000_000, T - 1],
        ),
        case(
            "clock_ahead",
            Some(doc! { "val": 4_i64, "maxval": 99_i64, "ts": T }),
            vec![T + 500, T + 499],
        ),
        case(
            "double_fields",
            Some(doc! { "val": 2.0, "maxval": 5.0, "ts": 10.0 }),
            vec![T],
        ),
        case(
            "with_prefix",
            Some(doc! { "val": 0, "maxval": 9, "prefix": "ORD-" }),
            vec![T],
        ),
        case(
            "null_prefix",
            Some(doc! { "val": 0, "maxval": 9, "prefix": null }),
            vec![T],
        ),
        case("missing", None, vec![T]),
        case("val_missing", Some(doc! { "maxval": 9 }), vec![T]),
        case(
            "val_string",
            Some(doc! { "val": "7", "maxval": 9 }),
            vec![T],
        ),
        case(
            "maxval_decimal",
            Some(doc! { "val": 0, "maxval": "9".parse::<Decimal128>().unwrap() }),
            vec![T],
        ),
        case("val_null", Some(doc! { "val": null, "maxval": 9 }), vec![T]),
        case(
            "val_fraction",
            Some(doc! { "val": 1.5, "maxval": 9 }),
            vec![T],
        ),
        case(
            "val_negative",
            Some(doc! { "val": -1_i64, "maxval": 9 }),
            vec![T],
        ),
        case(
            "val_document",
            Some(doc! { "val": { "n": 1 }, "maxval": 9 }),
            vec![T],
        ),
        case("val_array", Some(doc! { "val": [1], "maxval": 9 }), vec![T]),
        case(
            "val_boolean",
            Some(doc! { "val": true, "maxval": 9 }),
            vec![T],
        ),
        case("maxval_zero", Some(doc! { "val": 0, "maxval": 0 }), vec![T]),
        case(
            "maxval_string",
            Some(doc! { "val": 0, "maxval": "99" }),
            vec![T],
        ),
        case(
            "ts_string",
            Some(doc! { "val": 0, "maxval": 9, "ts": "yesterday" }),
            vec![T],
        ),
        case(
            "ts_fraction",
            Some(doc! { "val": 0, "maxval": 9, "ts": 2.5 }),
            vec![T],
        ),
        case(
            "prefix_number",
            Some(doc! { "val": 0, "maxval": 9, "prefix": 12 }),
            vec![T],
        ),
    ]
}

/// Seeds `database` with every case's counter that exists.
async fn seed(database: &Database, cases: &[Case]) {
    let documents = cases.iter().filter_map(|case| {
        let fields = case.fields.clone()?;
        Some((case.name.to_string(), fields))
    });
    seed_counters(database, documents).await;
}

#[tokio::test]
async fn the_stored_function_and_the_pipeline_agree_on_every_case() {
    let cases = cases();
    let rust_db = support::database("conformance_rust").await;
    let js_db = support::database("conformance_js").await;
    seed(&rust_db, &cases).await;
    seed(&js_db, &cases).await;
    installer::install(&js_db, &Default::default())
        .await
        .unwrap();

    // The host's outcomes.
    let mut rust = Vec::new();
    for case in &cases {
        let name = CounterName::new(case.name).unwrap();
        let cyclic = CyclicCounter::new(&rust_db, name.clone());
        let autoinc = AutoincCounter::new(&rust_db, name.clone());
        let periodic = match case.twin {
            Twin::Periodic => Some(PeriodicCounter::open(&rust_db, name).await),
            _ => None,
        };
        for &reading in &case.clock {
            let outcome = match (case.twin, &periodic) {
                (Twin::Stamp, _) => cyclic
                    .next(reading as u64)
                    .await
                    .map(|issued| json!({ "ts": issued.timestamp_micros, "val": issued.sequence }))
                    .map_err(|e| e.to_string()),
                (Twin::Sequence, _) if case.upsert => autoinc
                    .take_or_create(1, START)
                    .await
                    .map(|values| json!(*values.start()))
                    .map_err(|e| e.to_string()),
                (Twin::Sequence, _) => autoinc
                    .take(1)
                    .await
                    .map(|values| json!(*values.start()))
                    .map_err(|e| e.to_string()),
                (Twin::Periodic, Some(Ok(periodic))) => periodic
                    .take(1)
                    .await
                    .map(|(period, values)| json!({ "period": period.to_string(), "values": values }))
                    .map_err(|e| e.to_string()),
                (Twin::Periodic, Some(Err(error))) => Err(error.to_string()),
                (Twin::Periodic, None) => unreachable!("a periodic case opens its counter"),
            };
            rust.push(match outcome {
                Ok(value) => json!({ "case": case.name, "val": value }),
                Err(error) => json!({ "case": case.name, "error": error }),
            });
        }
    }

    // The stored function's outcomes, one mongosh session for all calls.
    let calls: Vec<Value> = cases
        .iter()
        .flat_map(|case| {
            case.clock
                .iter()
                .map(move |reading| json!([case.twin.function(), case.name, reading, case.upsert]))
        })
        .collect();
    let script = format!(
        "for (const [fn, name, clock, upsert] of {calls}) {{\n\
           try {{\n\
             const val = fn === 'getNextSequence' && upsert
               ? getNextSequence(name, {{ upsert: true, start: {START} }})
               : fn === 'getNextSequence' ? getNextSequence(name)
               : fn === 'getNextPeriodic' ? getNextPeriodic(name)
               : getNextUniqueStamp(name, clock);\n\
             print(JSON.stringify({{ case: name, val: val }}));\n\
           }}\n\
           catch (e) {{ print(JSON.stringify({{ case: name, error: e.message }})); }}\n\
         }}",
        calls = Value::Array(calls)
    );
    let js = twin("conformance_js", script).await;

    assert_eq!(js.len(), rust.len(), "one outcome per call");
    for (rust, js) in rust.iter().zip(&js) {
        assert_eq!(rust, js, "the two implementations disagree");
    }
    assert_eq!(
        canonical_documents(&rust_db, "counters").await,
        canonical_documents(&js_db, "counters").await,
        "they left different documents"
    );
    // And the corrupt counters are exactly as they were seeded.
    let pristine = support::database("conformance_pristine").await;
    seed(&pristine, &cases).await;
    let pristine = canonical_documents(&pristine, "counters").await;
    let after = canonical_documents(&rust_db, "counters").await;
    // Cases whose every call failed (a case may succeed, then run out).
    let failed = cases.iter().map(|case| case.name).filter(|name| {
        rust.iter()
            .filter(|r| r["case"] == *name)
            .all(|r| r.get("error").is_some())
    });
    let unchanged = assert_refused_left_unchanged(failed, &after, &pristine);
    // The cases include corrupt counters: a check that met none proves nothing.
    assert!(unchanged > 0, "no seeded counter failed every call");
}

/// The counter `getNextSequence(name, {upsert: true, start})` creates is the
/// document the host's `CounterSpec` makes for the same settings (an autoinc
/// counter from `start` that owns no prefix, as `seq --upsert` creates it),
/// with its first value taken: field by field, in order, BSON types
/// included.
#[tokio::test]
async fn a_counter_the_stored_function_creates_is_the_hosts() {
    const TEST: &str = "conformance_upsert_document";
    let database = support::database(TEST).await;
    installer::install(&database, &Default::default())
        .await
        .unwrap();
    let output = shell_in(
        &support::database_name(TEST),
        "print(getNextSequence('made', { upsert: true, start: 42 }));",
    )
    .output()
    .unwrap();
    assert!(
        output.status.success() && String::from_utf8_lossy(&output.stdout).contains("42"),
        "mongosh: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let name = CounterName::new("made").unwrap();
    let mut expected = CounterSpec::of(CounterKind::Autoinc)
        .start(42)
        .prefixes(Vec::new())
        .document(&name, 0)
        .unwrap();
    // Its first value taken: `seq` is the last value handed out.
    expected.insert("seq", 42_i64);
    let fields = |document: &Document| -> Vec<(String, Value)> {
        document
            .iter()
            .map(|(key, value)| (key.clone(), value.clone().into_canonical_extjson()))
            .collect()
    };
    let made = support::documents(&database, "counters").await;
    assert_eq!(
        made.iter().map(fields).collect::<Vec<_>>(),
        [fields(&expected)]
    );
}

/// The stored JavaScript knows the kinds the host knows, in the same order:
/// `readCounter.js`'s list is held equal to the registry's, so a kind added
/// to one and not the other fails here.
#[test]
fn the_stored_javascript_knows_the_hosts_kinds() {
    let source = include_str!("../mongo-js/readCounter.js");
    let listed = source
        .lines()
        .find_map(|line| line.trim().strip_prefix("var KINDS = "))
        .expect("readCounter.js lists its KINDS");
    let listed: Vec<String> = serde_json::from_str(listed.trim_end_matches(';')).unwrap();
    let host: Vec<&str> = CounterKind::ALL.iter().map(|kind| kind.as_str()).collect();
    assert_eq!(listed, host);
}

/// The cyclic twin takes a value however often the counter changes under
/// it: one atomic `findAndModify`, as the host's take. Before, it read the
/// counter and then updated it on the condition that it was unchanged, and
/// beside the host's takers one call took 5 to 40 s (the soak found it).
/// Here the overlap is certain: every command the twin sends is preceded by
/// another client's change of the counter (a wrapper of `db.runCommand`),
/// so a read-then-update loop would lose every race and give up; the twin
/// must take each value at once, and the pairs it returns must grow.
#[tokio::test]
async fn the_cyclic_twin_takes_a_value_while_the_counter_changes_under_it() {
    const TEST: &str = "conformance_cyclic_contended";
    let database = support::database(TEST).await;
    installer::install(&database, &Default::default())
        .await
        .unwrap();
    database
        .collection::<Document>("counters")
        .insert_one(doc! { "_id": "busy", "val": 0_i64, "maxval": 99_i64 })
        .await
        .unwrap();
    let script = r#"
        const counters = db.getCollection("counters");
        const send = db.runCommand.bind(db);
        let commands = 0;
        db.runCommand = function (command, ...rest) {
          if (command.findAndModify || command.update) {
            commands += 1;
            // Another client takes a value first, every time.
            counters.updateOne({ _id: "busy" }, [{ $set: {
              val: { $cond: [{ $gte: ["$val", "$maxval"] }, 0, { $add: ["$val", 1] }] },
              ts: { $add: [{ $ifNull: ["$ts", 0] }, 1] } } }]);
          }
          return send(command, ...rest);
        };
        const pairs = [];
        for (let i = 0; i < 5; i++) {
          const s = getNextUniqueStamp("busy");
          pairs.push([Number(s.ts), Number(s.val)]);
        }
        print(JSON.stringify({ commands: commands, pairs: pairs }));
    "#;
    let output = shell_in(&support::database_name(TEST), script)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "mongosh: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: Value = serde_json::from_str(stdout.trim().lines().last().unwrap()).unwrap();
    assert_eq!(result["commands"], 5, "one write per value: {result}");
    let pairs: Vec<(u64, u64)> = result["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|pair| (pair[0].as_u64().unwrap(), pair[1].as_u64().unwrap()))
        .collect();
    assert!(pairs.windows(2).all(|w| w[0] < w[1]), "{pairs:?}");
}

/// Every write of the stored JavaScript asks for the host's write concern:
/// majority, journal and the host's `wtimeout`, so that a primary cut off
/// from the majority answers a twin with an error after the same wait as
/// the host, instead of holding the caller until the partition heals.
#[test]
fn the_stored_javascript_writes_with_the_hosts_write_concern() {
    let expected = format!(
        "{{ w: \"majority\", j: true, wtimeout: {} }}",
        idmint::mongo::DURABLE_WRITE_TIMEOUT.as_millis()
    );
    let sources = [
        ("getLock.js", include_str!("../mongo-js/getLock.js")),
        ("releaseLock.js", include_str!("../mongo-js/releaseLock.js")),
        (
            "getNextSequence.js",
            include_str!("../mongo-js/getNextSequence.js"),
        ),
        (
            "getNextPeriodic.js",
            include_str!("../mongo-js/getNextPeriodic.js"),
        ),
        (
            "getNextUniqueStamp.js",
            include_str!("../mongo-js/getNextUniqueStamp.js"),
        ),
        (
            "takeFromLanes.js",
            include_str!("../mongo-js/takeFromLanes.js"),
        ),
    ];
    for (file, source) in sources {
        let concerns: Vec<&str> = source
            .match_indices("{ w: ")
            .map(|(at, _)| &source[at..at + source[at..].find('}').unwrap() + 1])
            .collect();
        assert!(!concerns.is_empty(), "{file} names no write concern");
        for concern in concerns {
            assert_eq!(concern, expected, "{file}");
        }
    }
}
