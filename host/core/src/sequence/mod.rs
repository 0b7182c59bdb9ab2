//! Counters: where the number in an ID comes from.
//!
//! Every kind of counter sits behind one seam, [`Sequence`], whose core
//! operation [`Sequence::take`] reserves `n` values in one round trip (or
//! from memory) and returns them in order as [`Stamp`](crate::parts::Stamp)s
//! ready for a policy. The counter document says which kind it is (its
//! `kind`, see [`CounterKind`]), and [`Sequence::open`] reads it and opens
//! the right one. Each kind is one folder under `kinds/` that owns its
//! document rules, its creation settings, its wire command, its handle and
//! how it describes itself; `registry.rs` lists them:
//!
//! - [`CyclicCounter`], the seed's cyclic serial number `{_id, val, maxval,
//!   ts}`: values 0..=maxval wrapping, each with a server-decided microsecond
//!   timestamp so that per counter the pair (ts, val) only ever increases
//!   whatever the clients' clocks do; a take reserves a block of pairs;
//! - [`AutoincCounter`], seed 002's `$inc` counter `{_id, kind, seq}`;
//! - [`SegmentCounter`], seed 003's segments (Leaf, Tinyid) `{_id, kind,
//!   max, step}`, handed out from memory with a double buffer;
//! - [`SnowflakeCounter`], seed 001's snowflake IDs (uid-generator), made in the
//!   process under a worker id leased in MongoDB;
//! - [`PeriodicKind`], values that restart at 1 at each period boundary (day,
//!   month or year in the counter's time zone), decided by the server's clock.
//!
//! The layers, bottom up, with no import loop: `name`, `clock`, `error`,
//! `settings`, `kind_trait` (what a kind provides), `counter/fields`,
//! `counter/document` (the one reader a kind reads its counters with),
//! `counter/prefixes` and `advance` are what every kind shares; `kinds/*`
//! are the kinds; `registry` lists them, and `dispatch` makes from that list
//! the types that dispatch on a kind; `counter/spec` (creating a counter),
//! `counter/command` (the wire command), `opened` and `prefixes` use them;
//! this file is the public face.
//!
//! `striping` is striped counters (issue 34): a counter whose document is
//! a map opens as its lanes ([`Sequence::Striped`]).
//!
//! All writes that hand out values use write concern majority with journal.

mod advance;
mod claims;
mod clock;
mod command;
mod counter;
mod counters;
mod dispatch;
mod error;
mod frozen;
mod headroom;
pub mod identity;
mod kind_trait;
mod kinds;
mod known_shape;
mod lane_ceiling;
mod lane_kind;
mod name;
mod opened;
pub mod prefixes;
mod registry;
mod settings;
mod spec;
pub mod striping;
mod words;

pub use clock::{Clock, SystemClock};
pub use command::{command_takes_count, take_command};
pub use counter::document::{CounterDocument, Registered, Unstriped};
pub use counter::prefixes::{MAX_PREFIXES, MAX_PREFIX_BYTES};
pub use counters::{count, create, headrooms, list, list_page, state, CounterHeadroom, Listed};
pub use error::SequenceError;
pub use headroom::{Headroom, HeadroomLimits};
pub use kind_trait::{
    BufferStats, ClientTime, CommandOptions, Fact, GiveBack, Handle, Held, Kind, LeaseStats,
    Repeats, Segments, ValueShape, MAX_BLOCK, MAX_VALUE,
};
pub use kinds::autoinc::{AutoincCounter, AutoincKind, AutoincState};
pub use kinds::cyclic::{
    CyclicCounter, CyclicKind, CyclicState, CEILING_CHUNK_MICROS, DEFAULT_MAXVAL, MAX_MAXVAL,
};
pub use kinds::periodic::{PeriodicCounter, PeriodicKind, PeriodicState, DEFAULT_ZONE};
pub use kinds::segment::{
    step, SegmentCounter, SegmentKind, SegmentOptions, SegmentState, SegmentTaker, DEFAULT_STEP,
    MAX_STEP,
};
pub use kinds::snowflake::{
    draw_tag, ensure_tag, keep_tag, layout_of, workers, CounterTag, OnRollback, RollbackOptions,
    SnowflakeCounter, SnowflakeKind, SnowflakeOptions, SnowflakeState, WorkerLease, MAX_TAG,
    TAGS_ID, WORKERS_COLLECTION,
};
pub use name::{CounterName, InvalidCounterName, MAX_COUNTER_NAME_LEN};
pub use opened::OpenedCounter;
pub use registry::{CounterKind, CounterState, KindState, OpenOptions, Sequence, UnknownKind};
pub use settings::{Setting, Settings};
pub use spec::CounterSpec;
pub use words::{group_thousands, list_words};

/// The collection that holds counter documents (the seed's name).
pub use crate::mongo::collections::COUNTERS as COUNTERS_COLLECTION;
pub use claims::PREFIXES_COLLECTION;
