//! The crate's umbrella error, and the one classification of every failure.
//!
//! Each concept has its own typed error (`SequenceError`, `PolicyError`,
//! `LockError`, ...), and each says what kind of failure it is with
//! `class()`: an [`ErrorClass`]. That is the only place failures are
//! classified; the CLI's exit codes and the service's HTTP statuses are each
//! one table over [`ErrorClass`] (`idmint-cli`'s `exit.rs`,
//! `idmint-serve`'s `error.rs`), and retry logic asks
//! [`ErrorClass::is_retryable`]. The classes are in `error_class.rs`, apart
//! from the umbrella, so that each concept's error can name its class without
//! importing the umbrella that wraps it.

use crate::baseline::BaselineError;
use crate::config::ConnectError;
use crate::installer::InstallError;
use crate::lock::{InvalidLockName, LockError};
use crate::policy::{FitError, PolicyError, PolicyStoreError};
use crate::sequence::{InvalidCounterName, SequenceError};
use crate::series::SeriesError;
use crate::tokens::AccessError;

pub use crate::error_class::ErrorClass;

/// An error that says what kind of failure it is: each of the library's
/// errors, and the umbrella.
pub trait Classify {
    /// What kind of failure this is.
    fn class(&self) -> ErrorClass;
}

/// The umbrella [`Error`], one variant per concept's error, and
/// [`ErrorClass::of`], which knows the same errors (and those carried inside
/// them, `also`): one list, so an error the umbrella carries is one a
/// caller holding only a `dyn Error` can classify.
macro_rules! umbrella {
    (
        carries { $( $(#[$doc:meta])* $variant:ident($error:ty), )+ }
        also { $( $inner:ty ),+ $(,)? }
    ) => {
        /// Any error idmint's library can return.
        #[derive(Debug, thiserror::Error)]
        #[non_exhaustive]
        pub enum Error {
            $( $(#[$doc])* #[error(transparent)] $variant(#[from] $error), )+
        }

        impl Classify for Error {
            fn class(&self) -> ErrorClass {
                match self {
                    $( Error::$variant(error) => Classify::class(error), )+
                }
            }
        }

        impl ErrorClass {
            /// The class of `error` if it is one of the library's errors
            /// (the umbrella, one it carries, or one carried inside those);
            /// `None` for any other error.
            pub fn of(error: &(dyn std::error::Error + 'static)) -> Option<ErrorClass> {
                if let Some(error) = error.downcast_ref::<Error>() {
                    return Some(Classify::class(error));
                }
                $( if let Some(error) = error.downcast_ref::<$error>() {
                    return Some(Classify::class(error));
                } )+
                $( if let Some(error) = error.downcast_ref::<$inner>() {
                    return Some(Classify::class(error));
                } )+
                None
            }
        }
    };
}

umbrella! {
    carries {
        /// The connection options are unusable.
        Connect(ConnectError),
        /// Installing or inspecting the server-side functions failed.
        Install(InstallError),
        /// Handing out a sequence value failed.
        Sequence(SequenceError),
        /// Reading or writing the policies collection failed.
        PolicyStore(PolicyStoreError),
        /// Loading or running an ID policy failed.
        Policy(PolicyError),
        /// Taking, renewing or releasing a lock failed.
        Lock(LockError),
        /// Making, numbering or auditing a gap-free series failed.
        Series(SeriesError),
        /// Application tokens (`idmint serve`'s access) cannot be read or written.
        Access(AccessError),
    }
    also { FitError, InvalidLockName, InvalidCounterName, BaselineError }
}

/// Each concept's error classifies itself (its own `class()`).
macro_rules! classified_by_their_own_class {
    ($($error:ty),+) => {
        $(impl Classify for $error {
            fn class(&self) -> ErrorClass {
                <$error>::class(self)
            }
        })+
    };
}

classified_by_their_own_class!(
    InstallError,
    SequenceError,
    PolicyStoreError,
    PolicyError,
    LockError,
    SeriesError,
    AccessError
);

/// Unusable connection options are bad input.
impl Classify for ConnectError {
    fn class(&self) -> ErrorClass {
        ErrorClass::BadInput
    }
}

/// A policy that cannot serve a counter.
impl Classify for FitError {
    fn class(&self) -> ErrorClass {
        ErrorClass::Unfit
    }
}

/// A stored benchmark run that cannot be read, or a threshold that is no
/// share, is bad input.
impl Classify for BaselineError {
    fn class(&self) -> ErrorClass {
        ErrorClass::BadInput
    }
}

/// A counter name that breaks the rules is bad input.
impl Classify for InvalidCounterName {
    fn class(&self) -> ErrorClass {
        ErrorClass::BadInput
    }
}

/// A counter name that breaks the rules is a sequence error (its one home:
/// [`SequenceError::InvalidCounterName`]).
impl From<InvalidCounterName> for Error {
    fn from(error: InvalidCounterName) -> Self {
        Error::Sequence(error.into())
    }
}

/// A lock name that breaks the rules is bad input.
impl Classify for InvalidLockName {
    fn class(&self) -> ErrorClass {
        ErrorClass::BadInput
    }
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
        Classify::class(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::LockName;
    use crate::sequence::CounterName;

    /// What reaches a caller as `dyn Error` is classified whether it came
    /// wrapped in the umbrella, as a concept's error, or as an error carried
    /// inside one; anything else is not the library's.
    #[test]
    fn a_library_error_is_classified_however_it_arrives() {
        let sequence = CounterName::new("a b").unwrap_err();
        assert_eq!(ErrorClass::of(&sequence), Some(ErrorClass::BadInput));
        let wrapped = Error::from(CounterName::new("a b").unwrap_err());
        assert_eq!(ErrorClass::of(&wrapped), Some(ErrorClass::BadInput));
        let lock_name = LockName::new("a b").unwrap_err();
        assert_eq!(ErrorClass::of(&lock_name), Some(ErrorClass::BadInput));
        let other = std::io::Error::other("not ours");
        assert_eq!(ErrorClass::of(&other), None);
    }
}
