//! Striped cyclic counters (issue 34): a cyclic counter whose (timestamp,
//! value) pairs come from several lanes, each a cyclic counter over one
//! residue class of the counter's cycle `0..=maxval`, whose timestamps
//! start above every timestamp the lanes before it issued. Taken from by
//! processes whose clocks are frozen (so that only the server's rule keeps
//! the pairs apart), changed under load with takers held mid-take, and its
//! lane's command exported by `idmint pipeline --lane`.

use std::collections::HashSet;
use std::process::Stdio;

use mongodb::bson::Bson;
use mongodb::Database;
use serde_json::Value;

use idmint::sequence::striping::hooks::{hold, Point};
use idmint::sequence::striping::set_stripes;
use idmint::sequence::{CounterKind, CounterName, CounterSpec, OpenOptions, Sequence};

use crate::support::counters::create_striped_and_open;
use crate::support::takers::{as_taken, assert_distinct, joined, spawn_takers_at};
use crate::support::{
    self, assert_exit, counter_name, database_name, fake_clock, idmint, run, stderr, stdout,
};

/// The clock every taker of these tests reads: frozen, so that two takes
/// ask for one timestamp.
const FROZEN_MICROS: u64 = 1_767_225_600_000_000; // 2026-01-01T00:00:00Z

/// A (timestamp, value) pair.
type Pair = (u64, u64);

/// The test's database with the cyclic counter `serial` of cycle
/// `0..=maxval` over `lanes` lanes (`1`: unstriped), and a `Sequence`.
async fn serial(test: &str, maxval: u64, lanes: u64) -> (Database, CounterName, Sequence) {
    let database = support::database(test).await;
    let name = counter_name("serial");
    let spec = CounterSpec::of(CounterKind::Cyclic)
        .maxval(maxval)
        .prefixes(Vec::new());
    let sequence = create_striped_and_open(&database, &name, &spec, lanes).await;
    (database, name, sequence)
}

/// `counter create serial --stripes 4 --max 9`, then 8 processes at once,
/// each with its wall clock frozen at one instant, each `seq serial --count
/// 200 --json` (blocks that wrap their lane's cycle many times): 1,600
/// (timestamp, value) pairs, all distinct, every value within the cycle
/// and in its lane's residue class; and formatted IDs, distinct too.
#[tokio::test]
async fn processes_with_frozen_clocks_take_distinct_pairs_from_a_striped_cyclic_counter() {
    const TEST: &str = "striped_cyclic_processes";
    support::database(TEST).await;
    support::create(
        TEST,
        "serial",
        &["--stripes", "4", "--max", "9", "--prefix", "S"],
    );
    let spawn = |args: &[&str]| {
        let mut command = idmint(TEST);
        fake_clock(&mut command, "2026-01-01 00:00:00")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start idmint")
    };
    let children: Vec<_> = (0..8)
        .map(|_| spawn(&["seq", "serial", "--count", "200", "--json"]))
        .collect();
    let mut all = Vec::new();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert_exit(&output, 0);
        let block: Vec<(u64, u64)> = stdout(&output)
            .lines()
            .map(|line| {
                let line: Value = serde_json::from_str(line).unwrap();
                (
                    line["timestamp_micros"].as_u64().unwrap(),
                    line["value"].as_u64().unwrap(),
                )
            })
            .collect();
        // One block from one lane: one residue class of 4.
        let residue = block[0].1 % 4;
        assert!(
            block
                .iter()
                .all(|(_, value)| *value <= 9 && value % 4 == residue),
            "{block:?}"
        );
        all.extend(block);
    }
    assert_eq!(all.len(), 1600);
    assert_distinct(&all);

    let children: Vec<_> = (0..8)
        .map(|_| spawn(&["next", "serial", "--count", "50"]))
        .collect();
    let mut ids = HashSet::new();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert_exit(&output, 0);
        for id in stdout(&output).lines() {
            assert!(ids.insert(id.to_string()), "{id} handed out twice");
        }
    }
    assert_eq!(ids.len(), 400);
}

