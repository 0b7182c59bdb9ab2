//! Whether a policy can serve a counter: the policy must hold every value
//! the counter can hand out, and it must write what tells the counter's IDs
//! apart when its values repeat ([`Repeats`]): the time for a cyclic counter,
//! the period for a periodic one.
//!
//! A policy that does not write the time says so by reading its own IDs
//! back with `timestamp-micros` 0 (`guest/wit/policy.wit`, `validate`); one
//! that does not write the period reads its IDs back without one; one that
//! formats snowflake IDs only (the standard IDs, `builtin:uuidv7`) refuses
//! parts without snowflake fields, and is asked with a snowflake ID's parts
//! instead (`format_probe`). [`writes`] asks it. [`check_fit`] is what
//! `next`, `counter create`, `policy push`/`activate` and the activation
//! check all use.
//!
//! [`check_serves`] runs every check a counter must pass before a policy
//! formats its IDs with a prefix, and makes them once per policy, prefix
//! and counter shape: an accepted fit is remembered by the policy, so that
//! preparing the next counter of that shape, or re-preparing one, asks the
//! policy nothing.

use super::error::PolicyError;
use super::fit_error::FitError;
use super::runtime::Policy;
use crate::parts::{IdParts, Layout, SnowflakeParts, Stamp};
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
    /// A snowflake ID's fields, which only a snowflake counter has: the
    /// policy formats nothing else.
    pub snowflake_only: bool,
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
    if writes.snowflake_only && counter.snowflake_layout().is_none() {
        return Err(FitError::NeedsSnowflake {
            policy: info.name.clone(),
            counter: counter.name.clone(),
            kind: counter.kind(),
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

/// What `policy` writes into its IDs ([`writes_time`], [`writes_period`],
/// [`formats_snowflake_only`]). Nothing is consumed or written.
pub fn writes(policy: &Policy, prefix: &str) -> Result<Writes, PolicyError> {
    probe(policy, prefix, None)
}

/// [`writes`], and with `accept_at` [`check_prefix`] at that time too, in as
/// few policy calls as they can share. A policy that formats plain parts
/// (every one but the snowflake-only ones) is asked three times: the time
/// probe and `check_prefix`'s sample formatted in one batch, the period
/// probe alone (a policy may refuse it), both read back in one call. One
/// that refuses the batch is asked each question on its own, as
/// [`writes_time`], [`writes_period`] and [`formats_snowflake_only`] do.
fn probe(policy: &Policy, prefix: &str, accept_at: Option<u64>) -> Result<Writes, PolicyError> {
    let stamps: Vec<Stamp> = accept_at
        .map(|now_micros| Stamp::new(now_micros, 0))
        .into_iter()
        .chain([Stamp::new(PROBE_MICROS, 0)])
        .collect();
    let time_id = match policy.format_batch(prefix, &stamps) {
        Ok(mut ids) => ids.pop().expect("one ID per stamp"),
        Err(PolicyError::Format(_)) => {
            if let Some(now_micros) = accept_at {
                check_prefix(policy, prefix, now_micros)?;
            }
            return Ok(Writes {
                time: writes_time(policy, prefix)?,
                period: writes_period(policy, prefix)?,
                snowflake_only: formats_snowflake_only(policy, prefix)?,
            });
        }
        Err(error) => return Err(error),
    };
    let period_id = match policy.format(&period_probe(prefix)) {
        Ok(id) => Some(id),
        Err(PolicyError::Format(_)) => None,
        Err(error) => return Err(error),
    };
    let ids: Vec<String> = std::iter::once(time_id).chain(period_id).collect();
    let mut read = policy
        .validate_many(&ids, Some(prefix), None)?
        .into_iter()
        .zip(&ids)
        .map(|(answer, id)| answer.map_err(|invalid| rejects_its_own(policy, id, invalid)));
    let time = read
        .next()
        .expect("the time probe's answer")?
        .timestamp_micros
        != 0;
    let period = match read.next() {
        Some(parts) => parts?.period == Some(PROBE_PERIOD),
        None => false,
    };
    Ok(Writes {
        time,
        period,
        // It formatted plain parts.
        snowflake_only: false,
    })
}

/// Whether `policy` formats snowflake IDs only: it refuses parts without
/// snowflake fields and formats a snowflake ID's parts at the same time.
/// Nothing is consumed or written.
pub fn formats_snowflake_only(policy: &Policy, prefix: &str) -> Result<bool, PolicyError> {
    let plain = plain_probe(prefix, PROBE_MICROS);
    match policy.format(&plain) {
        Ok(_) => Ok(false),
        Err(PolicyError::Format(_)) => match policy.format(&snowflake_probe(&plain)) {
            Ok(_) => Ok(true),
            Err(PolicyError::Format(_)) => Ok(false),
            Err(error) => Err(error),
        },
        Err(error) => Err(error),
    }
}

/// The parts the probes format: `prefix`, value 0 at `micros`.
fn plain_probe(prefix: &str, micros: u64) -> IdParts {
    IdParts {
        prefix: prefix.to_string(),
        timestamp_micros: micros,
        sequence: 0,
        snowflake: None,
        period: None,
    }
}

/// `parts` as a snowflake ID's of the default layout: worker 0, sequence
/// 0, the time unit of `parts`' time (within the layout's span).
fn snowflake_probe(parts: &IdParts) -> IdParts {
    let layout = Layout::default();
    let id = layout.compose(SnowflakeParts {
        time: layout
            .time_at(parts.timestamp_micros / 1000)
            .min(layout.max_time()),
        ..SnowflakeParts::default()
    });
    Stamp::snowflake(id, &layout)
        .expect("a composed ID fits 63 bits")
        .with_prefix(&parts.prefix)
}

/// Formats `parts`, or, if the policy refuses them and they have no
/// snowflake fields, a snowflake ID's at the same time, for a policy that
/// formats snowflake IDs only: the ID and the parts it was made from. The
/// refusal of `parts` stands when the second one is refused too.
fn format_probe(policy: &Policy, parts: IdParts) -> Result<(String, IdParts), PolicyError> {
    match policy.format(&parts) {
        Ok(id) => Ok((id, parts)),
        Err(refusal @ PolicyError::Format(_)) if parts.snowflake.is_none() => {
            let snowflake = snowflake_probe(&parts);
            match policy.format(&snowflake) {
                Ok(id) => Ok((id, snowflake)),
                Err(PolicyError::Format(_)) => Err(refusal),
                Err(error) => Err(error),
            }
        }
        Err(error) => Err(error),
    }
}

/// Whether `policy` writes the time into its IDs: it formats one ID with
/// `prefix` and reads it back; a policy without time reads it back with
/// timestamp 0. Nothing is consumed or written.
pub fn writes_time(policy: &Policy, prefix: &str) -> Result<bool, PolicyError> {
    Ok(read_back(policy, plain_probe(prefix, PROBE_MICROS))?.timestamp_micros != 0)
}

/// Whether `policy` writes a periodic counter's period into its IDs: it
/// formats one ID in a period and reads it back; a policy that does not
/// write periods (every policy on a contract before 0.4.0) reads it back
/// without it. A policy that refuses to format it does not write it either.
pub fn writes_period(policy: &Policy, prefix: &str) -> Result<bool, PolicyError> {
    let parts = period_probe(prefix);
    match policy.format(&parts) {
        Ok(_) => Ok(read_back(policy, parts)?.period == Some(PROBE_PERIOD)),
        Err(PolicyError::Format(_)) => Ok(false),
        Err(error) => Err(error),
    }
}

/// The period the period probe is in.
const PROBE_PERIOD: Period = Period {
    unit: PeriodUnit::Year,
    year: 2026,
    month: 1,
    day: 1,
};

/// The parts the period probe formats: `prefix`, value 1 in
/// [`PROBE_PERIOD`].
fn period_probe(prefix: &str) -> IdParts {
    IdParts {
        period: Some(PROBE_PERIOD),
        sequence: 1,
        ..plain_probe(prefix, PROBE_MICROS)
    }
}

/// The failure of a policy whose validator rejects `id`, its own.
fn rejects_its_own(policy: &Policy, id: &str, invalid: impl std::fmt::Display) -> PolicyError {
    PolicyError::Activation {
        origin: policy.origin().to_string(),
        reason: format!("its own validator rejects {id:?}: {invalid}"),
    }
}

/// Formats `parts` ([`format_probe`]) and reads the ID back with the
/// policy's own validator.
fn read_back(policy: &Policy, parts: IdParts) -> Result<IdParts, PolicyError> {
    let (id, parts) = format_probe(policy, parts)?;
    policy
        .validate(&id, Some(&parts.prefix), None)?
        .map_err(|invalid| rejects_its_own(policy, &id, invalid))
}

/// Fails, with the policy's reason, unless the policy accepts `prefix`: it
/// formats a sample ID at `now_micros`, so nothing is consumed or written.
pub fn check_prefix(policy: &Policy, prefix: &str, now_micros: u64) -> Result<(), PolicyError> {
    format_probe(policy, plain_probe(prefix, now_micros)).map(drop)
}

/// Fails unless `policy` may format IDs of `counter` with `prefix`: it
/// accepts the prefix ([`check_prefix`], at `now_micros`), it can serve the
/// counter ([`check_fit`]) and it reads the prefix back alone out of the
/// counter's IDs ([`check_prefix_reads_back`]). Five policy calls the
/// first time for a policy that formats plain parts; none once the policy has accepted this prefix for a counter
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
    if writes.snowflake_only {
        // Such a policy may refuse some of a layout's IDs (a standard ID
        // holds 24 bits of worker id and sequence): the edges say so now,
        // with its reason, rather than at the first such ID.
        policy.format_batch(prefix, &probe_stamps(counter))?;
    }
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

/// Fails unless `policy` writes `counter`'s tag into every ID it formats
/// for it without a prefix, so that it reads the tag back out of each: the
/// rule that lets a snowflake counter that does not own the empty prefix
/// format IDs without one (a standard ID: [`Namespace::Tag`]). Tags are
/// unique in a database, so two counters' IDs that each carry their own tag
/// cannot be equal, whatever else they hold. Checked on the counter's first
/// and last IDs, as [`check_prefix_reads_back`] does; nothing is consumed
/// or written. A counter without a tag fails it with tag 0. Two policy
/// calls the first time; none once the policy has read back this tag,
/// with this salt, out of IDs of this layout (the memo is the policy's, as
/// for [`check_serves`]).
///
/// [`Namespace::Tag`]: crate::minter::Namespace::Tag
pub fn check_tag_reads_back(policy: &Policy, counter: &CounterState) -> Result<(), PolicyError> {
    let layout = counter.snowflake_layout();
    let (tag, salt) = counter
        .counter_tag()
        .map_or((0, 0), |counter_tag| (counter_tag.tag, counter_tag.salt));
    let probes = probe_stamps(counter);
    // Everything the check reads: the layout, the tag and salt, the stamps.
    let key = format!("tag {tag} {salt} {layout:?} {probes:?}");
    if policy.fits().accepted(&key) {
        return Ok(());
    }
    let stamps: Vec<Stamp> = probes
        .into_iter()
        .map(|mut stamp| {
            if let Some(fields) = stamp.snowflake.as_mut() {
                fields.tag = tag;
                fields.salt = salt;
            }
            stamp
        })
        .collect();
    let ids = policy.format_batch("", &stamps)?;
    let answers = policy.validate_many(&ids, Some(""), layout)?;
    for (id, answer) in ids.into_iter().zip(answers) {
        let read = match answer {
            Ok(parts) => parts.snowflake.map(|fields| fields.tag),
            Err(_) => None,
        };
        if tag != 0 && read == Some(tag) {
            continue;
        }
        return Err(FitError::TagNotReadBack {
            policy: policy.info().name.clone(),
            counter: counter.name.clone(),
            tag,
            id,
            read,
        }
        .into());
    }
    policy.fits().accept(key);
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
            ..SnowflakeParts::default()
        });
        let last = layout.compose(SnowflakeParts {
            time: layout.max_time(),
            worker: layout.max_worker(),
            seq: layout.max_seq(),
            ..SnowflakeParts::default()
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
