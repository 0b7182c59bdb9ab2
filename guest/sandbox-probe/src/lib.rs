//! A test fixture, never embedded in idmint: a component that tries, from
//! inside the policy sandbox, to read an environment variable, a file and
//! the network, and reports what happened in its `describe` name, e.g.
//! `probe env=absent file=denied net=denied`. `tests/policy.rs` loads it
//! (built for the tests by `idmint_guest_build::fixture("sandbox-probe")`)
//! and requires every attempt to fail. Its other functions refuse
//! everything. It is written against the bindings directly, without the
//! policy kit: its `describe` is the probe, which no kit policy has.

mod bindings {
    // The generated ABI functions take one parameter per field of a
    // flattened record.
    #![allow(clippy::too_many_arguments)]
    wit_bindgen::generate!({ path: "../wit/0.4.0", world: "id-policy", pub_export_macro: true });
}

use bindings::idmint::policy::types::WrongLength;
use bindings::{FormatError, Guest, IdParts, InvalidId, PolicyInfo, SnowflakeLayout, Stamp};

struct Probe;

/// What one attempt found: `denied` (an error), `absent`, or `OPEN`.
fn outcome<T, E>(result: Result<Option<T>, E>) -> &'static str {
    match result {
        Err(_) => "denied",
        Ok(None) => "absent",
        Ok(Some(_)) => "OPEN",
    }
}

impl Guest for Probe {
    fn describe() -> PolicyInfo {
        let env = outcome::<String, ()>(Ok(std::env::var("PATH")
            .ok()
            .or_else(|| std::env::var("HOME").ok())
            .or_else(|| std::env::vars().next().map(|(key, _)| key))));
        let file = match (
            outcome(std::fs::read("/etc/hostname").map(Some)),
            outcome(std::fs::read_dir("/").map(Some)),
        ) {
            ("OPEN", _) | (_, "OPEN") => "OPEN",
            (first, _) => first,
        };
        let net = outcome(std::net::TcpStream::connect("127.0.0.1:27017").map(Some));
        PolicyInfo {
            name: format!("probe env={env} file={file} net={net}"),
            version: env!("CARGO_PKG_VERSION").to_string(),
            sequence_capacity: 1,
            max_prefix_len: 0,
        }
    }

    fn format(_parts: IdParts) -> Result<String, FormatError> {
        Err(FormatError::BadPrefix("a probe formats nothing".into()))
    }

    fn format_batch(_prefix: String, _stamps: Vec<Stamp>) -> Result<String, FormatError> {
        Err(FormatError::BadPrefix("a probe formats nothing".into()))
    }

    fn validate(
        _id: String,
        _expected: Option<String>,
        _layout: Option<SnowflakeLayout>,
    ) -> Result<IdParts, InvalidId> {
        Err(InvalidId::WrongLength(WrongLength {
            found: 0,
            min: 1,
            max: 0,
        }))
    }
}

bindings::export!(Probe with_types_in bindings);
