//! Striped counters in one deployment (issue 34): a counter whose values
//! come from several lanes. Created and shown through the CLI, taken from
//! by many processes at once, changed under load with takers held
//! mid-take (the library's test hooks), and refused, unchanged, by every
//! path that does not know lanes: a kind's own handle, the commands
//! `idmint pipeline` exports for a kind, the stored JavaScript twins
//! other than `getNextSequence` (whose lane take is `striped_twin.rs`'s);
//! `idmint pipeline --lane` exports a lane's take.

use std::collections::HashSet;

use mongodb::bson::{doc, Bson, Document};
use mongodb::Database;
use serde_json::Value;

use idmint::installer;
use idmint::sequence::striping::hooks::{hold, Point};
use idmint::sequence::striping::{create_striped, set_stripes};
use idmint::sequence::{
    take_command, AutoincCounter, CommandOptions, CounterKind, CounterName, CounterSpec,
    CounterState, OpenOptions, Sequence, SequenceError,
};

use crate::support::counters::striped_orders;
use crate::support::takers::{assert_distinct, joined, spawn_takers};
use crate::support::{
    self, assert_exit, counter_name, database_name, idmint, mongosh::shell, printed_values, run,
    run_at_once, stderr, stdout,
};

/// Every document of the counters collection, by `_id`.
async fn counters(database: &Database) -> Vec<Document> {
    support::documents(database, "counters").await
}

/// `counter create NAME --kind autoinc --stripes N`, then 8 processes of
/// `seq NAME --count 300` at once: 2,400 values, all distinct, as many as
/// the lanes' local values add up to; and `next` formats them.
#[tokio::test]
async fn many_processes_take_distinct_values_from_a_striped_counter() {
    const TEST: &str = "striped_processes";
    support::database(TEST).await;
    support::create(
        TEST,
        "orders",
        &["--kind", "autoinc", "--stripes", "4", "--raw"],
    );
    let outputs = run_at_once(TEST, &["seq", "orders", "--count", "300"], 8);
    let mut all = Vec::new();
    for output in &outputs {
        assert_exit(output, 0);
        all.extend(printed_values(output));
    }
    assert_eq!(all.len(), 2400);
    assert_distinct(&all);
    let shown = run(idmint(TEST).args(["counter", "show", "orders", "--json"]));
    assert_exit(&shown, 0);
    let shown: Value = serde_json::from_str(&stdout(&shown)).unwrap();
    let lanes = shown["lanes"].as_array().unwrap();
    assert_eq!(lanes.len(), 4);
    let locals: u64 = lanes
        .iter()
        .map(|lane| lane["local"].as_u64().unwrap())
        .sum();
    assert_eq!(locals, 2400);

    support::create(TEST, "invoices", &["--kind", "autoinc", "--stripes", "2"]);
    let next = run(idmint(TEST).args([
        "next",
        "invoices",
        "--count",
        "5",
        "--policy",
        "builtin:decimal",
    ]));
    assert_exit(&next, 0);
    let ids: HashSet<String> = stdout(&next).lines().map(str::to_string).collect();
    assert_eq!(ids.len(), 5, "{}", stdout(&next));
}

