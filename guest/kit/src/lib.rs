//! The policy kit: what idmint's policies share, as a library each policy
//! crate depends on.
//!
//! A policy is a small crate (`guest/default/`, `guest/decimal/`, ...): it
//! writes its format in plain Rust against this kit's types, implements
//! [`Policy`], points `wit_bindgen::generate!` at the contract it
//! implements, and calls [`export!`] to write the `impl Guest` glue:
//!
//! ```ignore
//! mod component {
//!     use super::MyPolicy;
//!
//!     wit_bindgen::generate!({ path: "../wit", world: "id-policy" });
//!     idmint_policy_kit::export!(MyPolicy);
//! }
//! ```
//!
//! The kit holds no WIT type: the contract (`guest/wit/`) stays the only
//! thing a policy shares with the host, and the macro converts between the
//! kit's plain types and the bindings the policy crate generated from it,
//! once per contract version. Everything else here is plain Rust, tested
//! natively with `cargo test -p idmint-policy-kit`:
//!
//! - the failures ([`FormatFailure`], [`Invalid`]) that mirror the WIT
//!   `format-error` and `invalid-id`;
//! - the prefix rules ([`check_prefix`]) and [`expect_prefix`];
//! - digit writing and reading ([`put_digits`], [`number`]) and the shape of
//!   one ID and of a batch ([`format_id`], [`format_batch`]);
//! - the calendar ([`civil`]);
//! - snowflake decoding ([`snowflake`]);
//! - periods and their labels ([`period`], contract 0.4.0);
//! - UUIDv7 and ULID payloads made from snowflake fields ([`standard`]).
//!
//! The kit must not depend on wit-bindgen or on any policy: a policy that
//! builds on another one (the `runaway` fixture on the default policy)
//! depends on that policy's crate, not on the kit growing its format.

pub mod civil;
mod digits;
mod export;
mod failure;
pub mod period;
mod prefix;
pub mod snowflake;
pub mod standard;

pub use digits::{format_batch, format_id, number, put_digits};
pub use failure::{FormatFailure, Invalid};
pub use period::{Period, PeriodUnit};
pub use prefix::{char_at, check_prefix, expect_prefix, is_prefix_byte, MAX_PREFIX_LEN};
pub use snowflake::{Fields as SnowflakeFields, Layout as SnowflakeLayout};

/// The last timestamp four year digits can write: 9999-12-31T23:59:59.999999Z.
pub const MAX_TIMESTAMP_MICROS: u64 = 253_402_300_799_999_999;

/// The parts of one ID less its prefix (WIT `stamp`): what a policy formats.
///
/// A contract that lacks a field gives `None` for it: snowflake fields
/// before 0.3.0, the period before 0.4.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stamp {
    /// Microseconds since 1970-01-01T00:00:00Z.
    pub timestamp_micros: u64,
    /// The counter value; for a snowflake ID, the whole 64-bit ID.
    pub sequence: u64,
    /// For a snowflake ID, its fields.
    pub snowflake: Option<SnowflakeFields>,
    /// For a periodic counter's value, its period.
    pub period: Option<Period>,
}

impl Stamp {
    /// The stamp of `sequence` at `timestamp_micros`, with no snowflake
    /// fields and no period.
    pub const fn new(timestamp_micros: u64, sequence: u64) -> Self {
        Stamp {
            timestamp_micros,
            sequence,
            snowflake: None,
            period: None,
        }
    }
}

/// An ID read back (WIT `id-parts`): its prefix is `id[..prefix_len]`, so
/// that the glue can hand the host the ID's own allocation as the prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parsed {
    /// Length of the prefix in bytes; always a char boundary of the ID.
    pub prefix_len: usize,
    /// Microseconds since the epoch; 0 from a policy that writes no time.
    pub timestamp_micros: u64,
    /// The counter value.
    pub sequence: u64,
    /// The snowflake fields, when the policy read the ID with a layout.
    pub snowflake: Option<SnowflakeFields>,
    /// The period, from a policy that writes it.
    pub period: Option<Period>,
}

impl Parsed {
    /// An ID whose prefix is `prefix_len` bytes, with the time and value
    /// read back, and no snowflake fields or period.
    pub const fn new(prefix_len: usize, timestamp_micros: u64, sequence: u64) -> Self {
        Parsed {
            prefix_len,
            timestamp_micros,
            sequence,
            snowflake: None,
            period: None,
        }
    }
}

/// An ID policy in plain Rust: what [`export!`] exports as the `id-policy`
/// world of the contract the crate binds.
///
/// Each method is the WIT export of the same name; the glue converts the
/// arguments and answers. `describe` is made of [`Policy::NAME`],
/// [`Policy::SEQUENCE_CAPACITY`], [`Policy::MAX_PREFIX_LEN`] and the
/// crate's version.
pub trait Policy {
    /// A short machine-friendly name, e.g. `"default"`.
    const NAME: &'static str;
    /// How many distinct sequence values an ID holds: 100 for two digits.
    const SEQUENCE_CAPACITY: u64;
    /// The longest prefix accepted, in bytes.
    const MAX_PREFIX_LEN: usize = MAX_PREFIX_LEN;

    /// Formats many IDs that share `prefix`: each followed by `'\n'`, in
    /// the order of the stamps (WIT `format-batch`).
    fn format_batch(
        prefix: &str,
        stamps: impl ExactSizeIterator<Item = Stamp>,
    ) -> Result<String, FormatFailure>;

    /// Formats one ID (WIT `format`). By default, a batch of one without
    /// its line feed; a policy on the hot path may write it directly.
    fn format(prefix: &str, stamp: Stamp) -> Result<String, FormatFailure> {
        let mut id = Self::format_batch(prefix, std::iter::once(stamp))?;
        id.pop(); // the batch's line feed
        Ok(id)
    }

    /// Reads an ID back into its parts, or says precisely why it is not
    /// valid (WIT `validate`). With `expected_prefix`, an ID whose prefix
    /// differs is [`Invalid::BadPrefix`]; `layout` is a snowflake counter's,
    /// for a policy that can read snowflake IDs.
    fn validate(
        id: &str,
        expected_prefix: Option<&str>,
        layout: Option<&SnowflakeLayout>,
    ) -> Result<Parsed, Invalid>;
}
