//! The crate's umbrella error: one variant per concept, each wrapping that
//! concept's own typed error.

use crate::config::ConnectError;
use crate::installer::InstallError;
use crate::policy::PolicyError;
use crate::sequence::SequenceError;

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
    PolicyStore(#[from] crate::policy::PolicyStoreError),
    /// Loading or running an ID policy failed.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The policy cannot serve the counter (capacity, or time).
    #[error(transparent)]
    Fit(#[from] crate::policy::FitError),
    /// Application tokens (`idmint serve`'s access) cannot be read or written.
    #[error(transparent)]
    Access(#[from] crate::tokens::AccessError),
}
