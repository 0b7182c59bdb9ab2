//! Contract versions: how the host calls a policy of each version of the
//! `id-policy` contract it runs.
//!
//! A policy is bound, when it loads, to the newest contract its component
//! implements ([`bind`], trying [`VERSIONS`] in order); from then on every
//! call goes through that version's [`Contract`] adapter, which converts the
//! host's types (`crate::parts`, `types.rs`) to the version's generated
//! bindings (`bindings.rs`) and back, dropping what the version cannot
//! carry. Each adapter is a file of its own (`contract_v0_4.rs`, ...): one
//! [`adapter!`] line for the calls, which are the same in every version,
//! and the conversions of what differs. A new contract adds its bindings,
//! one file, and one line in [`VERSIONS`].

use wasmtime::component::InstancePre;
use wasmtime::{Engine, Store};

use super::error::PolicyError;
use super::sandbox::{new_store, CallState, PolicyLimits};
use super::types::{FormatError, InvalidId, PolicyInfo};
use super::{contract_v0_2, contract_v0_3, contract_v0_4};
use crate::parts::{IdParts, Layout, Stamp};

/// Every contract version the host runs, newest first: a component is bound
/// to the first one it implements.
pub(super) const VERSIONS: [Version; 3] = [
    contract_v0_4::VERSION,
    contract_v0_3::VERSION,
    contract_v0_2::VERSION,
];

/// One contract version the host runs.
pub(super) struct Version {
    /// The version, as `Policy::contract` says it: `"0.4.0"`.
    pub(super) version: &'static str,
    /// Type-checks a pre-linked component's exports against the version's
    /// world and, if they match, makes its adapter.
    pub(super) bind: fn(&InstancePre<CallState>) -> wasmtime::Result<Box<dyn Contract>>,
}

/// A policy bound to one contract version: each export, called in the
/// host's types. The outer `Result` is about the call (a trap, a limit);
/// the inner one is the policy's answer.
pub(super) trait Contract: Send + Sync {
    /// The contract's version: `"0.4.0"`.
    fn version(&self) -> &'static str;

    /// `describe`.
    fn describe(&self, call: &Call<'_>) -> Result<PolicyInfo, PolicyError>;

    /// `format`.
    fn format(
        &self,
        call: &Call<'_>,
        parts: &IdParts,
    ) -> Result<Result<String, FormatError>, PolicyError>;

    /// `format-batch`: the IDs as the policy wrote them, each followed by `'\n'`.
    fn format_batch(
        &self,
        call: &Call<'_>,
        prefix: &str,
        stamps: &[Stamp],
    ) -> Result<Result<String, FormatError>, PolicyError>;

    /// `validate`, once per ID, in one instance.
    fn validate(
        &self,
        call: &Call<'_>,
        ids: &[&str],
        expected_prefix: Option<&str>,
        layout: Option<&Layout>,
    ) -> Result<Vec<Result<IdParts, InvalidId>>, PolicyError>;
}

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

/// What every call of one policy is run with: its limits, and its origin
/// for errors.
#[derive(Debug, Clone, Copy)]
pub(super) struct Call<'a> {
    /// The limits of each call.
    pub(super) limits: &'a PolicyLimits,
    /// Where the policy came from.
    pub(super) origin: &'a str,
}

impl Call<'_> {
    /// Runs `f` against an instance made by `instantiate` in a fresh store
    /// bounded by the limits, mapping wasmtime's failures (instantiation,
    /// traps, limits) to [`PolicyError`]: what every adapter's call does.
    pub(super) fn run<P, R>(
        &self,
        engine: &Engine,
        instantiate: impl FnOnce(&mut Store<CallState>) -> wasmtime::Result<P>,
        f: impl FnOnce(&P, &mut Store<CallState>) -> wasmtime::Result<R>,
    ) -> Result<R, PolicyError> {
        let mut store = new_store(engine, self.limits);
        let result = instantiate(&mut store).and_then(|policy| f(&policy, &mut store));
        result.map_err(|e| {
            PolicyError::from_call(self.origin, e, self.limits, store.data().memory.refused)
        })
    }
}

