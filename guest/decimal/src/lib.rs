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
#[path = "../../src/snowflake.rs"]
pub mod snowflake;
#[macro_use]
#[path = "../../src/value_policy.rs"]
mod value_policy;

wit_bindgen::generate!({ path: "../wit", world: "id-policy" });

value_policy!(DecimalPolicy, "decimal");
