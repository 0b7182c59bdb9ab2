//! The allocator: a process takes a whole range of values, a *segment*, with
//! one atomic update of the counter document, and hands the values out from
//! memory.
//!
//! - **Double buffer.** Once a share of the current segment is used
//!   ([`SegmentOptions::prefetch_at`], Leaf's 10%), the next one is fetched
//!   in the background, so that a taker almost never waits on the database.
//!   When both are used up before the fetch lands, takers wait for it (or
//!   make it): never an error like Leaf's "both segments not ready".
//! - **Adaptive step** ([`step`]): each request asks for a segment sized so
//!   that it lasts about [`SegmentOptions::target_lifetime`], between the
//!   document's `step` and [`SegmentOptions::max_step`].
//! - **Many takers** (tasks or threads) share one [`SegmentCounter`]:
//!   values are unique across processes and increasing within one.
//! - **Consumed when fetched.** The update is durable (majority, journal)
//!   before a value of the segment is handed out, so a process killed with
//!   `-9` loses the rest of its segments but never causes a value to be
//!   issued twice.
//! - **Clean shutdown gives back** ([`SegmentCounter::close`]) the unused
//!   tail of the last segment, if no process took a segment since: one
//!   conditional update on `max`. Restarts then waste nothing (Leaf wastes
//!   the rest of both buffers, its issues #15 and #78).
//! - **A bounded run takes no more than it can use**
//!   ([`SegmentOptions::wants`]): a process that will take N values in all
//!   (`idmint seq --count N`) prefetches nothing it cannot use and asks for
//!   no more than it still wants, so short runs side by side lose at most the
//!   tail of one segment each, where the 10% prefetch made each lose two.
//! - **Runs not handed out are given back** ([`SegmentCounter::give_back`])
//!   while no later value has been taken, so a ranges request that fails
//!   halfway (a later fetch fails) loses nothing.
//! - **Deadlines.** A fetch that waits longer than
//!   [`SegmentOptions::fetch_timeout`] (a primary that cannot reach a
//!   majority) fails with [`SequenceError::Stalled`] rather than holding
//!   every taker; how long a fetch has been waiting is in
//!   [`BufferStats::fetch_waiting_ms`], for a readiness check.
//! - **No lock per value.** A value of the current segment is taken with
//!   one compare-and-swap ([`Cursor`]); the lock is taken only to change
//!   segments, to start a fetch, to wait, to give back and to close.

use std::ops::DerefMut;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mongodb::Database;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::buffers::{fill, move_out, unused_tail, Buffer, Cursor, State};
use super::counter::{SegmentStore, Taken};
use super::step;
use crate::mongo::collections::COUNTERS as COUNTERS_COLLECTION;
use crate::mongo::durable_write_concern;
use crate::sequence::counter::fields::database_of;
use crate::sequence::error::SequenceError;
use crate::sequence::frozen::Frozen;
use crate::sequence::kind_trait::{BufferStats, GiveBack, Segments};
use crate::sequence::name::CounterName;

/// How a process uses its segments.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SegmentOptions {
    /// The share of the current segment used (0.0 to 1.0) at which the next
    /// one is fetched in the background. Default: 0.1, Leaf's.
    pub prefetch_at: f64,
    /// How long a segment should last; the step adapts towards it.
    /// Default: 15 minutes, Leaf's.
    pub target_lifetime: Duration,
    /// The largest step this process asks for. Default: 1,000,000 (Leaf's).
    /// The counter document's `step` is the smallest.
    pub max_step: u64,
    /// The most values this process will take in all, when it knows (a
    /// bounded run: `idmint seq --count N`, `idmint next --count N`): it then
    /// prefetches no segment it cannot use and asks for no more than it
    /// still wants beyond its buffers (at least the document's `step`, which
    /// the counter enforces). Default: `None`, a process that runs until
    /// stopped.
    pub wants: Option<u64>,
    /// How long a segment fetch (a durable write: a majority must
    /// acknowledge it) may wait for the database before it fails with
    /// [`SequenceError::Stalled`]. A write that lands after that consumed its
    /// values all the same: they are a gap, never issued twice. Default: 10 s.
    pub fetch_timeout: Duration,
}

impl Default for SegmentOptions {
    fn default() -> Self {
        Self {
            prefetch_at: 0.1,
            target_lifetime: Duration::from_secs(15 * 60),
            max_step: 1_000_000,
            wants: None,
            fetch_timeout: Duration::from_secs(10),
        }
    }
}

