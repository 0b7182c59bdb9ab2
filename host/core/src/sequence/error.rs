//! Errors of the sequence strategies.

use super::name::{CounterName, InvalidCounterName};
use crate::error_class::ErrorClass;

/// Why a sequence value could not be handed out (or a counter not created).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SequenceError {
    /// The counter name breaks the naming rules; nothing was sent to the server.
    #[error(transparent)]
    InvalidCounterName(#[from] InvalidCounterName),
    /// No counter document has this name.
    #[error("counter '{0}' does not exist (create it with `idmint counter create {0}`)")]
    UnknownCounter(CounterName),
    /// `counter create` found a counter of that name already.
    #[error("counter '{0}' already exists")]
    CounterExists(CounterName),
    /// The counter document is malformed. idmint reports it and changes nothing.
    #[error("counter '{name}' is corrupt: {reason}; it was left unchanged, fix or recreate it")]
    CorruptCounter {
        /// The counter.
        name: CounterName,
        /// What is wrong with it.
        reason: String,
    },
    /// The document's `kind` is not one idmint knows. It was left unchanged.
    #[error(
        "counter '{name}' has kind {kind:?}, which this idmint does not know \
         (it knows {known}); it was left unchanged"
    )]
    UnknownKind {
        /// The counter.
        name: CounterName,
        /// The `kind` found.
        kind: String,
        /// The kinds this idmint knows, as a sentence.
        known: String,
    },
    /// The counter is of another kind than the operation needs.
    #[error(
        "counter '{name}' is {} counter, not {} one; it was left unchanged",
        with_article(found),
        with_article(expected)
    )]
    WrongKind {
        /// The counter.
        name: CounterName,
        /// The kind the operation needs.
        expected: &'static str,
        /// The kind the counter is.
        found: &'static str,
    },
    /// The counter is striped: its values come from its lanes, and this
    /// path takes from one counter document only. It was left unchanged.
    #[error(
        "counter '{name}' is striped: its values come from its lanes, which this path \
         does not take from (take with `idmint seq`, `next` or `serve`); it was left unchanged"
    )]
    Striped {
        /// The counter.
        name: CounterName,
    },
    /// A striped counter's map or lanes cannot be used or changed as asked.
    #[error("counter '{name}': {source}")]
    Striping {
        /// The counter.
        name: CounterName,
        /// What is wrong.
        #[source]
        source: super::striping::StripingError,
    },
    /// Runs of consecutive values were asked of a kind whose values are not
    /// runs (one whose [`CounterKind::hands_out_runs`] is false); nothing was
    /// taken.
    ///
    /// [`CounterKind::hands_out_runs`]: crate::sequence::CounterKind::hands_out_runs
    #[error(
        "counter '{name}' is {} counter: its values are not runs of consecutive numbers, \
         so none are taken as ranges; take its values in blocks instead",
        with_article(kind)
    )]
    NoRuns {
        /// The counter.
        name: CounterName,
        /// Its kind.
        kind: &'static str,
    },
    /// No single command takes values of this kind (`idmint pipeline`).
    #[error("{reason}")]
    NoCommand {
        /// The kind.
        kind: &'static str,
        /// Why, and what to do instead.
        reason: &'static str,
    },
    /// The counter has handed out its last value.
    #[error(
        "counter '{name}' is exhausted: it cannot hand out {requested} more value(s) \
         without passing {limit}; it was left unchanged"
    )]
    Exhausted {
        /// The counter.
        name: CounterName,
        /// How many values were asked for.
        requested: u64,
        /// The largest value the counter may hand out.
        limit: u64,
    },
    /// Every tag a snowflake counter can get in this database is taken
    /// (`kinds/snowflake/tag.rs`); nothing was written to the counter.
    #[error(
        "cannot give counter '{name}' a tag: the database's {limit} snowflake counter tags \
         are all taken"
    )]
    TagsExhausted {
        /// The counter that needed a tag.
        name: CounterName,
        /// The largest tag.
        limit: u32,
    },
    /// Every tag drawn for a snowflake counter in a row was claimed
    /// already, by counters of other deployments that spread their tags
    /// here (`kinds/snowflake/tag_claim.rs`); nothing was written to the
    /// counter, and the tags drawn are skipped.
    #[error(
        "cannot give counter '{name}' a tag: the {attempts} tags drawn in a row, up to {last}, \
         were claimed already by counters brought here from other deployments; nothing was \
         written to the counter, try again"
    )]
    TagsClaimed {
        /// The counter that needed a tag.
        name: CounterName,
        /// How many tags were drawn.
        attempts: u32,
        /// The last tag drawn.
        last: u32,
    },
    /// More values were asked for in one request than one round trip takes.
    #[error(
        "cannot take {requested} values of counter '{name}' at once: at most {max} per request"
    )]
    TooMany {
        /// The counter.
        name: CounterName,
        /// How many values were asked for.
        requested: usize,
        /// The largest block.
        max: usize,
    },
    /// A count out of range was asked for (a library caller's mistake: the
    /// CLI and the service check counts first).
    #[error("cannot take {requested} values of counter '{name}': ask for 1 to {max}")]
    InvalidCount {
        /// The counter.
        name: CounterName,
        /// How many values were asked for.
        requested: u64,
        /// The most one call takes.
        max: u64,
    },
    /// A formatted ID was asked for with a prefix its counter does not own.
    #[error("{}", prefix_not_owned(name, prefix, owned))]
    PrefixNotOwned {
        /// The counter.
        name: CounterName,
        /// The prefix asked for.
        prefix: String,
        /// The prefixes the counter owns.
        owned: Vec<String>,
    },
    /// Another counter owns the prefix; nothing was written.
    #[error(
        "prefix {prefix:?} is owned by counter '{owner}': the formatted IDs of two counters must \
         not share a prefix, or they can collide; choose another prefix, or create the counter \
         with --raw if it only hands out raw values (seq, values, ranges)"
    )]
    PrefixTaken {
        /// The prefix.
        prefix: String,
        /// The counter that owns it.
        owner: String,
    },
    /// The prefix has formatted IDs for a counter before (`released`: that
    /// counter gave it up; otherwise that counter no longer exists), so it
    /// is never owned again; nothing was written.
    #[error(
        "prefix {prefix:?} {}: IDs formatted with it may exist, and a new owner would format \
         them again, so a prefix is never owned twice; choose a new prefix",
        retired_how(counter, *released)
    )]
    PrefixRetired {
        /// The prefix.
        prefix: String,
        /// The counter that owned it last.
        counter: String,
        /// Whether that counter gave it up (else it was deleted).
        released: bool,
    },
    /// The server's unique index on the counters' prefixes refused a
    /// prefix that no counter owns now (an index entry left behind by a
    /// document that no longer holds it); nothing was written.
    #[error(
        "the server's unique index on counters.prefixes refused counter '{name}' one of the \
         prefixes {prefixes:?}, which no counter owns now: the index holds an entry for a \
         document that no longer has it; rebuild the index (db.counters.dropIndex(\"idmint_prefixes\"), \
         then idmint install); nothing was written"
    )]
    PrefixIndexStale {
        /// The counter.
        name: CounterName,
        /// The prefixes it asked for.
        prefixes: Vec<String>,
    },
    /// More than one counter owns the prefix (documents made before idmint
    /// declared owners): no ID is formatted with it until that is resolved.
    #[error(
        "prefix {prefix:?} is owned by counters {}: their formatted IDs can collide, so none is \
         formatted with it; give all but one a prefix of its own (idmint counter prefix add NAME \
         NEW, then idmint counter prefix remove NAME {prefix:?}); nothing was taken",
        counters.join(", ")
    )]
    PrefixShared {
        /// The prefix.
        prefix: String,
        /// The counters that own it.
        counters: Vec<String>,
    },
    /// A worker lease document is malformed; it was left unchanged.
    #[error("worker lease {id} of counter '{counter}' is corrupt: {reason}; it was left unchanged, fix or delete it")]
    CorruptLease {
        /// The counter.
        counter: CounterName,
        /// The lease's `_id`.
        id: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A live worker lease has an id the counter's layout cannot hold (the
    /// layout was changed by hand under running processes).
    #[error(
        "worker id {worker} of counter '{counter}' is leased and live, but the layout has only \
         {worker_bits} worker bits; it was left unchanged"
    )]
    WorkerOutsideLayout {
        /// The counter.
        counter: CounterName,
        /// The worker id leased.
        worker: u64,
        /// The layout's worker bits.
        worker_bits: u32,
    },
    /// Every worker id of a snowflake counter is leased and live.
    #[error(
        "every worker id of counter '{counter}' ({workers}) is leased and live; \
         the first lease expires at {first_expiry}"
    )]
    NoWorkerFree {
        /// The counter.
        counter: CounterName,
        /// How many worker ids the layout has.
        workers: u64,
        /// When the first live lease expires (RFC 3339).
        first_expiry: String,
    },
    /// The clock went back further than the tolerance and the generator is
    /// set to refuse.
    #[error("counter '{name}': the clock is {by_ms} ms behind the last ID issued; refusing until it catches up")]
    ClockBehind {
        /// The counter.
        name: CounterName,
        /// How far behind, in milliseconds.
        by_ms: u64,
    },
    /// The worker lease could not be proved valid, nor regained in time.
    #[error("counter '{name}': the worker lease was lost and not regained within {waited_ms} ms; no ID was issued")]
    LeaseLost {
        /// The counter.
        name: CounterName,
        /// How long the taker waited.
        waited_ms: u64,
    },
    /// The database did not answer an operation within its deadline (a
    /// primary that cannot reach a majority, a network that drops packets);
    /// nothing from it was handed out.
    #[error(
        "counter '{name}': the database did not answer the {action} within {waited_ms} ms \
         (is a majority of the replica set reachable?); nothing was handed out, retry later"
    )]
    Stalled {
        /// The counter.
        name: CounterName,
        /// What was waited for: "segment fetch", "give-back".
        action: &'static str,
        /// How long it waited.
        waited_ms: u64,
    },
    /// The segment allocator was closed (its unused values given back).
    #[error("counter '{0}': the segment allocator is closed")]
    Closed(CounterName),
    /// A counter setting given to `counter create` is out of range.
    #[error("invalid counter setting: {0}")]
    InvalidSpec(String),
    /// The optimistic retry loop lost the race too many times in a row.
    #[error(
        "counter '{name}' is too contended: {attempts} conditional updates in a row lost the race"
    )]
    Contended {
        /// The counter.
        name: CounterName,
        /// How many attempts were made.
        attempts: u32,
    },
    /// The user lacks a privilege on the counters collection.
    #[error(
        "not authorized to {action} counter '{name}': the user needs the {privilege} action(s) on the \
         {collection} collection (role idmintApp grants what apps need, idmintAdmin the rest). Server said: {server_message}"
    )]
    Unauthorized {
        /// The counter.
        name: CounterName,
        /// What idmint was doing: "read", "advance", "create".
        action: &'static str,
        /// The missing action(s), as MongoDB names them.
        privilege: &'static str,
        /// The collection they are needed on.
        collection: &'static str,
        /// The server's message.
        server_message: String,
    },
    /// Listing counters (not one named counter) failed.
    #[error(
        "database error listing the counters: {}",
        crate::mongo::describe_error(source)
    )]
    ListCounters {
        /// The driver's error.
        #[source]
        source: mongodb::error::Error,
    },
    /// The server or the connection failed.
    #[error(
        "database error on counter '{name}': {}",
        crate::mongo::describe_error(source)
    )]
    Database {
        /// The counter being used.
        name: CounterName,
        /// The driver's error.
        #[source]
        source: mongodb::error::Error,
    },
}

