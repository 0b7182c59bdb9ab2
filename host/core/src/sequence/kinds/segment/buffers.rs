//! A segment counter's buffers: the segment values are handed out from
//! and the one fetched next ([`State`]), the current segment's position
//! that takers move without the lock ([`Cursor`]), how values are moved out
//! of them ([`fill`]) and what is left to give back ([`unused_tail`]). The
//! fetching that fills them is the allocator's.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::sequence::kind_trait::BufferStats;

/// One buffered segment: values `next..end` are left.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Buffer {
    pub(super) start: u64,
    pub(super) next: u64,
    pub(super) end: u64,
    /// Once `next` reaches this, the following segment is fetched.
    pub(super) prefetch_from: u64,
}

impl Buffer {
    pub(super) fn new(values: Range<u64>, prefetch_at: f64) -> Self {
        let len = values.end - values.start;
        let used = ((len as f64) * prefetch_at).ceil() as u64;
        Self {
            start: values.start,
            next: values.start,
            end: values.end,
            prefetch_from: values.start + used.min(len),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.next >= self.end
    }

    pub(super) fn left(&self) -> u64 {
        self.end.saturating_sub(self.next)
    }
}

/// The word [`Cursor::next`] holds while the lock holder rearranges the
/// buffers, and for good once the counter is closed: no value comes from
/// it, so every taker that reads it goes the locked way.
const FROZEN: u64 = u64::MAX;

/// A word on its own cache line, so that the word every take moves and the
/// ones it only reads do not share one.
#[repr(align(128))]
#[derive(Debug, Default)]
struct Padded<T>(T);

/// The current segment as takers see it without the lock: its next value
/// and its end, and the point at which a take must look, under the lock,
/// whether the following segment is due.
///
/// A take is one compare-and-swap of `next` within `end`. Only the holder
/// of the allocator's lock changes the segment, and it first swaps `next`
/// for [`FROZEN`] ([`Cursor::freeze`]), so that it knows exactly what was
/// taken and no taker can move the word while it works; it then stores the
/// new end and, last, the new `next` ([`Cursor::publish`]). A taker that
/// read the end of one segment and the `next` of another cannot win its
/// swap: the word moved on to a later segment (segments only ever go up,
/// and a value given back is one of the current segment), so it never
/// equals a value of the earlier one again.
#[derive(Debug)]
pub(super) struct Cursor {
    /// The current segment's next value, or [`FROZEN`].
    next: Padded<AtomicU64>,
    /// The current segment's end.
    end: Padded<AtomicU64>,
    /// A take that moves `next` to this point or past it looks, under the
    /// lock, whether the following segment is due (`u64::MAX`: none can be).
    prefetch_check_at: AtomicU64,
}

impl Default for Cursor {
    /// Nothing to take: the first take goes the locked way and fetches.
    fn default() -> Self {
        Self {
            next: Padded(AtomicU64::new(0)),
            end: Padded(AtomicU64::new(0)),
            prefetch_check_at: AtomicU64::new(u64::MAX),
        }
    }
}

impl Cursor {
    /// Takes at least `least` and at most `most` consecutive values of the
    /// current segment, without the lock; `None` when it holds fewer than
    /// `least` (or is frozen, or `least` is 0): the locked way decides.
    /// The second value says whether the take reached the prefetch check
    /// point.
    pub(super) fn take(&self, least: u64, most: u64) -> Option<(Range<u64>, bool)> {
        if least == 0 {
            return None;
        }
        let mut next = self.next.0.load(Ordering::Acquire);
        loop {
            // A frozen word is past every end: it takes nothing.
            let end = self.end.0.load(Ordering::Acquire);
            let left = end.saturating_sub(next);
            if left < least {
                return None;
            }
            let taken = next..next + left.min(most);
            match self.next.0.compare_exchange_weak(
                next,
                taken.end,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    let due = taken.end >= self.prefetch_check_at.load(Ordering::Relaxed);
                    return Some((taken, due));
                }
                Err(seen) => next = seen,
            }
        }
    }

    /// Stops takers and makes `state.current.next` exact: what they took
    /// since the last [`Cursor::publish`] is counted in the stats. Only the
    /// lock holder calls it, and publishes before it lets go.
    pub(super) fn freeze(&self, state: &mut State) {
        let next = self.next.0.swap(FROZEN, Ordering::AcqRel);
        // Already frozen: closed, and the state is exact.
        if next != FROZEN {
            state.stats.values += next.saturating_sub(state.current.next);
            state.current.next = next;
        }
    }

