//! A test fixture, never embedded in idmint: the decimal policy
//! (`guest/decimal/`) exported against contract 0.3.0, the contract before
//! periods, so that the tests hold the host to running a policy of the
//! previous contract next to the current one: it loads, formats and reads
//! back as before, and a period the host is given is dropped on the way in
//! (it writes `INV-000000042` where the built-in decimal policy writes
//! `INV-2026-000000042`) and absent on the way out, so the host refuses
//! it for periodic counters. Built for the tests by
//! `idmint_guest_build::fixture("decimal-0.3")`.

pub use idmint_policy_decimal::DecimalPolicy;

/// The component: the bindings of contract 0.3.0 and the exports, in a module
/// of their own so that the generated names (`Stamp`, `Period`, ...) stay
/// apart from the kit's. Its ABI functions take one parameter per field of
/// a flattened record, hence the allow.
#[allow(clippy::too_many_arguments)]
mod component {
    use super::DecimalPolicy;

    wit_bindgen::generate!({ path: "../wit/0.3.0", world: "id-policy" });
    idmint_policy_kit::export!(DecimalPolicy, "0.3.0");
}
