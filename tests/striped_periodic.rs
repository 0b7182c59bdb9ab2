//! Striped periodic counters (issue 34): values that start again at each
//! period, from several lanes, each an autoinc lane of the counter's
//! residue classes in every period, its period decided by its server's
//! clock. Against a server whose clock the test holds (libfaketime reads
//! it from a file): taken from by processes across a year boundary, changed
//! under load with takers held mid-take across the boundary and with the
//! clock stepped back, and its lane's command exported by `idmint pipeline
//! --lane`.

use std::collections::BTreeSet;

use mongodb::bson::Bson;
use mongodb::Database;
use serde_json::Value;

use idmint::sequence::striping::hooks::{hold, Point};
use idmint::sequence::striping::set_stripes;
use idmint::sequence::{CounterKind, CounterName, CounterSpec, OpenOptions, Sequence};

use crate::support::counters::create_striped_and_open;
use crate::support::takers::{
    as_taken, assert_distinct, assert_each_lane_whole, joined, spawn_takers,
};
use crate::support::{
    assert_exit, counter_name, period_value_pairs, run, stderr, stdout, FakeClockServer, Seq,
};

/// A (period, value) pair.
type Pair = (String, u64);

/// `counter create inv --kind periodic --stripes 4`, then 8 `idmint seq`
/// processes at once, each taking blocks of 1,000 while the server's clock
/// goes from 2030 to 2031: no (period, value) twice, and in each year each
/// lane handed out its residue class from 1 with no gap. Then `counter
/// stripes --set 2` starts the next generation above the highest value of
/// 2031, the period it was in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_across_a_period_boundary_never_repeat_a_value_of_a_striped_periodic_counter() {
    // More than a pipe buffer holds, so that every process is still
    // running when the clock moves.
    const PER_PROCESS: usize = 12_000;
    let clock = FakeClockServer::start("2030-12-31 23:59:00");
    let db = "striped_periodic_processes";
    assert_exit(
        &run(clock.idmint(db).args([
            "counter",
            "create",
            "inv",
            "--kind",
            "periodic",
            "--stripes",
            "4",
            "--raw",
        ])),
        0,
    );
    let uri = clock.server.uri.clone();
    let (mut processes, before) = tokio::task::spawn_blocking(move || {
        let mut processes: Vec<Seq> = (0..8)
            .map(|_| {
                let mut command = crate::support::idmint_on(&uri, db);
                command.args(["seq", "inv", "--count", &PER_PROCESS.to_string()]);
                Seq::spawn(command)
            })
            .collect();
        // One line from each: all eight have taken values in 2030.
        let before: Vec<String> = processes
            .iter_mut()
            .map(|process| process.next_line().expect("a first value"))
            .collect();
        (processes, before)
    })
    .await
    .unwrap();
    assert!(
        before.iter().all(|line| line.starts_with("2030 ")),
        "{before:?}"
    );
    clock.freeze("2031-01-01 00:00:05");
    let mut all = period_value_pairs(&before.join("\n"));
    for process in &mut processes {
        let rest: Vec<String> = std::iter::from_fn(|| process.next_line()).collect();
        all.extend(period_value_pairs(&rest.join("\n")));
        assert!(process.child.wait().unwrap().success());
    }
    assert_eq!(all.len(), 8 * PER_PROCESS);
    assert_distinct(&all);
    let years: BTreeSet<&str> = all.iter().map(|(period, _)| period.as_str()).collect();
    assert_eq!(years, BTreeSet::from(["2030", "2031"]));
    assert_each_lane_whole(&all, "2030", 0, 4);
    assert_each_lane_whole(&all, "2031", 0, 4);

    let highest = all
        .iter()
        .filter(|(period, _)| period == "2031")
        .map(|(_, value)| *value)
        .max()
        .unwrap();
    let changed = run(clock
        .idmint(db)
        .args(["counter", "stripes", "inv", "--set", "2"]));
    assert_exit(&changed, 0);
    assert!(
        stdout(&changed).contains(&format!(
            "striped: generation 2: 2 lanes, values above {highest} in 2031 (from 1 in later \
             periods) (unique, not increasing)"
        )),
        "{}",
        stdout(&changed)
    );
    let after = run(clock.idmint(db).args(["seq", "inv", "--count", "6"]));
    assert_exit(&after, 0);
    for (period, value) in period_value_pairs(&stdout(&after)) {
        assert!(period == "2031" && value > highest, "{period} {value}");
    }
}

