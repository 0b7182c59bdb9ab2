//! Sequence strategies: where the number in an ID comes from.
//!
//! Every strategy sits behind one seam, [`Sequence`], whose core operation
//! [`Sequence::take`] reserves `n` values in one round trip (or from memory)
//! and returns them in order, with what a policy must know about them
//! ([`ValueShape`]: the largest value, whether values repeat, whether the
//! timestamp is the server's). The counter document says which strategy it
//! is (its `kind`, see [`CounterKind`]), and [`Sequence::open`] reads it and
//! returns the right one:
//!
//! - [`CyclicCounter`], the seed's cyclic serial number `{_id, val, maxval,
//!   ts}`: values 0..=maxval wrapping, each with a server-decided microsecond
//!   timestamp so that per counter the pair (ts, val) only ever increases
//!   whatever the clients' clocks do; `take(n)` reserves a block of pairs;
//! - [`AutoIncrement`], seed 002's `$inc` counter `{_id, kind, seq}`;
//! - [`SegmentAllocator`], seed 003's segments (Leaf, Tinyid) `{_id, kind,
//!   max, step}`, handed out from memory with a double buffer.
//!
//! All writes use write concern majority with journal.

mod advance;
mod autoinc;
mod clock;
mod counter_doc;
mod counter_name;
mod cyclic;
mod error;
mod kind;
pub mod segment;
pub mod snowflake;
mod spec;
pub mod wire;

use std::ops::Range;

use mongodb::Database;

pub use autoinc::AutoIncrement;
pub use clock::{Clock, SystemClock};
pub use counter_doc::{
    AutoincState, CounterState, CyclicState, KindState, SegmentState, SnowflakeState, ValueShape,
    MAX_STEP,
};
pub use counter_name::CounterName;
pub use cyclic::{CyclicCounter, Issued, DEFAULT_MAXVAL, MAX_BLOCK, MAX_MAXVAL};
pub use error::SequenceError;
pub use kind::{CounterKind, UnknownKind, MAX_VALUE};
pub use segment::{GiveBack, SegmentAllocator, SegmentOptions, SegmentStats, SegmentTaker};
pub use snowflake::{Snowflake, SnowflakeOptions};
pub use spec::{CounterSpec, DEFAULT_STEP};

pub(crate) use spec::read_state;

/// The collection that holds counter documents (the seed's name).
pub const COUNTERS_COLLECTION: &str = "counters";

/// Options of [`Sequence::open`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct OpenOptions {
    /// How a segment counter's allocator works.
    pub segments: SegmentOptions,
    /// How a snowflake counter's worker lease and clock are handled.
    pub snowflake: SnowflakeOptions,
}

/// One counter, whatever its kind: the seam every ID path serves over.
#[derive(Debug, Clone)]
pub enum Sequence {
    /// A cyclic counter.
    Cyclic(CyclicCounter),
    /// An auto-increment counter.
    Autoinc(AutoIncrement),
    /// A segment counter, served from this process's buffers.
    Segment(SegmentAllocator),
    /// A snowflake counter, served by this process's generator under a
    /// leased worker id.
    Snowflake(Snowflake),
}

impl Sequence {
    /// Reads counter `name` and returns the strategy its `kind` names, with
    /// the state read. An unknown, corrupt or unknown-kind counter is an
    /// error, and nothing is modified.
    pub async fn open(
        database: &Database,
        name: CounterName,
        options: &OpenOptions,
    ) -> Result<(Self, CounterState), SequenceError> {
        let state = read_state(&database.collection(COUNTERS_COLLECTION), &name).await?;
        let sequence = match state.kind() {
            CounterKind::Cyclic => Self::Cyclic(CyclicCounter::new(database, name)),
            CounterKind::Autoinc => Self::Autoinc(AutoIncrement::new(database, name)),
            CounterKind::Segment => Self::Segment(SegmentAllocator::new(
                database,
                name,
                options.segments.clone(),
            )),
            CounterKind::Snowflake => {
                let layout = *state.snowflake_layout().expect("the kind says snowflake");
                Self::Snowflake(
                    Snowflake::start(database, name, layout, options.snowflake.clone()).await?,
                )
            }
        };
        Ok((sequence, state))
    }

    /// The counter's name.
    pub fn name(&self) -> &CounterName {
        match self {
            Self::Cyclic(counter) => counter.name(),
            Self::Autoinc(counter) => counter.name(),
            Self::Segment(allocator) => allocator.name(),
            Self::Snowflake(snowflake) => snowflake.name(),
        }
    }

    /// The counter's kind.
    pub fn kind(&self) -> CounterKind {
        match self {
            Self::Cyclic(_) => CounterKind::Cyclic,
            Self::Autoinc(_) => CounterKind::Autoinc,
            Self::Segment(_) => CounterKind::Segment,
            Self::Snowflake(_) => CounterKind::Snowflake,
        }
    }

