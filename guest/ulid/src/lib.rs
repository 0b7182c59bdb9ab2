//! idmint's ulid policy, for snowflake counters (`idmint counter create
//! NAME --kind snowflake`): an ID is a ULID, 48 bits of Unix milliseconds
//! and 80 of payload as 26 characters of Crockford base32, upper case,
//! `01M8DH6JC000000000022350S0`, read back case-insensitively. It
//! implements the `id-policy` world of `guest/wit/policy.wit` (contract
//! 0.5.0).
//!
//! Unique by construction (docs/design/standard-ids.md): after the time,
//! the ID carries the snowflake ID's worker id and sequence, the counter's
//! tag (unique in its database) and noise keyed by the counter's salt; the
//! payload arithmetic and the text are the kit's (`kit::standard`), shared
//! with the other standard form. Snowflake only: a stamp without snowflake
//! fields is refused, and so is a prefix (`max-prefix-len` 0). Given the
//! counter's layout, `validate` reads an ID back into its time, worker id,
//! sequence and tag; without it, into its time and unique field.
//!
//! The crate is the policy as a library; its `export` feature makes it the
//! component (generated bindings and exports), which the embedded build
//! turns on (see `guest/default/Cargo.toml` for why it is not on by
//! default).

idmint_policy_kit::standard_policy!(
    /// The ulid policy.
    UlidPolicy,
    "ulid",
    Ulid
);

/// The component: the bindings of contract 0.5.0 and the exports, in a module
/// of their own so that the generated names (`Stamp`, `Period`, ...) stay
/// apart from the kit's. Its ABI functions take one parameter per field of
/// a flattened record, hence the allow.
#[cfg(feature = "export")]
#[allow(clippy::too_many_arguments)]
mod component {
    use super::UlidPolicy;

    wit_bindgen::generate!({ path: "../wit", world: "id-policy" });
    idmint_policy_kit::export!(UlidPolicy);
}
