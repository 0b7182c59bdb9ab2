//! The host's own types for what crosses the policy boundary besides the
//! parts of an ID (`crate::parts`): what a policy says about itself, and why
//! it refused a value or an ID.
//!
//! They mirror the records and variants of `guest/wit/policy.wit` but are
//! plain Rust with `serde` support, so that the rest of idmint (the minter,
//! the CLI's JSON output) never touches generated bindings. Each contract
//! version's adapter (`contract/v0_4.rs`, ...) converts its bindings to and
//! from them; the conversions every version shares are the macros below.

use std::fmt;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

/// What a policy says about itself, read once when it is loaded.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct PolicyInfo {
    /// A short machine-friendly name, e.g. `"default"`.
    pub name: String,
    /// The policy's own version (semver).
    pub version: String,
    /// How many distinct sequence values an ID holds (100 for two digits). A
    /// counter whose maximum value is at least this cannot be served.
    pub sequence_capacity: u64,
    /// The longest prefix accepted, in bytes.
    pub max_prefix_len: u32,
}

/// Why a policy refused to format an ID.
///
/// Serialized as an object with a stable `kind` (`"bad-prefix"`,
/// `"sequence-out-of-range"`, `"timestamp-out-of-range"`, `"bad-period"`),
/// the human `message`, and the variant's value.
#[derive(Debug, Clone, PartialEq, Eq, Hash, thiserror::Error)]
pub enum FormatError {
    /// The prefix is not allowed; the text, from the policy, says why.
    #[error("bad prefix: {0}")]
    BadPrefix(String),
    /// The sequence value is not below the policy's sequence capacity.
    #[error("sequence value {0} is out of range for this policy")]
    SequenceOutOfRange(u64),
    /// The policy cannot write this timestamp (for example one past year 9999).
    #[error("timestamp {0} (microseconds since the Unix epoch) is out of range for this policy")]
    TimestampOutOfRange(u64),
    /// The policy cannot write this period (contract 0.4.0); the text, from
    /// the policy, says why.
    #[error("bad period: {0}")]
    BadPeriod(String),
}

impl FormatError {
    /// The stable machine-readable name of the variant, as serialized in `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            FormatError::BadPrefix(_) => "bad-prefix",
            FormatError::SequenceOutOfRange(_) => "sequence-out-of-range",
            FormatError::TimestampOutOfRange(_) => "timestamp-out-of-range",
            FormatError::BadPeriod(_) => "bad-period",
        }
    }
}

impl Serialize for FormatError {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("FormatError", 3)?;
        s.serialize_field("kind", self.kind())?;
        s.serialize_field("message", &self.to_string())?;
        match self {
            FormatError::BadPrefix(reason) | FormatError::BadPeriod(reason) => {
                s.serialize_field("reason", reason)?
            }
            FormatError::SequenceOutOfRange(sequence) => s.serialize_field("sequence", sequence)?,
            FormatError::TimestampOutOfRange(micros) => {
                s.serialize_field("timestamp_micros", micros)?
            }
        }
        s.end()
    }
}

/// Why a string is not a valid ID under a policy.
///
/// Serialized as an object with a stable `kind` (`"wrong-length"`,
/// `"bad-prefix"`, `"non-digit"`, `"impossible-date"`, `"malformed"`), the human `message`,
/// and the variant's fields.
#[derive(Debug, Clone, PartialEq, Eq, Hash, thiserror::Error)]
pub enum InvalidId {
    /// The ID is too short or too long.
    #[error("wrong length: {found} bytes, expected {min} to {max}")]
    WrongLength {
        /// Length found, in bytes.
        found: u32,
        /// Shortest valid length, in bytes.
        min: u32,
        /// Longest valid length, in bytes.
        max: u32,
    },
    /// The prefix uses characters the policy forbids, or is not the expected one.
    #[error("bad prefix: {0}")]
    BadPrefix(String),
    /// A decimal digit was expected.
    #[error("not a digit: {} at byte {position}", DisplayChar(*found))]
    NonDigit {
        /// Byte offset of the character in the ID.
        position: u32,
        /// The character found there.
        found: char,
    },
    /// The digits name a time that does not exist (month 13, 30 February, ...).
    #[error("impossible date: {0}")]
    ImpossibleDate(String),
    /// A separator or check character is wrong (WIT 0.2.0); the text says what.
    #[error("malformed: {0}")]
    Malformed(String),
}

impl InvalidId {
    /// The stable machine-readable name of the variant, as serialized in `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            InvalidId::WrongLength { .. } => "wrong-length",
            InvalidId::BadPrefix(_) => "bad-prefix",
            InvalidId::NonDigit { .. } => "non-digit",
            InvalidId::ImpossibleDate(_) => "impossible-date",
            InvalidId::Malformed(_) => "malformed",
        }
    }
}

impl Serialize for InvalidId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let fields = match self {
            InvalidId::WrongLength { .. } => 5,
            InvalidId::NonDigit { .. } => 4,
            InvalidId::BadPrefix(_) | InvalidId::ImpossibleDate(_) | InvalidId::Malformed(_) => 3,
        };
        let mut s = serializer.serialize_struct("InvalidId", fields)?;
        s.serialize_field("kind", self.kind())?;
        s.serialize_field("message", &self.to_string())?;
        match self {
            InvalidId::WrongLength { found, min, max } => {
                s.serialize_field("found", found)?;
                s.serialize_field("min", min)?;
                s.serialize_field("max", max)?;
            }
            InvalidId::NonDigit { position, found } => {
                s.serialize_field("position", position)?;
                s.serialize_field("found", found)?;
            }
            InvalidId::BadPrefix(reason)
            | InvalidId::ImpossibleDate(reason)
            | InvalidId::Malformed(reason) => {
                s.serialize_field("reason", reason)?;
            }
        }
        s.end()
    }
}

