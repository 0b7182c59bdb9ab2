//! What a taker whose takes are buffered ([`Takes::Buffered`], a segment
//! counter's) took from its lanes and has not handed out yet: the run it
//! hands out from and the next one, each a run of one lane's local values
//! sized by its kind's rule ([`RunSizing`]: a segment counter's adaptive
//! step). As an unstriped segment counter's two buffers:
//!
//! - **Prefetch.** Once a share of the current run is handed out
//!   ([`RunSizing::prefetch_at`]), the taker takes the next run in the
//!   background ([`Buffer::take_held`] says when), so that a take almost
//!   never waits on the database; when both runs are used up before it
//!   lands, takers wait for it (one fetch at a time, [`Buffer::fetching`]).
//! - **No await, no lock per take.** A take held in memory is one
//!   compare-and-swap on the current run's cursor ([`RunCursor`]); the
//!   lock (which nothing holds across an await) is taken to go on to the
//!   next run, to start a fetch, and by takes that must wait.
//! - **Given back on close.** [`Buffer::close`] stops handing out and
//!   returns what is left, for the taker to give back to its lanes while no
//!   take of the lane came since (`counting.rs`'s give-back). Values a
//!   process took and did not hand out are otherwise lost when it stops (a
//!   gap, never a value twice: a change of stripes counts them in its
//!   seal, and a sealed lane takes nothing back).
//!
//! [`Takes::Buffered`]: crate::sequence::lane_kind::Takes::Buffered

use std::ops::DerefMut;
use std::sync::Arc;

use parking_lot::Mutex;
use std::time::Instant;

use mongodb::Database;

use super::arithmetic::{lane_id, Lane};
use super::lane::corrupt_lane;
use super::run_cursor::{RunCursor, RunView};
use crate::parts::{Stamp, Stamps};
use crate::sequence::error::SequenceError;
use crate::sequence::frozen::Frozen;
use crate::sequence::lane_kind::RunSizing;
use crate::sequence::name::CounterName;

/// The values a buffered taker took and has not handed out.
#[derive(Debug)]
pub(super) struct Buffer {
    sizing: Box<dyn RunSizing>,
    runs: Mutex<Runs>,
    /// The current run as takes without the lock see it: exact only while
    /// the lock is not held ([`Buffer::lock`]).
    cursor: RunCursor,
    /// Held by the one fetch under way, a taker's or the background's
    /// (from the moment it is decided, so that a taker that runs out
    /// meanwhile waits for it instead of fetching too).
    pub(super) fetching: Arc<tokio::sync::Mutex<()>>,
}

/// The runs and what sizes the next.
#[derive(Debug, Default)]
struct Runs {
    /// The run values are handed out from.
    current: Option<Run>,
    /// The run taken ahead, handed out once the current one is used up.
    next: Option<Run>,
    /// The size of the last run asked for, and when it was asked.
    last_ask: Option<(u64, Instant)>,
    /// A background fetch was started and has not ended.
    prefetching: bool,
    /// Values taken from lanes in all.
    fetched: u64,
    /// Closed: nothing is handed out any more.
    closed: bool,
    /// The first position ([`RunCursor`]) no run has yet.
    positions_end: u64,
}

/// Values taken from a lane and not handed out yet: the local values
/// `next..=last` of `lane`, of a run that began at `first`.
#[derive(Debug, Clone)]
pub(super) struct Run {
    pub(super) lane: Lane,
    /// The lane's generation (the number).
    pub(super) generation: u64,
    first: u64,
    pub(super) next: u64,
    pub(super) last: u64,
    /// The local value from which a take looks whether the next run is
    /// due (the prefetch point, set when the buffer holds the run).
    check_at: u64,
    /// The position ([`RunCursor`]) of local value `first`, given when
    /// the run is first handed out from without the lock.
    position: Option<u64>,
    /// The deployment's database it was taken from.
    pub(super) database: Database,
}

impl Run {
    /// The `size` local values of `lane` (of generation `generation`) up
    /// to `last`, just taken from `database`.
    pub(super) fn taken(
        lane: Lane,
        generation: u64,
        size: u64,
        last: u64,
        database: Database,
    ) -> Self {
        let first = last + 1 - size;
        Self {
            lane,
            generation,
            first,
            next: first,
            last,
            check_at: first,
            position: None,
            database,
        }
    }

    /// How many values are left.
    pub(super) fn left(&self) -> u64 {
        (self.last + 1).saturating_sub(self.next)
    }

    /// Reserves its next `count` local values, if it has that many: the
    /// lane and the first of them.
    fn reserve(&mut self, count: u64) -> Option<(Lane, u64)> {
        if self.left() < count {
            return None;
        }
        let from = self.next;
        self.next += count;
        Some((self.lane, from))
    }
}

/// The stamps of local values `from..from + count` of `lane`, each with
/// `client_micros`; none if a local value has no value (a corrupt lane).
fn stamps_of(lane: Lane, from: u64, count: u64, client_micros: u64) -> Option<Stamps> {
    // A lane's values step by its modulus: all of them are values when the
    // first and the last are.
    let first_value = lane.value(from)?;
    lane.value(from.checked_add(count.checked_sub(1)?)?)?;
    Some(stamps_stepped(
        first_value,
        lane.generation().modulus,
        count,
        client_micros,
    ))
}