impl SegmentOptions {
    /// Sets [`SegmentOptions::prefetch_at`] (clamped to 0.0..=1.0).
    pub fn prefetch_at(mut self, share: f64) -> Self {
        self.prefetch_at = if share.is_nan() {
            0.1
        } else {
            share.clamp(0.0, 1.0)
        };
        self
    }

    /// Sets [`SegmentOptions::target_lifetime`].
    pub fn target_lifetime(mut self, lifetime: Duration) -> Self {
        self.target_lifetime = lifetime;
        self
    }

    /// Sets [`SegmentOptions::max_step`].
    pub fn max_step(mut self, max_step: u64) -> Self {
        self.max_step = max_step;
        self
    }

    /// Sets [`SegmentOptions::wants`].
    pub fn wants(mut self, values: Option<u64>) -> Self {
        self.wants = values;
        self
    }

    /// Sets [`SegmentOptions::fetch_timeout`].
    pub fn fetch_timeout(mut self, timeout: Duration) -> Self {
        self.fetch_timeout = timeout;
        self
    }
}

struct Inner {
    counter: SegmentStore,
    options: SegmentOptions,
    state: Mutex<State>,
    /// The current segment's position, which takes move without the lock.
    cursor: Cursor,
    /// Woken whenever a fetch ends (well or not).
    fetched: Notify,
}

/// Hands out the values of a segment counter from memory, many takers at
/// once (see the module docs). Cheap to clone: clones share the buffers.
#[derive(Clone)]
pub struct SegmentCounter {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SegmentCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentAllocator")
            .field("counter", &self.inner.counter.name)
            .field("stats", &self.stats())
            .finish()
    }
}

impl SegmentCounter {
    /// An allocator on segment counter `name` in `database`. Nothing is
    /// fetched until the first value is asked for.
    pub fn new(database: &Database, name: CounterName, options: SegmentOptions) -> Self {
        Self {
            inner: Arc::new(Inner {
                counter: SegmentStore {
                    collection: database.collection(COUNTERS_COLLECTION),
                    name,
                    write_concern: durable_write_concern(),
                },
                options,
                state: Mutex::new(State::default()),
                cursor: Cursor::default(),
                fetched: Notify::new(),
            }),
        }
    }

    /// The counter's name.
    pub fn name(&self) -> &CounterName {
        &self.inner.counter.name
    }

    /// The database the counter is in.
    pub(super) fn database(&self) -> Database {
        database_of(&self.inner.counter.collection)
    }

    /// What the allocator has done so far.
    pub fn stats(&self) -> BufferStats {
        let state = self.inner.lock();
        let fetched = state.current.end > state.current.start || state.following.is_some();
        BufferStats {
            fetch_waiting_ms: state
                .fetch_started
                .map(|started| started.elapsed().as_millis() as u64),
            segments: fetched.then(|| Segments {
                current: [state.current.start, state.current.end],
                position: state.current.next,
                following: state.following.map(|b| [b.start, b.end]),
            }),
            ..state.stats
        }
    }

    /// The next value: from memory, unless both buffers are used up.
    pub async fn next_value(&self) -> Result<u64, SequenceError> {
        if let Some(run) = self.inner.take_current(1, 1) {
            return Ok(run.start);
        }
        let mut values = Vec::with_capacity(1);
        self.take_into(1, &mut values).await?;
        Ok(values[0])
    }

    /// `count` values from the buffers, if they hold that many now: no
    /// await, and no lock when the current segment holds them (the lock
    /// only to go on to the following one), each run of consecutive values
    /// passed to `push` in order. Returns whether it took them; when it did
    /// not (too few buffered, or closed), nothing was taken, and
    /// [`SegmentCounter::take`] waits for a fetch or fails.
    pub fn take_held(&self, count: usize, mut push: impl FnMut(Range<u64>)) -> bool {
        let wanted = count as u64;
        if let Some(run) = self.inner.take_current(wanted, wanted) {
            push(run);
            return true;
        }
        let mut state = self.inner.lock();
        if state.closed || state.buffered() < count as u64 {
            return false;
        }
        move_out(&mut state, count as u64, push);
        self.inner.prefetch_if_due(&mut state);
        true
    }

    /// A handle for one task that takes values from this allocator `batch`
    /// at a time and hands them out with no synchronisation at all: the
    /// fastest path when many tasks take at once. Each taker's values
    /// increase; across takers of one process they are unique but
    /// interleaved. Values left in a taker when it is dropped are not given
    /// back (they are gaps).
    pub fn taker(&self, batch: usize) -> SegmentTaker {
        SegmentTaker {
            allocator: self.clone(),
            local: 0..0,
            batch: batch.max(1) as u64,
        }
    }

