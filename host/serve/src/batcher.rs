//! [`Batcher`]: the policy calls of one minter, shared by the requests for
//! IDs that arrive together.
//!
//! A request for IDs takes its policy slot and its values as before, then
//! hands its stamps to its minter's batcher and waits for its lines. A
//! runner on the blocking pool takes every request waiting when it starts a
//! call (up to [`MAX_GROUP`] IDs), formats them all in **one** policy call,
//! and answers each request with its own lines; it then takes the requests
//! that queued meanwhile, and ends when none is left. Under load one call
//! (one fresh instance, one hop to the blocking pool) serves many requests;
//! a request that finds the batcher idle is formatted alone, at once.
//!
//! One runner per batcher, so that requests queue behind its call and share
//! the next: a runner per core halved the sharing and cost a third of the
//! gain (docs/BENCHMARKS.md). More runners start, up to one per core, only
//! while calls are slow (the last took over [`SLOW_CALL`]): then the time
//! goes to the policy's own work, which a shared call does not shrink, and
//! the cores share it out.
//!
//! A request gets what a call of its own would give it:
//!
//! - every request of a group has the same policy, counter and prefix (one
//!   batcher per prepared minter), and each stamp keeps the time and value
//!   its own request took;
//! - the contract makes each ID of `format-batch` what `format` gives for
//!   the same parts, whatever else the batch holds;
//! - each call still runs in a fresh instance under the policy's limits;
//! - if a call for several requests fails (a trap, a limit, a refusal,
//!   output that does not fit), each of them is formatted again alone, in
//!   parallel on the blocking pool: a call is a pure function of its input
//!   in a fresh instance, so a request that would have succeeded alone
//!   still does, and one that fails, fails with its own error.
//!
//! A request keeps its slot until its lines are formatted, so the slots
//! still bound the requests between taking values and being answered, and
//! a group's call never exceeds the runtime's limit of calls at once.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use idmint::parts::Stamp;
use idmint::ErrorClass;
use prometheus_client::metrics::counter::Counter;
use tokio::sync::oneshot;

use super::error::ApiError;
use super::slots::PolicySlot;

/// The most IDs one shared call formats: requests join a group while it
/// holds fewer (a request larger than this is formatted alone).
pub const MAX_GROUP: usize = 1024;

/// A call slower than this lets more runners start (see the module docs).
pub const SLOW_CALL: Duration = Duration::from_millis(1);

/// One policy call: the IDs of `stamps`, each followed by a line feed.
pub type Call = dyn Fn(&[Stamp]) -> Result<String, ApiError> + Send + Sync;

/// The shared calls of one minter (see the module docs).
pub struct Batcher {
    call: Box<Call>,
    meter: BatchMeter,
    /// The last call took more than [`SLOW_CALL`].
    slow: AtomicBool,
    queue: Mutex<Queue>,
    max_runners: usize,
}

/// How many calls the batchers made, and for how many requests (the
/// server's `/metrics`).
#[derive(Debug, Clone, Default)]
pub struct BatchMeter {
    /// Policy calls made.
    pub calls: Counter,
    /// Requests they formatted.
    pub requests: Counter,
}

impl BatchMeter {
    fn called(&self, requests: usize) {
        self.calls.inc();
        self.requests.inc_by(requests as u64);
    }
}

struct Queue {
    waiting: VecDeque<Job>,
    runners: usize,
}

/// A request waiting for its lines.
struct Job {
    stamps: Vec<Stamp>,
    slot: PolicySlot,
    reply: oneshot::Sender<Result<String, ApiError>>,
}

impl Job {
    /// Answers the request, freeing its slot first: the call is over.
    fn answer(self, result: Result<String, ApiError>) {
        drop(self.slot);
        // A request abandoned meanwhile (its client gone, its time limit)
        // no longer listens; its values are spent either way.
        let _ = self.reply.send(result);
    }
}

