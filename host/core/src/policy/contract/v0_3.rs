//! Contract 0.3.0 (`guest/wit/0.3.0/`): snowflake fields, but no period.
//! A period is dropped on the way in, and none comes back, so the fit
//! check refuses such a policy for periodic counters.

use super::adapter::adapter;
use crate::parts::{IdParts, Stamp};
use crate::policy::bindings::v0_3::wit;
use crate::policy::types::{shared_conversions, snowflake_conversions};

adapter!(v0_3, "0.3.0", layout: yes);

shared_conversions!(crate::policy::bindings::v0_3::wit);
snowflake_conversions!(crate::policy::bindings::v0_3::wit, untagged);

impl From<wit::FormatError> for FormatError {
    fn from(error: wit::FormatError) -> Self {
        match error {
            wit::FormatError::BadPrefix(reason) => FormatError::BadPrefix(reason),
            wit::FormatError::SequenceOutOfRange(n) => FormatError::SequenceOutOfRange(n),
            wit::FormatError::TimestampOutOfRange(n) => FormatError::TimestampOutOfRange(n),
        }
    }
}

/// The period is dropped: 0.3.0 cannot carry it.
impl From<&IdParts> for wit::IdParts {
    fn from(parts: &IdParts) -> Self {
        wit::IdParts {
            prefix: parts.prefix.clone(),
            timestamp_micros: parts.timestamp_micros,
            sequence: parts.sequence,
            snowflake: parts.snowflake.map(Into::into),
        }
    }
}

impl From<wit::IdParts> for IdParts {
    fn from(parts: wit::IdParts) -> Self {
        IdParts {
            prefix: parts.prefix,
            timestamp_micros: parts.timestamp_micros,
            sequence: parts.sequence,
            snowflake: parts.snowflake.map(Into::into),
            period: None,
        }
    }
}

/// The period is dropped: 0.3.0 cannot carry it.
impl From<&Stamp> for wit::Stamp {
    fn from(stamp: &Stamp) -> Self {
        wit::Stamp {
            timestamp_micros: stamp.timestamp_micros,
            sequence: stamp.sequence,
            snowflake: stamp.snowflake.map(Into::into),
        }
    }
}