/// The stamps of `count` values from `first_value`, `stride` apart, each
/// with `client_micros`.
fn stamps_stepped(first_value: u64, stride: u64, count: u64, client_micros: u64) -> Stamps {
    let stamp = |k: u64| Stamp::new(client_micros, first_value + k * stride);
    if count == 1 {
        return Stamps::one(stamp(0));
    }
    (0..count).map(stamp).collect::<Vec<_>>().into()
}

impl Runs {
    /// The next run becomes the current one once the current one is used up.
    fn promote(&mut self) {
        if self.current.as_ref().is_none_or(|run| run.left() == 0) {
            if let Some(next) = self.next.take() {
                self.current = Some(next);
            }
        }
    }

    fn any_left(&self) -> bool {
        [&self.current, &self.next]
            .into_iter()
            .flatten()
            .any(|run| run.left() > 0)
    }

    /// Counts what takers without the lock took of the current run, which
    /// the cursor, frozen, left at position `next`.
    fn sync(&mut self, next: u64) {
        let run = self
            .current
            .as_mut()
            .expect("a cursor is published only over the current run");
        let position = run.position.expect("a published run has its position");
        run.next = run.first + (next - position);
    }

    /// Lets takes without the lock hand out from the current run (the next
    /// one, if the current one is used up), from where it is: unless the
    /// buffer is closed, or no run has values left, or one has a local
    /// value without a value (a corrupt lane, which the locked way
    /// reports). `wants_more`: a bounded taker still wants values beyond
    /// those fetched (else no take need look whether a run is due).
    fn publish(&mut self, cursor: &RunCursor, wants_more: bool) {
        if self.closed {
            return;
        }
        self.promote();
        let look_for_next = !self.prefetching && self.next.is_none() && wants_more;
        let positions_end = self.positions_end;
        let Some(run) = self.current.as_mut().filter(|run| run.left() > 0) else {
            return;
        };
        let (Some(first_value), Some(_)) = (run.lane.value(run.first), run.lane.value(run.last))
        else {
            return;
        };
        let size = run.last + 1 - run.first;
        let position = *run.position.get_or_insert(positions_end);
        let view = RunView {
            first_position: position,
            end_position: position + size,
            first_value,
            stride: run.lane.generation().modulus,
            check_at: if look_for_next {
                position + run.check_at.saturating_sub(run.first)
            } else {
                u64::MAX
            },
        };
        let next = position + (run.next - run.first);
        self.positions_end = self.positions_end.max(view.end_position);
        cursor.publish(view, next);
    }
}