/// Shows a character quoted and escaped, with its code point when it is not
/// plain printable ASCII, so that an invisible or look-alike character in an
/// ID is named unambiguously: `'x'`, `'\n' (U+000A)`, `'é' (U+00E9)`.
struct DisplayChar(char);

impl fmt::Display for DisplayChar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.0;
        if c.is_ascii_graphic() || c == ' ' {
            write!(f, "{c:?}")
        } else {
            write!(f, "{c:?} (U+{:04X})", u32::from(c))
        }
    }
}

/// Conversions the same in every contract version: `$wit` is one version's
/// generated `types` module. `policy-info` and `invalid-id` have not changed
/// since 0.2.0; what differs between versions is converted in each
/// version's adapter (`contract/v0_4.rs`, ...), which calls this.
macro_rules! shared_conversions {
    ($wit:path) => {
        const _: () = {
            use $crate::policy::types::{InvalidId, PolicyInfo};
            use $wit as wit;

            impl From<wit::PolicyInfo> for PolicyInfo {
                fn from(info: wit::PolicyInfo) -> Self {
                    PolicyInfo {
                        name: info.name,
                        version: info.version,
                        sequence_capacity: info.sequence_capacity,
                        max_prefix_len: info.max_prefix_len,
                    }
                }
            }

            impl From<wit::InvalidId> for InvalidId {
                fn from(invalid: wit::InvalidId) -> Self {
                    match invalid {
                        wit::InvalidId::WrongLength(w) => InvalidId::WrongLength {
                            found: w.found,
                            min: w.min,
                            max: w.max,
                        },
                        wit::InvalidId::BadPrefix(reason) => InvalidId::BadPrefix(reason),
                        wit::InvalidId::NonDigit(n) => InvalidId::NonDigit {
                            position: n.position,
                            found: n.found,
                        },
                        wit::InvalidId::ImpossibleDate(reason) => InvalidId::ImpossibleDate(reason),
                        wit::InvalidId::Malformed(reason) => InvalidId::Malformed(reason),
                    }
                }
            }
        };
    };
}
pub(super) use shared_conversions;

/// The snowflake conversions of every version since 0.3.0 (the layout and
/// an ID's fields), for `$wit`, one version's generated `types` module:
/// `tagged` (0.5.0) carries the counter's tag and salt, `untagged` (0.3.0,
/// 0.4.0) drops them, which no such policy writes.
macro_rules! snowflake_conversions {
    ($wit:path, tagged) => {
        $crate::policy::types::snowflake_conversions!(@layout $wit);
        const _: () = {
            use $crate::parts::SnowflakeParts;
            use $wit as wit;

            impl From<SnowflakeParts> for wit::SnowflakeFields {
                fn from(parts: SnowflakeParts) -> Self {
                    wit::SnowflakeFields {
                        time: parts.time,
                        worker: parts.worker,
                        sequence: parts.seq,
                        tag: parts.tag,
                        salt: parts.salt,
                    }
                }
            }

            impl From<wit::SnowflakeFields> for SnowflakeParts {
                fn from(fields: wit::SnowflakeFields) -> Self {
                    SnowflakeParts {
                        time: fields.time,
                        worker: fields.worker,
                        seq: fields.sequence,
                        tag: fields.tag,
                        salt: fields.salt,
                    }
                }
            }
        };
    };
    ($wit:path, untagged) => {
        $crate::policy::types::snowflake_conversions!(@layout $wit);
        const _: () = {
            use $crate::parts::SnowflakeParts;
            use $wit as wit;

            impl From<SnowflakeParts> for wit::SnowflakeFields {
                fn from(parts: SnowflakeParts) -> Self {
                    wit::SnowflakeFields {
                        time: parts.time,
                        worker: parts.worker,
                        sequence: parts.seq,
                    }
                }
            }

            impl From<wit::SnowflakeFields> for SnowflakeParts {
                fn from(fields: wit::SnowflakeFields) -> Self {
                    SnowflakeParts {
                        time: fields.time,
                        worker: fields.worker,
                        seq: fields.sequence,
                        ..SnowflakeParts::default()
                    }
                }
            }
        };
    };
    (@layout $wit:path) => {
        const _: () = {
            use $crate::parts::Layout;
            use $wit as wit;

            impl From<&Layout> for wit::SnowflakeLayout {
                fn from(layout: &Layout) -> Self {
                    // A stored layout passed `check_shape`: each field is below 64 bits.
                    let bits = |n: u32| u8::try_from(n).unwrap_or(u8::MAX);
                    wit::SnowflakeLayout {
                        time_bits: bits(layout.time_bits),
                        worker_bits: bits(layout.worker_bits),
                        sequence_bits: bits(layout.seq_bits),
                        unit_millis: if layout.unit.millis() == 1 { 1 } else { 1000 },
                        epoch_millis: layout.epoch_ms,
                    }
                }
            }
        };
    };
}
pub(super) use snowflake_conversions;
