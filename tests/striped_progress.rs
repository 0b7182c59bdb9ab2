//! A change of stripes sees itself through (issue 49, §3). One that is
//! slow but makes progress is not overtaken by its takers: each step of a
//! change, and a heartbeat, say so in the map (`striped.since`), and a
//! taker finishes a change only after it made no progress for
//! `RESUME_AFTER` (without it, on a loaded server where a change's writes
//! take seconds, takers finishing a change overtook one another and the
//! change's own command, none finishing: the soak's changes left half
//! way). And one that a dead deployment stopped half way is finished by its
//! own command once the deployment answers again, within its patience.
//! A change whose own writes answer slowly asks for more patience
//! (four times its slowest write), so that gaps of seconds between its
//! heartbeats are not taken for a stall either.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use mongodb::bson::{doc, Document};

use idmint::sequence::striping::hooks::{hold, Hold, Point};
use idmint::sequence::striping::Restriped;
use idmint::sequence::striping::{
    create_laid_out, create_striped, resume_change, set_layout_and_finish, set_stripes, Layout,
    StripeMap, FINISH_PATIENCE, RESUME_AFTER,
};
use idmint::sequence::{
    CounterKind, CounterName, CounterSpec, OpenOptions, Sequence, SequenceError,
};

use crate::support::sites::{connect, own_servers, DEADLINE};
use crate::support::takers::Takers;
use crate::support::wait::{within, PATIENCE};
use crate::support::{counter_name, database, database_name};

/// A striped autoinc counter `c` of 2 lanes in `test`'s database.
async fn striped_counter(test: &str) -> (mongodb::Database, CounterName) {
    let database = database(test).await;
    let name = counter_name("c");
    create_striped(
        &database,
        &name,
        &CounterSpec::of(CounterKind::Autoinc).prefixes(Vec::new()),
        2,
    )
    .await
    .unwrap();
    (database, name)
}

/// A striped autoinc counter `c` of 2 lanes in `test`'s database, opened,
/// with 2 takers that took 50 values from it.
async fn striped_with_takers(test: &str) -> (mongodb::Database, CounterName, Sequence, Takers) {
    let (database, name) = striped_counter(test).await;
    let (sequence, _) = Sequence::open(&database, name.clone(), &OpenOptions::default())
        .await
        .unwrap();
    let takers = Takers::start(&sequence, 2);
    takers.progress(50, "values before the change").await;
    (database, name, sequence, takers)
}

/// A change of counter `name` to 3 lanes, run on a task of its own.
fn spawn_set_stripes(
    database: &mongodb::Database,
    name: &CounterName,
) -> tokio::task::JoinHandle<Result<Restriped, SequenceError>> {
    let (database, name) = (database.clone(), name.clone());
    tokio::spawn(async move { set_stripes(&database, &name, 3).await })
}

/// A change of counter `name` (in database `db`) to 3 lanes, held half way
/// (after its seals), and its map as a process that finds it so reads it
/// then.
async fn half_way(
    database: &mongodb::Database,
    name: &CounterName,
    db: &str,
) -> (
    Hold,
    tokio::task::JoinHandle<Result<Restriped, SequenceError>>,
    StripeMap,
) {
    let held = hold(db, "c", Point::AfterSeals, 1);
    let change = spawn_set_stripes(database, name);
    held.arrived().await;
    let read = map_of(database, name).await;
    assert!(!read.live, "{}", read.describe());
    (held, change, read)
}

/// Finishing counter `name`'s change from `read` is refused as another
/// change's, and its map stays at `generation`.
async fn assert_finishing_claims_nothing(
    database: &mongodb::Database,
    name: &CounterName,
    read: &StripeMap,
    generation: u64,
) {
    let late = resume_change(database, None, name, read).await;
    let refused = late.map(|done| done.map.describe()).unwrap_err();
    assert!(refused.to_string().contains("another change"), "{refused}");
    assert_eq!(map_of(database, name).await.generation, generation);
}

