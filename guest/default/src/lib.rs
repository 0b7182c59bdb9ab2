//! idmint's default ID policy, a WebAssembly component implementing the
//! `id-policy` world of `guest/wit/0.4.0/policy.wit` (contract 0.4.0).
//!
//! An ID is the prefix, then the UTC time as `yyyyMMddHHmmss`, then six digits
//! of microseconds, then the sequence value as two digits: `ORD-` +
//! `20261122031457` + `123456` + `07`. The prefix is 0 to 32 bytes of
//! `[A-Za-z0-9._-]`, so an ID is 22 to 54 bytes long. It writes neither
//! snowflake fields (its capacity is 100) nor periods, so the host refuses
//! it for snowflake and periodic counters.
//!
//! The host (`host/core/`) builds this crate for `wasm32-wasip2` in its
//! build script, with the `export` feature, and embeds it as the built-in
//! policy. The two share no Rust types, only the WIT file. The policy
//! itself lives in [`format`](mod@format), plain Rust tested natively, on
//! the building blocks of `idmint-policy-kit` (`guest/kit/`); this file
//! states it as a kit [`Policy`], which the kit's macro exports. Without
//! the `export` feature the crate is a library of that policy, which the
//! test fixture `guest/runaway/` builds on.

pub mod format;

use idmint_policy_kit::{FormatFailure, Invalid, Parsed, Policy, SnowflakeLayout, Stamp};

/// The default policy.
pub struct DefaultPolicy;

impl Policy for DefaultPolicy {
    const NAME: &'static str = "default";
    const SEQUENCE_CAPACITY: u64 = format::SEQUENCE_CAPACITY;

    fn format(prefix: &str, stamp: Stamp) -> Result<String, FormatFailure> {
        format::format_id(prefix, stamp.timestamp_micros, stamp.sequence)
    }

    fn format_batch(
        prefix: &str,
        stamps: impl ExactSizeIterator<Item = Stamp>,
    ) -> Result<String, FormatFailure> {
        format::format_batch(prefix, stamps.map(|s| (s.timestamp_micros, s.sequence)))
    }

    /// Writes no snowflake IDs, so it ignores `layout`.
    fn validate(
        id: &str,
        expected_prefix: Option<&str>,
        _layout: Option<&SnowflakeLayout>,
    ) -> Result<Parsed, Invalid> {
        let parsed = format::validate(id, expected_prefix)?;
        Ok(Parsed::new(
            parsed.prefix_len,
            parsed.timestamp_micros,
            parsed.sequence,
        ))
    }
}

/// The component: the bindings of contract 0.4.0 and the exports, in a module
/// of their own so that the generated names (`Stamp`, `Period`, ...) stay
/// apart from the kit's. Its ABI functions take one parameter per field of
/// a flattened record, hence the allow.
#[cfg(feature = "export")]
#[allow(clippy::too_many_arguments)]
mod component {
    use super::DefaultPolicy;

    wit_bindgen::generate!({ path: "../wit/0.4.0", world: "id-policy" });
    idmint_policy_kit::export!(DefaultPolicy, "0.4.0");
}
