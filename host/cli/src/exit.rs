//! Exit codes, decided in one place from the error's typed cause.

use idmint::policy::PolicyError;
use idmint::sequence::SequenceError;
use idmint::Error;

/// The command ran, but found invalid IDs or drift.
pub const EXIT_FAILURE: u8 = 1;
/// Bad input or usage: unknown or corrupt counter, bad name, bad prefix, bad flag.
pub const EXIT_USAGE: u8 = 2;
/// The database could not be reached or failed the operation.
pub const EXIT_DATABASE: u8 = 3;
/// The policy could not be loaded or failed.
pub const EXIT_POLICY: u8 = 4;
/// `lock run`: the lock was not had within --wait (EX_TEMPFAIL).
pub const EXIT_LOCK_BUSY: u8 = 75;
/// `lock run`: the lease was lost while COMMAND ran (COMMAND was stopped);
/// `lock release --force` that raced with a new holder.
pub const EXIT_LOCK_LOST: u8 = 76;

/// How a command that did not fail ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// All good: exit 0.
    Success,
    /// Completed, but something checked is not right (invalid IDs, drift): exit 1.
    Failure,
    /// Exit with this code (`lock run` passes on its COMMAND's).
    Exit(u8),
}

impl Outcome {
    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            Outcome::Success => 0,
            Outcome::Failure => EXIT_FAILURE,
            Outcome::Exit(code) => code,
        }
    }
}

/// A usage error found by the CLI itself (not by clap or the library).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// The exit code for an error: the first typed cause in its chain decides.
pub fn exit_code(error: &anyhow::Error) -> u8 {
    for cause in error.chain() {
        if let Some(error) = cause.downcast_ref::<Error>() {
            return match error {
                Error::Connect(_) => EXIT_USAGE,
                Error::Sequence(error) => sequence_code(error),
                Error::Policy(error) => policy_code(error),
                Error::Fit(_) => EXIT_POLICY,
                Error::PolicyStore(error) => policy_store_code(error),
                Error::Install(error) => install_code(error),
                Error::Access(idmint::tokens::AccessError::Database(_)) => EXIT_DATABASE,
                Error::Access(_) => EXIT_USAGE,
                _ => EXIT_DATABASE,
            };
        }
        if let Some(error) = cause.downcast_ref::<SequenceError>() {
            return sequence_code(error);
        }
        if let Some(error) = cause.downcast_ref::<PolicyError>() {
            return policy_code(error);
        }
        if let Some(error) = cause.downcast_ref::<idmint::lock::LockError>() {
            return lock_code(error);
        }
        if cause.is::<idmint::config::ConnectError>() || cause.is::<UsageError>() {
            return EXIT_USAGE;
        }
        if let Some(error) = cause.downcast_ref::<idmint::policy::PolicyStoreError>() {
            return policy_store_code(error);
        }
        if let Some(error) = cause.downcast_ref::<idmint::installer::InstallError>() {
            return install_code(error);
        }
        if cause.is::<mongodb::error::Error>() {
            return EXIT_DATABASE;
        }
    }
    EXIT_USAGE
}

fn sequence_code(error: &SequenceError) -> u8 {
    if error.is_bad_input() {
        EXIT_USAGE
    } else {
        EXIT_DATABASE
    }
}

fn lock_code(error: &idmint::lock::LockError) -> u8 {
    use idmint::lock::LockError as E;
    match error {
        E::Busy { .. } => EXIT_LOCK_BUSY,
        E::Lost { .. } => EXIT_LOCK_LOST,
        E::NotHeld(_) => EXIT_FAILURE,
        _ if error.is_bad_input() => EXIT_USAGE,
        _ => EXIT_DATABASE,
    }
}

fn policy_store_code(error: &idmint::policy::PolicyStoreError) -> u8 {
    use idmint::policy::PolicyStoreError as E;
    match error {
        E::Database { .. } => EXIT_DATABASE,
        // The stored bytes no longer match their recorded sha256: drift, like `status`.
        E::ChecksumMismatch { .. } | E::Corrupt { .. } => EXIT_FAILURE,
        // The module failed the offline checks.
        E::Rejected { .. } => EXIT_POLICY,
        _ => EXIT_USAGE,
    }
}

fn install_code(error: &idmint::installer::InstallError) -> u8 {
    // Drift (hand edits, foreign items, a concurrent change) is exit 1, like `status`.
    if error.is_drift() {
        EXIT_FAILURE
    } else {
        EXIT_DATABASE
    }
}

fn policy_code(error: &PolicyError) -> u8 {
    match error {
        // The policy works; it refused the caller's input (a bad prefix).
        PolicyError::Format(_) | PolicyError::UnknownBuiltin { .. } => EXIT_USAGE,
        _ => EXIT_POLICY,
    }
}

/// True when stdout was closed by the reader (`idmint next c --count 1000 | head`):
/// not an error worth reporting.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
