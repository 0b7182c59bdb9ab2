//! What a taker whose takes are buffered ([`Takes::Buffered`], a segment
//! counter's) took from its lanes and has not handed out yet: one run of a
//! lane's local values, handed out from memory. Values a process took and
//! did not hand out are lost when it stops (a gap, never a value twice: a
//! change of stripes counts them in its seal).
//!
//! [`Takes::Buffered`]: crate::sequence::lane_kind::Takes::Buffered

use std::sync::Mutex;

use super::arithmetic::{lane_id, Lane};
use super::lane::corrupt_lane;
use crate::parts::{Stamp, Stamps};
use crate::sequence::error::SequenceError;
use crate::sequence::name::CounterName;

/// The values a buffered taker took and has not handed out.
#[derive(Debug)]
pub(super) struct Buffer {
    /// The values each take from a lane asks for at least.
    pub(super) at_least: u64,
    /// What is left of the last run taken.
    left: Mutex<Option<Run>>,
    /// Held by the one taker fetching the next run.
    pub(super) fetching: tokio::sync::Mutex<()>,
}

/// Values taken from a lane and not handed out yet: the lane's local
/// values `next..=last`.
#[derive(Debug)]
struct Run {
    lane: Lane,
    next: u64,
    last: u64,
}

impl Buffer {
    /// Nothing taken yet; each take from a lane asks for `at_least` values.
    pub(super) fn new(at_least: u64) -> Self {
        Self {
            at_least,
            left: Mutex::new(None),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    /// Hands out into `taken`, with `client_micros`, what is left, up to
    /// `count` values in all (counter `name`'s).
    pub(super) fn hand_out(
        &self,
        count: usize,
        client_micros: u64,
        taken: &mut Vec<Stamp>,
        name: &CounterName,
    ) -> Result<(), SequenceError> {
        let mut left = self.left.lock().unwrap();
        let Some(run) = left.as_mut() else {
            return Ok(());
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
        Ok(())
    }

    /// `count` values of what is left, if that many are: no await, and the
    /// lock held only to move them out. `None`, with nothing taken,
    /// otherwise (a local value without a value, which the ordinary way
    /// reports, included).
    pub(super) fn take_held(&self, count: usize, client_micros: u64) -> Option<Stamps> {
        let mut left = self.left.lock().unwrap();
        let run = left.as_mut()?;
        let count = count as u64;
        if (run.last + 1).saturating_sub(run.next) < count {
            return None;
        }
        let lane = run.lane;
        let stamp = |local| {
            lane.value(local)
                .map(|value| Stamp::new(client_micros, value))
        };
        let stamps = if count == 1 {
            Stamps::one(stamp(run.next)?)
        } else {
            (run.next..run.next + count)
                .map(stamp)
                .collect::<Option<Vec<_>>>()?
                .into()
        };
        run.next += count;
        Some(stamps)
    }

    /// Whether anything is left.
    pub(super) fn any_left(&self) -> bool {
        self.left
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(|run| run.next <= run.last)
    }

    /// Holds `size` local values of `lane` up to `last`, just taken.
    pub(super) fn fill(&self, lane: Lane, size: u64, last: u64) {
        *self.left.lock().unwrap() = Some(Run {
            lane,
            next: last + 1 - size,
            last,
        });
    }
}
