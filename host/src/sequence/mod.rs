//! Sequence strategies: where the number in an ID comes from.
//!
//! Today there is one, [`CyclicCounter`], the seed's cyclic serial number: a
//! counter document `{_id, val, maxval, ts}` in the `counters` collection whose
//! `val` goes 1, 2, ..., maxval, 0, 1, ... Each value is handed out by one atomic
//! `findOneAndUpdate` whose update is an aggregation pipeline, the path every
//! MongoDB from 4.4 on supports. The same update also keeps `ts`, the
//! microsecond timestamp issued with the value, so that per counter the pair
//! (ts, val) only ever increases whatever the clients' clocks do.
//!
//! [`seed_cas`] keeps the seed's original find-then-conditional-update loop, for
//! the benchmark that compares the two.

mod clock;
mod counter_doc;
mod counter_name;
mod cyclic;
mod error;
pub mod seed_cas;

pub use clock::{Clock, SystemClock};
pub use counter_doc::CounterState;
pub use counter_name::CounterName;
pub use cyclic::{CounterSpec, CyclicCounter, Issued, DEFAULT_MAXVAL, MAX_MAXVAL};
pub use error::SequenceError;

/// The collection that holds counter documents (the seed's name).
pub const COUNTERS_COLLECTION: &str = "counters";
