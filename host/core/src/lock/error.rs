//! Errors of the lock module.

use std::time::Duration;

use super::name::{InvalidLockName, LockName};

/// Why a lock could not be taken, released or renewed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// The lock name breaks the naming rules; nothing was sent to the server.
    #[error(transparent)]
    InvalidName(#[from] InvalidLockName),
    /// A holder's label is empty, too long or has control characters;
    /// nothing was sent to the server.
    #[error("invalid holder label {label:?}: give 1 to 128 printable characters")]
    InvalidLabel {
        /// The label given.
        label: String,
    },
    /// A semaphore's permits out of range; nothing was sent to the server.
    #[error("invalid permits: {permits} is out of range 1..=1000000")]
    InvalidPermits {
        /// The permits given.
        permits: u32,
    },
    /// A lease ID (`LeaseId`) that is not one; nothing was sent to the
    /// server.
    #[error("invalid lease id: {reason}")]
    InvalidLease {
        /// What is wrong with it.
        reason: String,
    },
    /// A TTL or wait is out of range; nothing was sent to the server.
    #[error("invalid {what}: {value:?} is out of range {min:?}..={max:?}")]
    OutOfRange {
        /// "lease ttl", "wait".
        what: &'static str,
        /// The value given.
        value: Duration,
        /// The smallest accepted.
        min: Duration,
        /// The largest accepted.
        max: Duration,
    },
    /// Someone else holds the lock (and kept it until the deadline, if waiting).
    #[error("lock '{name}' is held by another owner (fencing token {token})")]
    Busy {
        /// The lock.
        name: LockName,
        /// The current holder's fencing token.
        token: i64,
    },
    /// Release or renew found the lock no longer held with this owner and
    /// token: the lease expired and was taken over, or was force-released.
    #[error(
        "lock '{name}' with fencing token {token} is no longer held by this owner (lease lost)"
    )]
    Lost {
        /// The lock.
        name: LockName,
        /// The token of the lost lease.
        token: i64,
    },
    /// No renewal was acknowledged in time: the lease's local deadline (the
    /// last acknowledged renewal's send time plus the TTL, less a tenth) is
    /// near or passed, so the holder can no longer prove it holds the lock
    /// and must stop before the server could give it to someone else.
    #[error(
        "lock '{name}' with fencing token {token} is treated as lost: no renewal was \
         acknowledged within its TTL less the safety margin ({})",
        last_failure.as_deref().unwrap_or("the database did not answer")
    )]
    Unrenewed {
        /// The lock.
        name: LockName,
        /// The token of the lease.
        token: i64,
        /// Why the last renewal attempt failed, if it failed rather than
        /// went unanswered.
        last_failure: Option<String>,
    },
    /// `release --force` found no holder.
    #[error("lock '{0}' is not held")]
    NotHeld(LockName),
    /// The lock document is malformed. idmint reports it and changes nothing.
    #[error("lock '{name}' is corrupt: {reason}; it was left unchanged, fix or delete it")]
    Corrupt {
        /// The lock.
        name: LockName,
        /// What is wrong with it.
        reason: String,
    },
    /// The user lacks a privilege on the locks collection.
    #[error(
        "not authorized to use lock '{name}': the user needs find/insert/update on the locks \
         collection (role idmintApp grants it). Server said: {server_message}"
    )]
    Unauthorized {
        /// The lock.
        name: LockName,
        /// The server's message.
        server_message: String,
    },
    /// The server or the connection failed.
    #[error(
        "database error on lock '{name}': {}",
        crate::mongo::describe_error(source)
    )]
    Database {
        /// The lock.
        name: LockName,
        /// The driver's error.
        #[source]
        source: mongodb::error::Error,
    },
}

impl LockError {
    /// What kind of failure this is.
    pub fn class(&self) -> crate::error_class::ErrorClass {
        use crate::error_class::ErrorClass;
        match self {
            Self::InvalidName(_)
            | Self::InvalidLabel { .. }
            | Self::InvalidPermits { .. }
            | Self::InvalidLease { .. }
            | Self::OutOfRange { .. } => ErrorClass::BadInput,
            Self::Corrupt { .. } => ErrorClass::Conflict,
            Self::Busy { .. } => ErrorClass::Busy,
            Self::Lost { .. } | Self::Unrenewed { .. } => ErrorClass::Lost,
            Self::NotHeld(_) => ErrorClass::NotFound,
            Self::Unauthorized { .. } => ErrorClass::Unauthorized,
            Self::Database { source, .. } => crate::error_class::database_class(source),
        }
    }

    pub(crate) fn database(name: &LockName, source: mongodb::error::Error) -> Self {
        if crate::mongo::is_unauthorized(&source) {
            return Self::Unauthorized {
                name: name.clone(),
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
}

/// Checks that `value` is within `min..=max`.
pub(crate) fn check_range(
    what: &'static str,
    value: Duration,
    min: Duration,
    max: Duration,
) -> Result<Duration, LockError> {
    if (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(LockError::OutOfRange {
            what,
            value,
            min,
            max,
        })
    }
}