/// The cores this process may use, asked once: the answer reads the cgroup
/// files, a few hundred microseconds that a counter's first request would
/// otherwise pay for each new minter.
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// The failure of a batcher that stopped with requests waiting (the
/// runtime shutting down, or a runner that panicked).
#[derive(Debug, thiserror::Error)]
#[error("the policy call was abandoned: {0}")]
struct Abandoned(&'static str);

impl Batcher {
    /// A batcher making its policy calls with `call`, counted by `meter`:
    /// at most one at once, or one per core while calls are slow.
    pub fn new(call: Box<Call>, meter: BatchMeter) -> Self {
        Self::with_runners(call, cores(), meter)
    }

    /// A batcher making at most one call at once, or `max_runners` while
    /// calls are slow.
    pub fn with_runners(call: Box<Call>, max_runners: usize, meter: BatchMeter) -> Self {
        Self {
            call,
            meter,
            queue: Mutex::new(Queue {
                waiting: VecDeque::new(),
                runners: 0,
            }),
            slow: AtomicBool::new(false),
            max_runners: max_runners.max(1),
        }
    }

    /// The lines of `stamps` (one ID per stamp, each followed by a line
    /// feed), formatted in a call shared with the requests waiting beside
    /// this one. `slot` is held until they are formatted.
    pub async fn format(
        self: &Arc<Self>,
        slot: PolicySlot,
        stamps: Vec<Stamp>,
    ) -> Result<String, ApiError> {
        let (reply, answer) = oneshot::channel();
        let start_runner = {
            let mut queue = self.lock();
            queue.waiting.push_back(Job {
                stamps,
                slot,
                reply,
            });
            let start = queue.runners == 0
                || (self.slow.load(Ordering::Relaxed) && queue.runners < self.max_runners);
            if start {
                queue.runners += 1;
            }
            start
        };
        if start_runner {
            // The runner starts once this task has let the others ready on
            // its thread run (and the sockets be polled): requests that
            // arrived with this one join its group. It starts even if this
            // request is abandoned meanwhile.
            let start = StartRunner {
                runner: Some(Runner {
                    batcher: Arc::clone(self),
                    stopped: false,
                }),
                runtime: tokio::runtime::Handle::current(),
            };
            tokio::task::yield_now().await;
            drop(start);
        }
        answer.await.unwrap_or_else(|_| {
            Err(ApiError::library(
                ErrorClass::Policy,
                None,
                Abandoned("the batcher stopped"),
            ))
        })
    }

    /// The next group: the requests waiting, oldest first, while they hold
    /// at most [`MAX_GROUP`] IDs (always at least one request). `None` when
    /// nobody waits, and the runner asking has then stopped.
    fn next_group(&self) -> Option<Vec<Job>> {
        let mut queue = self.lock();
        if queue.waiting.is_empty() {
            queue.runners -= 1;
            return None;
        }
        let mut group = Vec::new();
        let mut ids = 0;
        while let Some(job) = queue.waiting.front() {
            if !group.is_empty() && ids + job.stamps.len() > MAX_GROUP {
                break;
            }
            ids += job.stamps.len();
            group.extend(queue.waiting.pop_front());
        }
        Some(group)
    }

    /// Formats `group` in one call and answers each request; if the call
    /// fails and the group holds several requests, each is formatted again
    /// alone (see the module docs).
    fn format_group(self: &Arc<Self>, mut group: Vec<Job>) {
        if group.len() == 1 {
            let job = group.pop().expect("a group of one");
            let result = self.timed_call(&job.stamps, 1);
            job.answer(result);
            return;
        }
        let stamps: Vec<Stamp> = group
            .iter()
            .flat_map(|job| job.stamps.iter().copied())
            .collect();
        match self.timed_call(&stamps, group.len()) {
            Ok(packed) => {
                let mut rest = packed.as_str();
                for job in group {
                    let (lines, after) = split_lines(rest, job.stamps.len());
                    rest = after;
                    job.answer(Ok(lines.to_string()));
                }
            }
            Err(_) => {
                for job in group {
                    let batcher = Arc::clone(self);
                    tokio::task::spawn_blocking(move || {
                        let result = batcher.timed_call(&job.stamps, 1);
                        job.answer(result);
                    });
                }
            }
        }
    }

    /// One call for `requests` requests, counted, and timed for the rule
    /// on runners.
    fn timed_call(&self, stamps: &[Stamp], requests: usize) -> Result<String, ApiError> {
        self.meter.called(requests);
        let started = Instant::now();
        let result = (self.call)(stamps);
        self.slow
            .store(started.elapsed() > SLOW_CALL, Ordering::Relaxed);
        result
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        // No update of the queue panics halfway: a poisoned one is valid.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The first `count` lines of `packed` (each ending with a line feed), and
/// what follows them. The policy runtime has checked that `packed` holds
/// exactly one line feed per stamp.
fn split_lines(packed: &str, count: usize) -> (&str, &str) {
    let end = match count.checked_sub(1) {
        None => 0,
        Some(last) => packed
            .match_indices('\n')
            .nth(last)
            .map_or(packed.len(), |(at, _)| at + 1),
    };
    packed.split_at(end)
}

/// A running call loop: formats groups until nobody waits. If it ends any
/// other way (a panic, or a runtime that never ran it), it gives its place
/// back and, if it was the last runner, fails the requests still waiting
/// rather than leave them waiting for a runner that will not come.
struct Runner {
    batcher: Arc<Batcher>,
    stopped: bool,
}

impl Runner {
    fn run(mut self) {
        while let Some(group) = self.batcher.next_group() {
            self.batcher.format_group(group);
        }
        // `next_group` has given the place back.
        self.stopped = true;
    }
}

/// A runner to start on `runtime`'s blocking pool when this is dropped
/// (wherever it is dropped: through the handle, not the thread's context).
/// A runtime shutting down drops the runner unstarted, and the runner's
/// own drop then fails the requests waiting.
struct StartRunner {
    runner: Option<Runner>,
    runtime: tokio::runtime::Handle,
}

impl Drop for StartRunner {
    fn drop(&mut self) {
        if let Some(runner) = self.runner.take() {
            self.runtime.spawn_blocking(move || runner.run());
        }
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        if self.stopped {
            return;
        }
        let stranded: Vec<Job> = {
            let mut queue = self.batcher.lock();
            queue.runners -= 1;
            if queue.runners == 0 {
                queue.waiting.drain(..).collect()
            } else {
                Vec::new()
            }
        };
        for job in stranded {
            job.answer(Err(ApiError::library(
                ErrorClass::Policy,
                None,
                Abandoned("the call that was to format it did not run"),
            )));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::{poll_fn, Future};
    use std::pin::Pin;
    use std::sync::mpsc;
    use std::task::Poll;
    use std::time::Duration;

    use super::*;
    use crate::slots::PolicySlots;

    fn stamps(sequences: &[u64]) -> Vec<Stamp> {
        sequences
            .iter()
            .map(|&sequence| Stamp {
                timestamp_micros: 0,
                sequence,
                snowflake: None,
                period: None,
            })
            .collect()
    }

    /// A call that writes `S<value>` per stamp, records how many stamps
    /// each call had, refuses any batch holding `poison`, and, for its
    /// first call only, waits for `release` after saying it started.
    fn recording_call(
        calls: Arc<Mutex<Vec<usize>>>,
        started: mpsc::Sender<()>,
        release: mpsc::Receiver<()>,
        poison: u64,
    ) -> Box<Call> {
        let first = Mutex::new(Some((started, release)));
        Box::new(move |stamps: &[Stamp]| {
            if let Some((started, release)) = first.lock().unwrap().take() {
                started.send(()).unwrap();
                release.recv().unwrap();
            }
            calls.lock().unwrap().push(stamps.len());
            if stamps.iter().any(|stamp| stamp.sequence == poison) {
                return Err(ApiError::BadRequest(format!("{poison} refused")));
            }
            Ok(stamps
                .iter()
                .map(|stamp| format!("S{}\n", stamp.sequence))
                .collect())
        })
    }

    /// Polls `future` once, so that a request is queued before the test
    /// goes on; it must still be waiting.
    async fn queued<F: Future + Unpin>(future: &mut F) {
        let poll = poll_fn(|cx| Poll::Ready(Pin::new(&mut *future).poll(cx).is_pending())).await;
        assert!(poll, "the request was answered before the busy call ended");
    }

    /// Runs the scenario of both tests: request A starts the only runner's
    /// call and holds it; B, C and D queue behind it (certainly: each is
    /// polled into the queue while A's call is held); then A's call ends.
    async fn held_then_queued(
        poison: u64,
    ) -> (Vec<Result<String, ApiError>>, Vec<usize>, BatchMeter) {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let meter = BatchMeter::default();
        let (started_tx, started) = mpsc::channel();
        let (release, release_rx) = mpsc::channel();
        let batcher = Arc::new(Batcher::with_runners(
            recording_call(calls.clone(), started_tx, release_rx, poison),
            1,
            meter.clone(),
        ));
        let slots = PolicySlots::new(8, Duration::from_secs(5));
        let a = tokio::spawn({
            let batcher = batcher.clone();
            let slot = slots.acquire().await.unwrap();
            async move { batcher.format(slot, stamps(&[1])).await }
        });
        tokio::task::spawn_blocking(move || started.recv().unwrap())
            .await
            .unwrap();
        let mut b = Box::pin(batcher.format(slots.acquire().await.unwrap(), stamps(&[2])));
        let mut c = Box::pin(batcher.format(slots.acquire().await.unwrap(), stamps(&[3, 4])));
        let mut d = Box::pin(batcher.format(slots.acquire().await.unwrap(), stamps(&[5, 6, 7])));
        queued(&mut b).await;
        queued(&mut c).await;
        queued(&mut d).await;
        assert_eq!(slots.in_use(), 4, "each waiting request holds its slot");
        release.send(()).unwrap();
        let results = vec![a.await.unwrap(), b.await, c.await, d.await];
        assert_eq!(slots.in_use(), 0, "every slot is given back");
        let calls = calls.lock().unwrap().clone();
        (results, calls, meter)
    }

    fn ok(result: &Result<String, ApiError>) -> &str {
        result.as_ref().expect("formatted")
    }

    #[tokio::test]
    async fn requests_that_queue_behind_a_call_share_the_next_one() {
        let (results, calls, meter) = held_then_queued(u64::MAX).await;
        assert_eq!(calls, [1, 6], "B, C and D were formatted in one call");
        assert_eq!((meter.calls.get(), meter.requests.get()), (2, 4));
        assert_eq!(ok(&results[0]), "S1\n");
        assert_eq!(ok(&results[1]), "S2\n");
        assert_eq!(ok(&results[2]), "S3\nS4\n");
        assert_eq!(ok(&results[3]), "S5\nS6\nS7\n");
    }

    #[tokio::test]
    async fn a_failed_shared_call_formats_each_request_alone() {
        let (results, mut calls, _) = held_then_queued(3).await;
        assert_eq!(&calls[..2], [1, 6], "the shared call was made, and failed");
        calls[2..].sort_unstable();
        assert_eq!(&calls[2..], [1, 2, 3], "then each request alone");
        assert_eq!(ok(&results[1]), "S2\n", "B does not fail for C");
        assert!(results[2]
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("3 refused"));
        assert_eq!(ok(&results[3]), "S5\nS6\nS7\n", "D does not fail for C");
    }

    #[tokio::test]
    async fn a_second_runner_starts_only_while_calls_are_slow() {
        let (started_tx, started) = mpsc::channel();
        let (release, release_rx) = mpsc::channel::<()>();
        let release_rx = Mutex::new(release_rx);
        let batcher = Arc::new(Batcher::with_runners(
            Box::new(move |stamps: &[Stamp]| {
                started_tx.send(stamps.len()).unwrap();
                release_rx.lock().unwrap().recv().unwrap();
                Ok("x\n".repeat(stamps.len()))
            }),
            2,
            BatchMeter::default(),
        ));
        let slots = PolicySlots::new(8, Duration::from_secs(5));
        let a = tokio::spawn({
            let batcher = batcher.clone();
            let slot = slots.acquire().await.unwrap();
            async move { batcher.format(slot, stamps(&[1])).await }
        });
        let started = tokio::task::spawn_blocking(move || {
            assert_eq!(started.recv().unwrap(), 1, "A's call");
            started
        })
        .await
        .unwrap();
        // Calls are fast: B queues behind A's call.
        let mut b = Box::pin(batcher.format(slots.acquire().await.unwrap(), stamps(&[2])));
        queued(&mut b).await;
        assert_eq!(batcher.lock().runners, 1);
        // The last call was slow: C starts a second runner, which takes B
        // and C while A's call still runs.
        batcher.slow.store(true, Ordering::Relaxed);
        let c = tokio::spawn({
            let batcher = batcher.clone();
            let slot = slots.acquire().await.unwrap();
            async move { batcher.format(slot, stamps(&[3])).await }
        });
        let second =
            tokio::task::spawn_blocking(move || started.recv_timeout(Duration::from_secs(60)))
                .await
                .unwrap();
        assert_eq!(second, Ok(2), "B and C in one call beside A's");
        assert_eq!(batcher.lock().runners, 2);
        release.send(()).unwrap();
        release.send(()).unwrap();
        for result in [a.await.unwrap(), b.await, c.await.unwrap()] {
            assert_eq!(ok(&result), "x\n");
        }
    }

    #[test]
    fn a_group_holds_at_most_max_group_ids() {
        let batcher = Batcher::with_runners(
            Box::new(|_: &[Stamp]| Ok(String::new())),
            1,
            BatchMeter::default(),
        );
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let slots = PolicySlots::new(3, Duration::from_secs(1));
        let mut queue = batcher.lock();
        queue.runners = 1;
        for size in [MAX_GROUP - 1, 1, 1] {
            let (reply, _answer) = oneshot::channel();
            let slot = runtime.block_on(slots.acquire()).unwrap();
            queue.waiting.push_back(Job {
                stamps: stamps(&vec![0; size]),
                slot,
                reply,
            });
        }
        drop(queue);
        let sizes = |group: Vec<Job>| group.iter().map(|job| job.stamps.len()).collect::<Vec<_>>();
        assert_eq!(sizes(batcher.next_group().unwrap()), [MAX_GROUP - 1, 1]);
        assert_eq!(sizes(batcher.next_group().unwrap()), [1]);
        assert!(batcher.next_group().is_none());
        assert_eq!(batcher.lock().runners, 0, "the runner gave its place back");
    }

    #[test]
    fn lines_are_split_by_count() {
        assert_eq!(split_lines("a\nb\nc\n", 2), ("a\nb\n", "c\n"));
        assert_eq!(split_lines("a\n", 1), ("a\n", ""));
        assert_eq!(split_lines("a\n", 0), ("", "a\n"));
    }
}
