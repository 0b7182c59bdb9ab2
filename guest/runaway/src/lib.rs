//! A test fixture, never embedded in idmint: the default policy, except
//! that formatting sequence value 42 never returns. The activation check
//! samples values 0, 1 and 99 only, so the fixture passes it and is put in
//! service; `tests/policy.rs` then streams IDs through it and requires the
//! call for value 42 to be stopped at the default time limit, with a clear
//! error, and `tests/serve.rs` requires a server to stay responsive.
//! Built by `host/build.rs` (path in `IDMINT_RUNAWAY_POLICY_WASM`).

#[path = "../../src/adapter.rs"]
mod adapter;
#[path = "../../src/civil.rs"]
pub mod civil;
#[path = "../../src/format.rs"]
pub mod format;
#[path = "../../src/kit.rs"]
pub mod kit;

wit_bindgen::generate!({ path: "../wit", world: "id-policy" });

/// The value whose formatting never ends.
const RUNAWAY: u64 = 42;

/// Spins until the host stops the call.
fn spin_if_runaway(sequence: u64) {
    if sequence == RUNAWAY {
        let mut counter = 0_u64;
        loop {
            counter = std::hint::black_box(counter.wrapping_add(1));
        }
    }
}

struct Runaway;

impl Guest for Runaway {
    fn describe() -> PolicyInfo {
        PolicyInfo {
            name: "runaway".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            sequence_capacity: format::SEQUENCE_CAPACITY,
            max_prefix_len: format::MAX_PREFIX_LEN as u32,
        }
    }

    fn format(parts: IdParts) -> Result<String, FormatError> {
        spin_if_runaway(parts.sequence);
        Ok(format::format_id(
            &parts.prefix,
            parts.timestamp_micros,
            parts.sequence,
        )?)
    }

    fn format_batch(prefix: String, stamps: Vec<Stamp>) -> Result<String, FormatError> {
        stamps
            .iter()
            .for_each(|stamp| spin_if_runaway(stamp.sequence));
        let stamps = stamps.iter().map(|s| (s.timestamp_micros, s.sequence));
        Ok(format::format_batch(&prefix, stamps)?)
    }

    fn validate(
        id: String,
        expected_prefix: Option<String>,
        _layout: Option<SnowflakeLayout>,
    ) -> Result<IdParts, InvalidId> {
        let parsed = format::validate(&id, expected_prefix.as_deref())?;
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

export!(Runaway);