/// `counter show` says the generation and each lane: its local value, the
/// last value it handed out, sealed or not.
#[tokio::test]
async fn counter_show_says_each_lane() {
    const TEST: &str = "striped_show";
    let database = support::database(TEST).await;
    support::create(
        TEST,
        "orders",
        &["--kind", "autoinc", "--stripes", "3", "--start", "11"],
    );
    // One handle takes from its lanes in turn: one value from each.
    let (sequence, _) = Sequence::open(&database, counter_name("orders"), &OpenOptions::default())
        .await
        .unwrap();
    for _ in 0..3 {
        sequence.take(1, 0).await.unwrap();
    }
    let shown = run(idmint(TEST).args(["counter", "show", "orders"]));
    assert_exit(&shown, 0);
    let text = stdout(&shown);
    assert!(
        text.contains("kind:   autoinc")
            && text.contains("striped: generation 1: 3 lanes, values above 10")
            && text.contains("lane 0: local value 1, last value 11")
            && text.contains("lane 1: local value 1, last value 12")
            && text.contains("lane 2: local value 1, last value 13"),
        "{text}"
    );
    let shown = run(idmint(TEST).args(["counter", "show", "orders", "--json"]));
    let shown: Value = serde_json::from_str(&stdout(&shown)).unwrap();
    assert_eq!(
        (&shown["striped"], &shown["lanes"][2]),
        (
            &serde_json::json!({"kind": "autoinc", "generation": 1, "base": 10, "modulus": 3, "live": true}),
            &serde_json::json!({"residue": 2, "local": 1, "last": 13, "sealed": false})
        )
    );
}

/// `counter stripes NAME --set N` on an unstriped autoinc counter: its
/// document becomes the map, its `seq` the base, and every value after is
/// above every value before.
#[tokio::test]
async fn striping_an_unstriped_counter_continues_above_it() {
    const TEST: &str = "striped_from_one";
    support::database(TEST).await;
    support::create(TEST, "orders", &["--kind", "autoinc", "--start", "100"]);
    let before = printed_values(&run(idmint(TEST).args(["seq", "orders", "--count", "5"])));
    assert_eq!(before, [100, 101, 102, 103, 104]);
    let changed = run(idmint(TEST).args(["counter", "stripes", "orders", "--set", "3"]));
    assert_exit(&changed, 0);
    assert!(
        stdout(&changed).contains("striped: generation 1: 3 lanes, values above 104"),
        "{}",
        stdout(&changed)
    );
    // Three processes, each a block of 3 from one lane: 3 apart.
    let mut after = Vec::new();
    for output in run_at_once(TEST, &["seq", "orders", "--count", "3"], 3) {
        assert_exit(&output, 0);
        let block = printed_values(&output);
        assert!(
            block.windows(2).all(|pair| pair[1] == pair[0] + 3),
            "{block:?}"
        );
        after.extend(block);
    }
    assert!(after.iter().all(|value| *value > 104), "{after:?}");
    assert_distinct(&after);
    // And again, to 2 lanes: above all of those.
    assert_exit(
        &run(idmint(TEST).args(["counter", "stripes", "orders", "--set", "2"])),
        0,
    );
    let highest = *after.iter().max().unwrap();
    let last = printed_values(&run(idmint(TEST).args(["seq", "orders", "--count", "4"])));
    assert!(last.iter().all(|value| *value > highest), "{last:?}");
}

/// A handle opened before its counter was striped (a long-running `serve`
/// or `next --stream`) takes from the lanes once it is: its take finds the
/// map, takes nothing from it, and goes to a lane, above every value before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handle_opened_before_the_counter_was_striped_takes_from_its_lanes() {
    const TEST: &str = "striped_opened_before";
    let (database, name, sequence) = striped_orders(TEST, 1).await;
    assert!(!sequence.is_striped());
    let mut all: Vec<u64> = joined(spawn_takers(&sequence, 4, 5)).await;
    let striped = set_stripes(&database, &name, 3).await.unwrap();
    assert_eq!(striped.map.base, 20);
    let after: Vec<u64> = joined(spawn_takers(&sequence, 6, 5)).await;
    assert!(after.iter().all(|value| *value > 20), "{after:?}");
    all.extend(after);
    assert_distinct(&all);
}