impl SequenceError {
    /// Wraps a driver error met while `action`-ing counter `name`: a missing
    /// privilege becomes [`SequenceError::Unauthorized`] naming the
    /// `privilege` (the MongoDB action) the user needs.
    pub(crate) fn from_database(
        name: &CounterName,
        action: &'static str,
        privilege: &'static str,
        source: mongodb::error::Error,
    ) -> Self {
        Self::from_database_on(
            name,
            action,
            privilege,
            crate::mongo::collections::COUNTERS,
            source,
        )
    }

    /// [`SequenceError::from_database`] for a collection other than the
    /// counters (the worker leases).
    pub(crate) fn from_database_on(
        name: &CounterName,
        action: &'static str,
        privilege: &'static str,
        collection: &'static str,
        source: mongodb::error::Error,
    ) -> Self {
        if crate::mongo::is_unauthorized(&source) {
            return Self::Unauthorized {
                name: name.clone(),
                action,
                privilege,
                collection,
                server_message: crate::mongo::server_message(&source)
                    .unwrap_or_default()
                    .to_string(),
            };
        }
        Self::Database {
            name: name.clone(),
            source,
        }
    }

    /// What kind of failure this is (`crate::error_class::ErrorClass`).
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::InvalidCounterName(_)
            | Self::InvalidSpec(_)
            | Self::NoCommand { .. }
            | Self::TooMany { .. }
            | Self::InvalidCount { .. } => ErrorClass::BadInput,
            Self::UnknownCounter(_) => ErrorClass::NotFound,
            Self::CounterExists(_)
            | Self::CorruptCounter { .. }
            | Self::UnknownKind { .. }
            | Self::WrongKind { .. }
            | Self::Striped { .. }
            | Self::NoRuns { .. }
            | Self::CorruptLease { .. }
            | Self::WorkerOutsideLayout { .. }
            | Self::PrefixNotOwned { .. }
            | Self::PrefixTaken { .. }
            | Self::PrefixRetired { .. }
            | Self::PrefixIndexStale { .. }
            | Self::PrefixShared { .. } => ErrorClass::Conflict,
            Self::Exhausted { .. } | Self::TagsExhausted { .. } => ErrorClass::Exhausted,
            Self::NoWorkerFree { .. }
            | Self::ClockBehind { .. }
            | Self::LeaseLost { .. }
            | Self::Closed(_)
            | Self::Stalled { .. }
            | Self::Contended { .. }
            | Self::TagsClaimed { .. } => ErrorClass::Unavailable,
            Self::Unauthorized { .. } => ErrorClass::Unauthorized,
            Self::Striping { source, .. } => source.class(),
            Self::ListCounters { source } | Self::Database { source, .. } => {
                crate::error_class::database_class(source)
            }
        }
    }
}

