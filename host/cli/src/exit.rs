//! Exit codes, decided in one place from the error's typed cause.

use idmint::ErrorClass;

/// The command ran, but found invalid IDs or drift; `bench --baseline`: a
/// figure fell by more than the threshold.
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
/// `lock run`: COMMAND ran past `--at-most` and was stopped (as timeout(1)).
pub const EXIT_AT_MOST: u8 = 124;

/// How a command that did not fail ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// All good: exit 0.
    Success,
    /// Completed, but something checked is not right (invalid IDs, drift, a
    /// benchmark figure that fell): exit 1.
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

/// Something the command was asked to check or do turned out not to be so
/// (`lock release --force` of a lock nobody holds): exit 1, like `status`
/// finding drift.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Finding(pub String);

/// The exit code for an error: the class of the first cause in its chain
/// that has one ([`class_of`]), through [`code`].
pub fn exit_code(error: &anyhow::Error) -> u8 {
    if error.chain().any(|cause| cause.is::<Finding>()) {
        return EXIT_FAILURE;
    }
    class_of(error).map_or(EXIT_USAGE, code)
}

/// The exit code of each class of failure: the one table (docs/reference.md, "Exit codes").
pub fn code(class: ErrorClass) -> u8 {
    match class {
        ErrorClass::BadInput
        | ErrorClass::NotFound
        | ErrorClass::Conflict
        | ErrorClass::Exhausted => EXIT_USAGE,
        ErrorClass::Drift => EXIT_FAILURE,
        ErrorClass::Unavailable | ErrorClass::Unauthorized => EXIT_DATABASE,
        ErrorClass::Unfit | ErrorClass::Policy => EXIT_POLICY,
        ErrorClass::Busy => EXIT_LOCK_BUSY,
        ErrorClass::Lost => EXIT_LOCK_LOST,
        // A class added later: a failure of idmint's own, like the database's.
        _ => EXIT_DATABASE,
    }
}

/// The class of the first cause in `error`'s chain that idmint classifies:
/// the service's and the library's errors, through their one boundary
/// (`idmint_serve::class_of`, which ends in `idmint::ErrorClass::of`: the
/// library's umbrella error and what it carries); the CLI's own usage
/// errors are bad input; a bare driver error is the database's.
pub fn class_of(error: &anyhow::Error) -> Option<ErrorClass> {
    error.chain().find_map(|cause| {
        idmint_serve::class_of(cause)
            .or_else(|| cause.is::<UsageError>().then_some(ErrorClass::BadInput))
            .or_else(|| {
                cause
                    .downcast_ref::<mongodb::error::Error>()
                    .map(|_| ErrorClass::Unavailable)
            })
    })
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