/// The proof of "seal, then start above": takers held mid-take while the
/// stripes change, at both points a take can be in flight:
///
/// - applied by the server but not yet answered: the seal counts them, so
///   their values are at most the new base;
/// - sent after the seal on a map read before it: the sealed lane refuses
///   them and they take from the new generation, above the base.
///
/// No value is handed out twice, and every value of a generation is above
/// every value of the ones before.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_change_of_stripes_with_takes_in_flight_never_hands_out_a_value_twice() {
    const TEST: &str = "striped_restripe_held";
    let (database, name, sequence) = striped_orders(TEST, 4).await;
    let mut all: Vec<u64> = Vec::new();
    let first: Vec<u64> = joined(spawn_takers(&sequence, 8, 7)).await;
    all.extend(&first);

    // Applied, not answered: 4 takes held after the server applied them.
    let applied = hold(&database_name(TEST), "orders", Point::AfterTake, 4);
    let takers = spawn_takers(&sequence, 4, 5);
    applied.arrived().await;
    let second = set_stripes(&database, &name, 2).await.unwrap();
    applied.release().await;
    let held: Vec<u64> = joined(takers).await;
    drop(applied);
    let base = second.map.base;
    assert!(
        held.iter().chain(&first).all(|value| *value <= base),
        "a take applied before the seal is above the new base {base}: {held:?}"
    );
    all.extend(&held);

    // Generation 2 (2 lanes): values above the base, read on a fresh handle.
    let (sequence, _) = Sequence::open(&database, name.clone(), &OpenOptions::default())
        .await
        .unwrap();
    let generation_two: Vec<u64> = joined(spawn_takers(&sequence, 8, 9)).await;
    assert!(
        generation_two.iter().all(|value| *value > base),
        "{generation_two:?}"
    );
    all.extend(&generation_two);

    // Sent after the seal, on the map of generation 2: 8 takes held before
    // they are sent, half of them to lane 1, which the change to 1 lane
    // leaves sealed.
    let unsent = hold(&database_name(TEST), "orders", Point::BeforeTake, 8);
    let takers = spawn_takers(&sequence, 8, 5);
    unsent.arrived().await;
    let third = set_stripes(&database, &name, 1).await.unwrap();
    unsent.release().await;
    let late: Vec<u64> = joined(takers).await;
    drop(unsent);
    let base = third.map.base;
    assert!(
        generation_two.iter().all(|value| *value <= base),
        "the new base {base} is below a value of generation 2"
    );
    assert!(
        late.iter().all(|value| *value > base),
        "a take sent after the seal is not above the new base {base}: {late:?}"
    );
    all.extend(&late);
    assert_eq!(all.len(), 8 * 7 + 4 * 5 + 8 * 9 + 8 * 5);
    assert_distinct(&all);
}

/// Two changes of one counter's stripes at once: the first is held after
/// its seals, before it writes its lanes; the second claims the next
/// generation, runs to the end, and values are taken from its lanes; the
/// first, let go, fails having written nothing (its seals were taken over),
/// so that no value is handed out twice and the counter goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_two_changes_of_stripes_at_once_the_later_one_wins() {
    const TEST: &str = "striped_two_changes";
    let (database, name, sequence) = striped_orders(TEST, 4).await;
    let mut all: Vec<u64> = joined(spawn_takers(&sequence, 8, 5)).await;

    let held = hold(&database_name(TEST), "orders", Point::BeforeLaneWrites, 1);
    let first = {
        let (database, name) = (database.clone(), name.clone());
        tokio::spawn(async move { set_stripes(&database, &name, 6).await })
    };
    held.arrived().await;
    let second = set_stripes(&database, &name, 2).await.unwrap();
    let (sequence, _) = Sequence::open(&database, name.clone(), &OpenOptions::default())
        .await
        .unwrap();
    let between: Vec<u64> = joined(spawn_takers(&sequence, 4, 5)).await;
    held.release().await;
    let refused = first.await.unwrap().unwrap_err();
    drop(held);
    assert!(
        refused
            .to_string()
            .contains("another change of its stripes"),
        "{refused}"
    );
    assert!(between.iter().all(|value| *value > second.map.base));
    all.extend(&between);
    let after: Vec<u64> = joined(spawn_takers(&sequence, 8, 5)).await;
    all.extend(&after);
    assert_eq!(all.len(), 8 * 5 + 4 * 5 + 8 * 5);
    assert_distinct(&all);
    // The counter goes on: one more change, above everything.
    let third = set_stripes(&database, &name, 3).await.unwrap();
    assert!(all.iter().all(|value| *value <= third.map.base));
}

