//! Takers of a test: tasks that take from one opened counter, each a block
//! ([`spawn_takers`]) or until told to stop ([`Takers`], recording every
//! value, the longest take and every failure), and what every value taken
//! must be ([`assert_distinct`], [`assert_each_lane_whole`]).

use std::collections::{BTreeMap, HashSet};
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use idmint::parts::Stamp;
use idmint::sequence::{OpenOptions, Sequence, SnowflakeOptions};

use super::wait::{within, PATIENCE};
use super::OwnedServer;

/// What a test keeps of a value taken: its value (`u64`), its (timestamp,
/// value) pair (`(u64, u64)`), or its (period, value) pair (`(String,
/// u64)`).
pub trait Taken: Clone + Eq + Hash + Debug + Send + 'static {
    fn of(stamp: &Stamp) -> Self;
}

impl Taken for u64 {
    fn of(stamp: &Stamp) -> Self {
        stamp.sequence
    }
}

impl Taken for (u64, u64) {
    fn of(stamp: &Stamp) -> Self {
        (stamp.timestamp_micros, stamp.sequence)
    }
}

impl Taken for (String, u64) {
    fn of(stamp: &Stamp) -> Self {
        let period = stamp.period.expect("a periodic value has its period");
        (period.to_string(), stamp.sequence)
    }
}

/// What a test keeps of each of `stamps`.
pub fn as_taken<T: Taken>(stamps: &[Stamp]) -> Vec<T> {
    stamps.iter().map(T::of).collect()
}

/// Spawns `takers` tasks, each taking a block of `count` values of
/// `sequence`.
pub fn spawn_takers<T: Taken>(
    sequence: &Sequence,
    takers: usize,
    count: usize,
) -> Vec<tokio::task::JoinHandle<Vec<T>>> {
    spawn_takers_at(sequence, takers, count, 0)
}

/// [`spawn_takers`] whose clock reads `client_micros`, frozen.
pub fn spawn_takers_at<T: Taken>(
    sequence: &Sequence,
    takers: usize,
    count: usize,
    client_micros: u64,
) -> Vec<tokio::task::JoinHandle<Vec<T>>> {
    (0..takers)
        .map(|_| {
            let sequence = sequence.clone();
            tokio::spawn(
                async move { as_taken(&sequence.take(count, client_micros).await.unwrap()) },
            )
        })
        .collect()
}

/// Every value the tasks of [`spawn_takers`] took, once they are done.
pub async fn joined<T>(takers: Vec<tokio::task::JoinHandle<Vec<T>>>) -> Vec<T> {
    let mut all = Vec::new();
    for taker in takers {
        all.extend(taker.await.unwrap());
    }
    all
}

/// Fails if any value (or pair) is there twice.
#[track_caller]
pub fn assert_distinct<T: Clone + Eq + Hash + Debug>(values: &[T]) {
    let mut seen = HashSet::new();
    for value in values {
        assert!(seen.insert(value.clone()), "{value:?} handed out twice");
    }
}

/// Every lane of `lanes` in `period` handed out its values with no gap and
/// none twice: each residue class of the values is the first values of
/// that class above `base` (0: from 1, as every lane is in a later period
/// than its base's, or with no base).
#[track_caller]
pub fn assert_each_lane_whole(pairs: &[(String, u64)], period: &str, base: u64, lanes: u64) {
    let mut by_lane: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for (_, value) in pairs.iter().filter(|(p, _)| p == period) {
        assert!(*value > base, "{value} in {period} is not above {base}");
        by_lane
            .entry((value - base - 1) % lanes)
            .or_default()
            .push(*value);
    }
    for (residue, mut values) in by_lane {
        values.sort_unstable();
        let expected: Vec<u64> = (0..values.len() as u64)
            .map(|k| base + residue + 1 + k * lanes)
            .collect();
        assert_eq!(values, expected, "lane {residue} in {period}");
    }
}

/// What a loaded machine may add to a deadline before the take returns.
pub const SLACK: Duration = Duration::from_millis(1500);

