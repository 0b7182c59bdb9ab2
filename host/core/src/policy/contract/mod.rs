//! Contract versions: how the host calls a policy of each version of the
//! `id-policy` contract it runs.
//!
//! A policy is bound, when it loads, to the newest contract its component
//! implements ([`bind`], trying [`VERSIONS`] in order); from then on every
//! call goes through that version's [`Contract`] adapter, which converts the
//! host's types (`crate::parts`, `types.rs`) to the version's generated
//! bindings (`bindings.rs`) and back, dropping what the version cannot
//! carry. Each adapter is a file of its own (`v0_5.rs`, ...): one
//! `adapter!` line (`adapter.rs`) for the calls, which are the same in every version,
//! and the conversions of what differs. A new contract adds its bindings,
//! one file, and one line in [`VERSIONS`].

//!
//! - `interface.rs`: what an adapter implements ([`Contract`]) and is run
//!   with ([`Call`]), and a version's entry ([`Version`]);
//! - `adapter.rs`: the adapter every version makes with one line;
//! - `v0_2.rs`, `v0_3.rs`, `v0_4.rs`, `v0_5.rs`: the versions;
//! - here: [`VERSIONS`] and [`bind`].

use wasmtime::component::InstancePre;

use super::error::PolicyError;
use super::sandbox::CallState;

mod adapter;
mod interface;
mod v0_2;
mod v0_3;
mod v0_4;
mod v0_5;

pub(super) use interface::{Call, Contract, Version};

/// Every contract version the host runs, newest first: a component is bound
/// to the first one it implements.
pub(super) const VERSIONS: [Version; 4] =
    [v0_5::VERSION, v0_4::VERSION, v0_3::VERSION, v0_2::VERSION];

/// Binds a pre-linked component to the newest contract version it
/// implements, or says why it implements none.
pub(super) fn bind(
    pre: &InstancePre<CallState>,
    origin: &str,
) -> Result<Box<dyn Contract>, PolicyError> {
    let mut refusals = Vec::with_capacity(VERSIONS.len());
    for version in &VERSIONS {
        match (version.bind)(pre) {
            Ok(contract) => return Ok(contract),
            Err(error) => refusals.push(format!("{} ({error:#})", version.version)),
        }
    }
    Err(PolicyError::WrongInterface {
        origin: origin.to_string(),
        reason: format!(
            "it implements none of the contracts this host runs: {}",
            refusals.join("; ")
        ),
    })
}