    /// Lets takers take from `state.current` again, the prefetch check at
    /// `prefetch_check_at`; a closed counter stays frozen.
    pub(super) fn publish(&self, state: &State, prefetch_check_at: u64) {
        if state.closed {
            return;
        }
        self.prefetch_check_at
            .store(prefetch_check_at, Ordering::Relaxed);
        self.end.0.store(state.current.end, Ordering::Release);
        self.next.0.store(state.current.next, Ordering::Release);
    }
}

/// What a segment counter of one process holds, under its lock. While the
/// lock is not held, takers move the current segment's next value in the
/// [`Cursor`]; `current.next` is exact only between a freeze and a publish.
#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) current: Buffer,
    pub(super) following: Option<Buffer>,
    pub(super) fetching: bool,
    pub(super) closed: bool,
    /// The step of the next request (0: not known until the first fetch).
    pub(super) step: u64,
    pub(super) last_fetch: Option<Instant>,
    /// When the fetch in flight started.
    pub(super) fetch_started: Option<Instant>,
    pub(super) stats: BufferStats,
}

impl State {
    /// Values buffered: the rest of the current segment and the following.
    pub(super) fn buffered(&self) -> u64 {
        self.current.left() + self.following.map_or(0, |following| following.left())
    }
}

/// Moves values into `values` until it holds `count` or both buffers are
/// empty, switching to the following segment when the current one runs out.
pub(super) fn fill(state: &mut State, count: usize, values: &mut Vec<u64>) {
    let wanted = count.saturating_sub(values.len()) as u64;
    move_out(state, wanted, |run| values.extend(run));
}

/// Moves up to `count` values out of the buffers, in order, each run of
/// consecutive ones passed to `push`, switching to the following segment
/// when the current one runs out; returns how many it moved.
pub(super) fn move_out(state: &mut State, count: u64, mut push: impl FnMut(Range<u64>)) -> u64 {
    let mut moved = 0;
    while moved < count {
        if state.current.is_empty() {
            match state.following.take() {
                Some(following) => state.current = following,
                None => break,
            }
        }
        let current = &mut state.current;
        let end = current.end.min(current.next + (count - moved));
        push(current.next..end);
        moved += end - current.next;
        current.next = end;
    }
    state.stats.values += moved;
    moved
}

/// The values this process can give back: the unused tail of its last
/// segment, extended over the rest of the current one when the two are
/// contiguous. `None` when nothing is left.
pub(super) fn unused_tail(state: &State) -> Option<Range<u64>> {
    let current = state.current;
    let tail = match state.following {
        Some(following) if current.end == following.start => current.next..following.end,
        Some(following) => following.start..following.end,
        None => current.next..current.end,
    };
    (tail.start < tail.end).then_some(tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer(values: Range<u64>, used: u64) -> Buffer {
        let mut buffer = Buffer::new(values, 0.1);
        buffer.next += used;
        buffer
    }

    #[test]
    fn fill_spans_the_two_buffers_in_order() {
        let mut state = State {
            current: buffer(10..13, 1),
            following: Some(buffer(20..30, 0)),
            ..State::default()
        };
        let mut values = Vec::new();
        fill(&mut state, 5, &mut values);
        assert_eq!(values, [11, 12, 20, 21, 22]);
        assert!(state.following.is_none());
        assert_eq!(state.current.next, 23);
        assert_eq!(state.stats.values, 5);
    }

    #[test]
    fn the_prefetch_point_is_the_share_used() {
        assert_eq!(Buffer::new(100..200, 0.1).prefetch_from, 110);
        assert_eq!(Buffer::new(100..200, 0.0).prefetch_from, 100);
        assert_eq!(Buffer::new(100..101, 0.1).prefetch_from, 101);
    }

    #[test]
    fn the_tail_given_back_is_what_is_unused_at_the_end() {
        let tail = |current, following| {
            unused_tail(&State {
                current,
                following,
                ..State::default()
            })
        };
        assert_eq!(tail(buffer(0..100, 40), None), Some(40..100));
        // Contiguous buffers: the rest of both.
        assert_eq!(
            tail(buffer(0..100, 40), Some(buffer(100..200, 0))),
            Some(40..200)
        );
        // Another process took 100..150 in between: only the last segment.
        assert_eq!(
            tail(buffer(0..100, 40), Some(buffer(150..250, 0))),
            Some(150..250)
        );
        assert_eq!(tail(buffer(0..100, 100), None), None);
        assert_eq!(tail(Buffer::default(), None), None);
    }
}
