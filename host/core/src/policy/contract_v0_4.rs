//! Contract 0.4.0, the current one (`guest/wit/policy.wit`): everything
//! the host has goes across, the period of a periodic counter's value
//! included.

use wasmtime::component::InstancePre;

use super::bindings::v0_4::{self, wit};
use super::contract::{Call, Contract, Version};
use super::error::PolicyError;
use super::sandbox::CallState;
use super::types::{shared_conversions, snowflake_conversions};
use super::types::{FormatError, InvalidId, PolicyInfo};
use crate::parts::{IdParts, Layout, Period, PeriodUnit, Stamp};

/// Contract 0.4.0.
pub(super) const VERSION: Version = Version {
    version: "0.4.0",
    bind,
};

fn bind(pre: &InstancePre<CallState>) -> wasmtime::Result<Box<dyn Contract>> {
    Ok(Box::new(V0_4(v0_4::IdPolicyPre::new(pre.clone())?)))
}

/// A policy of contract 0.4.0, pre-linked.
struct V0_4(v0_4::IdPolicyPre<CallState>);

impl V0_4 {
    /// Runs `f` against a fresh instance (see [`Call::run`]).
    fn run<R>(
        &self,
        call: &Call<'_>,
        f: impl FnOnce(&v0_4::IdPolicy, &mut wasmtime::Store<CallState>) -> wasmtime::Result<R>,
    ) -> Result<R, PolicyError> {
        call.run(self.0.engine(), |store| self.0.instantiate(store), f)
    }
}

impl Contract for V0_4 {
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

    fn validate(
        &self,
        call: &Call<'_>,
        ids: &[&str],
        expected_prefix: Option<&str>,
        layout: Option<&Layout>,
    ) -> Result<Vec<Result<IdParts, InvalidId>>, PolicyError> {
        let layout = layout.map(wit::SnowflakeLayout::from);
        self.run(call, |policy, store| {
            ids.iter()
                .map(|id| {
                    let answer = policy.call_validate(&mut *store, id, expected_prefix, layout)?;
                    Ok(answer.map(IdParts::from).map_err(InvalidId::from))
                })
                .collect()
        })
    }
}

shared_conversions!(super::bindings::v0_4::wit);
snowflake_conversions!(super::bindings::v0_4::wit);

impl From<wit::FormatError> for FormatError {
    fn from(error: wit::FormatError) -> Self {
        match error {
            wit::FormatError::BadPrefix(reason) => FormatError::BadPrefix(reason),
            wit::FormatError::SequenceOutOfRange(n) => FormatError::SequenceOutOfRange(n),
            wit::FormatError::TimestampOutOfRange(n) => FormatError::TimestampOutOfRange(n),
            wit::FormatError::BadPeriod(reason) => FormatError::BadPeriod(reason),
        }
    }
}

impl From<&IdParts> for wit::IdParts {
    fn from(parts: &IdParts) -> Self {
        wit::IdParts {
            prefix: parts.prefix.clone(),
            timestamp_micros: parts.timestamp_micros,
            sequence: parts.sequence,
            snowflake: parts.snowflake.map(Into::into),
            period: parts.period.map(Into::into),
        }
    }
}

impl From<wit::IdParts> for IdParts {
    fn from(parts: wit::IdParts) -> Self {
        IdParts {
            prefix: parts.prefix,
            timestamp_micros: parts.timestamp_micros,
            sequence: parts.sequence,
            snowflake: parts.snowflake.map(Into::into),
            period: parts.period.map(Into::into),
        }
    }
}

impl From<&Stamp> for wit::Stamp {
    fn from(stamp: &Stamp) -> Self {
        wit::Stamp {
            timestamp_micros: stamp.timestamp_micros,
            sequence: stamp.sequence,
            snowflake: stamp.snowflake.map(Into::into),
            period: stamp.period.map(Into::into),
        }
    }
}

impl From<Period> for wit::Period {
    fn from(period: Period) -> Self {
        wit::Period {
            unit: match period.unit {
                PeriodUnit::Day => wit::PeriodUnit::Day,
                PeriodUnit::Month => wit::PeriodUnit::Month,
                PeriodUnit::Year => wit::PeriodUnit::Year,
            },
            year: period.year,
            month: period.month,
            day: period.day,
        }
    }
}

/// A period as the policy read it back, checked later: a policy may
/// return one that does not exist (`Policy::validate` refuses it).
impl From<wit::Period> for Period {
    fn from(period: wit::Period) -> Self {
        Period {
            unit: match period.unit {
                wit::PeriodUnit::Day => PeriodUnit::Day,
                wit::PeriodUnit::Month => PeriodUnit::Month,
                wit::PeriodUnit::Year => PeriodUnit::Year,
            },
            year: period.year,
            month: period.month,
            day: period.day,
        }
    }
}