    /// The next run of at most `max` consecutive values (from one segment).
    async fn take_run(&self, max: u64) -> Result<Range<u64>, SequenceError> {
        if let Some(run) = self.inner.take_current(1, max) {
            return Ok(run);
        }
        {
            let mut state = self.inner.lock();
            if !state.closed {
                if state.current.is_empty() {
                    if let Some(following) = state.following.take() {
                        state.current = following;
                    }
                }
                let current = &mut state.current;
                if !current.is_empty() {
                    let run = current.next..current.end.min(current.next + max);
                    current.next = run.end;
                    state.stats.values += run.end - run.start;
                    self.inner.prefetch_if_due(&mut state);
                    return Ok(run);
                }
            }
        }
        // Both buffers used up (or closed): the ordinary path waits or fails.
        let first = self.next_value().await?;
        Ok(first..first + 1)
    }

    /// The next `count` values as runs of consecutive values, in increasing
    /// order: one run per segment touched, so a large request costs a few
    /// ranges, not a value each (Tinyid's client-side segments).
    ///
    /// If a fetch fails halfway, the runs already taken are given back
    /// ([`SegmentCounter::give_back`]) before the error is returned.
    pub async fn take_ranges(&self, count: u64) -> Result<Vec<Range<u64>>, SequenceError> {
        let mut ranges: Vec<Range<u64>> = Vec::new();
        let mut left = count;
        while left > 0 {
            let run = match self.take_run(left).await {
                Ok(run) => run,
                Err(error) => {
                    self.give_back(&ranges);
                    return Err(error);
                }
            };
            left -= run.end - run.start;
            match ranges.last_mut() {
                Some(last) if last.end == run.start => last.end = run.end,
                _ => ranges.push(run),
            }
        }
        Ok(ranges)
    }

    /// The next `count` values, in increasing order (a request may span two
    /// segments, so they need not be consecutive).
    pub async fn take(&self, count: usize) -> Result<Vec<u64>, SequenceError> {
        let mut values = Vec::with_capacity(count);
        self.take_into(count, &mut values).await?;
        Ok(values)
    }

    async fn take_into(&self, count: usize, values: &mut Vec<u64>) -> Result<(), SequenceError> {
        loop {
            let waiting = {
                let mut state = self.inner.lock();
                if state.closed {
                    return Err(SequenceError::Closed(self.name().clone()));
                }
                fill(&mut state, count, values);
                if values.len() == count {
                    self.inner.prefetch_if_due(&mut state);
                    return Ok(());
                }
                // Short of values: no background prefetch now. One would
                // make this taker wait on it, and when it failed, start the
                // next, for ever (a database down held every taker). The
                // taker's own fetch below returns its failure.
                state.stats.waits += 1;
                if state.fetching {
                    // Registered before the lock is released, so the end of
                    // the fetch in flight cannot be missed.
                    let notified = self.inner.fetched.notified();
                    Some(notified)
                } else {
                    state.fetching = true;
                    None
                }
            };
            match waiting {
                Some(notified) => notified.await,
                None => {
                    let fetch = {
                        let mut state = self.inner.lock();
                        self.inner.spawn_fetch(&mut state, false)
                    };
                    join(fetch, self.name()).await?;
                }
            }
        }
    }

    /// Gives back `runs` (taken from this allocator, in increasing order)
    /// that were not handed out, last first, while each one ends where the
    /// current segment's next value is: no later value has been taken, so
    /// handing them out again keeps values unique and increasing. Returns
    /// how many values were given back; the others are gaps. Nothing is
    /// given back once the allocator is closed.
    pub fn give_back(&self, runs: &[Range<u64>]) -> u64 {
        let mut state = self.inner.lock();
        if state.closed {
            return 0;
        }
        let mut given = 0;
        for run in runs.iter().rev() {
            let current = &mut state.current;
            if run.start >= run.end || run.end != current.next {
                break;
            }
            // A run that began in an earlier segment (runs are merged across
            // segments) gives back its part in the current one; the rest
            // is a gap, as is every run before it.
            let start = run.start.max(current.start);
            current.next = start;
            given += run.end - start;
            if start != run.start {
                break;
            }
        }
        state.stats.values = state.stats.values.saturating_sub(given);
        given
    }

