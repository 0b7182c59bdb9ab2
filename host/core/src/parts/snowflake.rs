//! The bit layout of a snowflake ID: sign, time, worker id, sequence. It is
//! here, with the other parts of an ID, because both the snowflake kind
//! (which composes IDs) and policies (which read them back) need it.
//!
//! An ID is a positive 64-bit integer: one zero sign bit, then `time` bits
//! of time units since the counter's epoch, `worker` bits of worker id and
//! `seq` bits of sequence within one time unit; the three add up to 63.
//! The default is Twitter's 41,10,12 in milliseconds: 2^41 ms is 69 years,
//! 1,024 workers, 4,096 IDs per millisecond per worker.
//!
//! A layout whose time bits run out within [`MIN_LIFETIME_YEARS`] is
//! refused at creation (uid-generator's default 28 bits of seconds ran out
//! on 2024-11-20 and its users got negative IDs, its issue #100);
//! [`Layout::runs_out_at_ms`] is shown by `counter show`, with a warning
//! once fewer than [`WARN_YEARS`] are left.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// A layout must last at least this long from now when it is created.
pub const MIN_LIFETIME_YEARS: u64 = 10;
/// `counter show` warns once fewer years than this are left.
pub const WARN_YEARS: u64 = 2;
/// Milliseconds in a (Julian) year, for lifetimes.
pub const YEAR_MS: u64 = 31_557_600_000;
/// The default epoch: 2025-01-01T00:00:00Z, in milliseconds since 1970.
pub const DEFAULT_EPOCH_MS: u64 = 1_735_689_600_000;

/// The unit of the time field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeUnit {
    /// Milliseconds.
    Ms,
    /// Seconds.
    S,
}

impl TimeUnit {
    /// The unit in milliseconds.
    pub fn millis(self) -> u64 {
        match self {
            Self::Ms => 1,
            Self::S => 1000,
        }
    }

    /// The unit's name in documents and flags.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ms => "ms",
            Self::S => "s",
        }
    }
}

impl FromStr for TimeUnit {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "ms" => Ok(Self::Ms),
            "s" => Ok(Self::S),
            other => Err(format!("unknown time unit {other:?}: use ms or s")),
        }
    }
}

