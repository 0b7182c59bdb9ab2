//! A second idmint ID policy, visibly different from the default one, and the
//! example to copy when writing your own (see README, "Policies"). It
//! implements the `id-policy` world of contract 0.2.0,
//! `guest/wit/0.2.0/policy.wit`, and stays on it on purpose: it is the
//! policy built against an earlier contract that the host must keep
//! running (the host binds 0.2.0 and 0.3.0). A new policy targets
//! `guest/wit/policy.wit`, the current contract.
//!
//! An ID is the prefix, the UTC time as `yyyyMMddTHHmmss.uuuuuuZ`, a dash,
//! the sequence value as three digits, a dash and a Luhn check digit over
//! the 23 digits before it: `ORD-20261122T031457.123456Z-007-4`. The check
//! digit catches every single-digit typo (and most swaps of neighbours);
//! `validate` reports one as `malformed`. Sequence capacity 1000; the prefix
//! is 0 to 32 bytes of `[A-Za-z0-9._-]`.
//!
//! The calendar code, the prefix rules and the WIT adapter are the default
//! policy's (`guest/src/civil.rs`, `kit.rs`, `adapter.rs`), included by path
//! rather than depended on, since that crate exports a policy of its own.

#[path = "../../src/adapter.rs"]
mod adapter;
#[path = "../../src/civil.rs"]
pub mod civil;
pub mod format;
#[path = "../../src/kit.rs"]
pub mod kit;

wit_bindgen::generate!({ path: "../wit/0.2.0", world: "id-policy" });

/// The check-digit policy, exported to the host.
struct CheckDigitPolicy;

impl Guest for CheckDigitPolicy {
    fn describe() -> PolicyInfo {
        PolicyInfo {
            name: "check-digit".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            sequence_capacity: format::SEQUENCE_CAPACITY,
            max_prefix_len: format::MAX_PREFIX_LEN as u32,
        }
    }

    fn format(parts: IdParts) -> Result<String, FormatError> {
        Ok(format::format_id(
            &parts.prefix,
            parts.timestamp_micros,
            parts.sequence,
        )?)
    }

    fn format_batch(prefix: String, stamps: Vec<Stamp>) -> Result<String, FormatError> {
        let stamps = stamps.iter().map(|s| (s.timestamp_micros, s.sequence));
        Ok(format::format_batch(&prefix, stamps)?)
    }

    fn validate(id: String, expected_prefix: Option<String>) -> Result<IdParts, InvalidId> {
        let parsed = format::validate(&id, expected_prefix.as_deref())?;
        let mut prefix = id;
        prefix.truncate(parsed.prefix_len);
        Ok(IdParts {
            prefix,
            timestamp_micros: parsed.timestamp_micros,
            sequence: parsed.sequence,
        })
    }
}

export!(CheckDigitPolicy);
