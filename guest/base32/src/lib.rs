//! idmint's base32 policy, for snowflake counters (`idmint counter create
//! NAME --kind snowflake`): an ID is the prefix and the 64-bit value as 13
//! characters of Crockford's base32 (`0-9 A-Z` without `I L O U`),
//! `EVT-06XJ1S2N8G000`. Fixed width, so IDs sort as their values do;
//! case-insensitive when read back, with `I`/`L` read as 1 and `O` as 0.
//! It implements the `id-policy` world of `guest/wit/0.4.0/policy.wit` (contract
//! 0.4.0).
//!
//! The value is written whole: the time inside a snowflake ID is the
//! counter's business (its layout), so `format` ignores the timestamp and
//! `validate` reads it back as 0, which is how a policy says it writes no
//! time of its own. The host then refuses it for cyclic counters. Given
//! the counter's layout (contract 0.3.0 and later), `validate` decodes the
//! value into the ID's time, worker id and sequence. It writes no period,
//! so the host refuses it for periodic counters too.
//!
//! The crate is the policy as a library; its `export` feature makes it the
//! component (generated bindings and exports), which the embedded build
//! turns on (see `guest/default/Cargo.toml` for why it is not on by
//! default).

pub mod format;

use idmint_policy_kit::snowflake::read_value;
use idmint_policy_kit::{FormatFailure, Invalid, Parsed, Policy, SnowflakeLayout, Stamp};

/// The base32 policy.
pub struct Base32Policy;

impl Policy for Base32Policy {
    const NAME: &'static str = "base32";
    const SEQUENCE_CAPACITY: u64 = format::SEQUENCE_CAPACITY;

    fn format_batch(
        prefix: &str,
        stamps: impl ExactSizeIterator<Item = Stamp>,
    ) -> Result<String, FormatFailure> {
        format::format_batch(prefix, stamps.map(|stamp| stamp.sequence))
    }

    /// With a snowflake `layout`, the value is decoded into its fields.
    fn validate(
        id: &str,
        expected_prefix: Option<&str>,
        layout: Option<&SnowflakeLayout>,
    ) -> Result<Parsed, Invalid> {
        let (prefix_len, value) = format::validate(id, expected_prefix)?;
        let (timestamp_micros, snowflake) = read_value(value, layout)?;
        Ok(Parsed {
            snowflake,
            ..Parsed::new(prefix_len, timestamp_micros, value)
        })
    }
}

/// The component: the bindings of contract 0.4.0 and the exports, in a module
/// of their own so that the generated names (`Stamp`, `Period`, ...) stay
/// apart from the kit's. Its ABI functions take one parameter per field of
/// a flattened record, hence the allow.
#[cfg(feature = "export")]
#[allow(clippy::too_many_arguments)]
mod component {
    use super::Base32Policy;

    wit_bindgen::generate!({ path: "../wit/0.4.0", world: "id-policy" });
    idmint_policy_kit::export!(Base32Policy, "0.4.0");
}
