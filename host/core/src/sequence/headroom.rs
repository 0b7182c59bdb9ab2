//! Headroom: how much of what a counter can hand out is used, what is left,
//! and when an operator should act. What ends a counter depends on its
//! kind, and so does the form its headroom takes:
//!
//! - **values** (autoinc, segment, periodic): the values left to its last
//!   one; at a rate, when they run out ([`Headroom::runs_out_at_rate`]);
//! - **time** (snowflake): the end of its layout's time bits, whatever the
//!   rate;
//! - **pace** (cyclic): it never runs out, it wraps, but it hands out at
//!   most `maxval + 1` values per microsecond of its timestamps. Taken
//!   faster, or by a client whose clock is ahead, its timestamps run ahead
//!   of the clock, and so do the times its IDs carry. One read of the
//!   counter cannot know its rate: it tells how far ahead its timestamps
//!   are; `serve`, which sees the values it hands out, adds the share of
//!   the pace its busiest 10 s used ([`Headroom::at_rate`]).
//!
//! A policy's width is no fourth form: a policy must hold every value a
//! counter can hand out before it formats that counter's IDs
//! (`policy::fit`, `FitError::Capacity`), so a counter always ends before
//! its policy does.

use serde::Serialize;

use super::words::group_thousands;

/// Milliseconds in a day.
const DAY_MS: u64 = 86_400_000;

/// How much of what a counter can hand out is used: what an operator
/// watches to act before it runs out (the monitor page colours it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Headroom {
    /// The share used, 0.0 to 1.0: of its values, of its time, or (a
    /// cyclic counter) of its pace at the rate `serve` saw, 0.0 where no
    /// rate is known.
    pub used: f64,
    /// What is left, in words: `9,007,199,254,740,981 values`,
    /// `until 2094-06-01` (time), `100,000,000 values/s` (pace).
    pub left: String,
    /// When the counter runs out whatever its rate, in milliseconds since
    /// 1970: the end of a snowflake layout's time bits. `None` for a
    /// counter that runs out of values, not of time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs_out_at_ms: Option<u64>,
    /// The values left of a counter that runs out of values (`None` for
    /// one that runs out of time): what a rate is projected against.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_values: Option<u64>,
    /// A cyclic counter's pace: the most values it hands out per second
    /// before its timestamps run ahead of the clock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pace_per_second: Option<u64>,
    /// How far a cyclic counter's last timestamp is ahead of the reader's
    /// clock, in milliseconds (0: not ahead).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ahead_ms: Option<u64>,
}

/// When an operator is warned of a counter's end.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HeadroomLimits {
    /// A counter that runs out of time: warned when fewer days than this
    /// are left.
    pub days: u64,
    /// A counter that runs out of values: warned when less than this share
    /// of them is left, in percent; a cyclic counter, when less than this
    /// share of its pace was left at the rate seen.
    pub space_percent: f64,
    /// A cyclic counter: warned when its timestamps are more than this many
    /// milliseconds ahead of the clock.
    pub ahead_ms: u64,
}

impl Default for HeadroomLimits {
    /// 365 days; 10% of the values or of the pace; 1 s ahead.
    fn default() -> Self {
        HeadroomLimits {
            days: 365,
            space_percent: 10.0,
            ahead_ms: 1_000,
        }
    }
}

impl Headroom {
    /// The share at which the monitor page colours a counter.
    pub const WARN_AT: f64 = 0.9;

    /// Headroom of `used` values out of `capacity`.
    pub(crate) fn of_values(used: u64, capacity: u64) -> Self {
        let left = capacity.saturating_sub(used);
        Headroom {
            used: if capacity == 0 {
                1.0
            } else {
                used as f64 / capacity as f64
            },
            left: format!("{} values", group_thousands(left)),
            runs_out_at_ms: None,
            left_values: Some(left),
            pace_per_second: None,
            ahead_ms: None,
        }
    }