/// Takers running until told to stop, recording every value and the
/// longest take.
pub struct Takers {
    /// Each value taken, as its stamp.
    values: Arc<Mutex<Vec<Stamp>>>,
    stop: Arc<AtomicBool>,
    slowest: Arc<Mutex<Duration>>,
    errors: Arc<Mutex<Vec<String>>>,
    /// When the first and the latest failed take returned.
    failed: Arc<Mutex<Option<(Instant, Instant)>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Takers {
    pub fn start(sequence: &Sequence, takers: usize) -> Self {
        Self::start_at(sequence, takers, 0)
    }

    /// Takers whose clock reads `client_micros`, frozen.
    pub fn start_at(sequence: &Sequence, takers: usize, client_micros: u64) -> Self {
        let values = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let slowest = Arc::new(Mutex::new(Duration::ZERO));
        let errors = Arc::new(Mutex::new(Vec::new()));
        let failed = Arc::new(Mutex::new(None::<(Instant, Instant)>));
        let tasks = (0..takers)
            .map(|_| {
                let (sequence, values, stop, slowest, errors, failed) = (
                    sequence.clone(),
                    values.clone(),
                    stop.clone(),
                    slowest.clone(),
                    errors.clone(),
                    failed.clone(),
                );
                tokio::spawn(async move {
                    while !stop.load(Ordering::SeqCst) {
                        let start = Instant::now();
                        let taken = sequence.take(5, client_micros).await;
                        let took = start.elapsed();
                        let mut slowest = slowest.lock().unwrap();
                        *slowest = (*slowest).max(took);
                        drop(slowest);
                        match taken {
                            Ok(stamps) => values.lock().unwrap().extend(stamps),
                            Err(error) => {
                                errors.lock().unwrap().push(error.to_string());
                                let now = Instant::now();
                                let mut failed = failed.lock().unwrap();
                                let first = failed.map_or(now, |(first, _)| first);
                                *failed = Some((first, now));
                            }
                        }
                    }
                })
            })
            .collect();
        Self {
            values,
            stop,
            slowest,
            errors,
            failed,
            tasks,
        }
    }

    /// How long takes have been failing: from the first failed take to the
    /// latest (zero if none failed).
    pub fn failing_for(&self) -> Duration {
        self.failed
            .lock()
            .unwrap()
            .map_or(Duration::ZERO, |(first, latest)| latest - first)
    }

    pub fn count(&self) -> usize {
        self.values.lock().unwrap().len()
    }

    pub fn since(&self, from: usize) -> Vec<u64> {
        self.values.lock().unwrap()[from..]
            .iter()
            .map(|stamp| stamp.sequence)
            .collect()
    }

    /// Fails at once, naming them, if takes failed: no take may fail, so
    /// a test waiting on more values would only wait out its patience.
    #[track_caller]
    pub fn assert_no_error(&self) {
        let errors = self.errors.lock().unwrap().clone();
        assert!(errors.is_empty(), "takes failed: {errors:?}");
    }

    /// Waits until `more` values more than now have been taken.
    pub async fn progress(&self, more: usize, what: &str) {
        self.progress_checking(more, what, true).await;
    }

    /// [`Takers::progress`] after takes failed on purpose (a change of
    /// stripes stopped half way): failures are not checked.
    pub async fn progress_after_failures(&self, more: usize, what: &str) {
        self.progress_checking(more, what, false).await;
    }

    async fn progress_checking(&self, more: usize, what: &str, check: bool) {
        let target = self.count() + more;
        within(PATIENCE, what, async {
            while self.count() < target {
                if check {
                    self.assert_no_error();
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
    }

    /// Waits until a value taken from now on satisfies `wanted`.
    pub async fn until_one(&self, what: &str, wanted: impl Fn(u64) -> bool) {
        let from = self.count();
        within(PATIENCE, what, async {
            while !self.since(from).into_iter().any(&wanted) {
                self.assert_no_error();
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
    }

    /// Restarts `server` on its data and waits until a value of its lanes
    /// (`its`) is taken again.
    pub async fn back_after_restart(&self, server: &mut OwnedServer, its: impl Fn(u64) -> bool) {
        server.restart();
        self.until_one("a value of the restarted deployment's lanes", its)
            .await;
    }

    /// Stops them; every value they took.
    pub async fn stop(self) -> (Vec<u64>, Duration, Vec<String>) {
        let (pairs, slowest, errors) = self.stop_pairs().await;
        let values = pairs.into_iter().map(|(_, value)| value).collect();
        (values, slowest, errors)
    }

    /// Stops them; every (timestamp, value) pair they took.
    pub async fn stop_pairs(self) -> (Vec<(u64, u64)>, Duration, Vec<String>) {
        let (stamps, slowest, errors) = self.stop_stamps().await;
        (as_taken(&stamps), slowest, errors)
    }

    /// Stops them; every value they took, as its stamp.
    pub async fn stop_stamps(self) -> (Vec<Stamp>, Duration, Vec<String>) {
        self.stop.store(true, Ordering::SeqCst);
        for task in self.tasks {
            task.await.unwrap();
        }
        let values = self.values.lock().unwrap().clone();
        let slowest = *self.slowest.lock().unwrap();
        let errors = self.errors.lock().unwrap().clone();
        (values, slowest, errors)
    }
}

/// Snowflake options whose leases live `ttl`.
pub fn leases_of(ttl: Duration) -> OpenOptions {
    let mut options = OpenOptions::default();
    options.snowflake = SnowflakeOptions::default().lease_ttl(ttl);
    options
}