/// The test's database on `clock`'s server, with the unstriped periodic
/// counter `inv` (years, UTC), and a `Sequence` on it.
async fn inv(clock: &FakeClockServer, db: &str) -> (Database, CounterName, Sequence) {
    let client = mongodb::Client::with_uri_str(&clock.server.uri)
        .await
        .unwrap();
    let database = client.database(db);
    let name = counter_name("inv");
    let spec = CounterSpec::of(CounterKind::Periodic).prefixes(Vec::new());
    let sequence = create_striped_and_open(&database, &name, &spec, 1).await;
    (database, name, sequence)
}

/// The proof of "seal, then start above" for periods. An unstriped
/// counter with values in 2030 goes to 2 lanes, then to 4 with takes held
/// after the server applied them (the seal counts them); the clock moves
/// to 2031, where every lane starts again from 1; the change to 2 lanes
/// with takes held before they are sent (the sealed lanes refuse them)
/// starts above the highest value of 2031; and the clock stepped back to
/// 2030 leaves the lanes in 2031. No (period, value) twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_change_of_stripes_across_a_period_boundary_with_takes_in_flight_never_repeats_a_value() {
    const DB: &str = "t_striped_periodic_held";
    let clock = FakeClockServer::start("2030-12-31 23:00:00");
    let (database, name, sequence) = inv(&clock, DB).await;
    let mut all = joined(spawn_takers::<Pair>(&sequence, 4, 5)).await;
    assert_each_lane_whole(&all, "2030", 0, 1);
    let two = set_stripes(&database, &name, 2).await.unwrap();
    assert_eq!(
        (two.map.base, two.map.base_period.as_deref()),
        (20, Some("2030"))
    );
    // The handle opened before: its counter is now lanes.
    let generation_one = joined(spawn_takers::<Pair>(&sequence, 4, 5)).await;
    assert_each_lane_whole(&generation_one, "2030", 20, 2);
    all.extend(generation_one);

    // Applied, not answered: 4 takes held while the 2 lanes become 4.
    let applied = hold(DB, "inv", Point::AfterTake, 4);
    let takers = spawn_takers::<Pair>(&sequence, 4, 5);
    applied.arrived().await;
    let four = set_stripes(&database, &name, 4).await.unwrap();
    applied.release().await;
    let held = joined(takers).await;
    drop(applied);
    all.extend(held);
    let floor = four.map.base;
    assert_eq!(four.map.base_period.as_deref(), Some("2030"));
    assert!(
        all.iter().all(|(_, value)| *value <= floor),
        "a value taken before the seal is above the new base {floor}: {all:?}"
    );
    let generation_two = joined(spawn_takers::<Pair>(&sequence, 4, 3)).await;
    assert_each_lane_whole(&generation_two, "2030", floor, 4);
    all.extend(generation_two);

    // A new year: every lane starts again from 1, above no base.
    clock.freeze("2031-01-01 00:00:01");
    let new_year = joined(spawn_takers::<Pair>(&sequence, 8, 9)).await;
    assert!(new_year.iter().all(|(period, _)| period == "2031"));
    assert_each_lane_whole(&new_year, "2031", 0, 4);
    all.extend(new_year.clone());

    // Sent after the seal: 8 takes held before they are sent, on the map
    // of 4 lanes, while it becomes 2.
    let unsent = hold(DB, "inv", Point::BeforeTake, 8);
    let takers = spawn_takers::<Pair>(&sequence, 8, 5);
    unsent.arrived().await;
    let halved = set_stripes(&database, &name, 2).await.unwrap();
    unsent.release().await;
    let late = joined(takers).await;
    drop(unsent);
    let highest = new_year.iter().map(|(_, value)| *value).max().unwrap();
    assert_eq!(
        (halved.map.base, halved.map.base_period.as_deref()),
        (highest, Some("2031"))
    );
    assert_each_lane_whole(&late, "2031", highest, 2);
    all.extend(late.clone());

    // The clock stepped back: the lanes stay in 2031 and go on.
    clock.freeze("2030-12-31 23:59:59");
    let back = joined(spawn_takers::<Pair>(&sequence, 4, 5)).await;
    let mut generation_three = late;
    generation_three.extend(back.clone());
    assert!(back.iter().all(|(period, _)| period == "2031"), "{back:?}");
    assert_each_lane_whole(&generation_three, "2031", highest, 2);
    all.extend(back);
    assert_eq!(all.len(), 20 + 20 + 20 + 12 + 72 + 40 + 20);
    assert_distinct(&all);
}