/// A change of stripes that stopped half way (its task ended after its
/// seals, as a crash would end it) leaves the counter with no live lane;
/// `counter show` says what it was making. No person needs to act: the
/// next take waits, watches it stay so for 5 s, finishes it as its
/// claim recorded it, and takes, above every value before.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_change_stopped_half_way_is_finished_by_the_next_take() {
    const TEST: &str = "striped_half_way";
    let (database, name, sequence) = striped_orders(TEST, 3).await;
    let mut all: Vec<u64> = joined(spawn_takers(&sequence, 6, 4)).await;
    let held = hold(&database_name(TEST), "orders", Point::BeforeLaneWrites, 1);
    let stopped = {
        let (database, name) = (database.clone(), name.clone());
        tokio::spawn(async move { set_stripes(&database, &name, 2).await })
    };
    held.arrived().await;
    stopped.abort();
    assert!(stopped.await.unwrap_err().is_cancelled());
    drop(held);

    let shown = stdout(&run(idmint(TEST).args(["counter", "show", "orders"])));
    assert!(
        shown.contains("a change of stripes to 2 under way"),
        "{shown}"
    );
    let taken = run(idmint(TEST).args(["seq", "orders"]));
    assert_exit(&taken, 0);
    let shown = stdout(&run(idmint(TEST).args(["counter", "show", "orders"])));
    assert!(shown.contains("generation 3: 2 lanes"), "{shown}");

    let mut after: Vec<u64> = joined(spawn_takers(&sequence, 6, 4)).await;
    after.extend(printed_values(&taken));
    let highest = *all.iter().max().unwrap();
    assert!(after.iter().all(|value| *value > highest), "{after:?}");
    all.extend(after);
    assert_distinct(&all);
}

/// What no path that does not know lanes does: take from a map or a lane.
/// A kind's own handle refuses the map; the command `idmint pipeline`
/// exports for any kind matches neither (`value: null`); the registry's
/// reader refuses a lane; every document is left as it was.
#[tokio::test]
async fn paths_that_do_not_know_lanes_leave_a_striped_counter_unchanged() {
    const TEST: &str = "striped_refused_by_host";
    let (database, name, sequence) = striped_orders(TEST, 2).await;
    sequence.take(3, 0).await.unwrap();
    let before = counters(&database).await;

    let refused = AutoincCounter::new(&database, name.clone()).take(1).await;
    assert!(
        matches!(refused, Err(SequenceError::Striped { .. })),
        "{refused:?}"
    );
    assert!(refused
        .unwrap_err()
        .to_string()
        .contains("counter 'orders' is striped"),);
    for kind in CounterKind::ALL {
        let Ok(mut command) = take_command(*kind, &name, 1, &CommandOptions::default()) else {
            continue;
        };
        for id in ["orders", "orders#0", "orders#1"] {
            command.get_document_mut("query").unwrap().insert("_id", id);
            let answer = database.run_command(command.clone()).await.unwrap();
            assert_eq!(
                answer.get("value"),
                Some(&Bson::Null),
                "{kind} on {id}: {answer}"
            );
        }
    }
    // Listed (`status`, the monitor): the map, not its lanes.
    let listed = idmint::sequence::list(&database).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].name, "orders");
    assert_eq!(
        listed[0]
            .state
            .as_ref()
            .unwrap()
            .striped
            .as_ref()
            .unwrap()
            .modulus,
        2
    );
    assert_eq!(idmint::sequence::count(&database, "ord").await.unwrap(), 1);
    let lane = before
        .iter()
        .find(|document| document.get_str("_id") == Ok("orders#0"))
        .unwrap();
    let read = CounterState::from_document(&counter_name("x"), lane).unwrap_err();
    assert!(
        read.to_string()
            .contains("it is a lane of a striped counter"),
        "{read}"
    );
    assert_eq!(counters(&database).await, before);
}

