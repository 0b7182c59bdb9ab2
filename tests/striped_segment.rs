//! Striped segment counters (issue 34): a segment counter whose lanes are
//! autoinc lanes taken a whole segment at a time, each process handing out
//! the segment it took from memory. Taken from by many processes at once,
//! changed under load with takers holding segments and takes held in
//! flight.

use std::time::Duration;

use idmint::sequence::striping::hooks::{hold, Point};
use idmint::sequence::striping::{create_striped, set_stripes};
use idmint::sequence::{
    CounterKind, CounterName, CounterSpec, OpenOptions, SegmentOptions, Sequence,
};
use mongodb::bson::{doc, Document};
use mongodb::Database;

use crate::support::takers::{as_taken, assert_distinct, joined, spawn_takers};
use crate::support::wait::within;
use crate::support::{self, assert_exit, counter_name, database_name, printed_values, run_at_once};

/// The test's database with the segment counter `tickets` of step `step`
/// over `lanes` lanes, and two handles on it (two processes' buffers),
/// opened with `options`.
async fn tickets_opened(
    test: &str,
    step: u64,
    lanes: u64,
    options: &OpenOptions,
) -> (Database, CounterName, Sequence, Sequence) {
    let database = support::database(test).await;
    let name = counter_name("tickets");
    let spec = CounterSpec::of(CounterKind::Segment)
        .step(step)
        .prefixes(Vec::new());
    create_striped(&database, &name, &spec, lanes)
        .await
        .unwrap();
    let open = || async {
        Sequence::open(&database, name.clone(), options)
            .await
            .unwrap()
            .0
    };
    let (one, two) = (open().await, open().await);
    (database, name, one, two)
}

/// [`tickets_opened`] with handles whose every run is `step` values, taken
/// when the last one is used up (none in the background): each take held
/// at a hook is a taker's own.
async fn tickets(test: &str, step: u64, lanes: u64) -> (Database, CounterName, Sequence, Sequence) {
    let mut options = OpenOptions::default();
    options.segment = SegmentOptions::default().prefetch_at(1.0).max_step(step);
    tickets_opened(test, step, lanes, &options).await
}

/// `count` values taken from `handle` in one take.
async fn taken(handle: &Sequence, count: usize) -> Vec<u64> {
    as_taken(&handle.take(count, 0).await.unwrap())
}

/// The values the lanes of counter `tickets` handed out in all: the sum
/// of their local values.
async fn taken_from_lanes(database: &Database) -> u64 {
    use futures_util::TryStreamExt;
    let lanes: Vec<Document> = database
        .collection::<Document>("counters")
        .find(doc! { "kind": "lane", "_id": { "$regex": "^tickets#" } })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert!(!lanes.is_empty());
    lanes
        .iter()
        .map(|lane| lane.get_i64("seq").unwrap() as u64)
        .sum()
}

/// One taker of `count` on each handle.
fn both(one: &Sequence, two: &Sequence, count: usize) -> Vec<tokio::task::JoinHandle<Vec<u64>>> {
    let mut takers = spawn_takers(one, 1, count);
    takers.extend(spawn_takers(two, 1, count));
    takers
}

/// `counter create tickets --kind segment --step 50 --stripes 4`, then 8
/// processes of `seq tickets --count 300` at once: 2,400 values, all
/// distinct, each process's in runs of one lane (4 apart), 50 at least.
#[tokio::test]
async fn processes_take_distinct_segments_from_a_striped_segment_counter() {
    const TEST: &str = "striped_segment_processes";
    support::database(TEST).await;
    support::create(
        TEST,
        "tickets",
        &[
            "--kind",
            "segment",
            "--step",
            "50",
            "--stripes",
            "4",
            "--raw",
        ],
    );
    let mut all = Vec::new();
    for output in run_at_once(TEST, &["seq", "tickets", "--count", "300"], 8) {
        assert_exit(&output, 0);
        let values = printed_values(&output);
        assert_eq!(values.len(), 300);
        // A run is one segment: consecutive values of one lane.
        let runs = 1 + values
            .windows(2)
            .filter(|pair| pair[1] != pair[0] + 4)
            .count();
        assert!(
            runs <= 6,
            "{runs} runs for 300 values of segments of 50: {values:?}"
        );
        all.extend(values);
    }
    assert_distinct(&all);
}

