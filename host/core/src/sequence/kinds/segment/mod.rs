//! The segment kind (seed 003, as Meituan Leaf and Didi Tinyid run it):
//! `{_id, kind: "segment", max, step}`. A process takes a whole range of
//! values, a *segment*, with one atomic update and hands it out from memory.
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
//!
//! This file is the kind (its `Kind` and `Handle` impls, which name each
//! other); `allocator.rs` holds the buffers' sharing and fetching,
//! `buffers.rs` the buffers, `counter.rs` the document and the two writes on
//! it, `step.rs` the adaptive step. This kind owns nothing outside its
//! folder; it must not touch another kind's documents.

mod allocator;
mod buffers;
mod counter;
mod lanes;
pub mod step;

use std::ops::Range;

use mongodb::bson::{doc, Bson, Document};
use mongodb::Database;

pub use allocator::{SegmentCounter, SegmentOptions, SegmentTaker};
pub use counter::{SegmentKind, SegmentState, DEFAULT_STEP, MAX_STEP};

use counter::{fits_filter, take_pipeline};

use crate::parts::{Stamp, Stamps};
use crate::sequence::counter::fields::{integer_in, read_integer};
use crate::sequence::error::SequenceError;
use crate::sequence::headroom::Headroom;
use crate::sequence::kind_trait::{
    CommandOptions, Fact, GiveBack, Handle, Held, Kind, Repeats, ValueShape, MAX_VALUE,
};
use crate::sequence::name::CounterName;
use crate::sequence::settings::{Setting, Settings};

impl Kind for SegmentKind {
    const NAME: &'static str = "segment";
    const SUMMARY: &'static str =
        "segment allocation (seed 003, Meituan Leaf): a process takes a whole range with one update";
    const SETTINGS: &'static [Setting] = &[Setting::Start, Setting::Step];
    const RUNS: bool = true;
    const FIT_ADVICE: &'static str = "use a policy that holds 2^53 values, such as the built-in \
         decimal policy (--policy builtin:decimal)";
    type State = SegmentState;
    type Options = SegmentOptions;
    type Handle = SegmentCounter;

    fn read(document: &Document) -> Result<SegmentState, String> {
        Ok(SegmentState {
            max: read_integer(document, "max", 0, MAX_VALUE + 1)?,
            step: read_integer(document, "step", 1, MAX_STEP)?,
        })
    }

    fn guard() -> Vec<Bson> {
        vec![
            integer_in("max", 0, MAX_VALUE + 1),
            integer_in("step", 1, MAX_STEP),
        ]
    }

    fn fields(settings: &Settings, _now_ms: u64) -> Result<Document, SequenceError> {
        let start = settings.start.unwrap_or(1);
        if start > MAX_VALUE {
            return Err(SequenceError::InvalidSpec(format!(
                "start {start} is out of range 0..={MAX_VALUE}"
            )));
        }
        let step = settings.step.unwrap_or(DEFAULT_STEP);
        if !(1..=MAX_STEP).contains(&step) {
            return Err(SequenceError::InvalidSpec(format!(
                "step {step} is out of range 1..={MAX_STEP}"
            )));
        }
        Ok(doc! { "max": start as i64, "step": step as i64 })
    }

    fn shape(_state: &SegmentState) -> ValueShape {
        ValueShape {
            largest_value: MAX_VALUE,
            repeats: Repeats::Never,
            server_timestamp: false,
        }
    }

    fn facts(state: &SegmentState, _now_ms: u64) -> Vec<Fact> {
        vec![
            Fact::text(
                "max",
                format!("{} (the next segment starts there)", state.max),
            ),
            Fact::text("step", format!("{} (the smallest segment)", state.step)),
        ]
    }

    fn headroom(state: &SegmentState, _now_ms: u64) -> Option<Headroom> {
        Some(Headroom::of_values(state.max, MAX_VALUE + 1))
    }

    fn take_command(
        name: &CounterName,
        _count: u64,
        options: &CommandOptions,
    ) -> Result<(Document, Vec<Document>), SequenceError> {
        Ok((fits_filter(name, options.step), take_pipeline(options.step)))
    }

    async fn open(
        database: &Database,
        name: CounterName,
        _state: &SegmentState,
        options: &SegmentOptions,
    ) -> Result<SegmentCounter, SequenceError> {
        Ok(SegmentCounter::new(database, name, options.clone()))
    }
}

impl Handle for SegmentCounter {
    type Of = SegmentKind;

    fn name(&self) -> &CounterName {
        SegmentCounter::name(self)
    }

    fn database(&self) -> Database {
        SegmentCounter::database(self)
    }

    async fn take(&self, count: usize, client_micros: u64) -> Result<Vec<Stamp>, SequenceError> {
        let values = SegmentCounter::take(self, count).await?;
        Ok(values
            .into_iter()
            .map(|value| Stamp::new(client_micros, value))
            .collect())
    }

    fn take_held(&self, count: usize, client_micros: u64) -> Option<Stamps> {
        let stamp = |value| Stamp::new(client_micros, value);
        if count == 1 {
            let mut one = None;
            SegmentCounter::take_held(self, 1, |run| one = Some(stamp(run.start)));
            return one.map(Stamps::one);
        }
        let mut stamps = Vec::with_capacity(count);
        SegmentCounter::take_held(self, count, |run| stamps.extend(run.map(stamp)))
            .then(|| stamps.into())
    }

    async fn take_ranges(&self, count: u64) -> Result<Vec<Range<u64>>, SequenceError> {
        SegmentCounter::take_ranges(self, count).await
    }

    async fn give_back(&self, runs: &[Range<u64>]) -> Result<u64, SequenceError> {
        Ok(SegmentCounter::give_back(self, runs))
    }

    async fn close(&self) -> Result<GiveBack, SequenceError> {
        SegmentCounter::close(self).await
    }

    fn held(&self) -> Held {
        Held {
            buffers: Some(self.stats()),
            lease: None,
        }
    }
}