/// `idmint pipeline NAME --lane R` prints lane R's take: run by mongosh
/// (any driver's `runCommand`), it hands out the lane's next value,
/// computed on the server from the lane's base, modulus and residue, never
/// a local one; once a change of stripes leaves the counter no lane R, the
/// same command takes nothing and leaves the lane as it was, while lane
/// 0's command takes from the new generation's lane 0. Without `--lane`
/// the lanes are named (exit 2); `--lane` past them, on an unstriped
/// counter or without a database is a usage error.
#[tokio::test]
async fn pipeline_prints_the_command_of_one_lane_of_a_striped_counter() {
    const TEST: &str = "striped_pipeline";
    let database = support::database(TEST).await;
    support::create(
        TEST,
        "orders",
        &["--kind", "autoinc", "--stripes", "3", "--start", "11"],
    );
    support::create(TEST, "plain", &["--kind", "autoinc", "--raw"]);
    // Values taken first, so that a lane's local values are not its values.
    for _ in 0..4 {
        assert_exit(
            &run(idmint(TEST).args(["seq", "orders", "--count", "2"])),
            0,
        );
    }

    for (args, needle) in [
        (
            &["pipeline", "orders"][..],
            "counter 'orders' is striped over 3 lanes, each taken from by a command of its \
             own: choose one with --lane 0..2",
        ),
        (
            &["pipeline", "orders", "--lane", "3"],
            "counter 'orders': lane 3 does not exist in a generation of 3 lanes",
        ),
        (
            &["pipeline", "plain", "--lane", "0"],
            "--lane applies to striped counters; counter 'plain' is not striped",
        ),
        (
            &["pipeline", "orders", "--lane", "0", "--kind", "cyclic"],
            "counter 'orders' has kind autoinc, not cyclic",
        ),
    ] {
        let refused = run(idmint(TEST).args(args));
        assert_exit(&refused, 2);
        assert!(
            stderr(&refused).contains(needle) && stdout(&refused).is_empty(),
            "{args:?}: {}",
            stderr(&refused)
        );
    }
    let unread = run(idmint(TEST)
        .env_remove("MONGODB_URI")
        .args(["pipeline", "orders", "--lane", "0"]));
    assert_exit(&unread, 2);
    assert!(
        stderr(&unread).contains(
            "--lane names a lane of a striped counter, read from its map: no database was given"
        ),
        "{}",
        stderr(&unread)
    );

    let printed = |lane: &str| {
        let printed = run(idmint(TEST).args(["pipeline", "orders", "--lane", lane]));
        assert_exit(&printed, 0);
        assert!(
            stderr(&printed).contains(&format!(
                "takes from lane {lane} of counter 'orders' (document 'orders#{lane}')"
            )) && stderr(&printed).contains("matches nothing (value: null)"),
            "{}",
            stderr(&printed)
        );
        stdout(&printed)
    };
    let lane_two = printed("2");
    let lane_zero = printed("0");
    // The command run as an application would: `value.last` is the value.
    let take = |command: &str| {
        let script = format!(
            "const answer = db.runCommand(EJSON.parse({}));\n\
             print(JSON.stringify({{ last: answer.value === null ? null : Number(answer.value.last) }}));",
            serde_json::to_string(command).unwrap()
        );
        let lines = support::mongosh::json_lines(&mut shell(TEST, &script));
        lines[0]["last"].as_u64()
    };
    let lane = || async {
        support::counter_document(&database, "orders#2")
            .await
            .unwrap()
    };
    let before = lane().await;
    let field = |document: &Document, path: &str| -> u64 {
        let (document, key) = match path.split_once('.') {
            Some((inner, key)) => (document.get_document(inner).unwrap(), key),
            None => (document, path),
        };
        document.get_i64(key).unwrap() as u64
    };
    let next = field(&before, "lane.b")
        + field(&before, "seq") * field(&before, "lane.m")
        + field(&before, "lane.r")
        + 1;
    assert_eq!(take(&lane_two), Some(next));
    let after = lane().await;
    assert_eq!(
        (field(&after, "seq"), field(&after, "last")),
        (field(&before, "seq") + 1, next)
    );

    // To 2 lanes: lane 2 is sealed for good, and its command takes
    // nothing; lane 0's takes from the new lane 0, above the new base.
    let changed = run(idmint(TEST).args(["counter", "stripes", "orders", "--set", "2", "--json"]));
    assert_exit(&changed, 0);
    let base = serde_json::from_str::<Value>(&stdout(&changed)).unwrap()["striped"]["base"]
        .as_u64()
        .unwrap();
    let sealed = lane().await;
    assert_eq!(take(&lane_two), None);
    assert_eq!(lane().await, sealed);
    assert_eq!(take(&lane_zero), Some(base + 1));
}

