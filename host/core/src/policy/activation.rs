//! The activation check: what a policy must pass before it serves an ID.
//!
//! Loading a policy ([`PolicyRuntime::load_bytes`](super::PolicyRuntime))
//! proves that it compiles, fits the contract and answers `describe` within
//! its limits. That says nothing about its output, so before a new policy is
//! swapped in (by a file watch, by the policies collection, or `idmint policy
//! check` offline) [`check`] runs it on sample parts, edge values included:
//!
//! - sequence values 0, 1 and `sequence-capacity - 1`;
//! - the epoch, the last and first microsecond around a second, a day, a
//!   month, a year, a leap day, and the current time;
//!
//! (for a policy that formats snowflake IDs only, a standard ID's, each a
//! snowflake ID of the default layout at the sample's time, read back with
//! that layout), formats each one alone and all of them in one
//! `format-batch`, requires the
//! two to agree and every ID to be one line, parses each ID back with the
//! policy's own `validate` and requires the very parts it was made from. A
//! policy that does not write the time (it reads its IDs back with
//! timestamp 0, see [`fit`](super::fit)) must read back timestamp 0 for
//! every sample and write the same ID whatever the time. It then checks
//! that the policy can serve every counter it will serve with
//! [`check_fit`]: capacity, and time (or the period) for counters whose
//! values repeat. For a snowflake counter it reads IDs at the edges of the
//! counter's layout back into their fields; for a periodic counter, it
//! formats and reads back values in periods of every unit (a counter's unit
//! may change, and a policy is not told it) at the calendar's edges: the
//! first and last year, month and day a label holds, months' last days,
//! leap days (2024-02-29, the century's 2000-02-29) and the day before one
//! that is not (2023-02-28), so that a policy must read back the exact
//! period it was given. Any failure is a [`PolicyError`] that names the
//! sample, and the caller keeps the policy it had.

use serde::Serialize;

use super::error::PolicyError;
use super::fit::{check_fit, formats_snowflake_only, writes_period, Writes};
use super::runtime::Policy;
use super::types::PolicyInfo;
use crate::parts::{IdParts, Stamp};
use crate::parts::{Layout, Period, PeriodUnit, SnowflakeParts};
use crate::sequence::{CounterState, Repeats};

/// What the activation check runs against.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ActivationOptions {
    /// The prefix the samples use: the one the policy will serve. Default: empty.
    pub prefix: String,
    /// The counters the policy will serve; the policy must be able to serve
    /// each one ([`check_fit`]). Default: none.
    pub counters: Vec<CounterState>,
    /// The time used as the "now" sample, in microseconds since the epoch.
    /// Default: `None`, no such sample (the fixed samples already cover the
    /// calendar); the CLI passes the current time.
    pub now_micros: Option<u64>,
}

impl ActivationOptions {
    /// Sets [`ActivationOptions::prefix`].
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Adds a counter to [`ActivationOptions::counters`].
    pub fn counter(mut self, counter: CounterState) -> Self {
        self.counters.push(counter);
        self
    }

    /// Sets [`ActivationOptions::now_micros`].
    pub fn now_micros(mut self, now_micros: u64) -> Self {
        self.now_micros = Some(now_micros);
        self
    }
}

/// What a passed activation check did.
#[derive(Debug, Clone, Serialize)]
pub struct ActivationReport {
    /// What the policy says about itself.
    pub policy: PolicyInfo,
    /// The version of the contract the policy implements (`"0.4.0"`).
    pub contract: &'static str,
    /// The SHA-256 of the policy's bytes.
    pub sha256: String,
    /// How many sample parts were formatted and read back (the periods'
    /// included, for periodic counters; not the snowflake edges).
    pub samples: usize,
    /// Whether the policy writes the time into its IDs.
    pub writes_time: bool,
    /// With a snowflake counter among the counters: whether the policy
    /// reads snowflake IDs back into their fields (time, worker, sequence).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reads_snowflake: Option<bool>,
    /// The counters whose capacity was checked, by name.
    pub counters: Vec<String>,
}

