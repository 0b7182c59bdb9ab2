//! Whether a policy can serve a counter: the policy must hold every value
//! the counter can hand out, and a policy that does not write the time must
//! not serve a counter whose values repeat (its IDs would repeat too).
//!
//! A policy that does not write the time says so by reading its own IDs
//! back with `timestamp-micros` 0 (`guest/wit/policy.wit`, `validate`);
//! [`writes_time`] asks it. [`check_fit`] is what `next`, `counter create`,
//! `policy push`/`activate` and the activation check all use.

use super::error::PolicyError;
use super::runtime::Policy;
use super::types::IdParts;
use crate::sequence::{CounterKind, CounterState};

/// The timestamp [`writes_time`] formats: 2026-11-22T03:14:57.123456Z.
const PROBE_MICROS: u64 = 1_795_317_297_123_456;

/// A policy cannot serve a counter.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FitError {
    /// The policy's sequence field cannot hold every value of the counter.
    #[error(
        "policy '{policy}' holds {capacity} sequence values (0 to {}), but {} \
         hands out values up to {largest}: {advice}",
        capacity - 1,
        counter_phrase(*kind, counter)
    )]
    Capacity {
        /// The policy's name.
        policy: String,
        /// The policy's sequence capacity.
        capacity: u64,
        /// The counter's name; empty for a counter described only by its
        /// shape (`policy check --maxval N`).
        counter: String,
        /// The counter's kind.
        kind: CounterKind,
        /// The largest value the counter can hand out.
        largest: u64,
        /// What to do about it.
        advice: &'static str,
    },
    /// The policy does not write the time, and the counter's values repeat.
    #[error(
        "policy '{policy}' does not write the time into its IDs, and {} is cyclic: \
         its values repeat, so its IDs would repeat too; use an autoinc or segment counter with \
         this policy, or a policy that writes the time",
        if counter.is_empty() { "the counter".to_string() } else { format!("counter '{counter}'") }
    )]
    NeedsTime {
        /// The policy's name.
        policy: String,
        /// The counter's name; empty as in [`FitError::Capacity`].
        counter: String,
    },
}

/// "autoinc counter 'invoices'", or "a cyclic counter" for a counter with
/// no name (one described only by its shape).
fn counter_phrase(kind: CounterKind, counter: &str) -> String {
    if counter.is_empty() {
        let article = if kind == CounterKind::Autoinc {
            "an"
        } else {
            "a"
        };
        format!("{article} {kind} counter")
    } else {
        format!("{kind} counter '{counter}'")
    }
}

/// Fails unless `policy` can serve `counter` (see the module docs);
/// `writes_time` is what [`writes_time`] said of the policy.
pub fn check_fit(
    policy: &Policy,
    counter: &CounterState,
    writes_time: bool,
) -> Result<(), FitError> {
    let info = policy.info();
    let shape = counter.shape();
    if shape.largest_value >= info.sequence_capacity {
        return Err(FitError::Capacity {
            policy: info.name.clone(),
            capacity: info.sequence_capacity,
            counter: counter.name.clone(),
            kind: counter.kind(),
            largest: shape.largest_value,
            advice: match counter.kind() {
                CounterKind::Cyclic => {
                    "use a counter with a smaller maxval or a policy with a larger sequence"
                }
                CounterKind::Autoinc | CounterKind::Segment => {
                    "use a policy that holds 2^53 values, such as the built-in decimal policy \
                     (--policy builtin:decimal)"
                }
                CounterKind::Snowflake => {
                    "use a policy that holds 64-bit IDs, such as the built-in base32 policy \
                     (--policy builtin:base32)"
                }
            },
        });
    }
    if shape.values_repeat && !writes_time {
        return Err(FitError::NeedsTime {
            policy: info.name.clone(),
            counter: counter.name.clone(),
        });
    }
    Ok(())
}

/// Whether `policy` writes the time into its IDs: it formats one ID with
/// `prefix` and reads it back; a policy without time reads it back with
/// timestamp 0. Nothing is consumed or written.
pub fn writes_time(policy: &Policy, prefix: &str) -> Result<bool, PolicyError> {
    let parts = IdParts {
        prefix: prefix.to_string(),
        timestamp_micros: PROBE_MICROS,
        sequence: 0,
        snowflake: None,
    };
    let id = policy.format(&parts)?;
    match policy.validate(&id, Some(prefix), None)? {
        Ok(read) => Ok(read.timestamp_micros != 0),
        Err(invalid) => Err(PolicyError::Activation {
            origin: policy.origin().to_string(),
            reason: format!("its own validator rejects {id:?}: {invalid}"),
        }),
    }
}

/// Fails, with the policy's reason, unless the policy accepts `prefix`: it
/// formats a sample ID at `now_micros`, so nothing is consumed or written.
pub fn check_prefix(policy: &Policy, prefix: &str, now_micros: u64) -> Result<(), PolicyError> {
    policy
        .format(&IdParts {
            prefix: prefix.to_string(),
            timestamp_micros: now_micros,
            sequence: 0,
            snowflake: None,
        })
        .map(drop)
}
