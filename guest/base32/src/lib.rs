//! idmint's base32 policy, for snowflake counters (`idmint counter create
//! NAME --kind snowflake`): an ID is the prefix and the 64-bit value as 13
//! characters of Crockford's base32 (`0-9 A-Z` without `I L O U`),
//! `EVT-06XJ1S2N8G000`. Fixed width, so IDs sort as their values do;
//! case-insensitive when read back, with `I`/`L` read as 1 and `O` as 0.
//! It implements the `id-policy` world of `guest/wit/policy.wit`.
//!
//! The value is written whole: the time inside a snowflake ID is the
//! counter's business (its layout), so `format` ignores the timestamp and
//! `validate` reads it back as 0, which is how a policy says it writes no
//! time of its own. The host then refuses it for cyclic counters.

#[path = "../../src/adapter.rs"]
mod adapter;
pub mod format;
#[path = "../../src/kit.rs"]
pub mod kit;

wit_bindgen::generate!({ path: "../wit", world: "id-policy" });

/// The base32 policy, exported to the host.
struct Base32Policy;

impl Guest for Base32Policy {
    fn describe() -> PolicyInfo {
        PolicyInfo {
            name: "base32".to_string(),
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

export!(Base32Policy);