/// The adapter of one contract version, the same in every version but for
/// its generated bindings (`$bindings`, a module of `bindings.rs`), its
/// version string, and whether its `validate` takes the snowflake layout
/// (`layout: yes`, from 0.3.0) or not (`layout: no`, 0.2.0, which drops
/// it). It makes the version's `VERSION` and an `Adapter` behind it; the
/// version's file adds the conversions of what differs (its `IdParts`,
/// `Stamp` and `FormatError`).
macro_rules! adapter {
    ($bindings:ident, $version:literal, layout: $layout:ident) => {
        use $crate::policy::bindings::$bindings;
        use $crate::policy::contract::{Call, Contract, Version};
        use $crate::policy::error::PolicyError;
        use $crate::policy::sandbox::CallState;
        use $crate::policy::types::{FormatError, InvalidId, PolicyInfo};

        #[doc = concat!("Contract ", $version, ".")]
        pub(super) const VERSION: Version = Version {
            version: $version,
            bind,
        };

        fn bind(
            pre: &wasmtime::component::InstancePre<CallState>,
        ) -> wasmtime::Result<Box<dyn Contract>> {
            Ok(Box::new(Adapter($bindings::IdPolicyPre::new(pre.clone())?)))
        }

        #[doc = concat!("A policy of contract ", $version, ", pre-linked.")]
        struct Adapter($bindings::IdPolicyPre<CallState>);

        impl Adapter {
            /// Runs `f` against a fresh instance (see [`Call::run`]).
            fn run<R>(
                &self,
                call: &Call<'_>,
                f: impl FnOnce(
                    &$bindings::IdPolicy,
                    &mut wasmtime::Store<CallState>,
                ) -> wasmtime::Result<R>,
            ) -> Result<R, PolicyError> {
                call.run(self.0.engine(), |store| self.0.instantiate(store), f)
            }
        }

        impl Contract for Adapter {
            fn version(&self) -> &'static str {
                VERSION.version
            }

            fn describe(&self, call: &Call<'_>) -> Result<PolicyInfo, PolicyError> {
                self.run(call, |policy, store| {
                    policy.call_describe(store).map(PolicyInfo::from)
                })
            }

            fn format(
                &self,
                call: &Call<'_>,
                parts: &$crate::parts::IdParts,
            ) -> Result<Result<String, FormatError>, PolicyError> {
                self.run(call, |policy, store| {
                    let answer = policy.call_format(store, &parts.into())?;
                    Ok(answer.map_err(FormatError::from))
                })
            }

            fn format_batch(
                &self,
                call: &Call<'_>,
                prefix: &str,
                stamps: &[$crate::parts::Stamp],
            ) -> Result<Result<String, FormatError>, PolicyError> {
                self.run(call, |policy, store| {
                    let stamps: Vec<$bindings::wit::Stamp> = stamps.iter().map(Into::into).collect();
                    let answer = policy.call_format_batch(store, prefix, &stamps)?;
                    Ok(answer.map_err(FormatError::from))
                })
            }

            fn validate(
                &self,
                call: &Call<'_>,
                ids: &[&str],
                expected_prefix: Option<&str>,
                layout: Option<&$crate::parts::Layout>,
            ) -> Result<Vec<Result<$crate::parts::IdParts, InvalidId>>, PolicyError> {
                $crate::policy::contract::adapter!(@layout $layout, $bindings, layout);
                self.run(call, |policy, store| {
                    ids.iter()
                        .map(|id| {
                            let answer = $crate::policy::contract::adapter!(
                                @validate $layout, policy, store, id, expected_prefix, layout
                            )?;
                            Ok(answer.map($crate::parts::IdParts::from).map_err(InvalidId::from))
                        })
                        .collect()
                })
            }
        }
    };
    (@layout yes, $bindings:ident, $layout:ident) => {
        let $layout = $layout.map($bindings::wit::SnowflakeLayout::from);
    };
    // 0.2.0's `validate` has no layout: it is not passed.
    (@layout no, $bindings:ident, $layout:ident) => {
        let _ = $layout;
    };
    (@validate yes, $policy:ident, $store:ident, $id:ident, $prefix:ident, $layout:ident) => {
        $policy.call_validate(&mut *$store, $id, $prefix, $layout)
    };
    (@validate no, $policy:ident, $store:ident, $id:ident, $prefix:ident, $layout:ident) => {
        $policy.call_validate(&mut *$store, $id, $prefix)
    };
}
pub(super) use adapter;
