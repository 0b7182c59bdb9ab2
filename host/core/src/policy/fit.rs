//! Whether a policy can serve a counter: the policy must hold every value
//! the counter can hand out, and it must write what tells the counter's IDs
//! apart when its values repeat ([`Repeats`]): the time for a cyclic counter,
//! the period for a periodic one.
//!
//! A policy that does not write the time says so by reading its own IDs
//! back with `timestamp-micros` 0 (`guest/wit/policy.wit`, `validate`); one
//! that does not write the period reads its IDs back without one. [`writes`]
//! asks it. [`check_fit`] is what `next`, `counter create`,
//! `policy push`/`activate` and the activation check all use.
//!
//! [`check_serves`] runs every check a counter must pass before a policy
//! formats its IDs with a prefix, and makes them once per policy, prefix
//! and counter shape: an accepted fit is remembered by the policy, so that
//! preparing the next counter of that shape, or re-preparing one, asks the
//! policy nothing.

use super::error::PolicyError;
use super::fit_error::FitError;
use super::runtime::Policy;
use crate::parts::{IdParts, SnowflakeParts, Stamp};
use crate::parts::{Period, PeriodUnit};
use crate::sequence::{CounterState, Repeats};

/// The timestamp [`writes_time`] formats: 2026-11-22T03:14:57.123456Z.
const PROBE_MICROS: u64 = 1_795_317_297_123_456;

/// What a policy writes into its IDs besides the prefix and the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Writes {
    /// The time.
    pub time: bool,
    /// A periodic counter's period.
    pub period: bool,
}

/// Fails unless `policy` can serve `counter` (see the module docs);
/// `writes` is what [`writes`] said of the policy.
pub fn check_fit(policy: &Policy, counter: &CounterState, writes: Writes) -> Result<(), FitError> {
    let info = policy.info();
    let shape = counter.shape();
    if shape.largest_value >= info.sequence_capacity {
        return Err(FitError::Capacity {
            policy: info.name.clone(),
            capacity: info.sequence_capacity,
            counter: counter.name.clone(),
            kind: counter.kind(),
            largest: shape.largest_value,
            advice: counter.kind().fit_advice(),
        });
    }
    match shape.repeats {
        Repeats::Never => Ok(()),
        Repeats::AfterWrap if !writes.time => Err(FitError::NeedsTime {
            policy: info.name.clone(),
            counter: counter.name.clone(),
            kind: counter.kind(),
        }),
        Repeats::EachPeriod if !writes.period => Err(FitError::NeedsPeriod {
            policy: info.name.clone(),
            counter: counter.name.clone(),
            kind: counter.kind(),
        }),
        Repeats::AfterWrap | Repeats::EachPeriod => Ok(()),
    }
}

/// What `policy` writes into its IDs: it formats an ID with `prefix` and
/// reads it back, where a policy without time reads it back with timestamp
/// 0, and one in a period, which a policy that does not write periods (every
/// policy on a contract before 0.4.0) reads back without it, or refuses to
/// format. Three policy calls. Nothing is consumed or written.
pub fn writes(policy: &Policy, prefix: &str) -> Result<Writes, PolicyError> {
    probe(policy, prefix, None)
}

/// Whether `policy` writes the time into its IDs (see [`writes`]).
pub fn writes_time(policy: &Policy, prefix: &str) -> Result<bool, PolicyError> {
    Ok(writes(policy, prefix)?.time)
}

/// Whether `policy` writes a periodic counter's period into its IDs (see
/// [`writes`]).
pub fn writes_period(policy: &Policy, prefix: &str) -> Result<bool, PolicyError> {
    Ok(writes(policy, prefix)?.period)
}

/// The period [`writes`] formats an ID in.
const PROBE_PERIOD: Period = Period {
    unit: PeriodUnit::Year,
    year: 2026,
    month: 1,
    day: 1,
};

/// [`writes`], and with `accept_at` [`check_prefix`] at that time too, in as
/// few policy calls as they can share: the time probe and `check_prefix`'s
/// sample formatted in one batch, the period probe alone (a policy may
/// refuse it), both read back in one call.
fn probe(policy: &Policy, prefix: &str, accept_at: Option<u64>) -> Result<Writes, PolicyError> {
    let stamps: Vec<Stamp> = accept_at
        .map(|now_micros| Stamp::new(now_micros, 0))
        .into_iter()
        .chain([Stamp::new(PROBE_MICROS, 0)])
        .collect();
    let time_id = policy
        .format_batch(prefix, &stamps)?
        .pop()
        .expect("one ID per stamp");
    let period_parts = IdParts {
        prefix: prefix.to_string(),
        timestamp_micros: PROBE_MICROS,
        sequence: 1,
        snowflake: None,
        period: Some(PROBE_PERIOD),
    };
    let period_id = match policy.format(&period_parts) {
        Ok(id) => Some(id),
        Err(PolicyError::Format(_)) => None,
        Err(error) => return Err(error),
    };
    let ids: Vec<String> = std::iter::once(time_id).chain(period_id).collect();
    let mut read = policy
        .validate_many(&ids, Some(prefix), None)?
        .into_iter()
        .zip(&ids)
        .map(|(answer, id)| {
            answer.map_err(|invalid| PolicyError::Activation {
                origin: policy.origin().to_string(),
                reason: format!("its own validator rejects {id:?}: {invalid}"),
            })
        });
    let time = read
        .next()
        .expect("the time probe's answer")?
        .timestamp_micros
        != 0;
    let period = match read.next() {
        Some(parts) => parts?.period == Some(PROBE_PERIOD),
        None => false,
    };
    Ok(Writes { time, period })
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
            period: None,
        })
        .map(drop)
}