/// Timestamps at calendar edges, microseconds since the epoch.
const SAMPLE_MICROS: [u64; 13] = [
    0,                       // 1970-01-01T00:00:00.000000Z
    999_999,                 // the last microsecond of the first second
    1_000_000,               // the first of the next
    86_399_999_999,          // 1970-01-01T23:59:59.999999Z
    86_400_000_000,          // 1970-01-02T00:00:00Z
    951_782_399_999_999,     // 2000-02-28T23:59:59.999999Z
    951_782_400_000_000,     // 2000-02-29T00:00:00Z (leap day, century)
    1_709_251_199_999_999,   // 2024-02-29T23:59:59.999999Z
    1_795_317_297_123_456,   // 2026-11-22T03:14:57.123456Z
    1_798_761_599_999_999,   // 2026-12-31T23:59:59.999999Z
    1_798_761_600_000_000,   // 2027-01-01T00:00:00Z
    4_102_444_800_000_000,   // 2100-01-01T00:00:00Z
    253_402_300_799_999_999, // 9999-12-31T23:59:59.999999Z
];

/// The periods sampled for periodic counters: every unit at the calendar's
/// edges, as (unit, year, month, day). A period is named by its first day.
const SAMPLE_PERIODS: [(PeriodUnit, u16, u8, u8); 17] = [
    (PeriodUnit::Year, 1, 1, 1),      // the first year a label holds
    (PeriodUnit::Year, 1970, 1, 1),   // the epoch's
    (PeriodUnit::Year, 2026, 1, 1),   // a year of this century
    (PeriodUnit::Year, 9999, 1, 1),   // the last a label holds
    (PeriodUnit::Month, 2026, 1, 1),  // a year's first month
    (PeriodUnit::Month, 2024, 2, 1),  // a leap February
    (PeriodUnit::Month, 2026, 12, 1), // a year's last month
    (PeriodUnit::Month, 9999, 12, 1), // the last a label holds
    (PeriodUnit::Day, 1, 1, 1),       // the first day a label holds
    (PeriodUnit::Day, 2026, 1, 1),    // a year's first day
    (PeriodUnit::Day, 2026, 1, 31),   // a 31-day month's last
    (PeriodUnit::Day, 2026, 4, 30),   // a 30-day month's last
    (PeriodUnit::Day, 2023, 2, 28),   // February's last in a common year
    (PeriodUnit::Day, 2024, 2, 29),   // a leap day
    (PeriodUnit::Day, 2000, 2, 29),   // a century's leap day
    (PeriodUnit::Day, 2026, 12, 31),  // a year's last day
    (PeriodUnit::Day, 9999, 12, 31),  // the last a label holds
];

/// The time of every period sample: 2026-11-22T03:14:57.123456Z. A
/// periodic counter's time is the taking client's clock, unrelated to the
/// period (which is in the counter's zone), so one time does for all.
const PERIOD_SAMPLE_MICROS: u64 = 1_795_317_297_123_456;

/// Runs the activation check (see the module docs) on `policy`.
pub fn check(
    policy: &Policy,
    options: &ActivationOptions,
) -> Result<ActivationReport, PolicyError> {
    let prefix = options.prefix.as_str();
    let snowflake_only = formats_snowflake_only(policy, prefix)?;
    let layout = snowflake_only.then(Layout::default);
    let samples: Vec<Stamp> = match &layout {
        Some(layout) => samples(policy.info(), options)
            .iter()
            .map(|stamp| as_snowflake(stamp, layout))
            .collect(),
        None => samples(policy.info(), options),
    };
    let origin = policy.origin();
    let fail = |reason: String| PolicyError::Activation {
        origin: origin.to_string(),
        reason,
    };

    let ids = format_alone_and_in_a_batch(policy, prefix, &samples, &fail)?;
    let answers = policy.validate_many(&ids, Some(prefix), layout.as_ref())?;
    // Whether the policy writes the time: what it reads back from an ID
    // made at a time other than the epoch (the samples' first such one).
    let writes_time = samples
        .iter()
        .zip(&answers)
        .find(|(stamp, _)| stamp.timestamp_micros != 0)
        .is_none_or(|(_, answer)| !matches!(answer, Ok(read) if read.timestamp_micros == 0));
    if !writes_time {
        // Without time, an ID depends on the sequence value alone.
        for (stamp, id) in samples.iter().zip(&ids) {
            let (first, first_id) = samples
                .iter()
                .zip(&ids)
                .find(|(other, _)| other.sequence == stamp.sequence)
                .expect("the sample itself matches");
            if first_id != id {
                return Err(fail(format!(
                    "it reads the time back as 0, so it must not write it, yet it wrote {first_id:?} \
                     at {} us and {id:?} at {} us for sequence {}",
                    first.timestamp_micros, stamp.timestamp_micros, stamp.sequence
                )));
            }
        }
    }
    check_read_back(&samples, &ids, answers, prefix, writes_time, &fail)?;

    let mut reads_snowflake = None;
    let mut period_samples = 0;
    for counter in &options.counters {
        check_fit(
            policy,
            counter,
            Writes {
                time: writes_time,
                period: writes_period(policy, &options.prefix)?,
                snowflake_only,
            },
        )?;
        if let Some(layout) = counter.snowflake_layout() {
            let reads = check_snowflake(policy, prefix, layout, &fail)?;
            reads_snowflake = Some(reads_snowflake.unwrap_or(true) && reads);
        }
        // The samples do not depend on the counter: once is enough.
        if counter.shape().repeats == Repeats::EachPeriod && period_samples == 0 {
            period_samples = check_periods(policy, prefix, writes_time, &fail)?;
        }
    }

    Ok(ActivationReport {
        policy: policy.info().clone(),
        contract: policy.contract(),
        sha256: policy.sha256().to_string(),
        samples: samples.len() + period_samples,
        writes_time,
        reads_snowflake,
        counters: options.counters.iter().map(|c| c.name.clone()).collect(),
    })
}

