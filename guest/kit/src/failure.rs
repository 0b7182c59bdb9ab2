//! Why a policy refuses: plain-Rust mirrors of the WIT `format-error` and
//! `invalid-id`, which the export macro converts to the generated types.

/// Why an ID cannot be formatted; mirrors WIT `format-error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormatFailure {
    /// The prefix breaks the prefix rules; the text says how.
    BadPrefix(String),
    /// The sequence value is at or above the policy's capacity.
    SequenceOutOfRange(u64),
    /// The timestamp is after [`MAX_TIMESTAMP_MICROS`](crate::MAX_TIMESTAMP_MICROS).
    TimestampOutOfRange(u64),
    /// The period is not one the policy can write (contract 0.4.0 and
    /// later); the text says why.
    BadPeriod(String),
}

/// Why a string is not a valid ID; mirrors WIT `invalid-id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalid {
    /// The ID is shorter or longer than the policy allows.
    WrongLength {
        /// Length found, in bytes (saturated to `u32::MAX`).
        found: u32,
        /// Shortest valid length.
        min: u32,
        /// Longest valid length.
        max: u32,
    },
    /// The prefix breaks the prefix rules or is not the expected one.
    BadPrefix(String),
    /// A byte that must be an ASCII digit is not one.
    NonDigit {
        /// Byte offset, in the ID, of the character holding the offending byte.
        position: u32,
        /// That character.
        found: char,
    },
    /// The digits name a time that does not exist or that precedes the epoch.
    ImpossibleDate(String),
    /// A separator or a check character is wrong; the text says which.
    Malformed(String),
}