/// The lane's reader and its guard on the server are twins: a lane that
/// the reader refuses, the take's filter does not match, and the take
/// says what is wrong, leaving the lane as it was.
#[tokio::test]
async fn a_malformed_lane_is_named_and_left_unchanged() {
    const TEST: &str = "striped_malformed_lane";
    let database = support::database(TEST).await;
    support::create(
        TEST,
        "one",
        &["--kind", "autoinc", "--stripes", "2", "--raw"],
    );
    // A map of one lane: every take goes to lane 0.
    set_stripes(&database, &counter_name("one"), 1)
        .await
        .unwrap();
    let lane = || async { support::counter_document(&database, "one#0").await.unwrap() };
    let good = lane().await;
    for (field, value, needle) in [
        ("last", Bson::Int64(7), "last is 7, not"),
        ("seq", Bson::String("1".into()), "seq is the string"),
        ("seq", Bson::Double(1.5), "seq is 1.5"),
        (
            "sealed",
            Bson::Boolean(false),
            "sealed is the boolean false",
        ),
        ("kind", Bson::String("autoinc".into()), "not \"lane\""),
    ] {
        let mut broken = good.clone();
        broken.insert(field, value);
        let broken = support::replace_counter(&database, "one#0", broken).await;
        let (sequence, _) = Sequence::open(&database, counter_name("one"), &OpenOptions::default())
            .await
            .unwrap();
        let error = sequence.take(1, 0).await.unwrap_err().to_string();
        assert!(
            error.contains("lane 'one#0' is corrupt") && error.contains(needle),
            "{field}: {error}"
        );
        assert_eq!(lane().await, broken, "{field}");
    }
}