/// Formats each of `samples` alone and all of them in one batch, and
/// requires the two to agree and every ID to be one line: the IDs.
fn format_alone_and_in_a_batch(
    policy: &Policy,
    prefix: &str,
    samples: &[Stamp],
    fail: &impl Fn(String) -> PolicyError,
) -> Result<Vec<String>, PolicyError> {
    let mut ids = Vec::with_capacity(samples.len());
    for stamp in samples {
        let parts = stamp.with_prefix(prefix);
        let id = policy.format(&parts).map_err(|error| match error {
            PolicyError::Format(refusal) => {
                fail(format!("it refused to format {}: {refusal}", show(&parts)))
            }
            other => other,
        })?;
        if id.contains('\n') {
            return Err(fail(format!(
                "the ID for {} contains a line feed",
                show(&parts)
            )));
        }
        ids.push(id);
    }

    let batch = policy
        .format_batch(prefix, samples)
        .map_err(|error| match error {
            PolicyError::Format(refusal) => {
                fail(format!("format-batch refused the samples: {refusal}"))
            }
            other => other,
        })?;
    if let Some((index, (single, batched))) = ids
        .iter()
        .zip(&batch)
        .enumerate()
        .find(|(_, (single, batched))| single != batched)
    {
        return Err(fail(format!(
            "format-batch wrote {batched:?} for sample {index} but format wrote {single:?}"
        )));
    }
    Ok(ids)
}

/// Requires each answer of the policy's own validator to be the very parts
/// its sample was made from (with timestamp 0 from a policy without time).
fn check_read_back(
    samples: &[Stamp],
    ids: &[String],
    answers: Vec<Result<IdParts, super::InvalidId>>,
    prefix: &str,
    writes_time: bool,
    fail: &impl Fn(String) -> PolicyError,
) -> Result<(), PolicyError> {
    for ((stamp, id), answer) in samples.iter().zip(ids).zip(answers) {
        let parts = IdParts {
            timestamp_micros: if writes_time {
                stamp.timestamp_micros
            } else {
                0
            },
            ..stamp.with_prefix(prefix)
        };
        match answer {
            Ok(read) if read == parts => {}
            Ok(read) => {
                return Err(fail(format!(
                    "{id:?}, formatted from {}, reads back as {}",
                    show(&parts),
                    show(&read)
                )))
            }
            Err(invalid) => {
                return Err(fail(format!(
                    "its own validator rejects {id:?}, formatted from {}: {invalid}",
                    show(&parts)
                )))
            }
        }
    }
    Ok(())
}

/// The period round trip, for periodic counters: values 1 and the last the
/// policy holds, in each of [`SAMPLE_PERIODS`], formatted alone and in a
/// batch and read back to the very period. Returns how many samples it ran.
fn check_periods(
    policy: &Policy,
    prefix: &str,
    writes_time: bool,
    fail: &impl Fn(String) -> PolicyError,
) -> Result<usize, PolicyError> {
    let last = policy.info().sequence_capacity.saturating_sub(1);
    let mut sequences = vec![1, last];
    sequences.dedup();
    sequences.retain(|&s| s < policy.info().sequence_capacity);
    let samples: Vec<Stamp> = SAMPLE_PERIODS
        .iter()
        .map(|&(unit, year, month, day)| Period {
            unit,
            year,
            month,
            day,
        })
        .flat_map(|period| {
            sequences
                .iter()
                .map(move |&sequence| Stamp::new(PERIOD_SAMPLE_MICROS, sequence).in_period(period))
        })
        .collect();
    let ids = format_alone_and_in_a_batch(policy, prefix, &samples, fail)?;
    let answers = policy.validate_many(&ids, Some(prefix), None)?;
    check_read_back(&samples, &ids, answers, prefix, writes_time, fail)?;
    Ok(samples.len())
}