/// `idmint pipeline inv --lane R` prints a lane's take, which run by an
/// application hands out the lane's next value (`value.last`) in its
/// period (`value.current`), starts again in a new one, and moves the lane
/// as the host's take does.
#[tokio::test]
async fn pipeline_prints_the_command_of_one_lane_of_a_striped_periodic_counter() {
    const DB: &str = "t_striped_periodic_pipeline";
    // 23:00 in Paris (UTC+1): 2030 there.
    let clock = FakeClockServer::start("2030-12-31 22:00:00");
    let database = mongodb::Client::with_uri_str(&clock.server.uri)
        .await
        .unwrap()
        .database(DB);
    assert_exit(
        &run(clock.idmint(DB).args([
            "counter",
            "create",
            "inv",
            "--kind",
            "periodic",
            "--zone",
            "Europe/Paris",
            "--stripes",
            "3",
            "--raw",
        ])),
        0,
    );
    let printed = run(clock.idmint(DB).args(["pipeline", "inv", "--lane", "1"]));
    assert_exit(&printed, 0);
    assert!(
        stderr(&printed).contains("the value is `value.last`, of the period `value.current`"),
        "{}",
        stderr(&printed)
    );
    let printed: Value = serde_json::from_str(&stdout(&printed)).unwrap();
    let Ok(Bson::Document(command)) = Bson::try_from(printed.clone()) else {
        panic!("not a command: {printed}");
    };
    let take = || async {
        let answer = database.run_command(command.clone()).await.unwrap();
        let lane = answer.get_document("value").unwrap();
        (
            lane.get_str("current").unwrap().to_string(),
            lane.get_i64("last").unwrap() as u64,
        )
    };
    let mut taken = vec![take().await, take().await];
    clock.freeze("2030-12-31 22:30:00");
    taken.push(take().await);
    // 23:30 UTC is still 2030 in UTC, and 2031 in Paris: the lane's zone
    // decides.
    clock.freeze("2030-12-31 23:30:00");
    taken.push(take().await);
    assert_eq!(
        taken,
        [
            ("2030".to_string(), 2),
            ("2030".to_string(), 5),
            ("2030".to_string(), 8),
            ("2031".to_string(), 2),
        ]
    );
    // The host's next take from that lane goes on after them.
    let (sequence, _) = Sequence::open(&database, counter_name("inv"), &OpenOptions::default())
        .await
        .unwrap();
    let mut after = Vec::new();
    for _ in 0..3 {
        after.extend(as_taken::<Pair>(&sequence.take(1, 0).await.unwrap()));
    }
    let mut all = taken;
    all.extend(after);
    assert_distinct(&all);
}