    /// Waits until no fetch is in flight.
    pub async fn settled(&self) {
        loop {
            let notified = {
                let state = self.inner.lock();
                if !state.fetching {
                    return;
                }
                self.inner.fetched.notified()
            };
            notified.await;
        }
    }

    /// Stops handing out values and gives the unused tail of the last
    /// segment back to the counter, if no other process took a segment
    /// since (see the module docs). Waits for a fetch in flight first.
    /// Takers fail with [`SequenceError::Closed`] from then on.
    pub async fn close(&self) -> Result<GiveBack, SequenceError> {
        let tail = loop {
            let notified = {
                let mut state = self.inner.lock();
                if !state.fetching {
                    if state.closed {
                        return Ok(GiveBack::default());
                    }
                    state.closed = true;
                    break unused_tail(&state);
                }
                self.inner.fetched.notified()
            };
            notified.await;
        };
        let Some(tail) = tail else {
            return Ok(GiveBack::default());
        };
        let deadline = self.inner.options.fetch_timeout;
        let given =
            tokio::time::timeout(deadline, self.inner.counter.give_back(tail.start, tail.end))
                .await
                .map_err(|_| SequenceError::Stalled {
                    name: self.name().clone(),
                    action: "give-back",
                    waited_ms: deadline.as_millis() as u64,
                })??;
        Ok(if given {
            GiveBack {
                values: tail.end - tail.start,
                max: Some(tail.start),
            }
        } else {
            GiveBack::default()
        })
    }
}

/// One task's handle on a [`SegmentCounter`] (see
/// [`SegmentCounter::taker`]).
#[derive(Debug)]
pub struct SegmentTaker {
    allocator: SegmentCounter,
    local: Range<u64>,
    batch: u64,
}

impl SegmentTaker {
    /// The next value: from this taker's batch, refilled from the shared
    /// buffers when it runs out.
    pub async fn next_value(&mut self) -> Result<u64, SequenceError> {
        if let Some(value) = self.local.next() {
            return Ok(value);
        }
        self.local = self.allocator.take_run(self.batch).await?;
        Ok(self.local.next().expect("a run holds at least one value"))
    }
}

