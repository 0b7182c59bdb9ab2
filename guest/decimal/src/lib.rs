//! idmint's decimal policy, for auto-increment and segment counters
//! (`idmint counter create NAME --kind autoinc|segment`): an ID is the prefix
//! and the value in decimal, zero-padded to at least nine digits,
//! `INV-000000042`; values of ten digits or more are written as they are,
//! up to sixteen (`sequence-capacity` 10^16, above the 2^53 - 1 those
//! counters stop at). It implements the `id-policy` world of
//! `guest/wit/policy.wit`.
//!
//! The time is not written: `format` ignores the timestamp and `validate`
//! reads it back as 0, which is how a policy says it has no time. The host
//! then refuses it for cyclic counters, whose values repeat.
//!
//! The prefix follows the shared rules (0 to 32 bytes of `[A-Za-z0-9._-]`)
//! and must not end with a digit, so that the number's first digit is
//! always known.

#[path = "../../src/adapter.rs"]
mod adapter;
pub mod format;
#[path = "../../src/kit.rs"]
pub mod kit;

wit_bindgen::generate!({ path: "../wit", world: "id-policy" });

/// The decimal policy, exported to the host.
struct DecimalPolicy;

impl Guest for DecimalPolicy {
    fn describe() -> PolicyInfo {
        PolicyInfo {
            name: "decimal".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            sequence_capacity: format::SEQUENCE_CAPACITY,
            max_prefix_len: kit::MAX_PREFIX_LEN as u32,
        }
    }

    fn format(parts: IdParts) -> Result<String, FormatError> {
        Ok(format::format_id(&parts.prefix, parts.sequence)?)
    }

    fn format_batch(prefix: String, stamps: Vec<Stamp>) -> Result<String, FormatError> {
        Ok(format::format_batch(
            &prefix,
            stamps.iter().map(|stamp| stamp.sequence),
        )?)
    }

    fn validate(id: String, expected_prefix: Option<String>) -> Result<IdParts, InvalidId> {
        let (prefix_len, sequence) = format::validate(&id, expected_prefix.as_deref())?;
        let mut prefix = id;
        prefix.truncate(prefix_len);
        Ok(IdParts {
            prefix,
            timestamp_micros: 0,
            sequence,
        })
    }
}

export!(DecimalPolicy);
