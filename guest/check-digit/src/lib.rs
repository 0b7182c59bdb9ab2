//! A second idmint ID policy, visibly different from the default one, and the
//! example to copy when writing your own (see README, "Policies"). It
//! implements the `id-policy` world of contract 0.2.0,
//! `guest/wit/0.2.0/policy.wit`, and stays on it on purpose: it is the
//! policy built against an earlier contract that the host must keep
//! running (the host binds 0.2.0, 0.3.0 and 0.4.0). A new policy targets
//! `guest/wit/policy.wit`, the current contract.
//!
//! An ID is the prefix, the UTC time as `yyyyMMddTHHmmss.uuuuuuZ`, a dash,
//! the sequence value as three digits, a dash and a Luhn check digit over
//! the 23 digits before it: `ORD-20261122T031457.123456Z-007-4`. The check
//! digit catches every single-digit typo (and most swaps of neighbours);
//! `validate` reports one as `malformed`. Sequence capacity 1000; the prefix
//! is 0 to 32 bytes of `[A-Za-z0-9._-]`.
//!
//! The calendar, the prefix rules and the WIT glue come from the policy
//! kit (`guest/kit/`); `export!(.., "0.2.0")` writes the glue of the
//! contract this crate binds.

pub mod format;

use idmint_policy_kit::{FormatFailure, Invalid, Parsed, Policy, SnowflakeLayout, Stamp};

/// The check-digit policy.
pub struct CheckDigitPolicy;

impl Policy for CheckDigitPolicy {
    const NAME: &'static str = "check-digit";
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

    /// Contract 0.2.0 has no layout: `layout` is always `None`.
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

/// The component: the bindings of contract 0.2.0 and the exports, in a module
/// of their own so that the generated names (`Stamp`, `Period`, ...) stay
/// apart from the kit's. Its ABI functions take one parameter per field of
/// a flattened record, hence the allow.
#[allow(clippy::too_many_arguments)]
mod component {
    use super::CheckDigitPolicy;

    wit_bindgen::generate!({ path: "../wit/0.2.0", world: "id-policy" });
    idmint_policy_kit::export!(CheckDigitPolicy, "0.2.0");
}
