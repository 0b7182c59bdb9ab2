//! A test fixture, never embedded in idmint: the uuidv7 policy (contract
//! 0.5.0), except that `validate` reads every ID back with tag 0, as a
//! policy that received the counter's tag but did not write it would. The
//! host must then refuse it IDs without a prefix from a counter that does
//! not own the empty prefix: nothing but the tag would keep them apart from
//! another counter's (`tests/standard_ids.rs`).
//! Built for the tests by `idmint_guest_build::fixture("untagged")`.

use idmint_policy_kit::{FormatFailure, Invalid, Parsed, Policy, SnowflakeLayout, Stamp};
use idmint_policy_uuidv7::Uuidv7Policy;

/// The uuidv7 policy, losing the tag on the way back.
pub struct Untagged;

impl Policy for Untagged {
    const NAME: &'static str = "untagged";
    const SEQUENCE_CAPACITY: u64 = Uuidv7Policy::SEQUENCE_CAPACITY;
    const MAX_PREFIX_LEN: usize = Uuidv7Policy::MAX_PREFIX_LEN;

    fn format_batch(
        prefix: &str,
        stamps: impl ExactSizeIterator<Item = Stamp>,
    ) -> Result<String, FormatFailure> {
        Uuidv7Policy::format_batch(prefix, stamps)
    }

    fn validate(
        id: &str,
        expected_prefix: Option<&str>,
        layout: Option<&SnowflakeLayout>,
    ) -> Result<Parsed, Invalid> {
        let mut parsed = Uuidv7Policy::validate(id, expected_prefix, layout)?;
        if let Some(fields) = parsed.snowflake.as_mut() {
            fields.tag = 0;
        }
        Ok(parsed)
    }
}

/// The component: the bindings of contract 0.5.0 and the exports, in a module
/// of their own so that the generated names (`Stamp`, `Period`, ...) stay
/// apart from the kit's. Its ABI functions take one parameter per field of
/// a flattened record, hence the allow.
#[allow(clippy::too_many_arguments)]
mod component {
    use super::Untagged;

    wit_bindgen::generate!({ path: "../wit", world: "id-policy" });
    idmint_policy_kit::export!(Untagged);
}
