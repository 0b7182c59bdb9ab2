//! Unique even when clocks lie: formatted IDs stay unique and increasing per
//! counter with a frozen client clock, a clock stepped back, and several
//! clients whose clocks disagree.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use idmint::sequence::{CounterName, CounterSpec, CyclicCounter, OpenedCounter};
use idmint::Stamp as Issued;
use idmint::{Clock, Minter, PolicyRuntime};

use crate::support;

/// 2026-11-22T03:14:57.123456Z
const T: u64 = 1_795_317_297_123_456;

/// A clock that reads whatever the test sets.
#[derive(Default)]
struct ManualClock(AtomicU64);

impl ManualClock {
    fn at(micros: u64) -> Arc<Self> {
        Arc::new(Self(AtomicU64::new(micros)))
    }
    fn set(&self, micros: u64) {
        self.0.store(micros, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_micros(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

async fn counter(test: &str, maxval: u64) -> CyclicCounter {
    let database = support::database(test).await;
    let counter = CyclicCounter::new(&database, CounterName::new("clock").unwrap());
    counter
        .create(
            &CounterSpec::default()
                .maxval(maxval)
                .prefix(Some("ORD-".into())),
        )
        .await
        .unwrap();
    counter
}

async fn minter(counter: CyclicCounter, clock: Arc<ManualClock>) -> Minter {
    let policy = PolicyRuntime::new().unwrap().load_default().unwrap();
    Minter::prepare(counter, policy, Some("ORD-".into()), clock)
        .await
        .unwrap()
}

fn assert_strictly_increasing(ids: &[String]) {
    for pair in ids.windows(2) {
        assert!(
            pair[0] < pair[1],
            "IDs must strictly increase: {} then {}",
            pair[0],
            pair[1]
        );
    }
}

/// The seed would repeat an ID after 100 calls with a frozen clock; idmint
/// moves the timestamp on by one microsecond at each wrap instead.
#[tokio::test]
async fn a_frozen_clock_still_gives_unique_increasing_ids() {
    let clock = ManualClock::at(T);
    let minter = minter(counter("frozen_clock", 99).await, clock.clone()).await;
    let ids = minter.next_ids(350).await.unwrap();
    assert_strictly_increasing(&ids);
    assert_eq!(ids[0], "ORD-2026112203145712345601");
    assert_eq!(ids[98], "ORD-2026112203145712345699");
    assert_eq!(
        ids[99], "ORD-2026112203145712345700",
        "the wrap moves time on by 1 µs"
    );
    assert_eq!(ids[349], "ORD-2026112203145712345950");
}

#[tokio::test]
async fn a_clock_stepped_back_never_takes_ids_back() {
    let clock = ManualClock::at(T);
    let minter = minter(counter("stepped_back_clock", 99).await, clock.clone()).await;
    let mut ids = minter.next_ids(30).await.unwrap();
    clock.set(T - 3_600_000_000); // an NTP step of one hour back
    ids.extend(minter.next_ids(200).await.unwrap());
    assert_strictly_increasing(&ids);
    assert!(
        ids.iter()
            .all(|id| id.as_str() >= "ORD-20261122031457123456"),
        "no ID went back in time"
    );
    clock.set(T + 10); // the clock comes forward again: IDs follow it
    let later = minter.next_ids(1).await.unwrap();
    assert!(
        later[0].starts_with("ORD-20261122031457123466"),
        "{later:?}"
    );
}

/// Four clients with frozen clocks that disagree by up to a minute share one
/// counter: every (timestamp, sequence) pair handed out is distinct.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_with_disagreeing_frozen_clocks_share_a_counter() {
    let counter = counter("disagreeing_clocks", 99).await;
    let barrier = Arc::new(tokio::sync::Barrier::new(4));
    let tasks: Vec<_> = [T, T - 60_000_000, T + 5, T - 1]
        .into_iter()
        .map(|reading| {
            let counter = counter.clone();
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                let mut issued: Vec<Issued> = Vec::new();
                for _ in 0..150 {
                    issued.push(counter.next(reading).await.unwrap());
                }
                issued
            })
        })
        .collect();
    assert_clients_increase_and_share_nothing(tasks).await;
}

/// Waits for each client's pairs: each client's must increase (across
/// blocks and wraps), and no pair may have been handed out twice, to two
/// clients or to one. Returns how many pairs there were.
async fn assert_clients_increase_and_share_nothing(
    clients: Vec<tokio::task::JoinHandle<Vec<Issued>>>,
) -> usize {
    let mut all = Vec::new();
    for client in clients {
        let issued = client.await.unwrap();
        assert!(
            issued.windows(2).all(|pair| pair[0] < pair[1]),
            "each client sees increasing pairs"
        );
        all.extend(issued);
    }
    let count = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(
        all.len(),
        count,
        "a (timestamp, sequence) pair was handed out twice"
    );
    count
}

/// Blocks: clients reserving blocks that wrap, with frozen clocks that
/// disagree and one stepped back between blocks, still get distinct pairs,
/// increasing within each client and within each block.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocks_stay_unique_with_frozen_and_stepped_back_clocks() {
    let counter = counter("block_clocks", 99).await;
    let barrier = Arc::new(tokio::sync::Barrier::new(4));
    let tasks: Vec<_> = [T, T - 60_000_000, T + 5, T - 1]
        .into_iter()
        .enumerate()
        .map(|(client, reading)| {
            let counter = counter.clone();
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                let mut issued: Vec<Issued> = Vec::new();
                for round in 0..8_u64 {
                    // Client 0's clock is stepped back an hour half-way.
                    let now = if client == 0 && round >= 4 {
                        reading - 3_600_000_000
                    } else {
                        reading
                    };
                    issued.extend(counter.take(137, now).await.unwrap());
                }
                issued
            })
        })
        .collect();
    let count = assert_clients_increase_and_share_nothing(tasks).await;
    assert_eq!(count, 4 * 8 * 137);
}
