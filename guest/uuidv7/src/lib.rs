//! idmint's uuidv7 policy, for snowflake counters (`idmint counter create
//! NAME --kind snowflake`): an ID is a UUIDv7 (RFC 9562: 48 bits of Unix
//! milliseconds, version 7, variant 10) in canonical lowercase `8-4-4-4-12`
//! hex, `01a21b13-4a40-7000-8000-0000024758ea`. It implements the
//! `id-policy` world of `guest/wit/policy.wit` (contract 0.5.0).
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
    /// The uuidv7 policy.
    Uuidv7Policy,
    "uuidv7",
    Uuidv7
);

/// The component: the bindings of contract 0.5.0 and the exports, in a module
/// of their own so that the generated names (`Stamp`, `Period`, ...) stay
/// apart from the kit's. Its ABI functions take one parameter per field of
/// a flattened record, hence the allow.
#[cfg(feature = "export")]
#[allow(clippy::too_many_arguments)]
mod component {
    use super::Uuidv7Policy;

    wit_bindgen::generate!({ path: "../wit", world: "id-policy" });
    idmint_policy_kit::export!(Uuidv7Policy);
}