impl Buffer {
    /// Nothing taken yet; runs sized by `sizing`.
    pub(super) fn new(sizing: Box<dyn RunSizing>) -> Self {
        Self {
            sizing,
            runs: Mutex::new(Runs::default()),
            cursor: RunCursor::default(),
            fetching: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    /// The runs under the buffer's lock, exact: the cursor frozen while it
    /// is held, and published again when it is let go.
    fn lock(&self) -> impl DerefMut<Target = Runs> + '_ {
        let mut runs = self.runs.lock();
        if let Some(next) = self.cursor.freeze() {
            runs.sync(next);
        }
        Frozen::new(runs, |runs: &mut Runs| {
            let wants_more = self.wants_more(runs);
            runs.publish(&self.cursor, wants_more);
        })
    }

    /// Whether the taker wants values beyond those fetched: always, unless
    /// it is bounded.
    fn wants_more(&self, runs: &Runs) -> bool {
        self.sizing.wants().is_none_or(|wants| wants > runs.fetched)
    }

    /// `count` values of what is left, if the run handed out from has
    /// that many now: no await, and no lock when the current run holds
    /// them (one compare-and-swap on the cursor). `None`, with nothing
    /// taken, otherwise (a local value without a value, which the ordinary
    /// way reports, included; or closed). With it, the size of a run to
    /// take in the background now, if one is due (the caller takes it and
    /// ends with [`Buffer::fill`] or [`Buffer::prefetch_failed`]).
    pub(super) fn take_held(
        &self,
        count: usize,
        client_micros: u64,
    ) -> (Option<Stamps>, Option<u64>) {
        let count = count as u64;
        if let Some(taken) = self.cursor.take(count) {
            let prefetch = if taken.due {
                self.prefetch_due(&mut self.lock())
            } else {
                None
            };
            let stamps = stamps_stepped(taken.first_value, taken.stride, count, client_micros);
            return (Some(stamps), prefetch);
        }
        // The locked way: the current run used up (the next one becomes
        // current), or the cursor frozen a moment. Only the reservation
        // under the lock; the values are made after it is let go. (A lane
        // whose local value has no value is corrupt: what was reserved of
        // it is a gap, and the ordinary way, which takes again, reports it.)
        let (reserved, prefetch) = {
            let mut runs = self.lock();
            if runs.closed {
                return (None, None);
            }
            runs.promote();
            let reserved = runs.current.as_mut().and_then(|run| run.reserve(count));
            (reserved, self.prefetch_due(&mut runs))
        };
        let stamps = reserved.and_then(|(lane, from)| stamps_of(lane, from, count, client_micros));
        (stamps, prefetch)
    }

    /// Hands out into `taken`, with `client_micros`, what is left, up to
    /// `count` values in all (counter `name`'s); fails once closed. With
    /// it, the size of a run to take in the background now, if one is due.
    pub(super) fn hand_out(
        &self,
        count: usize,
        client_micros: u64,
        taken: &mut Vec<Stamp>,
        name: &CounterName,
    ) -> Result<Option<u64>, SequenceError> {
        let mut runs = self.lock();
        if runs.closed {
            return Err(SequenceError::Closed(name.clone()));
        }
        while taken.len() < count {
            runs.promote();
            let Some(run) = runs.current.as_mut().filter(|run| run.left() > 0) else {
                break;
            };
            while taken.len() < count && run.next <= run.last {
                let value = run.lane.value(run.next).ok_or_else(|| {
                    corrupt_lane(
                        &lane_id(name, run.lane.residue()),
                        format!("its local value {} has no value", run.next),
                        name,
                    )
                })?;
                taken.push(Stamp::new(client_micros, value));
                run.next += 1;
            }
        }
        Ok(self.prefetch_due(&mut runs))
    }

    /// The size of the run to take in the background, if one is due: none
    /// is under way or waiting, the current run's share handed out has
    /// reached the prefetch point and values are left of it (a prefetch
    /// point of 1.0 so takes none in the background: the taker that runs
    /// out fetches), and the taker wants more than it took.
    fn prefetch_due(&self, runs: &mut Runs) -> Option<u64> {
        if runs.prefetching || runs.next.is_some() {
            return None;
        }
        let current = runs.current.as_ref()?;
        if current.left() == 0 || current.next < current.check_at {
            return None;
        }
        let wanted = match self.sizing.wants() {
            Some(wants) => Some(wants.checked_sub(runs.fetched).filter(|&more| more > 0)?),
            None => None,
        };
        runs.prefetching = true;
        Some(self.ask(runs, 0, wanted))
    }

    /// The size of a run a taker that waits must take now, `needed` values
    /// at least (what its take still lacks).
    pub(super) fn ask_now(&self, needed: u64) -> u64 {
        let mut runs = self.lock();
        let wanted = self
            .sizing
            .wants()
            .map(|wants| wants.saturating_sub(runs.fetched));
        self.ask(&mut runs, needed, wanted)
    }

    /// The size of the next run: the kind's next step after the last run
    /// asked for (the fewest, first), at least `needed`, and no more than
    /// `wanted` (what a bounded taker still wants) if that is more than
    /// both; recorded as the last asked.
    fn ask(&self, runs: &mut Runs, needed: u64, wanted: Option<u64>) -> u64 {
        let now = Instant::now();
        let step = match runs.last_ask {
            None => self.sizing.at_least(),
            Some((size, at)) => self.sizing.next(size, now.saturating_duration_since(at)),
        };
        runs.last_ask = Some((step, now));
        let floor = needed.max(self.sizing.at_least());
        match wanted {
            Some(wanted) => step.min(wanted.max(floor)).max(needed),
            None => step.max(needed),
        }
    }

    /// Whether anything is left.
    pub(super) fn any_left(&self) -> bool {
        self.lock().any_left()
    }

    /// Whether a run is waiting behind the current one, or the buffer is
    /// closed: a background fetch then has nothing to do.
    pub(super) fn needs_no_prefetch(&self) -> bool {
        let runs = self.lock();
        runs.closed || runs.next.is_some()
    }

    /// Holds `run`, just taken: handed out from at once if nothing is left,
    /// after what is left otherwise. `background`: the fetch that took it
    /// was [`Buffer::take_held`]'s.
    pub(super) fn fill(&self, mut run: Run, background: bool) {
        let size = run.last + 1 - run.first;
        let share = (size as f64 * self.sizing.prefetch_at()).ceil() as u64;
        run.check_at = run.first.saturating_add(share);
        let mut runs = self.lock();
        runs.fetched = runs.fetched.saturating_add(run.left());
        if background {
            runs.prefetching = false;
        }
        if runs
            .current
            .as_ref()
            .is_some_and(|current| current.left() > 0)
        {
            runs.next = Some(run);
        } else {
            runs.current = Some(run);
        }
    }

    /// The background fetch ended without a run (it failed, or had
    /// nothing to do): a later take may start another.
    pub(super) fn prefetch_failed(&self) {
        self.lock().prefetching = false;
    }

    /// Stops handing out values, and returns what is left to give back:
    /// the run taken ahead first, then the rest of the current one (a run
    /// taken after another from the same lane must be given back first).
    /// Call it holding [`Buffer::fetching`], so that no fetch lands after.
    pub(super) fn close(&self) -> Vec<Run> {
        let mut runs = self.lock();
        runs.closed = true;
        [runs.next.take(), runs.current.take()]
            .into_iter()
            .flatten()
            .filter(|run| run.left() > 0)
            .collect()
    }
}