impl fmt::Display for TimeUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A snowflake layout (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Layout {
    /// Bits of time units since the epoch.
    pub time_bits: u32,
    /// Bits of worker id.
    pub worker_bits: u32,
    /// Bits of sequence within one time unit.
    pub seq_bits: u32,
    /// The time unit.
    pub unit: TimeUnit,
    /// The epoch, milliseconds since 1970-01-01T00:00:00Z.
    pub epoch_ms: u64,
}

/// The parts of a snowflake ID, and the counter's tag and salt, which are
/// not in its 64 bits but in the standard IDs made from it (a UUIDv7, a
/// ULID: contract 0.5.0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
pub struct SnowflakeParts {
    /// Time units since the epoch.
    pub time: u64,
    /// The worker id.
    pub worker: u64,
    /// The sequence within the time unit.
    pub seq: u64,
    /// The counter's tag: 0 when it is not known (the 64-bit value does
    /// not hold it) or the counter has none; shown only when known.
    #[serde(skip_serializing_if = "is_zero")]
    pub tag: u32,
    /// The counter's salt: a secret, never shown; 0 when not known (it
    /// cannot be read back out of an ID).
    #[serde(skip)]
    pub salt: u64,
}

/// Whether a tag is 0 (not known), for serde.
fn is_zero(tag: &u32) -> bool {
    *tag == 0
}

impl Default for Layout {
    fn default() -> Self {
        Self {
            time_bits: 41,
            worker_bits: 10,
            seq_bits: 12,
            unit: TimeUnit::Ms,
            epoch_ms: DEFAULT_EPOCH_MS,
        }
    }
}

impl Layout {
    /// Reads `TIME,WORKER,SEQ` (e.g. `41,10,12`) with the default unit and epoch.
    pub fn parse_bits(text: &str) -> Result<(u32, u32, u32), String> {
        let bits: Vec<&str> = text.split(',').map(str::trim).collect();
        let [time, worker, seq] = bits.as_slice() else {
            return Err(format!(
                "layout {text:?} must be three bit counts TIME,WORKER,SEQ, e.g. 41,10,12"
            ));
        };
        let number = |name: &str, value: &str| {
            value
                .parse::<u32>()
                .map_err(|_| format!("layout {text:?}: {name} bits {value:?} is not a number"))
        };
        Ok((
            number("time", time)?,
            number("worker", worker)?,
            number("sequence", seq)?,
        ))
    }

    /// Checks the layout at creation, `now_ms` being the current time: bits
    /// adding up to 63, at least one of each, an epoch not in the future,
    /// and time bits lasting at least [`MIN_LIFETIME_YEARS`].
    pub fn check_new(&self, now_ms: u64) -> Result<(), String> {
        self.check_shape()?;
        if self.epoch_ms > now_ms {
            return Err(format!(
                "the epoch {} is in the future: IDs would need negative times",
                date(self.epoch_ms)
            ));
        }
        let ends = self.runs_out_at_ms();
        if ends < now_ms.saturating_add(MIN_LIFETIME_YEARS * YEAR_MS) {
            return Err(format!(
                "{} time bits of {} from {} run out on {}, within {MIN_LIFETIME_YEARS} years: \
                 use more time bits, a coarser unit or a later epoch",
                self.time_bits,
                self.unit,
                date(self.epoch_ms),
                date(ends)
            ));
        }
        Ok(())
    }

    /// Checks what every stored layout must satisfy.
    pub fn check_shape(&self) -> Result<(), String> {
        let (t, w, s) = (self.time_bits, self.worker_bits, self.seq_bits);
        if t + w + s != 63 {
            return Err(format!(
                "layout {t},{w},{s} adds up to {} bits; time, worker and sequence must add up to 63",
                t + w + s
            ));
        }
        if t < 20 || w < 1 || s < 1 {
            return Err(format!(
                "layout {t},{w},{s}: at least 20 time bits, 1 worker bit and 1 sequence bit"
            ));
        }
        Ok(())
    }

    /// When the time bits run out, milliseconds since 1970 (saturating).
    pub fn runs_out_at_ms(&self) -> u64 {
        let units = 1_u64.checked_shl(self.time_bits).unwrap_or(u64::MAX);
        self.epoch_ms
            .saturating_add(units.saturating_mul(self.unit.millis()))
    }

    /// A warning once fewer than [`WARN_YEARS`] are left before the time
    /// bits run out at `now_ms`, naming the date; `None` otherwise.
    pub fn lifetime_warning(&self, now_ms: u64) -> Option<String> {
        let ends = self.runs_out_at_ms();
        (ends < now_ms.saturating_add(WARN_YEARS * YEAR_MS)).then(|| {
            format!(
                "the time bits run out on {}, in less than {WARN_YEARS} years: \
                 move to a new counter with a later epoch or more time bits before then",
                date(ends)
            )
        })
    }

    /// The largest worker id.
    pub fn max_worker(&self) -> u64 {
        (1 << self.worker_bits) - 1
    }

    /// The largest sequence within one time unit.
    pub fn max_seq(&self) -> u64 {
        (1 << self.seq_bits) - 1
    }

    /// The largest time value.
    pub fn max_time(&self) -> u64 {
        (1 << self.time_bits) - 1
    }

    /// Time units since the epoch at `unix_ms` (0 before the epoch).
    pub fn time_at(&self, unix_ms: u64) -> u64 {
        unix_ms.saturating_sub(self.epoch_ms) / self.unit.millis()
    }

    /// Milliseconds since 1970 at the start of time unit `time`.
    pub fn unix_ms_of(&self, time: u64) -> u64 {
        self.epoch_ms + time * self.unit.millis()
    }

    /// The ID of `parts`; each part must fit its field.
    pub fn compose(&self, parts: SnowflakeParts) -> u64 {
        (parts.time << (self.worker_bits + self.seq_bits))
            | (parts.worker << self.seq_bits)
            | parts.seq
    }

    /// The parts of `id`, or `None` if it does not fit 63 bits.
    pub fn decompose(&self, id: u64) -> Option<SnowflakeParts> {
        if id >> 63 != 0 {
            return None;
        }
        Some(SnowflakeParts {
            time: id >> (self.worker_bits + self.seq_bits),
            worker: (id >> self.seq_bits) & self.max_worker(),
            seq: id & self.max_seq(),
            ..SnowflakeParts::default()
        })
    }
}

/// `TIME,WORKER,SEQ in UNIT from YYYY-MM-DD`, e.g. `41,10,12 in ms from 2025-01-01`.
impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{},{},{} in {} from {}",
            self.time_bits,
            self.worker_bits,
            self.seq_bits,
            self.unit,
            date(self.epoch_ms)
        )
    }
}