/// Fails unless `policy` may format IDs of `counter` with `prefix`: it
/// accepts the prefix ([`check_prefix`], at `now_micros`), it can serve the
/// counter ([`check_fit`]) and it reads the prefix back alone out of the
/// counter's IDs ([`check_prefix_reads_back`]). Five policy calls the
/// first time; none once the policy has accepted this prefix for a counter
/// of this shape (the memo is the policy's, see `fit_memo.rs`). Nothing is
/// consumed or written.
pub fn check_serves(
    policy: &Policy,
    counter: &CounterState,
    prefix: &str,
    now_micros: u64,
) -> Result<(), PolicyError> {
    let key = fit_key(counter, prefix);
    if policy.fits().accepted(&key) {
        return Ok(());
    }
    // check_prefix and writes, sharing their calls.
    let writes = probe(policy, prefix, Some(now_micros))?;
    check_fit(policy, counter, writes)?;
    check_prefix_reads_back(policy, counter, prefix)?;
    policy.fits().accept(key);
    Ok(())
}

/// Everything of `counter` and `prefix` that [`check_serves`]'s checks read:
/// the prefix, the counter's value shape, its snowflake layout and so the
/// stamps it is probed with.
fn fit_key(counter: &CounterState, prefix: &str) -> String {
    let shape = counter.shape();
    format!(
        "{prefix:?} {} {:?} {:?} {:?}",
        shape.largest_value,
        shape.repeats,
        counter.snowflake_layout(),
        probe_stamps(counter)
    )
}

/// Fails unless `policy` reads `prefix` back, alone, out of every ID it
/// formats for `counter` with it: the rule that keeps two counters' IDs
/// apart whatever their prefixes (nested ones included, `X-` and
/// `X-2026-`) and kinds.
///
/// Reading an ID without being told its prefix, a policy decides where the
/// prefix ends from the ID alone. So if two counters, owning different
/// prefixes, ever made the same ID with one policy, that ID would read back
/// with one prefix, which is not the prefix of one of them: the ID of that
/// one fails this check. It is checked on samples of every shape the
/// counter's IDs take (short and long values, each period's label, the
/// extremes of a snowflake ID), as a policy's grammar reads the shape, not
/// the value. Nothing is consumed or written.
pub fn check_prefix_reads_back(
    policy: &Policy,
    counter: &CounterState,
    prefix: &str,
) -> Result<(), PolicyError> {
    let layout = counter.snowflake_layout();
    let stamps = probe_stamps(counter);
    // One call for the batch; a policy that refuses one of the shapes
    // (another check's to report) is asked shape by shape.
    let ids: Vec<String> = match policy.format_batch(prefix, &stamps) {
        Ok(ids) => ids,
        Err(PolicyError::Format(_)) => stamps
            .iter()
            .filter_map(|stamp| policy.format(&stamp.with_prefix(prefix)).ok())
            .collect(),
        Err(error) => return Err(error),
    };
    let answers = policy.validate_many(&ids, None, layout)?;
    for (id, answer) in ids.into_iter().zip(answers) {
        let read = match answer {
            Ok(parts) if parts.prefix == prefix => continue,
            Ok(parts) => Some(parts.prefix),
            Err(_) => None,
        };
        return Err(FitError::PrefixNotReadBack {
            policy: policy.info().name.clone(),
            counter: counter.name.clone(),
            prefix: prefix.to_string(),
            id,
            read,
        }
        .into());
    }
    Ok(())
}

/// One stamp of every shape `counter`'s IDs take: the smallest and largest
/// values, the last value short enough to be padded and the first that is
/// not (a decimal number's two shapes), in each kind of period for a
/// periodic counter; a snowflake counter's first and last IDs.
pub(crate) fn probe_stamps(counter: &CounterState) -> Vec<Stamp> {
    if let Some(layout) = counter.snowflake_layout() {
        let first = layout.compose(SnowflakeParts {
            time: 1,
            worker: 0,
            seq: 0,
        });
        let last = layout.compose(SnowflakeParts {
            time: layout.max_time(),
            worker: layout.max_worker(),
            seq: layout.max_seq(),
        });
        return [first, last]
            .into_iter()
            .filter_map(|id| Stamp::snowflake(id, layout))
            .collect();
    }
    let shape = counter.shape();
    let mut values = vec![0, 1, 9, 10, 999_999_999, 1_000_000_000, shape.largest_value];
    values.retain(|value| *value <= shape.largest_value);
    values.dedup();
    let plain = values
        .into_iter()
        .map(|value| Stamp::new(PROBE_MICROS, value));
    if shape.repeats != Repeats::EachPeriod {
        return plain.collect();
    }
    let periods = [
        (PeriodUnit::Year, 1, 1),
        (PeriodUnit::Month, 11, 1),
        (PeriodUnit::Day, 11, 23),
    ]
    .map(|(unit, month, day)| Period {
        unit,
        year: 2026,
        month,
        day,
    });
    plain
        .flat_map(|stamp| periods.map(|period| stamp.in_period(period)))
        .collect()
}