/// `changed` (`what`, a change to 3 lanes made under `takers` of
/// `sequence`) succeeded: the takers took 50 more values, the map is live
/// at its generation, no take failed and no value was taken twice.
async fn assert_made_three_lanes_under(
    changed: Result<Restriped, SequenceError>,
    sequence: &Sequence,
    takers: Takers,
    what: &str,
) {
    takers.progress(50, "values after the change").await;
    let (values, _, errors) = takers.stop().await;
    let map = sequence.state().await.unwrap().striped.unwrap();
    let _ = sequence.close().await;
    let changed = changed.unwrap_or_else(|error| panic!("{what} failed: {error}"));
    assert_eq!(changed.map.modulus, 3, "{}", changed.map.describe());
    assert!(
        map.live && map.generation == changed.map.generation,
        "{}",
        map.describe()
    );
    assert!(errors.is_empty(), "takes failed: {errors:?}");
    let mut seen = HashSet::new();
    for value in values {
        assert!(seen.insert(value), "{value} taken twice");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_change_making_progress_is_not_overtaken_by_its_takers() {
    const TEST: &str = "striped_progress_slow";
    let (database, name, sequence, takers) = striped_with_takers(TEST).await;

    // The change held twice, each time for three fifths of RESUME_AFTER:
    // longer than RESUME_AFTER in all (its takers waiting on it all the
    // while), no step as long. The pauses are the slowness under test.
    let seals = hold(&database_name(TEST), "c", Point::AfterSeals, 1);
    let writes = hold(&database_name(TEST), "c", Point::BeforeLaneWrites, 1);
    let change = spawn_set_stripes(&database, &name);
    let step = RESUME_AFTER * 3 / 5;
    seals.arrived().await;
    tokio::time::sleep(step).await;
    seals.release().await;
    writes.arrived().await;
    tokio::time::sleep(step).await;
    writes.release().await;
    let changed = change.await.unwrap();
    assert_made_three_lanes_under(changed, &sequence, takers, "the slow change").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_whose_writes_answer_slowly_is_not_overtaken_by_its_takers() {
    const TEST: &str = "striped_progress_slow_writes";
    let (database, name, sequence, takers) = striped_with_takers(TEST).await;

    // The change parked with its lanes sealed, its takers waiting on it;
    // meanwhile only its heartbeats say it is at work, and they answer
    // slowly, as a loaded server's writes do: one in two fifths of
    // RESUME_AFTER (so the change asks for four times that), then one in
    // six fifths, which leaves longer than RESUME_AFTER between two of its
    // progress writes.
    let db = database_name(TEST);
    let seals = hold(&db, "c", Point::AfterSeals, 1);
    let change = spawn_set_stripes(&database, &name);
    seals.arrived().await;
    let slow = hold(&db, "c", Point::AfterHeartbeat, 1);
    slow.arrived().await;
    let slower = hold(&db, "c", Point::AfterHeartbeat, 1);
    tokio::time::sleep(RESUME_AFTER * 2 / 5).await;
    slow.release().await;
    slower.arrived().await;
    tokio::time::sleep(RESUME_AFTER * 6 / 5).await;
    slower.release().await;
    seals.release().await;
    let changed = change.await.unwrap();
    assert_made_three_lanes_under(changed, &sequence, takers, "the change with slow writes").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finishing_a_change_read_before_another_claimed_the_counter_claims_nothing() {
    const TEST: &str = "striped_progress_stale_finish";
    let (database, name) = striped_counter(TEST).await;
    let db = database_name(TEST);
    let map_now = || map_of(&database, &name);

    // A change half way, as a process reads it...
    let (first_held, first, read_early) = half_way(&database, &name, &db).await;
    // ... then another process finishes it meanwhile: a claim at work.
    let second_held = hold(&db, "c", Point::AfterSeals, 1);
    let second = {
        let (database, name, map) = (database.clone(), name.clone(), read_early.clone());
        tokio::spawn(async move { resume_change(&database, None, &name, &map).await })
    };
    second_held.arrived().await;
    let at_work = map_now().await;
    assert_eq!(at_work.generation, read_early.generation + 1);

    // Finishing from the early read claims nothing over it.
    assert_finishing_claims_nothing(&database, &name, &read_early, at_work.generation).await;

    // The change at work finishes; the first, overtaken by it, does not.
    second_held.release().await;
    let finished = second.await.unwrap().unwrap();
    first_held.release().await;
    assert!(first.await.unwrap().is_err());
    let map = map_now().await;
    assert!(
        map.live && map.generation == finished.map.generation && map.modulus == 3,
        "{}",
        map.describe()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finishing_a_change_read_before_it_finished_claims_nothing() {
    const TEST: &str = "striped_progress_finished_meanwhile";
    let (database, name) = striped_counter(TEST).await;
    let db = database_name(TEST);
    let map_now = || map_of(&database, &name);

    // A change half way, as a process that finds it so reads it...
    let (held, change, read_early) = half_way(&database, &name, &db).await;
    // ... then the change finishes before that process acts.
    held.release().await;
    let finished = change.await.unwrap().unwrap();
    assert!(finished.map.live);

    // Finishing from the early read must not change the stripes again
    // (stopping every taker of the counter for a change nobody asked for).
    assert_finishing_claims_nothing(&database, &name, &read_early, finished.map.generation).await;
    let map = map_now().await;
    assert!(
        map.live && map.generation == finished.map.generation,
        "{}",
        map.describe()
    );
}

/// A process that read a change half way and found it stalled must not
/// claim over it once it said it was at work since that read: on a loaded
/// server the finisher's own reads and claim take seconds, in which the
/// change it watched goes on (the soak's striped counter was claimed six
/// times in 70 s so, each claim seconds after the last one's progress).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finishing_a_change_read_before_it_went_on_claims_nothing() {
    const TEST: &str = "striped_progress_went_on";
    let (database, name) = striped_counter(TEST).await;
    let db = database_name(TEST);
    let map_now = || map_of(&database, &name);

    // A change half way, as a process that finds it stalled reads it...
    let (held, change, read_early) = half_way(&database, &name, &db).await;
    // ... then the change says it is at work (a heartbeat written after
    // that read), still of the same generation.
    let beat = hold(&db, "c", Point::AfterHeartbeat, 1);
    beat.arrived().await;
    beat.release().await;
    let at_work = map_now().await;
    assert_eq!(at_work.generation, read_early.generation);
    assert!(
        at_work.change.as_ref().unwrap().since_ms > read_early.change.as_ref().unwrap().since_ms,
        "{}",
        at_work.describe()
    );

    // Finishing from the early read claims nothing over it.
    assert_finishing_claims_nothing(&database, &name, &read_early, read_early.generation).await;

    // The change at work finishes.
    held.release().await;
    let finished = change.await.unwrap().unwrap();
    let map = map_now().await;
    assert!(
        map.live && map.generation == finished.map.generation && map.modulus == 3,
        "{}",
        map.describe()
    );
}

/// Counter `name`'s stripe map as a handle opened now reads it.
async fn map_of(database: &mongodb::Database, name: &CounterName) -> StripeMap {
    let (sequence, _) = Sequence::open(database, name.clone(), &OpenOptions::default())
        .await
        .unwrap();
    let map = sequence.state().await.unwrap().striped.unwrap();
    let _ = sequence.close().await;
    map
}

/// The home copy's `striped.since` (when the change that claimed it last
/// said it was at work), in milliseconds.
async fn since(database: &mongodb::Database, name: &str) -> Option<i64> {
    let counters = database.collection::<Document>("counters");
    let found = counters.find_one(doc! { "_id": name }).await.ok()??;
    let striped = found.get_document("striped").ok()?;
    striped
        .get_datetime("since")
        .ok()
        .map(|since| since.timestamp_millis())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_a_dead_deployment_stopped_is_finished_by_its_own_command() {
    const TEST: &str = "striped_progress_own_finish";
    let (mut owned, sites) = own_servers(TEST, 2);
    let deployments = connect(&sites, DEADLINE).await;
    let name = counter_name("c");
    let preferred = deployments.preferred().database.clone();
    let spec = CounterSpec::of(CounterKind::Autoinc).prefixes(Vec::new());
    let layout: Layout = "eu:1,us:1".parse().unwrap();
    create_laid_out(&preferred, Some(&deployments), &name, &spec, &layout)
        .await
        .unwrap();

    // The command's change held with its lanes sealed; `us` killed.
    let held = hold(&database_name(TEST), "c", Point::BeforeLaneWrites, 1);
    let command = {
        let (preferred, deployments, name) = (preferred.clone(), deployments.clone(), name.clone());
        tokio::spawn(async move {
            let wider: Layout = "eu:2,us:2".parse().unwrap();
            set_layout_and_finish(
                &preferred,
                Some(&deployments),
                &name,
                &wider,
                FINISH_PATIENCE,
            )
            .await
        })
    };
    held.arrived().await;
    owned[1].kill();
    // Its next seals (of a try to finish it) are held too: they can only
    // come once `us` answers again.
    let finishing = hold(&database_name(TEST), "c", Point::AfterSeals, 1);
    held.release().await;
    // It stopped half way: it no longer says it is at work.
    within(PATIENCE, "the change's heartbeat to stop", async {
        let mut last = (since(&preferred, "c").await, Instant::now());
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let now = since(&preferred, "c").await;
            if now != last.0 {
                last = (now, Instant::now());
            } else if last.1.elapsed() > Duration::from_secs(3) {
                return;
            }
        }
    })
    .await;
    assert!(
        !command.is_finished(),
        "the command gave up while us was down"
    );
    owned[1].restart();
    within(
        PATIENCE,
        "the command to finish its change",
        finishing.arrived(),
    )
    .await;
    finishing.release().await;
    let finished = command.await.unwrap();
    drop(owned);

    let finished = finished.unwrap_or_else(|error| panic!("the command failed: {error}"));
    assert!(finished.map.live, "{}", finished.map.describe());
    assert_eq!(finished.map.placement, ["eu", "eu", "us", "us"]);
}