    /// Headroom of a span of time from `start_ms` to `end_ms` at `now_ms`.
    pub(crate) fn of_time(start_ms: u64, end_ms: u64, now_ms: u64) -> Self {
        let span = end_ms.saturating_sub(start_ms).max(1);
        Headroom {
            used: (now_ms.saturating_sub(start_ms) as f64 / span as f64).min(1.0),
            left: format!("until {}", crate::parts::snowflake::date(end_ms)),
            runs_out_at_ms: Some(end_ms),
            left_values: None,
            pace_per_second: None,
            ahead_ms: None,
        }
    }

    /// Headroom of a counter that hands out `per_microsecond` values per
    /// microsecond of its timestamps, the last of them `timestamp_ms`, read
    /// at `now_ms`; no rate known yet.
    pub(crate) fn of_pace(per_microsecond: u64, timestamp_ms: u64, now_ms: u64) -> Self {
        let per_second = per_microsecond.saturating_mul(1_000_000);
        Headroom {
            used: 0.0,
            left: format!("{} values/s", group_thousands(per_second)),
            runs_out_at_ms: None,
            left_values: None,
            pace_per_second: Some(per_second),
            ahead_ms: Some(timestamp_ms.saturating_sub(now_ms)),
        }
    }

    /// This headroom with the share of a pace that `values_per_second`
    /// uses (a counter without a pace is unchanged).
    pub fn at_rate(mut self, values_per_second: f64) -> Self {
        if let Some(per_second) = self.pace_per_second {
            self.used = (values_per_second / per_second.max(1) as f64).clamp(0.0, 1.0);
        }
        self
    }

    /// Whether the monitor page colours it: [`Headroom::WARN_AT`] or more is
    /// used, or its timestamps are further ahead than the default limit.
    pub fn near_end(&self) -> bool {
        self.used >= Self::WARN_AT
            || self
                .ahead_ms
                .is_some_and(|ahead| ahead > HeadroomLimits::default().ahead_ms)
    }

    /// What is left, as `idmint status` says it: `runs out on 2094-06-01
    /// (12.3% used)`, `9,007,199,254,740,981 values left (0.0% used)` or
    /// `at most 100,000,000 values/s, timestamps 0 ms ahead`.
    pub fn summary(&self) -> String {
        let used = self.used * 100.0;
        match (self.runs_out_at_ms, self.ahead_ms) {
            (Some(end_ms), _) => format!(
                "runs out on {} ({used:.1}% used)",
                crate::parts::snowflake::date(end_ms)
            ),
            (None, Some(ahead_ms)) => format!(
                "at most {}, timestamps {} ms ahead",
                self.left,
                group_thousands(ahead_ms)
            ),
            (None, None) => format!("{} left ({used:.1}% used)", self.left),
        }
    }

    /// When a counter that runs out of values does, at `values_per_second`
    /// from `now_ms` (`None`: it runs out of time, or nothing is taken).
    pub fn runs_out_at_rate(&self, now_ms: u64, values_per_second: f64) -> Option<u64> {
        let left = self.left_values?;
        (values_per_second > 0.0).then(|| {
            let ms = (left as f64 / values_per_second * 1000.0).min(u64::MAX as f64 / 2.0);
            now_ms.saturating_add(ms as u64)
        })
    }

    /// Whole days left at `now_ms` of a counter that runs out of time.
    pub fn days_left(&self, now_ms: u64) -> Option<u64> {
        self.runs_out_at_ms
            .map(|end| end.saturating_sub(now_ms) / DAY_MS)
    }

