//! The parts of an ID: what a counter hands out and a policy writes as text.
//!
//! One value type flows from a counter kind to a policy: a [`Stamp`] (a
//! value, the time it was taken, and, for the kinds that have them, the
//! snowflake fields or the period), made once by the kind that issued it.
//! [`IdParts`] is a stamp with its prefix, what a policy reads back out of
//! an ID. Nothing here does I/O: the counter kinds (`crate::sequence`) and
//! the policy runtime (`crate::policy`) both depend on this module, and it
//! depends on neither.

mod period;
pub mod snowflake;
mod stamps;

use serde::Serialize;

pub use period::{zone_is_well_formed, Period, PeriodUnit};
pub use snowflake::{Layout, SnowflakeParts, TimeUnit};
pub use stamps::{IntoIter as StampsIntoIter, Stamps};

/// Microseconds since the epoch as RFC 3339 UTC with six decimals
/// (`2026-11-22T03:14:57.123456Z`).
pub fn rfc3339_micros(micros: u64) -> String {
    i64::try_from(micros)
        .ok()
        .and_then(chrono::DateTime::from_timestamp_micros)
        .map(|time| time.to_rfc3339_opts(chrono::SecondsFormat::Micros, true))
        .unwrap_or_else(|| format!("{micros} µs after the epoch"))
}

/// Milliseconds since the epoch (a BSON date's) as RFC 3339 UTC with
/// three decimals (`2026-11-29T08:40:51.286Z`).
pub fn rfc3339_millis(millis: i64) -> String {
    chrono::DateTime::from_timestamp_millis(millis)
        .map(|time| time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_else(|| format!("{millis} ms after the epoch"))
}

/// One value as a counter issued it, ready to be formatted: the parts of an
/// ID less its prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Stamp {
    /// Microseconds since 1970-01-01T00:00:00Z: for a cyclic counter the
    /// server-decided timestamp that makes (timestamp, value) unique; for a
    /// snowflake ID the start of its time unit; for the other kinds the
    /// taking client's clock.
    pub timestamp_micros: u64,
    /// The counter value. For a snowflake ID: the whole 64-bit ID.
    pub sequence: u64,
    /// For a snowflake ID, its fields (time units, worker id, sequence
    /// within the unit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snowflake: Option<SnowflakeParts>,
    /// For a periodic counter, the period the value belongs to (values
    /// restart at 1 in each period).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<Period>,
}

impl Stamp {
    /// The stamp of `sequence`, taken at `timestamp_micros`.
    pub fn new(timestamp_micros: u64, sequence: u64) -> Self {
        Stamp {
            timestamp_micros,
            sequence,
            snowflake: None,
            period: None,
        }
    }

    /// The stamp of snowflake ID `id` of `layout`: its fields, and the start
    /// of its time unit as its time. `None` if `id` does not fit 63 bits.
    pub fn snowflake(id: u64, layout: &Layout) -> Option<Self> {
        let fields = layout.decompose(id)?;
        Some(Stamp {
            timestamp_micros: layout.unix_ms_of(fields.time).saturating_mul(1000),
            sequence: id,
            snowflake: Some(fields),
            period: None,
        })
    }

    /// This stamp, in `period`.
    pub fn in_period(self, period: Period) -> Self {
        Stamp {
            period: Some(period),
            ..self
        }
    }

    /// The parts of the ID this stamp makes with `prefix`.
    pub fn with_prefix(&self, prefix: &str) -> IdParts {
        IdParts {
            prefix: prefix.to_string(),
            timestamp_micros: self.timestamp_micros,
            sequence: self.sequence,
            snowflake: self.snowflake,
            period: self.period,
        }
    }
}

/// The parts an ID is made of: a [`Stamp`] and its prefix.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct IdParts {
    /// Text placed before the rest; each policy states the characters it allows.
    pub prefix: String,
    /// Microseconds since 1970-01-01T00:00:00Z (see [`Stamp::timestamp_micros`]).
    pub timestamp_micros: u64,
    /// The counter value. For a snowflake ID: the whole 64-bit ID.
    pub sequence: u64,
    /// For a snowflake ID, its fields; `None` for the other counters, and
    /// from a policy that cannot read snowflake IDs (contract 0.2.0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snowflake: Option<SnowflakeParts>,
    /// For a periodic counter's ID, its period; `None` for the other
    /// counters, and from a policy that does not write periods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<Period>,
}

impl IdParts {
    /// The stamp these parts hold (without the prefix).
    pub fn stamp(&self) -> Stamp {
        Stamp {
            timestamp_micros: self.timestamp_micros,
            sequence: self.sequence,
            snowflake: self.snowflake,
            period: self.period,
        }
    }
}
