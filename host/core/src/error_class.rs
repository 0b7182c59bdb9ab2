//! The classes of failure ([`ErrorClass`]), apart from the umbrella error so
//! that each concept's error (`SequenceError`, `LockError`, ...) can say its
//! class without importing the umbrella that wraps it.

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

/// The class of a driver error met by an operation: a missing privilege
/// is [`ErrorClass::Unauthorized`], anything else [`ErrorClass::Unavailable`].
pub(crate) fn database_class(error: &mongodb::error::Error) -> ErrorClass {
    if crate::mongo::is_unauthorized(error) {
        ErrorClass::Unauthorized
    } else {
        ErrorClass::Unavailable
    }
}