/// The snowflake round trip, for a counter of `layout`: IDs at the edges
/// of each field, formatted and read back with the layout. A policy that
/// reads snowflake IDs (it returns their fields) must return the very parts
/// each ID was made from; one that does not (contract 0.2.0, or it ignores
/// the layout) must at least return the value. Returns whether it reads them.
fn check_snowflake(
    policy: &Policy,
    prefix: &str,
    layout: &Layout,
    fail: &impl Fn(String) -> PolicyError,
) -> Result<bool, PolicyError> {
    let edges = [
        (0, 0, 0),
        (1, layout.max_worker(), layout.max_seq()),
        (layout.max_time(), 1, 0),
        (layout.max_time(), layout.max_worker(), layout.max_seq()),
    ];
    let stamps: Vec<Stamp> = edges
        .iter()
        .map(|&(time, worker, seq)| {
            let value = layout.compose(SnowflakeParts {
                time,
                worker,
                seq,
                ..SnowflakeParts::default()
            });
            Stamp::snowflake(value, layout).expect("a composed ID fits 63 bits")
        })
        .collect();
    let ids = policy
        .format_batch(prefix, &stamps)
        .map_err(|error| match error {
            PolicyError::Format(refusal) => fail(format!(
                "it refused to format snowflake IDs of layout {layout}: {refusal}"
            )),
            other => other,
        })?;
    let answers = policy.validate_many(&ids, Some(prefix), Some(layout))?;
    let reads = matches!(answers.first(), Some(Ok(read)) if read.snowflake.is_some());
    for ((stamp, id), answer) in stamps.iter().zip(&ids).zip(answers) {
        let parts = stamp.with_prefix(prefix);
        match answer {
            Ok(read) if reads && read == parts => {}
            Ok(read) if !reads && read.snowflake.is_none() && read.sequence == parts.sequence => {}
            Ok(read) => {
                return Err(fail(format!(
                "the snowflake ID {id:?}, formatted from {}, reads back with layout {layout} as {}",
                show(&parts),
                show(&read)
            )))
            }
            Err(invalid) => {
                return Err(fail(format!(
                    "its own validator rejects the snowflake ID {id:?} (layout {layout}): {invalid}"
                )))
            }
        }
    }
    Ok(reads)
}

/// Every sample: each calendar edge (and "now") with sequence 0, 1 and the
/// last value the policy holds.
fn samples(info: &PolicyInfo, options: &ActivationOptions) -> Vec<Stamp> {
    let last = info.sequence_capacity.saturating_sub(1);
    let mut sequences = vec![0, 1, last];
    sequences.dedup();
    sequences.retain(|&s| s < info.sequence_capacity);
    SAMPLE_MICROS
        .iter()
        .copied()
        .chain(options.now_micros)
        .flat_map(|timestamp_micros| {
            sequences
                .iter()
                .map(move |&sequence| Stamp::new(timestamp_micros, sequence))
        })
        .collect()
}

/// `stamp` as a snowflake ID of `layout` at its time (within the layout's
/// span), worker 0, its value as the sequence (within the layout's).
fn as_snowflake(stamp: &Stamp, layout: &Layout) -> Stamp {
    let id = layout.compose(SnowflakeParts {
        time: layout
            .time_at(stamp.timestamp_micros / 1000)
            .min(layout.max_time()),
        seq: stamp.sequence.min(layout.max_seq()),
        ..SnowflakeParts::default()
    });
    Stamp::snowflake(id, layout).expect("a composed ID fits 63 bits")
}

/// Parts as a short human text, for error messages.
fn show(parts: &IdParts) -> String {
    let snowflake = parts.snowflake.map_or(String::new(), |fields| {
        format!(
            ", snowflake time {} worker {} sequence {}",
            fields.time, fields.worker, fields.seq
        )
    });
    let period = parts.period.map_or(String::new(), |period| {
        format!(", {} period {period}", period.unit)
    });
    format!(
        "prefix {:?}, timestamp {} us, sequence {}{snowflake}{period}",
        parts.prefix, parts.timestamp_micros, parts.sequence
    )
}