/// Of the stored JavaScript twins, run by mongosh, `getNextSequence`
/// takes from a striped counter's lanes (upsert or not: the counter
/// exists); every other twin refuses its map, and every twin refuses a
/// lane called by its name, each saying why and changing nothing.
/// (`tests/striped_twin.rs` holds the lane take equal to the host's.)
#[tokio::test]
async fn only_get_next_sequence_takes_from_a_striped_counter_and_none_from_a_lane() {
    const TEST: &str = "striped_refused_by_twins";
    let database = support::database(TEST).await;
    installer::install(&database, &Default::default())
        .await
        .unwrap();
    let name = counter_name("orders");
    let spec = CounterSpec::of(CounterKind::Autoinc).prefixes(Vec::new());
    create_striped(&database, &name, &spec, 2).await.unwrap();
    let before = counters(&database).await;
    let calls = [
        "getNextSequence('orders')",
        "getNextSequence('orders', { upsert: true })",
        "getNextSequence('orders#0')",
        "getNextUniqueSeq('orders')",
        "getNextUniqueSeq('orders#1')",
        "getNextUniqueStamp('orders')",
        "getNextPeriodic('orders', 1)",
        "getNextPeriodic('orders#0', 1)",
    ];
    let script: String = calls
        .iter()
        .map(|call| {
            format!(
                "try {{ print(JSON.stringify({{ call: {call:?}, value: {call} }})); }} \
                 catch (error) {{ print(JSON.stringify({{ call: {call:?}, refused: String(error.message) }})); }}\n"
            )
        })
        .collect();
    let lines = support::mongosh::json_lines(&mut shell(TEST, &script));
    assert_eq!(lines.len(), calls.len(), "{lines:?}");
    let mut taken = Vec::new();
    for line in &lines {
        let call = line["call"].as_str().unwrap();
        if call.starts_with("getNextSequence('orders'") {
            taken.push(
                line["value"]
                    .as_u64()
                    .unwrap_or_else(|| panic!("getNextSequence took nothing: {line}")),
            );
            continue;
        }
        let refused = line["refused"]
            .as_str()
            .unwrap_or_else(|| panic!("a stored function took from a striped counter: {line}"));
        let why = if call.contains('#') {
            "counter 'orders#"
        } else {
            "counter 'orders' is striped: its values come from its lanes"
        };
        assert!(
            refused.contains(why) && refused.contains("left unchanged"),
            "{line}"
        );
        if call.contains('#') {
            assert!(
                refused.ends_with(
                    "it is a lane of a striped counter, taken from through that counter only; \
                     it was left unchanged"
                ),
                "{line}"
            );
        }
    }
    assert_distinct(&taken);
    assert!(
        taken.iter().all(|value| (1..=4).contains(value)),
        "{taken:?}"
    );
    // The two takes moved the lanes on by two; the map is as it was.
    let after = counters(&database).await;
    assert_eq!(after[0], before[0], "the map changed");
    let seq = |documents: &[Document]| -> i64 {
        documents[1..]
            .iter()
            .map(|lane| lane.get_i64("seq").unwrap())
            .sum()
    };
    assert_eq!(seq(&after) - seq(&before), 2);
}

/// A counter name with a lane's `#` is refused before anything is sent.
#[test]
fn a_lane_cannot_be_named() {
    assert!(CounterName::new("orders#0").is_err());
}

/// `idmint serve`'s router, in-process over a striped counter: `/values`
/// and `/ids` take from its lanes through the same pool as any counter's;
/// `/ranges` refuses it, its values not being runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_takes_values_and_ids_from_a_striped_counter() {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    const TEST: &str = "striped_serve";
    let database = support::database(TEST).await;
    let spec = CounterSpec::of(CounterKind::Autoinc);
    create_striped(&database, &counter_name("orders"), &spec, 3)
        .await
        .unwrap();
    let runtime = idmint::PolicyRuntime::new().unwrap();
    let decimal = runtime.load_builtin("decimal").unwrap();
    let server = idmint_serve::Server::start(
        &database,
        &runtime,
        decimal,
        idmint_serve::ServeOptions::default(),
    )
    .await
    .unwrap();
    let router = server.router();
    let get = |path: &'static str| {
        let router = router.clone();
        async move {
            let request = Request::get(path).body(Body::empty()).unwrap();
            let response = router.oneshot(request).await.unwrap();
            let status = response.status();
            let bytes = response.into_body().collect().await.unwrap().to_bytes();
            (status, serde_json::from_slice::<Value>(&bytes).unwrap())
        }
    };
    let mut all = Vec::new();
    for _ in 0..4 {
        let (status, body) = get("/v1/counters/orders/values?count=5").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        all.extend(
            body["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|value| value.as_u64().unwrap()),
        );
    }
    assert_eq!(all.len(), 20);
    assert_distinct(&all);
    let (status, body) = get("/v1/counters/orders/ids?count=3").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["ids"].as_array().unwrap().len(), 3, "{body}");
    let (status, body) = get("/v1/counters/orders/ranges?count=3").await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("not runs"),
        "{body}"
    );
    // Every value taken is a lane's: their local values add up.
    let lanes = idmint::sequence::striping::lanes(
        &database,
        None,
        &counter_name("orders"),
        &CounterState::from_document(
            &counter_name("orders"),
            &support::counter_document(&database, "orders")
                .await
                .unwrap(),
        )
        .unwrap()
        .striped
        .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(
        lanes
            .iter()
            .map(|lane| lane.lane.as_ref().unwrap().local_value())
            .sum::<u64>(),
        23
    );
}

