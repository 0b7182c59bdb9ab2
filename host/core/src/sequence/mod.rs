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
//! - [`AutoIncrement`], seed 002's `$inc` counter `{_id, kind, seq}`;
//! - [`SegmentAllocator`], seed 003's segments (Leaf, Tinyid) `{_id, kind,
//!   max, step}`, handed out from memory with a double buffer;
//! - [`Snowflake`], seed 001's snowflake IDs (uid-generator), made in the
//!   process under a worker id leased in MongoDB;
//! - [`Periodic`], values that restart at 1 at each period boundary (day,
//!   month or year in the counter's time zone), decided by the server's clock.
//!
//! The layers, bottom up, with no import loop: `name`, `clock`, `error`,
//! `settings`, `document` and `advance` are what every kind shares; `kind`
//! says what a kind provides; `kinds/*` are the kinds; `registry` lists
//! them and dispatches; this file is the public face.
//!
//! All writes that hand out values use write concern majority with journal.

mod advance;
mod claims;
mod clock;
mod document;
mod error;
mod kind;
mod kinds;
mod known_shape;
mod name;
pub mod prefixes;
mod registry;
mod settings;

use mongodb::bson::Document;
use mongodb::Database;

pub use clock::{Clock, SystemClock};
pub use error::SequenceError;
pub use kind::{
    BufferStats, ClientTime, CommandOptions, Fact, GiveBack, Handle, Headroom, Held, Kind,
    LeaseStats, Repeats, Segments, Setting, ValueShape, MAX_BLOCK, MAX_VALUE,
};
pub use kinds::autoinc::{AutoIncrement, Autoinc, AutoincState};
pub use kinds::cyclic::{Cyclic, CyclicCounter, CyclicState, DEFAULT_MAXVAL, MAX_MAXVAL};
pub use kinds::periodic::{Periodic, PeriodicCounter, PeriodicState, DEFAULT_ZONE};
pub use kinds::segment::{
    step, Segment, SegmentAllocator, SegmentOptions, SegmentState, SegmentTaker, DEFAULT_STEP,
    MAX_STEP,
};
pub use kinds::snowflake::{
    layout_of, lifetimes, workers, Lifetime, OnRollback, RollbackOptions, Snowflake, SnowflakeKind,
    SnowflakeOptions, SnowflakeState, WorkerLease, WORKERS_COLLECTION,
};
pub use name::{CounterName, MAX_COUNTER_NAME_LEN};
pub use registry::{
    take_command, CounterKind, CounterSpec, CounterState, KindState, OpenOptions, Sequence,
    UnknownKind, MAX_PREFIXES, MAX_PREFIX_BYTES,
};
pub use settings::Settings;

pub(crate) use registry::read_state;

/// The collection that holds counter documents (the seed's name).
pub use crate::mongo::collections::COUNTERS as COUNTERS_COLLECTION;
pub use claims::PREFIXES_COLLECTION;

/// The counters collection of `database`.
fn counters(database: &Database) -> mongodb::Collection<Document> {
    database.collection(COUNTERS_COLLECTION)
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
    let write_concern = crate::mongo::durable_write_concern();
    registry::create_in(&counters(database), name, spec, &write_concern).await
}

/// One counter as [`list`] found it.
#[derive(Debug, Clone)]
pub struct Listed {
    /// The document's `_id`, as text (an `_id` that is not a string is
    /// shown as the server prints it).
    pub name: String,
    /// The counter, or what is wrong with its document.
    pub state: Result<CounterState, String>,
}

/// Every counter in `database`, by name: a malformed document is listed
/// with what is wrong with it rather than failing the list. Reads only.
pub async fn list(database: &Database) -> Result<Vec<Listed>, SequenceError> {
    let documents = find_counters(database, mongodb::bson::doc! {}, mongodb::bson::doc! {}).await?;
    Ok(documents
        .iter()
        .map(|document| {
            let id = match document.get("_id") {
                Some(mongodb::bson::Bson::String(id)) => id.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            let state = CounterName::new(&id)
                .map_err(|error| error.to_string())
                .and_then(|name| {
                    CounterState::from_document(&name, document).map_err(|error| error.to_string())
                });
            Listed { name: id, state }
        })
        .collect())
}

/// The counter documents of `database` that match `filter`, by name, with
/// only the fields `projection` names (empty: whole).
pub(crate) async fn find_counters(
    database: &Database,
    filter: Document,
    projection: Document,
) -> Result<Vec<Document>, SequenceError> {
    use futures_util::TryStreamExt;
    counters(database)
        .find(filter)
        .projection(projection)
        .sort(mongodb::bson::doc! { "_id": 1 })
        .await
        .map_err(|source| SequenceError::ListCounters { source })?
        .try_collect()
        .await
        .map_err(|source| SequenceError::ListCounters { source })
}

/// Reads counter `name` in `database`.
pub async fn state(database: &Database, name: &CounterName) -> Result<CounterState, SequenceError> {
    read_state(&counters(database), name).await
}