    /// Reserves `count` values, 1 to [`MAX_BLOCK`], in one round trip (a
    /// segment counter: from memory, unless its buffers are used up), and
    /// returns them in the order issued. `client_micros` is the caller's
    /// clock: the floor of a cyclic counter's timestamps, and the timestamp
    /// given to the values of the other kinds.
    pub async fn take(
        &self,
        count: usize,
        client_micros: u64,
    ) -> Result<Vec<Issued>, SequenceError> {
        cyclic::check_block(self.name(), count)?;
        let stamp = |value| Issued {
            timestamp_micros: client_micros,
            value,
        };
        match self {
            Self::Cyclic(counter) => counter.take(count, client_micros).await,
            Self::Autoinc(counter) => Ok(counter.take(count as u64).await?.map(stamp).collect()),
            Self::Segment(allocator) => Ok(allocator
                .take(count)
                .await?
                .into_iter()
                .map(stamp)
                .collect()),
            Self::Snowflake(snowflake) => {
                let layout = *snowflake.layout();
                Ok(snowflake
                    .take(count)
                    .await?
                    .into_iter()
                    .map(|id| Issued {
                        // The time the ID carries.
                        timestamp_micros: layout
                            .decompose(id)
                            .map_or(client_micros, |parts| layout.unix_ms_of(parts.time) * 1000),
                        value: id,
                    })
                    .collect())
            }
        }
    }

    /// Reserves `count` values (any number) as runs of consecutive values,
    /// for callers that hand them out themselves: an auto-increment counter
    /// in one round trip (one run), a segment counter from its buffers (one
    /// run per segment touched). Cyclic and snowflake values are not runs:
    /// [`SequenceError::WrongKind`], and nothing is taken.
    pub async fn take_ranges(&self, count: u64) -> Result<Vec<Range<u64>>, SequenceError> {
        match self {
            Self::Autoinc(counter) => {
                let taken = counter.take(count).await?;
                let run = *taken.start()..*taken.end() + 1;
                Ok(vec![run])
            }
            Self::Segment(allocator) => allocator.take_ranges(count).await,
            Self::Cyclic(_) | Self::Snowflake(_) => Err(SequenceError::WrongKind {
                name: self.name().clone(),
                found: self.kind(),
                expected: CounterKind::Segment,
            }),
        }
    }

    /// Passes `result` through; if it is an error, closes the sequence first
    /// (its close error, if any, is dropped: the first error is the one to
    /// report). For a caller that opened a counter and then failed before
    /// using it: a snowflake counter's worker lease is released at once
    /// rather than left live until it expires.
    pub async fn close_on_error<T, E>(&self, result: Result<T, E>) -> Result<T, E> {
        if result.is_err() {
            let _ = self.close().await;
        }
        result
    }

    /// Ends the use of the counter: a segment allocator gives its unused
    /// values back (see [`SegmentAllocator::close`]); the other kinds hold
    /// nothing.
    pub async fn close(&self) -> Result<GiveBack, SequenceError> {
        match self {
            Self::Segment(allocator) => allocator.close().await,
            Self::Snowflake(snowflake) => snowflake.close().await.map(|()| GiveBack::default()),
            Self::Cyclic(_) | Self::Autoinc(_) => Ok(GiveBack::default()),
        }
    }

    /// Reads the counter as it is now.
    pub async fn state(&self) -> Result<CounterState, SequenceError> {
        match self {
            Self::Cyclic(counter) => counter.state().await,
            Self::Autoinc(counter) => counter.state().await,
            Self::Segment(allocator) => allocator.state().await,
            Self::Snowflake(snowflake) => snowflake.state().await,
        }
    }
}

impl From<CyclicCounter> for Sequence {
    fn from(counter: CyclicCounter) -> Self {
        Self::Cyclic(counter)
    }
}

/// Creates counter `name` in `database` as `spec` says (write concern
/// majority with journal). Fails with [`SequenceError::CounterExists`] if a
/// counter of that name exists, of any kind; a bad setting is refused
/// before anything is written.
pub async fn create(
    database: &Database,
    name: &CounterName,
    spec: &CounterSpec,
) -> Result<CounterState, SequenceError> {
    spec::create(
        &database.collection(COUNTERS_COLLECTION),
        name,
        spec,
        &crate::mongo::durable_write_concern(),
    )
    .await
}

/// Reads counter `name` in `database`.
pub async fn state(database: &Database, name: &CounterName) -> Result<CounterState, SequenceError> {
    read_state(&database.collection(COUNTERS_COLLECTION), name).await
}