/// The short guard for lanes: a handle's second take of a lane sends a
/// filter of plain equalities and bounds (no `$expr`), and hands out the
/// next values; a lane changed since (here its `seq` made an int32 by
/// hand, which the short filter's type test refuses) is taken with the
/// full guard again, once, and then with the short one; a sealed lane
/// matches neither. Autoinc, cyclic and periodic lanes alike.
#[tokio::test]
async fn a_lane_taken_before_is_taken_with_the_short_guard() {
    const TEST: &str = "striped_short_guard";
    let (database, log) = support::monitored_database(TEST).await;
    for (name, spec) in [
        (
            "orders",
            CounterSpec::of(CounterKind::Autoinc).prefixes(Vec::new()),
        ),
        (
            "serial",
            CounterSpec::of(CounterKind::Cyclic)
                .maxval(9)
                .prefixes(Vec::new()),
        ),
        (
            "invoices",
            CounterSpec::of(CounterKind::Periodic).prefixes(Vec::new()),
        ),
    ] {
        let name = counter_name(name);
        // One lane: unstriped, then striped over 1.
        create_striped(&database, &name, &spec, 1).await.unwrap();
        set_stripes(&database, &name, 1).await.unwrap();
        let (sequence, _) = Sequence::open(&database, name.clone(), &OpenOptions::default())
            .await
            .unwrap();
        let takes = || {
            log.named("findAndModify")
                .into_iter()
                .filter(|command| command.get_str("findAndModify") == Ok("counters"))
                // Takes: a seal's query has neither guard.
                .filter(|command| {
                    command.get_document("query").is_ok_and(|query| {
                        query.get_str("_id") == Ok(&format!("{name}#0"))
                            && (query.contains_key("$expr") || query.contains_key("sealed"))
                    })
                })
                .map(|command| command.get_document("query").unwrap().contains_key("$expr"))
                .collect::<Vec<bool>>()
        };
        let mut values = Vec::new();
        for _ in 0..3 {
            values.extend(sequence.take(2, 7).await.unwrap());
        }
        // The first take sends the full guard, the next ones the short.
        assert_eq!(takes(), [true, false, false], "{name}");
        // Edited by hand: the short filter matches nothing, the full one
        // takes, and the next take is short again.
        let lanes = database.collection::<Document>("counters");
        let id = format!("{name}#0");
        let field = if name.as_str() == "serial" {
            "val"
        } else {
            "seq"
        };
        let document = lanes.find_one(doc! { "_id": &id }).await.unwrap().unwrap();
        let local = document.get_i64(field).unwrap() as i32;
        lanes
            .update_one(doc! { "_id": &id }, doc! { "$set": { field: local } })
            .await
            .unwrap();
        values.extend(sequence.take(2, 7).await.unwrap());
        values.extend(sequence.take(2, 7).await.unwrap());
        assert_eq!(takes(), [true, false, false, false, true, false], "{name}");
        let pairs: HashSet<(u64, u64)> = values
            .iter()
            .map(|stamp| (stamp.timestamp_micros, stamp.sequence))
            .collect();
        assert_eq!(pairs.len(), values.len(), "{name}: {values:?}");
        // Sealed: the short filter matches nothing, and the take goes to
        // the new generation's lane.
        let changed = set_stripes(&database, &name, 1).await.unwrap();
        let after = sequence.take(1, 7).await.unwrap();
        if name.as_str() == "serial" {
            assert!(after[0].timestamp_micros > changed.map.base, "{after:?}");
        } else {
            assert!(after[0].sequence > changed.map.base, "{after:?}");
        }
    }
}