/// The proof of "seal, then start above" for pairs, with every taker's
/// clock frozen at one instant: the timestamps move only by the server's
/// rule. From 1 lane to 2, then takes held mid-take while the stripes
/// change (2 to 4, then 4 to 2), at both points a take can be in flight: applied but not answered
/// (the seal counts its timestamp), and sent after the seal (the sealed
/// lane refuses it). No pair is handed out twice, and every pair of a
/// generation is later than every pair of the ones before.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_change_of_stripes_with_takes_in_flight_never_hands_out_a_pair_twice() {
    const TEST: &str = "striped_cyclic_restripe_held";
    let (database, name, sequence) = serial(TEST, 9, 1).await;
    // Unstriped, then 2 lanes: each after the last pair before.
    let mut all = joined(spawn_takers_at::<Pair>(&sequence, 4, 7, FROZEN_MICROS)).await;
    let two = set_stripes(&database, &name, 2).await.unwrap();
    assert!(all.iter().all(|(ts, _)| *ts <= two.map.base));
    // The handle opened before: its short guard no longer holds, and it
    // takes from the lanes.
    let generation_one = joined(spawn_takers_at::<Pair>(&sequence, 4, 7, FROZEN_MICROS)).await;
    assert!(generation_one.iter().all(|(ts, _)| *ts > two.map.base));
    all.extend(generation_one);
    let (sequence, _) = Sequence::open(&database, name.clone(), &OpenOptions::default())
        .await
        .unwrap();

    // Applied, not answered: 4 takes held after the server applied them,
    // while the 2 lanes become 4.
    let applied = hold(&database_name(TEST), "serial", Point::AfterTake, 4);
    let takers = spawn_takers_at::<Pair>(&sequence, 4, 5, FROZEN_MICROS);
    applied.arrived().await;
    let striped = set_stripes(&database, &name, 4).await.unwrap();
    applied.release().await;
    let held = joined(takers).await;
    drop(applied);
    all.extend(&held);
    let floor = striped.map.base;
    assert!(
        all.iter().all(|(ts, _)| *ts <= floor),
        "a pair taken before the seal is after the new floor {floor}: {all:?}"
    );

    // Generation 2 (4 lanes): every pair after the floor.
    let (sequence, _) = Sequence::open(&database, name.clone(), &OpenOptions::default())
        .await
        .unwrap();
    let generation_two = joined(spawn_takers_at::<Pair>(&sequence, 8, 9, FROZEN_MICROS)).await;
    assert!(
        generation_two.iter().all(|(ts, _)| *ts > floor),
        "{generation_two:?}"
    );
    all.extend(&generation_two);

    // Sent after the seal, on the map of generation 2: 8 takes held before
    // they are sent, half of them to lanes 2 and 3, which the change to 2
    // lanes leaves sealed.
    let unsent = hold(&database_name(TEST), "serial", Point::BeforeTake, 8);
    let takers = spawn_takers_at::<Pair>(&sequence, 8, 5, FROZEN_MICROS);
    unsent.arrived().await;
    let halved = set_stripes(&database, &name, 2).await.unwrap();
    unsent.release().await;
    let late = joined(takers).await;
    drop(unsent);
    let floor = halved.map.base;
    assert!(
        generation_two.iter().all(|(ts, _)| *ts <= floor),
        "the new floor {floor} is below a pair of generation 2"
    );
    assert!(
        late.iter().all(|(ts, value)| *ts > floor && *value <= 9),
        "a take sent after the seal is not after the new floor {floor}: {late:?}"
    );
    all.extend(&late);
    assert_eq!(all.len(), 4 * 7 * 2 + 4 * 5 + 8 * 9 + 8 * 5);
    assert_distinct(&all);
}

