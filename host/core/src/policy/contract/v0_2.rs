//! Contract 0.2.0 (`guest/wit/0.2.0/`): neither snowflake fields nor a
//! period, and `validate` takes no layout. What the contract cannot carry
//! is dropped on the way in and absent on the way out.

use super::adapter::adapter;
use crate::parts::{IdParts, Stamp};
use crate::policy::bindings::v0_2::wit;
use crate::policy::types::shared_conversions;

adapter!(v0_2, "0.2.0", layout: no);

shared_conversions!(crate::policy::bindings::v0_2::wit);

impl From<wit::FormatError> for FormatError {
    fn from(error: wit::FormatError) -> Self {
        match error {
            wit::FormatError::BadPrefix(reason) => FormatError::BadPrefix(reason),
            wit::FormatError::SequenceOutOfRange(n) => FormatError::SequenceOutOfRange(n),
            wit::FormatError::TimestampOutOfRange(n) => FormatError::TimestampOutOfRange(n),
        }
    }
}

/// Snowflake fields and the period are dropped: 0.2.0 carries neither.
impl From<&IdParts> for wit::IdParts {
    fn from(parts: &IdParts) -> Self {
        wit::IdParts {
            prefix: parts.prefix.clone(),
            timestamp_micros: parts.timestamp_micros,
            sequence: parts.sequence,
        }
    }
}

impl From<wit::IdParts> for IdParts {
    fn from(parts: wit::IdParts) -> Self {
        IdParts {
            prefix: parts.prefix,
            timestamp_micros: parts.timestamp_micros,
            sequence: parts.sequence,
            snowflake: None,
            period: None,
        }
    }
}

/// Snowflake fields and the period are dropped: 0.2.0 carries neither.
impl From<&Stamp> for wit::Stamp {
    fn from(stamp: &Stamp) -> Self {
        wit::Stamp {
            timestamp_micros: stamp.timestamp_micros,
            sequence: stamp.sequence,
        }
    }
}
