//! Takers of a test: tasks that take from one opened counter until told to
//! stop, recording every value, the longest take and every failure.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use idmint::parts::Stamp;
use idmint::sequence::{OpenOptions, Sequence, SnowflakeOptions};

use super::wait::{within, PATIENCE};
use super::OwnedServer;

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
        let pairs = stamps
            .iter()
            .map(|stamp| (stamp.timestamp_micros, stamp.sequence))
            .collect();
        (pairs, slowest, errors)
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