impl Inner {
    /// The state under the allocator's lock, with the [`Cursor`] frozen:
    /// the current segment's next value is exact, and takers wait on the
    /// lock. Letting it go publishes the state to takers again.
    fn lock(self: &Arc<Self>) -> impl DerefMut<Target = State> + '_ {
        // A panic while holding the lock leaves plain numbers behind, never
        // a value handed out twice: keep going.
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        self.cursor.freeze(&mut state);
        Frozen::new(state, |state: &mut State| {
            let check_at = self.prefetch_check_at(state);
            self.cursor.publish(state, check_at);
        })
    }

    /// At least `least` and at most `most` values of the current segment,
    /// without the lock, if it holds them; starts the following segment's
    /// fetch if the take made it due.
    fn take_current(self: &Arc<Self>, least: u64, most: u64) -> Option<Range<u64>> {
        let (run, check) = self.cursor.take(least, most)?;
        if check {
            let mut state = self.lock();
            self.prefetch_if_due(&mut state);
        }
        Some(run)
    }

    /// Where a take must look whether the following segment is due (see
    /// [`Inner::prefetch_if_due`]): the current segment's prefetch point
    /// while nothing is buffered or in flight and the process wants more,
    /// else nowhere. What a bounded run still wants beyond its buffers does
    /// not change while takers use the current segment: each value taken
    /// is one more handed out and one fewer buffered.
    fn prefetch_check_at(&self, state: &State) -> u64 {
        let can_be_due = !state.fetching
            && !state.closed
            && state.following.is_none()
            && state.current.end > state.current.start
            && self.wanted_beyond_buffers(state) != Some(0);
        if can_be_due {
            state.current.prefetch_from
        } else {
            u64::MAX
        }
    }

    /// How many values this process still wants beyond its buffers, when
    /// it said how many it wants in all ([`SegmentOptions::wants`]).
    fn wanted_beyond_buffers(&self, state: &State) -> Option<u64> {
        self.options.wants.map(|wants| {
            wants
                .saturating_sub(state.stats.values)
                .saturating_sub(state.buffered())
        })
    }

    /// Starts the background fetch once the current segment is used up to
    /// its prefetch point and nothing is buffered or in flight, unless the
    /// process will not want what it would fetch.
    fn prefetch_if_due(self: &Arc<Self>, state: &mut State) {
        if !state.fetching
            && !state.closed
            && state.following.is_none()
            && state.current.end > state.current.start
            && state.current.next >= state.current.prefetch_from
            && self.wanted_beyond_buffers(state) != Some(0)
        {
            state.fetching = true;
            // A failure is counted; the next taker short of values retries.
            drop(self.spawn_fetch(state, true));
        }
    }

    /// Fetches a segment in a task of its own, so that a caller that stops
    /// waiting (a cancelled request) cannot leave the fetch half done;
    /// `state.fetching` must already be set. The fetch fails with
    /// [`SequenceError::Stalled`] after [`SegmentOptions::fetch_timeout`].
    fn spawn_fetch(
        self: &Arc<Self>,
        state: &mut State,
        background: bool,
    ) -> JoinHandle<Result<(), SequenceError>> {
        let inner = Arc::clone(self);
        // A bounded run asks for what it still wants (the counter's own
        // step is the floor, enforced by the update), not for more.
        let step = match self.wanted_beyond_buffers(state) {
            Some(wanted) => {
                let wanted = wanted.clamp(1, self.options.max_step.max(1));
                if state.step == 0 {
                    wanted
                } else {
                    state.step.min(wanted)
                }
            }
            None => state.step,
        };
        state.fetch_started = Some(Instant::now());
        tokio::spawn(async move {
            let deadline = inner.options.fetch_timeout;
            let taken = match tokio::time::timeout(deadline, inner.counter.take(step)).await {
                Ok(taken) => taken,
                // The write may still land: its values are then a gap.
                Err(_) => Err(SequenceError::Stalled {
                    name: inner.counter.name.clone(),
                    action: "segment fetch",
                    waited_ms: deadline.as_millis() as u64,
                }),
            };
            inner.install(taken, background)
        })
    }

    /// Buffers a fetched segment, adapts the step, ends the fetch and wakes
    /// whoever waits for it.
    fn install(
        self: &Arc<Self>,
        taken: Result<Taken, SequenceError>,
        background: bool,
    ) -> Result<(), SequenceError> {
        let result = {
            let mut state = self.lock();
            state.fetching = false;
            state.fetch_started = None;
            match taken {
                Ok(Taken { values, floor }) => {
                    let now = Instant::now();
                    let requested = state.step.max(floor);
                    state.step = match state.last_fetch {
                        Some(last) => step::next_step(
                            requested,
                            now.duration_since(last),
                            self.options.target_lifetime,
                            floor,
                            self.options.max_step,
                        ),
                        None => requested,
                    };
                    state.last_fetch = Some(now);
                    state.stats.fetches += 1;
                    state.stats.background_fetches += u64::from(background);
                    state.stats.step = state.step;
                    let buffer = Buffer::new(values, self.options.prefetch_at);
                    if state.current.is_empty() && state.following.is_none() {
                        state.current = buffer;
                    } else {
                        state.following = Some(buffer);
                    }
                    Ok(())
                }
                Err(error) => {
                    state.stats.failed_fetches += 1;
                    Err(error)
                }
            }
        };
        self.fetched.notify_waiters();
        result
    }
}

