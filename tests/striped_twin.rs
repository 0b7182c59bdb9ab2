//! The stored JavaScript twins take from a striped counter at once with
//! the host (issue 34): `getNextSequence(NAME)` (autoinc lanes),
//! `getNextUniqueStamp(NAME, clientMicros)` (cyclic lanes) and
//! `getNextPeriodic(NAME, count)` (periodic lanes), run by mongosh, beside
//! the host's takers held mid-take (a periodic counter's across a period
//! boundary of the server's clock), with the host taking between the
//! twin's choice of a lane and its take, and while the counter's stripes
//! change under it; and each refuses the map of another kind as the
//! host's reader of its kind does. (Held equal to the host on a table of
//! maps and lanes: `striped_twin_cases.rs`; the stored reader:
//! `striped_twin_readers.rs`.)

use std::collections::BTreeMap;

use mongodb::Database;
use serde_json::json;

use idmint::installer;
use idmint::sequence::striping::hooks::{hold, Point};
use idmint::sequence::striping::{create_striped, Generation, StripeMap};
use idmint::sequence::{
    AutoincCounter, CounterKind, CounterSpec, CyclicCounter, PeriodicCounter, Sequence,
};

use crate::support::counters::create_striped_and_open;
use crate::support::takers::{
    assert_distinct, assert_each_lane_whole, joined, spawn_takers, spawn_takers_at,
};
use crate::support::twin::{canonical_documents, twin, CLIENT};
use crate::support::{self, counter_name, database_name, FakeClockServer};

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
    let spec = CounterSpec::of(CounterKind::Cyclic)
        .maxval(TOP)
        .prefixes(Vec::new());
    let sequence = create_striped_and_open(&database, &counter_name("serial"), &spec, LANES).await;
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
    let spec = CounterSpec::of(CounterKind::Periodic).prefixes(Vec::new());
    let sequence = create_striped_and_open(&database, &counter_name("inv"), &spec, LANES).await;
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
    let before = canonical_documents(&database, "counters").await;
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
    assert_eq!(canonical_documents(&database, "counters").await, before);
}

/// The test's database with the functions installed, and the autoinc
/// counter `orders` striped over `lanes` lanes, opened by the host.
async fn orders_with_functions(test: &str, lanes: u64) -> (Database, Sequence) {
    let database = support::database(test).await;
    installer::install(&database, &Default::default())
        .await
        .unwrap();
    let spec = CounterSpec::of(CounterKind::Autoinc).prefixes(Vec::new());
    let sequence = create_striped_and_open(&database, &counter_name("orders"), &spec, lanes).await;
    (database, sequence)
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
    let (database, sequence) = orders_with_functions(TEST, 3).await;
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
    let (database, _) = orders_with_functions(TEST, 2).await;
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
    let (_database, _sequence) = orders_with_functions(TEST, 4).await;
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