/// Two handles, each holding a segment of a lane, while the stripes
/// change twice: with 4 takes held after the server applied them (the
/// seal counts their segments), and with 8 held before they are sent (the
/// sealed lanes refuse them). The values of segments taken before a seal
/// are still handed out after it, from memory, and are at most the new
/// base; every segment taken after it is above. No value twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_change_of_stripes_with_segments_held_never_hands_out_a_value_twice() {
    const TEST: &str = "striped_segment_restripe_held";
    let (database, name, one, two) = tickets(TEST, 10, 4).await;
    let mut all: Vec<u64> = Vec::new();
    // Each handle takes a segment of 10 and hands out 6 of it, in two
    // takes: the second from memory.
    for handle in [&one, &two] {
        all.extend(joined(spawn_takers::<u64>(handle, 2, 3)).await);
    }
    assert_distinct(&all);

    // 4 takes of new segments held after the server applied them.
    let applied = hold(&database_name(TEST), "tickets", Point::AfterTake, 2);
    let takers = both(&one, &two, 8);
    applied.arrived().await;
    let second = set_stripes(&database, &name, 2).await.unwrap();
    applied.release().await;
    let held: Vec<u64> = joined(takers).await;
    drop(applied);
    let base = second.map.base;
    assert!(
        held.iter().chain(&all).all(|value| *value <= base),
        "a value of a segment taken before the seal is above the new base {base}: {held:?}"
    );
    all.extend(&held);

    // What is left of each handle's segments comes from memory, below the
    // base; then new segments, above it.
    let mut after: Vec<u64> = Vec::new();
    for handle in [&one, &two] {
        after.extend(joined(spawn_takers::<u64>(handle, 2, 10)).await);
    }
    assert!(after.iter().any(|value| *value <= base), "{after:?}");
    assert!(after.iter().any(|value| *value > base), "{after:?}");
    all.extend(&after);

    // 8 takes held before they are sent, on the map of generation 2,
    // while it becomes 3 lanes.
    let unsent = hold(&database_name(TEST), "tickets", Point::BeforeTake, 2);
    let takers = both(&one, &two, 30);
    unsent.arrived().await;
    let third = set_stripes(&database, &name, 3).await.unwrap();
    unsent.release().await;
    let late: Vec<u64> = joined(takers).await;
    drop(unsent);
    assert!(
        after.iter().all(|value| *value <= third.map.base),
        "the new base {} is below a value handed out before it",
        third.map.base
    );
    all.extend(&late);
    assert_eq!(all.len(), 2 * 6 + 2 * 8 + 2 * 2 * 10 + 2 * 30);
    assert_distinct(&all);
}

/// A handle on a striped segment counter takes its next run in the
/// background once a tenth of its run is handed out, twice as large (the
/// adaptive step), and hands out from memory meanwhile: with that take
/// held before it is sent, the other 9 values of the first run are handed
/// out all the same, and the 11th comes from the run it took.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_striped_segment_handle_takes_its_next_run_in_the_background() {
    const TEST: &str = "striped_segment_prefetch";
    let (database, _name, one, _two) = tickets_opened(TEST, 10, 2, &OpenOptions::default()).await;
    let first = hold(&database_name(TEST), "tickets", Point::BeforeTake, 1);
    let taker = {
        let one = one.clone();
        tokio::spawn(async move { taken(&one, 1).await })
    };
    first.arrived().await;
    // The first take waits at the hook; the next take of the counter
    // that reaches it (the one taken ahead) waits at this one.
    let ahead = hold(&database_name(TEST), "tickets", Point::BeforeTake, 1);
    first.release().await;
    let mut values: Vec<u64> = taker.await.unwrap();
    within(
        Duration::from_secs(60),
        "the next run's take, in the background",
        ahead.arrived(),
    )
    .await;
    for _ in 0..9 {
        values.extend(taken(&one, 1).await);
    }
    assert_eq!(taken_from_lanes(&database).await, 10, "{values:?}");
    ahead.release().await;
    drop(ahead);
    values.extend(taken(&one, 1).await);
    // The run taken ahead: 20 values, from the other lane.
    assert_eq!(taken_from_lanes(&database).await, 30, "{values:?}");
    assert_eq!(values[10] % 2, (values[0] + 1) % 2, "{values:?}");
    assert_distinct(&values);
}

