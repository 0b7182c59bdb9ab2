//! The crate's umbrella error, and the one classification of every failure.
//!
//! Each concept has its own typed error (`SequenceError`, `PolicyError`,
//! `LockError`, ...), and each says what kind of failure it is with
//! `class()`: an [`ErrorClass`]. That is the only place failures are
//! classified; the CLI's exit codes and the service's HTTP statuses are each
//! one table over [`ErrorClass`] (`idmint-cli`'s `exit.rs`,
//! `idmint-serve`'s `error.rs`), and retry logic asks
//! [`ErrorClass::is_retryable`]. The classes are in `class.rs`, apart from
//! the umbrella, so that each concept's error can name its class without
//! importing the umbrella that wraps it.

use crate::config::ConnectError;
use crate::installer::InstallError;
use crate::lock::LockError;
use crate::policy::{FitError, PolicyError, PolicyStoreError};
use crate::sequence::SequenceError;
use crate::tokens::AccessError;

pub use class::ErrorClass;

pub(crate) mod class;

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
    /// Taking, renewing or releasing a lock failed.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// Application tokens (`idmint serve`'s access) cannot be read or written.
    #[error(transparent)]
    Access(#[from] AccessError),
}

/// A policy that cannot serve a counter is a policy error: its one home is
/// [`PolicyError::Fit`].
impl From<FitError> for Error {
    fn from(error: FitError) -> Self {
        Error::Policy(error.into())
    }
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
            Error::Lock(error) => error.class(),
            Error::Access(error) => error.class(),
        }
    }
}
