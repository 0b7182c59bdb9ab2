//! A segment counter's buffers: the segment values are handed out from
//! and the one fetched next ([`State`]), how values are moved out of them
//! ([`fill`]) and what is left to give back ([`unused_tail`]). The fetching
//! that fills them is the allocator's.

use std::ops::Range;
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

/// What a segment counter of one process holds, under its lock.
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