/// `counter stripes serial --set 3` on an unstriped cyclic counter whose
/// timestamps a clock an hour ahead moved forward: the lanes' pairs come
/// after its last one, whatever the clocks of the takers after; `counter
/// show` says so. More lanes than the cycle has values is refused, with
/// nothing changed.
#[tokio::test]
async fn striping_an_unstriped_cyclic_counter_goes_on_after_its_last_timestamp() {
    const TEST: &str = "striped_cyclic_from_one";
    support::database(TEST).await;
    support::create(TEST, "serial", &["--max", "9", "--raw"]);
    let ahead =
        run(fake_clock(&mut idmint(TEST), "+1h").args(["seq", "serial", "--count", "5", "--json"]));
    assert_exit(&ahead, 0);
    let last_ahead = stdout(&ahead)
        .lines()
        .map(|line| {
            serde_json::from_str::<Value>(line).unwrap()["timestamp_micros"]
                .as_u64()
                .unwrap()
        })
        .max()
        .unwrap();

    let refused = run(idmint(TEST).args(["counter", "stripes", "serial", "--set", "11"]));
    assert_exit(&refused, 2);
    assert!(
        stderr(&refused).contains(
            "a cyclic counter of maxval 9 has at most 10 lanes, one per value of its cycle \
             0..=9, not 11"
        ),
        "{}",
        stderr(&refused)
    );
    let unchanged = support::counter_doc(TEST, "serial").await.unwrap();
    assert_eq!(unchanged.get_str("kind").ok(), Some("cyclic"));

    let changed = run(idmint(TEST).args(["counter", "stripes", "serial", "--set", "3"]));
    assert_exit(&changed, 0);
    let after = idmint::parts::rfc3339_micros(last_ahead);
    assert!(
        stdout(&changed).contains(&format!(
            "striped: generation 1: 3 lanes, timestamps after {after} (pairs unique, not increasing)"
        )),
        "{}",
        stdout(&changed)
    );
    let now = run(idmint(TEST).args(["seq", "serial", "--count", "4", "--json"]));
    assert_exit(&now, 0);
    for line in stdout(&now).lines() {
        let line: Value = serde_json::from_str(line).unwrap();
        assert!(
            line["timestamp_micros"].as_u64().unwrap() > last_ahead,
            "{line} is not after {last_ahead}"
        );
    }
    let refused =
        run(idmint(TEST).args(["counter", "create", "tiny", "--max", "2", "--stripes", "4"]));
    assert_exit(&refused, 2);
    assert!(
        stderr(&refused).contains("a cyclic counter of maxval 2 has at most 3 lanes"),
        "{}",
        stderr(&refused)
    );
    assert!(support::counter_doc(TEST, "tiny").await.is_none());
}

/// `idmint pipeline serial --lane R --client-micros T` prints a lane's take,
/// which run by an application hands out the lane's next value (`last`, in
/// its residue class) with a timestamp no earlier than T, and moves the
/// lane as the host's take does.
#[tokio::test]
async fn pipeline_prints_the_command_of_one_lane_of_a_striped_cyclic_counter() {
    const TEST: &str = "striped_cyclic_pipeline";
    let database = support::database(TEST).await;
    support::create(TEST, "serial", &["--stripes", "3", "--max", "9", "--raw"]);
    let printed = run(idmint(TEST).args([
        "pipeline",
        "serial",
        "--lane",
        "1",
        "--client-micros",
        &FROZEN_MICROS.to_string(),
    ]));
    assert_exit(&printed, 0);
    assert!(
        stderr(&printed)
            .contains("the value is `value.last`, issued with the timestamp `value.ts`"),
        "{}",
        stderr(&printed)
    );
    let printed: Value = serde_json::from_str(&stdout(&printed)).unwrap();
    let Ok(Bson::Document(command)) = Bson::try_from(printed.clone()) else {
        panic!("not a command: {printed}");
    };
    let mut taken = Vec::new();
    // Lane 1 of 3 over 0..=9: 1, 4, 7, then a wrap to 1 one microsecond on.
    for _ in 0..4 {
        let answer = database.run_command(command.clone()).await.unwrap();
        let lane = answer.get_document("value").unwrap();
        taken.push((
            lane.get_i64("ts").unwrap() as u64,
            lane.get_i64("last").unwrap() as u64,
        ));
    }
    assert_eq!(
        taken,
        [
            (FROZEN_MICROS, 1),
            (FROZEN_MICROS, 4),
            (FROZEN_MICROS, 7),
            (FROZEN_MICROS + 1, 1)
        ]
    );
    // The host's next take from that lane goes on after them.
    let (sequence, _) = Sequence::open(&database, counter_name("serial"), &OpenOptions::default())
        .await
        .unwrap();
    let mut after = Vec::new();
    for _ in 0..3 {
        after.extend(as_taken::<Pair>(
            &sequence.take(1, FROZEN_MICROS).await.unwrap(),
        ));
    }
    let mut all = taken.clone();
    all.extend(&after);
    assert_distinct(&all);
}
