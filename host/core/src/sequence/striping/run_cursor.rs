//! The run a buffered taker hands out from ([`super::buffer`]), as takers
//! see it without the buffer's lock: a take is one compare-and-swap.
//!
//! A run holds one lane's local values, and local values repeat from lane
//! to lane and from generation to generation, so a word of local values
//! alone would let a taker that read one run take from the next. So the
//! cursor counts **positions**: the buffer gives each run, when it starts
//! handing out from it, the next unused positions, as many as the run has
//! values; positions only ever go up, and no two runs share one. A take
//! moves [`RunCursor`]'s `next` position over the values it takes; the
//! run's [`RunView`] says which value each of its positions is.
//!
//! **Why no value is handed out twice.** A position is handed out once:
//! by the compare-and-swap that moves `next` over it, or by the holder of
//! the buffer's lock, which first swaps `next` for [`FROZEN`]
//! ([`RunCursor::freeze`]), so that it knows exactly how far takers got
//! and no taker moves the word while it works, and last stores `next`
//! again, at the run's exact position or at a later run's
//! ([`RunCursor::publish`]). And a position is one value only: a taker
//! takes positions `n..n + count` only inside the one run whose view it
//! read whole (a sequence lock, [`ViewCell`]), whichever run the holder
//! has published meanwhile, because no other run has those positions.

use std::sync::atomic::{fence, AtomicU64, Ordering};

/// The word `next` holds while the lock holder works, and for good once
/// the buffer is closed: every taker that reads it goes the locked way.
const FROZEN: u64 = u64::MAX;

/// A value on a cache line of its own: the word every take moves, apart
/// from the view it only reads.
#[repr(align(128))]
#[derive(Debug, Default)]
struct Padded<T>(T);

/// Where one run's values lie among the positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RunView {
    /// The run's positions are `first_position..end_position`.
    pub(super) first_position: u64,
    pub(super) end_position: u64,
    /// The value at `first_position`; each next position's is `stride`
    /// more (a lane's values step by its generation's modulus).
    pub(super) first_value: u64,
    pub(super) stride: u64,
    /// A take that moves `next` to this position or past it looks, under
    /// the lock, whether the next run is due (`u64::MAX`: none can be).
    pub(super) check_at: u64,
}

/// What a take without the lock took: `count` values from `first_value`,
/// `stride` apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Taken {
    pub(super) first_value: u64,
    pub(super) stride: u64,
    /// The take reached the view's `check_at`.
    pub(super) due: bool,
}

/// The current run's view under a sequence lock: the lock holder is its one
/// writer; a reader that saw a write under way, or one end before the
/// other, reads nothing.
#[derive(Debug, Default)]
struct ViewCell {
    /// Odd while a write is under way.
    version: AtomicU64,
    first_position: AtomicU64,
    end_position: AtomicU64,
    first_value: AtomicU64,
    stride: AtomicU64,
    check_at: AtomicU64,
}

impl ViewCell {
    fn read(&self) -> Option<RunView> {
        let before = self.version.load(Ordering::Acquire);
        if before % 2 == 1 {
            return None;
        }
        let view = RunView {
            first_position: self.first_position.load(Ordering::Relaxed),
            end_position: self.end_position.load(Ordering::Relaxed),
            first_value: self.first_value.load(Ordering::Relaxed),
            stride: self.stride.load(Ordering::Relaxed),
            check_at: self.check_at.load(Ordering::Relaxed),
        };
        fence(Ordering::Acquire);
        (self.version.load(Ordering::Relaxed) == before).then_some(view)
    }

    /// Only the lock holder writes.
    fn write(&self, view: RunView) {
        let version = self.version.load(Ordering::Relaxed);
        self.version.store(version + 1, Ordering::Relaxed);
        fence(Ordering::Release);
        self.first_position
            .store(view.first_position, Ordering::Relaxed);
        self.end_position
            .store(view.end_position, Ordering::Relaxed);
        self.first_value.store(view.first_value, Ordering::Relaxed);
        self.stride.store(view.stride, Ordering::Relaxed);
        self.check_at.store(view.check_at, Ordering::Relaxed);
        self.version.store(version + 2, Ordering::Release);
    }
}

/// The current run's next position, and its view.
#[derive(Debug)]
pub(super) struct RunCursor {
    /// The next position to hand out, or [`FROZEN`].
    next: Padded<AtomicU64>,
    view: Padded<ViewCell>,
}

impl Default for RunCursor {
    /// Frozen: nothing published yet, the first take goes the locked way.
    fn default() -> Self {
        Self {
            next: Padded(AtomicU64::new(FROZEN)),
            view: Padded(ViewCell::default()),
        }
    }
}