/// The result of a fetch task.
async fn join(
    fetch: JoinHandle<Result<(), SequenceError>>,
    name: &CounterName,
) -> Result<(), SequenceError> {
    match fetch.await {
        Ok(result) => result,
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        // Cancelled: the runtime is shutting down.
        Err(_) => Err(SequenceError::Closed(name.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Barrier;

    /// A runtime, and an allocator on a server that is not there: nothing
    /// here reaches the database but a prefetch, which fails.
    fn offline(options: SegmentOptions) -> (tokio::runtime::Runtime, SegmentCounter) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let counter = runtime.block_on(async {
            let client = mongodb::Client::with_uri_str(
                "mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=50&connectTimeoutMS=50",
            )
            .await
            .unwrap();
            let name = CounterName::new("offline").unwrap();
            SegmentCounter::new(&client.database("idmint_offline"), name, options)
        });
        (runtime, counter)
    }

    /// Buffers `values` as if a fetch had taken them.
    fn fetched(counter: &SegmentCounter, values: Range<u64>) {
        counter
            .inner
            .install(Ok(Taken { values, floor: 1 }), false)
            .unwrap();
    }

    fn take(counter: &SegmentCounter, count: usize) -> Option<Vec<u64>> {
        let mut values = Vec::new();
        counter
            .take_held(count, |run| values.extend(run))
            .then_some(values)
    }

    #[test]
    fn takes_span_the_two_segments_and_count_in_the_stats() {
        // Wanting nothing more: no prefetch.
        let (_runtime, counter) = offline(SegmentOptions::default().wants(Some(0)));
        assert_eq!(take(&counter, 1), None, "nothing fetched yet");
        fetched(&counter, 10..13);
        fetched(&counter, 20..30);
        assert_eq!(take(&counter, 2), Some(vec![10, 11]));
        assert_eq!(take(&counter, 3), Some(vec![12, 20, 21]));
        assert_eq!(take(&counter, 9), None, "8 left");
        assert_eq!(take(&counter, 8), Some((22..30).collect()));
        let stats = counter.stats();
        assert_eq!(stats.values, 13);
        let segments = stats.segments.unwrap();
        assert_eq!((segments.current, segments.position), ([20, 30], 30));
        assert_eq!(counter.give_back(std::slice::from_ref(&(28..30))), 2);
        assert_eq!(take(&counter, 2), Some(vec![28, 29]));
        assert_eq!(counter.stats().values, 13);
    }

    #[test]
    fn the_take_that_reaches_the_prefetch_point_starts_the_fetch() {
        let (runtime, counter) = offline(SegmentOptions::default().prefetch_at(0.1));
        // The fetch is a task of the runtime's.
        let _runtime = runtime.enter();
        fetched(&counter, 100..200);
        for value in 100..109 {
            assert_eq!(take(&counter, 1), Some(vec![value]));
        }
        assert_eq!(counter.stats().fetch_waiting_ms, None, "before the point");
        assert_eq!(take(&counter, 1), Some(vec![109]));
        assert!(
            counter.stats().fetch_waiting_ms.is_some(),
            "the take that reached 110 started the fetch"
        );
    }

    #[test]
    fn a_closed_allocator_hands_out_nothing() {
        let (runtime, counter) = offline(SegmentOptions::default().wants(Some(0)));
        fetched(&counter, 0..100);
        assert_eq!(take(&counter, 1), Some(vec![0]));
        // The give-back fails (no server); the allocator is closed all the same.
        let _ = runtime.block_on(counter.close());
        assert_eq!(take(&counter, 1), None);
        assert!(runtime.block_on(counter.next_value()).is_err());
    }

    /// Takers on several threads, started together by a barrier, race the
    /// segment swaps and each other: every value of every segment is handed
    /// out exactly once, and each taker's values increase.
    #[test]
    fn takers_racing_segment_swaps_take_every_value_once() {
        const TAKERS: usize = 4;
        const SEGMENTS: u64 = 300;
        const LEN: u64 = 500;
        // Segments with gaps between them, as other processes leave.
        let segment = |i: u64| i * LEN * 2..i * LEN * 2 + LEN;
        let (_runtime, counter) = offline(SegmentOptions::default().wants(Some(0)));
        fetched(&counter, segment(0));
        let start = Barrier::new(TAKERS + 1);
        let done = AtomicBool::new(false);
        let taken: Vec<Vec<u64>> = std::thread::scope(|scope| {
            let takers: Vec<_> = (0..TAKERS)
                .map(|taker| {
                    let (counter, start, done) = (&counter, &start, &done);
                    scope.spawn(move || {
                        let mut values = Vec::new();
                        start.wait();
                        loop {
                            // Takes of 1 to 3 values: some span two segments.
                            let count = 1 + (values.len() + taker) % 3;
                            if counter.take_held(count, |run| values.extend(run)) {
                                continue;
                            }
                            if done.load(Ordering::Acquire)
                                && !counter.take_held(1, |run| values.extend(run))
                            {
                                return values;
                            }
                            std::thread::yield_now();
                        }
                    })
                })
                .collect();
            start.wait();
            for i in 1..SEGMENTS {
                while counter.stats().segments.unwrap().following.is_some() {
                    std::thread::yield_now();
                }
                fetched(&counter, segment(i));
            }
            done.store(true, Ordering::Release);
            takers.into_iter().map(|t| t.join().unwrap()).collect()
        });
        for values in &taken {
            assert!(values.windows(2).all(|pair| pair[0] < pair[1]));
        }
        let mut all: Vec<u64> = taken.into_iter().flatten().collect();
        all.sort_unstable();
        let expected: Vec<u64> = (0..SEGMENTS).flat_map(segment).collect();
        assert_eq!(all.len(), expected.len(), "values lost or handed out twice");
        assert_eq!(all, expected);
        assert_eq!(counter.stats().values, SEGMENTS * LEN);
    }
}
