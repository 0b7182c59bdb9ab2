//! Why a gap-free series could not be made, numbered or audited.

use crate::error_class::{database_class, ErrorClass};
use crate::sequence::{CounterName, InvalidCounterName};

/// The label the server puts on an error after which the whole
/// transaction may be run again.
pub const TRANSIENT_TRANSACTION_ERROR: &str = "TransientTransactionError";

/// Why a gap-free series could not be made, numbered or audited.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SeriesError {
    /// The series name breaks the naming rules (those of counter names).
    #[error(transparent)]
    InvalidName(#[from] InvalidCounterName),
    /// No series has this name.
    #[error("series '{0}' does not exist (create it with `idmint series create {0}`)")]
    UnknownSeries(CounterName),
    /// `series create` found a series of that name already.
    #[error("series '{0}' already exists")]
    SeriesExists(CounterName),
    /// The series document or one of its records is malformed; left as it is.
    #[error("series '{name}' is corrupt: {reason}; it was left unchanged")]
    Corrupt {
        /// The series.
        name: CounterName,
        /// What is wrong.
        reason: String,
    },
    /// The series has handed out its last number.
    #[error("series '{0}' has no number left (its last is 2^63 - 1)")]
    Exhausted(CounterName),
    /// A number was asked for with a session that has no transaction in
    /// progress: its record and the counter would be two writes a crash can
    /// part.
    #[error(
        "series '{0}': a number is taken only inside a transaction (start one on the session \
         first, or use `Series::take`, which runs its own); nothing was taken"
    )]
    NotInTransaction(CounterName),
    /// A number to confirm or void has no record: it was never taken, or
    /// not yet.
    #[error("series '{name}': number {number} was never reserved; nothing was written")]
    NotReserved {
        /// The series.
        name: CounterName,
        /// The number.
        number: u64,
    },
    /// A number to confirm or void is settled otherwise already.
    #[error("series '{name}': number {number} {why}; nothing was written")]
    Settled {
        /// The series.
        name: CounterName,
        /// The number.
        number: u64,
        /// Its state, and why that refuses the call ("is voided ...").
        why: String,
    },
    /// An operation on every series failed (the sweep of expired
    /// reservations, the summaries).
    #[error(
        "{action} of every series failed: {}",
        crate::mongo::describe_error(source)
    )]
    EverySeries {
        /// What was being done.
        action: &'static str,
        /// The driver's error.
        #[source]
        source: mongodb::error::Error,
    },
    /// What was given is malformed (a reference, a start).
    #[error("series '{name}': {reason}; nothing was taken")]
    BadInput {
        /// The series.
        name: CounterName,
        /// What is wrong.
        reason: String,
    },
    /// Another transaction held the series for as long as a take waits: its
    /// writes conflicted every time. Nothing was taken.
    #[error(
        "series '{name}': another transaction held it for {waited_s} s, every run of this one \
         conflicting with it (a client killed in a transaction holds the series until the \
         server aborts that transaction: transactionLifetimeLimitSeconds, 60 s by default); \
         nothing was taken"
    )]
    Held {
        /// The series.
        name: CounterName,
        /// How long the take ran its transaction again, in seconds.
        waited_s: u64,
        /// The last conflict.
        #[source]
        source: Box<SeriesError>,
    },
    /// The database failed the operation. When it says the transaction may
    /// be run again ([`SeriesError::is_transient`]), nothing of it was
    /// kept: run the whole transaction again.
    #[error(
        "series '{name}': {action} failed: {}",
        crate::mongo::describe_error(source)
    )]
    Database {
        /// The series.
        name: CounterName,
        /// What was being done.
        action: &'static str,
        /// The driver's error.
        #[source]
        source: mongodb::error::Error,
    },
}

impl SeriesError {
    /// What kind of failure this is.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::InvalidName(_) | Self::NotInTransaction(_) | Self::BadInput { .. } => {
                ErrorClass::BadInput
            }
            Self::UnknownSeries(_) | Self::NotReserved { .. } => ErrorClass::NotFound,
            Self::SeriesExists(_) | Self::Corrupt { .. } | Self::Settled { .. } => {
                ErrorClass::Conflict
            }
            Self::EverySeries { source, .. } => database_class(source),
            Self::Exhausted(_) => ErrorClass::Exhausted,
            Self::Database { source, .. } => database_class(source),
            Self::Held { .. } => ErrorClass::Unavailable,
        }
    }

    /// Whether the transaction it happened in may be run again whole (the
    /// server labelled it so: a write conflict with another transaction on
    /// the series, a primary that stepped down). Nothing of the aborted
    /// transaction was kept, so its number was never used.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Database { source, .. } if source.contains_label(TRANSIENT_TRANSACTION_ERROR))
    }

    pub(crate) fn database(
        name: &CounterName,
        action: &'static str,
        source: mongodb::error::Error,
    ) -> Self {
        Self::Database {
            name: name.clone(),
            action,
            source,
        }
    }
}
