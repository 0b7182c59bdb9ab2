//! idmint's decimal policy, for auto-increment, segment and periodic
//! counters (`idmint counter create NAME --kind autoinc|segment|periodic`):
//! an ID is the prefix and the value in decimal, zero-padded to at least
//! nine digits, `INV-000000042`; values of ten digits or more are written as
//! they are, up to sixteen (`sequence-capacity` 10^16, above the 2^53 - 1
//! those counters stop at). It implements the `id-policy` world of
//! `guest/wit/0.4.0/policy.wit` (contract 0.4.0).
//!
//! A periodic counter's value comes with its period, whose label goes
//! between the prefix and the number, followed by a dash:
//! `INV-2026-000000042` (a year), `INV-2026-11-000000042` (a month),
//! `INV-2026-11-23-000000042` (a day). `validate` reads it back, its unit
//! from the label's shape, so that the counter's values, which restart at 1
//! in each period, still make IDs that never repeat.
//!
//! The time is not written: `format` ignores the timestamp and `validate`
//! reads it back as 0, which is how a policy says it has no time. The host
//! then refuses it for cyclic counters, whose values repeat.
//!
//! The prefix follows the shared rules (0 to 32 bytes of `[A-Za-z0-9._-]`)
//! and must not end with a digit, so that the number's (or the label's)
//! first digit is always known. The format is [`format`](mod@format), plain
//! Rust; this file states it as a kit [`Policy`] and exports it.
//!
//! The crate is the policy as a library; its `export` feature makes it the
//! component (generated bindings and exports), which the embedded build
//! turns on (see `guest/default/Cargo.toml` for why it is not on by
//! default).

pub mod format;

use idmint_policy_kit::snowflake::read_value;
use idmint_policy_kit::{FormatFailure, Invalid, Parsed, Policy, SnowflakeLayout, Stamp};

/// The decimal policy.
pub struct DecimalPolicy;

impl Policy for DecimalPolicy {
    const NAME: &'static str = "decimal";
    const SEQUENCE_CAPACITY: u64 = format::SEQUENCE_CAPACITY;

    fn format_batch(
        prefix: &str,
        stamps: impl ExactSizeIterator<Item = Stamp>,
    ) -> Result<String, FormatFailure> {
        format::format_batch(prefix, stamps.map(|stamp| (stamp.period, stamp.sequence)))
    }

    /// With a snowflake `layout`, the value is decoded into its fields.
    fn validate(
        id: &str,
        expected_prefix: Option<&str>,
        layout: Option<&SnowflakeLayout>,
    ) -> Result<Parsed, Invalid> {
        let read = format::validate(id, expected_prefix)?;
        let (timestamp_micros, snowflake) = read_value(read.value, layout)?;
        Ok(Parsed {
            prefix_len: read.prefix_len,
            timestamp_micros,
            sequence: read.value,
            snowflake,
            period: read.period,
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
    use super::DecimalPolicy;

    wit_bindgen::generate!({ path: "../wit/0.4.0", world: "id-policy" });
    idmint_policy_kit::export!(DecimalPolicy, "0.4.0");
}
