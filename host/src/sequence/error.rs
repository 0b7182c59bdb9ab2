//! Errors of the sequence strategies.

use super::CounterName;

/// Why a sequence value could not be handed out (or a counter not created).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SequenceError {
    /// The counter name breaks the naming rules; nothing was sent to the server.
    #[error("invalid counter name {name:?}: {reason}")]
    InvalidCounterName {
        /// The name as given.
        name: String,
        /// Which rule it breaks.
        reason: String,
    },
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
         counters collection (role idmintApp grants what apps need, idmintAdmin the rest). Server said: {server_message}"
    )]
    Unauthorized {
        /// The counter.
        name: CounterName,
        /// What idmint was doing: "read", "advance", "create".
        action: &'static str,
        /// The missing action(s), as MongoDB names them.
        privilege: &'static str,
        /// The server's message.
        server_message: String,
    },
    /// The server or the connection failed.
    #[error("database error on counter '{name}': {source}")]
    Database {
        /// The counter being used.
        name: CounterName,
        /// The driver's error.
        #[source]
        source: mongodb::error::Error,
    },
}

impl SequenceError {
    /// True when the caller asked for something that cannot be done as asked
    /// (bad name, unknown or corrupt counter, bad setting): retrying won't help.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            Self::InvalidCounterName { .. }
                | Self::UnknownCounter(_)
                | Self::CounterExists(_)
                | Self::CorruptCounter { .. }
                | Self::InvalidSpec(_)
        )
    }

    /// True when the server could not be reached or failed the operation.
    pub fn is_database(&self) -> bool {
        matches!(
            self,
            Self::Database { .. } | Self::Contended { .. } | Self::Unauthorized { .. }
        )
    }
}
