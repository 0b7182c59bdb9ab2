//! Contract 0.2.0 (`guest/wit/0.2.0/`): neither snowflake fields nor a
//! period, and `validate` takes no layout. What the contract cannot carry
//! is dropped on the way in and absent on the way out.

use wasmtime::component::InstancePre;

use super::bindings::v0_2::{self, wit};
use super::contract::{Call, Contract, Version};
use super::error::PolicyError;
use super::sandbox::CallState;
use super::types::shared_conversions;
use super::types::{FormatError, InvalidId, PolicyInfo};
use crate::parts::{IdParts, Layout, Stamp};

/// Contract 0.2.0.
pub(super) const VERSION: Version = Version {
    version: "0.2.0",
    bind,
};

fn bind(pre: &InstancePre<CallState>) -> wasmtime::Result<Box<dyn Contract>> {
    Ok(Box::new(V0_2(v0_2::IdPolicyPre::new(pre.clone())?)))
}

/// A policy of contract 0.2.0, pre-linked.
struct V0_2(v0_2::IdPolicyPre<CallState>);

impl V0_2 {
    /// Runs `f` against a fresh instance (see [`Call::run`]).
    fn run<R>(
        &self,
        call: &Call<'_>,
        f: impl FnOnce(&v0_2::IdPolicy, &mut wasmtime::Store<CallState>) -> wasmtime::Result<R>,
    ) -> Result<R, PolicyError> {
        call.run(self.0.engine(), |store| self.0.instantiate(store), f)
    }
}

impl Contract for V0_2 {
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
        parts: &IdParts,
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
        stamps: &[Stamp],
    ) -> Result<Result<String, FormatError>, PolicyError> {
        self.run(call, |policy, store| {
            let stamps: Vec<wit::Stamp> = stamps.iter().map(Into::into).collect();
            let answer = policy.call_format_batch(store, prefix, &stamps)?;
            Ok(answer.map_err(FormatError::from))
        })
    }

    /// The layout is not passed: 0.2.0's `validate` has none.
    fn validate(
        &self,
        call: &Call<'_>,
        ids: &[&str],
        expected_prefix: Option<&str>,
        _layout: Option<&Layout>,
    ) -> Result<Vec<Result<IdParts, InvalidId>>, PolicyError> {
        self.run(call, |policy, store| {
            ids.iter()
                .map(|id| {
                    let answer = policy.call_validate(&mut *store, id, expected_prefix)?;
                    Ok(answer.map(IdParts::from).map_err(InvalidId::from))
                })
                .collect()
        })
    }
}

shared_conversions!(super::bindings::v0_2::wit);

impl From<wit::FormatError> for FormatError {
    fn from(error: wit::FormatError) -> Self {
        match error {
            wit::FormatError::BadPrefix(reason) => FormatError::BadPrefix(reason),
            wit::FormatError::SequenceOutOfRange(n) => FormatError::SequenceOutOfRange(n),
            wit::FormatError::TimestampOutOfRange(n) => FormatError::TimestampOutOfRange(n),
        }
    }
}

/// Snowflake fields and the period are dropped: 0.2.0 carries neither.
impl From<&IdParts> for wit::IdParts {
    fn from(parts: &IdParts) -> Self {
        wit::IdParts {
            prefix: parts.prefix.clone(),
            timestamp_micros: parts.timestamp_micros,
            sequence: parts.sequence,
        }
    }
}

impl From<wit::IdParts> for IdParts {
    fn from(parts: wit::IdParts) -> Self {
        IdParts {
            prefix: parts.prefix,
            timestamp_micros: parts.timestamp_micros,
            sequence: parts.sequence,
            snowflake: None,
            period: None,
        }
    }
}

/// Snowflake fields and the period are dropped: 0.2.0 carries neither.
impl From<&Stamp> for wit::Stamp {
    fn from(stamp: &Stamp) -> Self {
        wit::Stamp {
            timestamp_micros: stamp.timestamp_micros,
            sequence: stamp.sequence,
        }
    }
}