impl RunCursor {
    /// Takes the next `count` values of the current run without the lock,
    /// if it has that many; `None` (nothing taken) when it has fewer, is
    /// frozen, or is being changed: the locked way decides.
    pub(super) fn take(&self, count: u64) -> Option<Taken> {
        if count == 0 {
            return None;
        }
        let mut next = self.next.0.load(Ordering::Acquire);
        loop {
            if next == FROZEN {
                return None;
            }
            let view = self.view.0.read()?;
            let end = next.checked_add(count)?;
            if next < view.first_position || end > view.end_position {
                return None;
            }
            match self
                .next
                .0
                .compare_exchange_weak(next, end, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    return Some(Taken {
                        first_value: view.first_value + (next - view.first_position) * view.stride,
                        stride: view.stride,
                        due: end >= view.check_at,
                    })
                }
                Err(seen) => next = seen,
            }
        }
    }

    /// Stops takers; returns the next position they left, unless the
    /// cursor was frozen already. Only the lock holder calls it.
    pub(super) fn freeze(&self) -> Option<u64> {
        let next = self.next.0.swap(FROZEN, Ordering::AcqRel);
        (next != FROZEN).then_some(next)
    }

    /// Lets takers take from `view`'s run again, from position `next`
    /// (within it). Only the lock holder calls it, after a freeze.
    pub(super) fn publish(&self, view: RunView, next: u64) {
        debug_assert!((view.first_position..=view.end_position).contains(&next));
        self.view.0.write(view);
        self.next.0.store(next, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::{Arc, Barrier, Mutex};

    use super::*;

    fn view(first_position: u64, len: u64, first_value: u64, stride: u64) -> RunView {
        RunView {
            first_position,
            end_position: first_position + len,
            first_value,
            stride,
            check_at: u64::MAX,
        }
    }

    #[test]
    fn a_take_is_the_run_s_next_values_and_no_more() {
        let cursor = RunCursor::default();
        assert_eq!(cursor.take(1), None, "nothing published");
        cursor.publish(
            RunView {
                check_at: 13,
                ..view(10, 5, 103, 4)
            },
            11,
        );
        let taken = cursor.take(2).unwrap();
        assert_eq!((taken.first_value, taken.stride, taken.due), (107, 4, true));
        assert_eq!(cursor.take(3), None, "two are left");
        assert_eq!(cursor.take(2).unwrap().first_value, 115);
        assert_eq!(cursor.take(1), None);
        assert_eq!(cursor.freeze(), Some(15));
        assert_eq!(cursor.freeze(), None);
        assert_eq!(cursor.take(0), None);
    }

    #[test]
    fn a_position_outside_the_view_takes_nothing() {
        let cursor = RunCursor::default();
        // As a taker would find it between a publish of the next run's
        // word and of its view, were they not ordered: no take.
        cursor.view.0.write(view(0, 10, 1, 1));
        cursor.next.0.store(10, Ordering::Release);
        assert_eq!(cursor.take(1), None);
        // A write under way hides the view.
        cursor.next.0.store(5, Ordering::Release);
        cursor.view.0.version.fetch_add(1, Ordering::AcqRel);
        assert_eq!(cursor.take(1), None);
    }

    /// Takers on every thread against a holder that keeps freezing and
    /// publishing new runs whose values interleave with the old ones' (as
    /// lanes' do): every value is taken once, and each run's values are
    /// handed out exactly as far as the holder counts them.
    #[test]
    fn takers_racing_a_holder_take_each_value_once() {
        const TAKERS: usize = 3;
        const RUNS: u64 = 400;
        const LEN: u64 = 50;
        let cursor = Arc::new(RunCursor::default());
        let barrier = Arc::new(Barrier::new(TAKERS + 1));
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let taken = Arc::new(Mutex::new(Vec::new()));
        let takers: Vec<_> = (0..TAKERS)
            .map(|taker| {
                let (cursor, barrier, done, taken) = (
                    Arc::clone(&cursor),
                    Arc::clone(&barrier),
                    Arc::clone(&done),
                    Arc::clone(&taken),
                );
                std::thread::spawn(move || {
                    let mut mine = Vec::new();
                    barrier.wait();
                    while !done.load(Ordering::Acquire) {
                        let count = 1 + taker as u64;
                        if let Some(t) = cursor.take(count) {
                            mine.extend((0..count).map(|k| t.first_value + k * t.stride));
                        }
                    }
                    taken.lock().unwrap().extend(mine);
                })
            })
            .collect();
        barrier.wait();
        // The holder: run r is lane r % 3's values (stride 3, residue
        // r % 3), its local values from where that lane's last run ended;
        // it hands out one value of each run itself, then leaves the rest to
        // the takers until it moves on.
        let mut by_holder = Vec::new();
        let mut handed_out_by_takers = 0;
        let mut lane_next = [1_u64; 3];
        let mut position = 0;
        for run in 0..RUNS {
            let lane = run % 3;
            let first_local = lane_next[lane as usize];
            let value = |local: u64| (local - 1) * 3 + lane + 1;
            let run_view = view(position, LEN, value(first_local), 3);
            assert_eq!(cursor.freeze().is_some(), run > 0);
            by_holder.push(value(first_local));
            cursor.publish(run_view, position + 1);
            std::thread::yield_now();
            let left_at = cursor.freeze().unwrap();
            handed_out_by_takers += left_at - position - 1;
            // The rest of the run is a gap; the lane goes on after it.
            lane_next[lane as usize] = first_local + LEN;
            position += LEN;
            cursor.publish(view(position, 0, 0, 3), position);
        }
        done.store(true, Ordering::Release);
        for taker in takers {
            taker.join().unwrap();
        }
        let taken = taken.lock().unwrap();
        assert_eq!(taken.len() as u64, handed_out_by_takers);
        let mut seen = HashSet::new();
        for value in taken.iter().chain(&by_holder) {
            assert!(seen.insert(*value), "{value} handed out twice");
        }
        assert!(handed_out_by_takers > 0, "the takers took nothing");
    }
}
