//! The crate's umbrella error, and the one classification of every failure.
//!
//! Each concept has its own typed error (`SequenceError`, `PolicyError`,
//! `LockError`, ...), and each says what kind of failure it is with
//! `class()`: an [`ErrorClass`]. That is the only place failures are
//! classified; the CLI's exit codes and the service's HTTP statuses are each
//! one table over [`ErrorClass`] (`idmint-cli`'s `exit.rs`,
//! `idmint-serve`'s `error.rs`), and retry logic asks
//! [`ErrorClass::is_retryable`].

use crate::config::ConnectError;
use crate::installer::InstallError;
use crate::lock::LockError;
use crate::policy::{FitError, PolicyError, PolicyStoreError};
use crate::sequence::SequenceError;
use crate::tokens::AccessError;

/// What kind of failure an error is (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ErrorClass {
    /// The caller asked for something malformed or out of range (a name, a
    /// setting, a count, a prefix the policy refuses): nothing was done, and
    /// asking again the same way fails again.
    BadInput,
    /// What was named does not exist (a counter, a stored policy version, an
    /// app, a lock holder).
    NotFound,
    /// It exists, but not as this needs it: another kind, already there,
    /// a document idmint cannot read (left unchanged).
    Conflict,
    /// A counter has no values left to hand out.
    Exhausted,
    /// The policy cannot serve the counter (too few sequence values, or it
    /// writes neither the time nor the period that would keep IDs unique).
    Unfit,
    /// A lock is held by another owner.
    Busy,
    /// A lease or lock this process held was lost.
    Lost,
    /// What is installed is not what idmint wrote (changed by hand, another
    /// writer's, a checksum that no longer matches).
    Drift,
    /// The database could not be reached, failed the operation, or is too
    /// contended; or a lease needed to issue values is not held: retry later.
    Unavailable,
    /// The database user lacks a privilege the operation needs.
    Unauthorized,
    /// The policy could not be loaded or failed (trap, time or memory limit,
    /// bad output, a failed activation check).
    Policy,
}

impl ErrorClass {
    /// Whether the same request may succeed later without changing it.
    pub fn is_retryable(self) -> bool {
        matches!(self, Self::Unavailable | Self::Busy)
    }
}

/// Any error idmint's library can return.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The connection options are unusable.
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// Installing or inspecting the server-side functions failed.
    #[error(transparent)]
    Install(#[from] InstallError),
    /// Handing out a sequence value failed.
    #[error(transparent)]
    Sequence(#[from] SequenceError),
    /// Reading or writing the policies collection failed.
    #[error(transparent)]
    PolicyStore(#[from] PolicyStoreError),
    /// Loading or running an ID policy failed.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The policy cannot serve the counter (capacity, or time).
    #[error(transparent)]
    Fit(#[from] FitError),
    /// Taking, renewing or releasing a lock failed.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// Application tokens (`idmint serve`'s access) cannot be read or written.
    #[error(transparent)]
    Access(#[from] AccessError),
}

impl Error {
    /// What kind of failure this is.
    pub fn class(&self) -> ErrorClass {
        match self {
            Error::Connect(_) => ErrorClass::BadInput,
            Error::Install(error) => error.class(),
            Error::Sequence(error) => error.class(),
            Error::PolicyStore(error) => error.class(),
            Error::Policy(error) => error.class(),
            Error::Fit(_) => ErrorClass::Unfit,
            Error::Lock(error) => error.class(),
            Error::Access(error) => error.class(),
        }
    }
}

/// The class of a driver error met by an operation: a missing privilege
/// is [`ErrorClass::Unauthorized`], anything else [`ErrorClass::Unavailable`].
pub(crate) fn database_class(error: &mongodb::error::Error) -> ErrorClass {
    if crate::mongo::is_unauthorized(error) {
        ErrorClass::Unauthorized
    } else {
        ErrorClass::Unavailable
    }
}
