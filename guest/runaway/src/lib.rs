//! A test fixture, never embedded in idmint: the default policy, except
//! that formatting sequence value 42 never returns. The activation check
//! samples values 0, 1 and 99 only, so the fixture passes it and is put in
//! service; `tests/policy.rs` then streams IDs through it and requires the
//! call for value 42 to be stopped at the default time limit, with a clear
//! error, and `tests/serve.rs` requires a server to stay responsive.
//! Built for the tests by `idmint_guest_build::fixture("runaway")`.
//!
//! It is the default policy's crate, used as a library, wrapped: every
//! call goes to [`DefaultPolicy`] after the spin check, and the kit's macro
//! exports the wrapper.

use idmint_policy_default::DefaultPolicy;
use idmint_policy_kit::{FormatFailure, Invalid, Parsed, Policy, SnowflakeLayout, Stamp};

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

/// The default policy, with a runaway value.
pub struct Runaway;

impl Policy for Runaway {
    const NAME: &'static str = "runaway";
    const SEQUENCE_CAPACITY: u64 = DefaultPolicy::SEQUENCE_CAPACITY;

    fn format(prefix: &str, stamp: Stamp) -> Result<String, FormatFailure> {
        spin_if_runaway(stamp.sequence);
        DefaultPolicy::format(prefix, stamp)
    }

    fn format_batch(
        prefix: &str,
        stamps: impl ExactSizeIterator<Item = Stamp>,
    ) -> Result<String, FormatFailure> {
        DefaultPolicy::format_batch(prefix, stamps.inspect(|s| spin_if_runaway(s.sequence)))
    }

    fn validate(
        id: &str,
        expected_prefix: Option<&str>,
        layout: Option<&SnowflakeLayout>,
    ) -> Result<Parsed, Invalid> {
        DefaultPolicy::validate(id, expected_prefix, layout)
    }
}

/// The component: the bindings of contract 0.4.0 and the exports, in a module
/// of their own so that the generated names (`Stamp`, `Period`, ...) stay
/// apart from the kit's. Its ABI functions take one parameter per field of
/// a flattened record, hence the allow.
#[allow(clippy::too_many_arguments)]
mod component {
    use super::Runaway;

    wit_bindgen::generate!({ path: "../wit/0.4.0", world: "id-policy" });
    idmint_policy_kit::export!(Runaway, "0.4.0");
}