/// `YYYY-MM-DD` of a time in milliseconds since 1970.
pub fn date(unix_ms: u64) -> String {
    i64::try_from(unix_ms)
        .ok()
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map(|time| time.format("%Y-%m-%d").to_string())
        .unwrap_or_else(|| "after the year 262143".to_string())
}

/// Reads `YYYY-MM-DD` as milliseconds since 1970 at 00:00 UTC.
pub fn parse_date(text: &str) -> Result<u64, String> {
    let day = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .map_err(|_| format!("epoch {text:?} is not a date YYYY-MM-DD"))?;
    let millis = day
        .and_hms_opt(0, 0, 0)
        .map(|time| time.and_utc().timestamp_millis())
        .unwrap_or(-1);
    u64::try_from(millis).map_err(|_| format!("epoch {text} is before 1970"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-22.
    const NOW_MS: u64 = 1_795_317_297_123;

    #[test]
    fn composes_and_decomposes() {
        let layout = Layout::default();
        let parts = SnowflakeParts {
            time: 123_456_789,
            worker: 1023,
            seq: 4095,
            ..SnowflakeParts::default()
        };
        let id = layout.compose(parts);
        assert_eq!(layout.decompose(id), Some(parts));
        assert_eq!(layout.decompose(1 << 63), None);
    }

    #[test]
    fn the_default_layout_lasts_69_years() {
        let layout = Layout::default();
        layout.check_new(NOW_MS).unwrap();
        assert_eq!(date(layout.runs_out_at_ms()), "2094-09-07");
    }

    #[test]
    fn refuses_bad_layouts_naming_why() {
        let with = |time_bits, worker_bits, seq_bits, unit, epoch_ms| Layout {
            time_bits,
            worker_bits,
            seq_bits,
            unit,
            epoch_ms,
        };
        let e = DEFAULT_EPOCH_MS;
        assert!(with(41, 10, 13, TimeUnit::Ms, e)
            .check_new(NOW_MS)
            .unwrap_err()
            .contains("adds up to 64 bits"));
        // uid-generator's default: 28 bits of seconds from 2016-05-20.
        let uid = with(28, 22, 13, TimeUnit::S, parse_date("2016-05-20").unwrap());
        let error = uid.check_new(NOW_MS).unwrap_err();
        assert!(error.contains("run out on 2024-11-"), "{error}");
        assert!(with(41, 10, 12, TimeUnit::Ms, NOW_MS + 86_400_000)
            .check_new(NOW_MS)
            .unwrap_err()
            .contains("is in the future"));
        assert!(Layout::parse_bits("41,10").is_err());
        assert_eq!(Layout::parse_bits("49, 3, 11"), Ok((49, 3, 11)));
    }
}
