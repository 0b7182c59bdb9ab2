//! Striped segment counters (issue 34): a segment counter whose lanes are
//! autoinc lanes taken a whole segment at a time, each process handing out
//! the segment it took from memory. Taken from by many processes at once,
//! changed under load with takers holding segments and takes held in
//! flight.

use idmint::sequence::striping::hooks::{hold, Point};
use idmint::sequence::striping::{create_striped, set_stripes};
use idmint::sequence::{CounterKind, CounterName, CounterSpec, OpenOptions, Sequence};
use mongodb::Database;

use crate::support::takers::{assert_distinct, joined, spawn_takers};
use crate::support::{self, assert_exit, counter_name, database_name, printed_values, run_at_once};

/// The test's database with the segment counter `tickets` of step `step`
/// over `lanes` lanes, and two handles on it (two processes' buffers).
async fn tickets(test: &str, step: u64, lanes: u64) -> (Database, CounterName, Sequence, Sequence) {
    let database = support::database(test).await;
    let name = counter_name("tickets");
    let spec = CounterSpec::of(CounterKind::Segment)
        .step(step)
        .prefixes(Vec::new());
    create_striped(&database, &name, &spec, lanes)
        .await
        .unwrap();
    let open = || async {
        Sequence::open(&database, name.clone(), &OpenOptions::default())
            .await
            .unwrap()
            .0
    };
    let (one, two) = (open().await, open().await);
    (database, name, one, two)
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
