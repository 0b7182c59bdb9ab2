//! Host bindings generated from the policy contract, `guest/wit/policy.wit`.
//!
//! The WIT file is the only thing the host shares with a policy: the guest
//! points `wit_bindgen::generate!` at the same directory, and no Rust type
//! crosses over. These generated types stay private to [`crate::policy`];
//! `types.rs` converts them to and from the host's own public types.

wasmtime::component::bindgen!({ path: "../guest/wit", world: "id-policy" });

// `self::`: the WIT package `idmint` would otherwise be ambiguous with this
// crate wherever `idmint` is an extern crate name too (doctests, tests/).
pub(crate) use self::idmint::policy::types as wit;
