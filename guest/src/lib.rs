//! idmint's default ID policy, a WebAssembly component implementing the
//! `id-policy` world of `wit/policy.wit`.
//!
//! An ID is the prefix, then the UTC time as `yyyyMMddHHmmss`, then six digits
//! of microseconds, then the sequence value as two digits: `ORD-` +
//! `20261122031457` + `123456` + `07`. The prefix is 0 to 32 bytes of
//! `[A-Za-z0-9._-]`, so an ID is 22 to 54 bytes long.
//!
//! The host (`host/src/policy/`) builds this crate for `wasm32-wasip2` in its
//! build script and embeds it as the built-in policy. The two share no Rust
//! types, only the WIT file. The policy itself lives in [`format`](mod@format),
//! with the building blocks every idmint policy shares in [`kit`] and [`civil`],
//! all plain Rust, tested natively; `adapter.rs` converts their failures into
//! the generated bindings' types, and this file only exports the policy.

mod adapter;
pub mod civil;
pub mod format;
pub mod kit;

wit_bindgen::generate!({ path: "wit", world: "id-policy" });

/// The default policy, exported to the host.
struct DefaultPolicy;

impl Guest for DefaultPolicy {
    fn describe() -> PolicyInfo {
        PolicyInfo {
            name: "default".to_string(),
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

    /// The default policy writes no snowflake IDs (its capacity is 100), so
    /// it ignores `layout`.
    fn validate(
        id: String,
        expected_prefix: Option<String>,
        _layout: Option<SnowflakeLayout>,
    ) -> Result<IdParts, InvalidId> {
        let parsed = format::validate(&id, expected_prefix.as_deref())?;
        // Reuse the ID's allocation for the prefix, which is its head.
        let mut prefix = id;
        prefix.truncate(parsed.prefix_len);
        Ok(IdParts {
            prefix,
            timestamp_micros: parsed.timestamp_micros,
            sequence: parsed.sequence,
            snowflake: None,
        })
    }
}

export!(DefaultPolicy);