/// What a handle took and did not hand out goes back to its lanes when it
/// closes, while no take of a lane came since: the next handle then
/// starts right after the values handed out, with no gap. A lane another
/// handle took from since, or a change of stripes sealed, keeps its values
/// (a gap, never a value twice).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_a_striped_segment_handle_gives_back_what_it_did_not_hand_out() {
    const TEST: &str = "striped_segment_give_back";
    let (database, name, one, two) = tickets_opened(TEST, 10, 2, &OpenOptions::default()).await;
    // 11 values: the first run of 10 and one of the run of 20 taken ahead.
    let mut all = Vec::new();
    for _ in 0..11 {
        all.extend(taken(&one, 1).await);
    }
    assert_eq!(taken_from_lanes(&database).await, 30);
    let given = one.close().await.unwrap();
    assert_eq!(given.values, 19);
    assert_eq!(taken_from_lanes(&database).await, 11);
    assert!(
        one.take(1, 0).await.is_err(),
        "a closed handle handed out a value"
    );

    // Another handle takes on where the first stopped: the lanes held
    // exactly the values handed out, so it takes their next ones.
    for _ in 0..3 {
        all.extend(taken(&two, 1).await);
    }
    assert_distinct(&all);
    // Closed now: it waits for the run it may be taking in the background
    // (its runs are the default's), which would otherwise land in the lanes
    // while the handles below count them.
    let _ = two.close().await;

    // Handles whose runs are 10 values, taken when they are needed (none in
    // the background), so that which lane each takes from is certain: a
    // handle holding a run while another takes from both lanes after it
    // gives back nothing.
    let mut fixed = OpenOptions::default();
    fixed.segment = SegmentOptions::default().prefetch_at(1.0).max_step(10);
    let open = || Sequence::open(&database, name.clone(), &fixed);
    let (three, _) = open().await.unwrap();
    all.extend(taken(&three, 1).await);
    let (six, _) = open().await.unwrap();
    for _ in 0..20 {
        all.extend(taken(&six, 1).await);
    }
    let moved_on = taken_from_lanes(&database).await;
    let given = three.close().await.unwrap();
    assert_eq!(
        given.values, 0,
        "three gave back values another handle took after"
    );
    assert_eq!(taken_from_lanes(&database).await, moved_on);
    six.close().await.unwrap();

    // A change of stripes seals the lanes: a handle closed after it gives
    // back nothing, and nothing is handed out twice.
    // Closed while the change is half way (its lanes sealed, the new ones
    // not written) and after it (its lanes rewritten).
    let (four, _) = open().await.unwrap();
    let (seven, _) = open().await.unwrap();
    all.extend(taken(&four, 1).await);
    all.extend(taken(&seven, 1).await);
    let sealed = hold(&database_name(TEST), "tickets", Point::AfterSeals, 1);
    let change = {
        let (database, name) = (database.clone(), name.clone());
        tokio::spawn(async move { set_stripes(&database, &name, 3).await.unwrap() })
    };
    sealed.arrived().await;
    let given = seven.close().await.unwrap();
    assert_eq!(given.values, 0, "a sealed lane took values back");
    sealed.release().await;
    let changed = change.await.unwrap();
    let given = four.close().await.unwrap();
    assert_eq!(
        given.values, 0,
        "a lane of the next generation took values back"
    );
    let (five, _) = Sequence::open(&database, name.clone(), &OpenOptions::default())
        .await
        .unwrap();
    let after: Vec<u64> = taken(&five, 5).await;
    assert!(
        after.iter().all(|value| *value > changed.map.base),
        "{after:?}"
    );
    all.extend(after);
    assert_distinct(&all);
    let _ = five.close().await;
}

/// Eight tasks on one handle (its runs taken ahead in the background and
/// growing by the adaptive step), started together at a barrier, each
/// taking 300 values one at a time: the takes race each other without the
/// buffer's lock and race the lock holder going on to the next run. No
/// value twice, and on close the handle gives back exactly what it did not
/// hand out: the lanes then count the 2,400 values handed out, and the
/// next handle goes on from there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_sharing_a_handle_take_each_value_once_and_it_gives_back_the_rest() {
    const TEST: &str = "striped_segment_tasks";
    const TASKS: usize = 8;
    const TAKES: usize = 300;
    let (database, _name, one, two) = tickets_opened(TEST, 10, 2, &OpenOptions::default()).await;
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(TASKS));
    let takers: Vec<_> = (0..TASKS)
        .map(|_| {
            let (one, barrier) = (one.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                let mut values = Vec::with_capacity(TAKES);
                for _ in 0..TAKES {
                    values.extend(taken(&one, 1).await);
                }
                values
            })
        })
        .collect();
    let mut all = joined(takers).await;
    assert_eq!(all.len(), TASKS * TAKES);
    assert_distinct(&all);
    one.close().await.unwrap();
    assert_eq!(
        taken_from_lanes(&database).await,
        (TASKS * TAKES) as u64,
        "the lanes, after the give-back, do not count exactly the values handed out"
    );
    all.extend(taken(&two, 50).await);
    assert_distinct(&all);
    let _ = two.close().await;
}