/// How a retired prefix left its counter, for [`SequenceError::PrefixRetired`].
fn retired_how(counter: &str, released: bool) -> String {
    if released {
        format!("was given up by counter '{counter}'")
    } else {
        format!("was owned by an earlier counter '{counter}' that no longer exists")
    }
}

/// The message of [`SequenceError::PrefixNotOwned`].
fn prefix_not_owned(name: &CounterName, prefix: &str, owned: &[String]) -> String {
    if owned.is_empty() {
        return format!(
            "counter '{name}' owns no prefix: it hands out raw values only (seq, values, \
             ranges); give it one with `idmint counter prefix add {name} PREFIX`"
        );
    }
    let owned: Vec<String> = owned.iter().map(|p| format!("{p:?}")).collect();
    format!(
        "counter '{name}' does not own prefix {prefix:?} (it owns {}): IDs with another \
         counter's prefix could collide with that counter's; nothing was taken",
        owned.join(", ")
    )
}

/// A kind's name with its article: "a cyclic", "an autoinc".
pub(crate) fn with_article(kind: &str) -> String {
    let an = kind.starts_with(['a', 'e', 'i', 'o', 'u']);
    format!("{} {kind}", if an { "an" } else { "a" })
}

/// The error of counter `name`'s striping.
pub(crate) fn striping(
    name: &CounterName,
    source: crate::sequence::striping::StripingError,
) -> SequenceError {
    SequenceError::Striping {
        name: name.clone(),
        source,
    }
}
