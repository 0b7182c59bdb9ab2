//! Host bindings generated from the policy contract, `guest/wit/policy.wit`
//! (0.5.0), and from the earlier contracts the host still runs,
//! `guest/wit/0.4.0/`, `guest/wit/0.3.0/` and `guest/wit/0.2.0/`.
//!
//! The WIT files are the only thing the host shares with a policy: the guest
//! points `wit_bindgen::generate!` at the same directory, and no Rust type
//! crosses over. These generated types stay private to [`crate::policy`]:
//! each version's adapter (`contract/v0_4.rs`, ...) converts them to and
//! from the host's own types.

/// Contract 0.5.0, the current one: a snowflake counter's tag and salt.
pub(crate) mod v0_5 {
    wasmtime::component::bindgen!({ path: "../../guest/wit", world: "id-policy" });

    // `self::`: the WIT package `idmint` would otherwise be ambiguous with
    // this crate wherever `idmint` is an extern crate name too (doctests,
    // tests/).
    pub(crate) use self::idmint::policy::types as wit;
}

/// Contract 0.4.0: periods.
pub(crate) mod v0_4 {
    wasmtime::component::bindgen!({ path: "../../guest/wit/0.4.0", world: "id-policy" });

    pub(crate) use self::idmint::policy::types as wit;
}

/// Contract 0.3.0: snowflake fields, no period.
pub(crate) mod v0_3 {
    wasmtime::component::bindgen!({ path: "../../guest/wit/0.3.0", world: "id-policy" });

    pub(crate) use self::idmint::policy::types as wit;
}

/// Contract 0.2.0: no snowflake fields, `validate` without a layout.
pub(crate) mod v0_2 {
    wasmtime::component::bindgen!({ path: "../../guest/wit/0.2.0", world: "id-policy" });

    pub(crate) use self::idmint::policy::types as wit;
}