    /// Why an operator should act now, judged by `limits` at `now_ms`, in
    /// words; `None` while there is room.
    pub fn warning(&self, now_ms: u64, limits: &HeadroomLimits) -> Option<String> {
        let left_percent = (1.0 - self.used) * 100.0;
        if let Some(days) = self.days_left(now_ms) {
            return (days < limits.days).then(|| {
                format!(
                    "runs out on {} ({days} days left, fewer than {})",
                    crate::parts::snowflake::date(self.runs_out_at_ms.unwrap_or_default()),
                    limits.days
                )
            });
        }
        if let Some(ahead_ms) = self.ahead_ms {
            if ahead_ms > limits.ahead_ms {
                return Some(format!(
                    "has timestamps {} ms ahead of this clock (more than {}): it is taken \
                     faster than {}, or a client's clock is ahead",
                    group_thousands(ahead_ms),
                    group_thousands(limits.ahead_ms),
                    self.left
                ));
            }
            return (left_percent < limits.space_percent).then(|| {
                format!(
                    "was taken at {:.1}% of its pace of {} (less than {}% to spare)",
                    self.used * 100.0,
                    self.left,
                    limits.space_percent
                )
            });
        }
        (left_percent < limits.space_percent).then(|| {
            format!(
                "{} left ({left_percent:.1}% of its values, less than {}%)",
                self.left, limits.space_percent
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sequence::MAX_VALUE;

    #[test]
    fn headroom_says_what_is_left_and_warns_near_the_end() {
        let early = Headroom::of_values(1_000, MAX_VALUE);
        assert_eq!(early.left, "9,007,199,254,739,991 values");
        assert!(!early.near_end());
        let late = Headroom::of_values(95, 100);
        assert_eq!(late.left, "5 values");
        assert_eq!(late.summary(), "5 values left (95.0% used)");
        assert!(late.near_end());
        assert_eq!(Headroom::of_values(0, 0).used, 1.0);
    }

    #[test]
    fn a_counter_is_warned_of_within_its_limits_only() {
        let limits = HeadroomLimits::default();
        assert_eq!(Headroom::of_values(89, 100).warning(0, &limits), None);
        let space = Headroom::of_values(91, 100).warning(0, &limits).unwrap();
        assert_eq!(space, "9 values left (9.0% of its values, less than 10%)");
        let year = 365 * DAY_MS;
        let time = Headroom::of_time(0, 2 * year, 0);
        assert_eq!(time.days_left(year), Some(365));
        assert_eq!(time.warning(year, &limits), None);
        let soon = time.warning(year + DAY_MS, &limits).unwrap();
        assert!(soon.contains("364 days left, fewer than 365"), "{soon}");
        assert_eq!(time.days_left(3 * year), Some(0));
        assert_eq!(time.runs_out_at_rate(0, 5.0), None);
        let values = Headroom::of_values(90, 100);
        assert_eq!(values.runs_out_at_rate(1_000, 0.0), None);
        assert_eq!(values.runs_out_at_rate(1_000, 2.0), Some(6_000));
        // A rate means nothing to a counter without a pace.
        assert_eq!(values.clone().at_rate(1e9), values);
    }

    #[test]
    fn a_pace_is_warned_of_when_timestamps_run_ahead_or_the_rate_nears_it() {
        let limits = HeadroomLimits::default();
        // maxval 99: 100 values per microsecond.
        let keeping_up = Headroom::of_pace(100, 5_000, 5_000);
        assert_eq!(keeping_up.left, "100,000,000 values/s");
        assert_eq!(
            keeping_up.summary(),
            "at most 100,000,000 values/s, timestamps 0 ms ahead"
        );
        assert_eq!(keeping_up.warning(5_000, &limits), None);
        assert!(!keeping_up.near_end());
        // Behind the reader's clock is not ahead.
        assert_eq!(Headroom::of_pace(100, 4_000, 5_000).ahead_ms, Some(0));

        let ahead = Headroom::of_pace(2, 36_000, 5_000);
        assert_eq!(ahead.ahead_ms, Some(31_000));
        assert!(ahead.near_end());
        let warning = ahead.warning(5_000, &limits).unwrap();
        assert!(
            warning.contains("timestamps 31,000 ms ahead of this clock (more than 1,000)")
                && warning.contains("faster than 2,000,000 values/s"),
            "{warning}"
        );

        let busy = Headroom::of_pace(2, 5_000, 5_000).at_rate(1_900_000.0);
        assert!((busy.used - 0.95).abs() < 1e-9, "{}", busy.used);
        assert!(busy.near_end());
        let warning = busy.warning(5_000, &limits).unwrap();
        assert!(warning.contains("taken at 95.0% of its pace"), "{warning}");
        assert_eq!(Headroom::of_pace(2, 5_000, 5_000).at_rate(1e12).used, 1.0);
        // The largest maxval does not overflow the pace.
        assert_eq!(
            Headroom::of_pace(1 << 53, 0, 0).pace_per_second,
            Some(u64::MAX)
        );
    }
}
