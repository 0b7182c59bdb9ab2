//! What the host calls a policy through, whatever its contract version:
//! [`Contract`], the adapter each version makes; [`Call`], what every call
//! runs with; [`Version`], a version's entry in `VERSIONS`.

use wasmtime::component::InstancePre;
use wasmtime::{Engine, Store};

use crate::parts::{IdParts, Layout, Stamp};
use crate::policy::error::PolicyError;
use crate::policy::sandbox::{new_store, CallState, PolicyLimits};
use crate::policy::types::{FormatError, InvalidId, PolicyInfo};

/// One contract version the host runs.
pub(crate) struct Version {
    /// The version, as `Policy::contract` says it: `"0.4.0"`.
    pub(crate) version: &'static str,
    /// Type-checks a pre-linked component's exports against the version's
    /// world and, if they match, makes its adapter.
    pub(crate) bind: fn(&InstancePre<CallState>) -> wasmtime::Result<Box<dyn Contract>>,
}

/// A policy bound to one contract version: each export, called in the
/// host's types. The outer `Result` is about the call (a trap, a limit);
/// the inner one is the policy's answer.
pub(crate) trait Contract: Send + Sync {
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

/// What every call of one policy is run with: its limits, and its origin
/// for errors.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Call<'a> {
    /// The limits of each call.
    pub(crate) limits: &'a PolicyLimits,
    /// Where the policy came from.
    pub(crate) origin: &'a str,
}

impl Call<'_> {
    /// Runs `f` against an instance made by `instantiate` in a fresh store
    /// bounded by the limits, mapping wasmtime's failures (instantiation,
    /// traps, limits) to [`PolicyError`]: what every adapter's call does.
    pub(crate) fn run<P, R>(
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
