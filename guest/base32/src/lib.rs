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
//! time of its own. The host then refuses it for cyclic counters. Given
//! the counter's layout (WIT 0.3.0), `validate` decodes the value into the
//! ID's time, worker id and sequence.

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

value_policy!(Base32Policy, "base32");
