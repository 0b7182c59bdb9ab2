//! Periods: the day, month or year a periodic counter's value belongs to.
//!
//! A period is named by its first day, in the counter's time zone: the year
//! 2026 is `2026`, November 2026 is `2026-11`, 23 November 2026 is
//! `2026-11-23`. The label sorts as the periods do, which is what the
//! server-side update compares (`crate::sequence`'s periodic kind).

use std::fmt;
use std::str::FromStr;

use serde::{Serialize, Serializer};

/// Whether `zone` has the shape of a time zone name: an IANA name such as
/// `Europe/Paris`, `UTC`, or an offset such as `+05:30` (the server says
/// whether it knows it).
pub fn zone_is_well_formed(zone: &str) -> bool {
    (1..=64).contains(&zone.len())
        && zone
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'+' | b'/' | b':' | b'-'))
}

/// How long a period lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PeriodUnit {
    /// A calendar day.
    Day,
    /// A calendar month.
    Month,
    /// A calendar year.
    Year,
}

impl PeriodUnit {
    /// Every unit, from the shortest.
    pub const ALL: [PeriodUnit; 3] = [Self::Day, Self::Month, Self::Year];

    /// The unit's name in documents and flags.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Day => "day",
            Self::Month => "month",
            Self::Year => "year",
        }
    }

    /// The `$dateToString` format of the unit's label.
    pub fn label_format(self) -> &'static str {
        match self {
            Self::Day => "%Y-%m-%d",
            Self::Month => "%Y-%m",
            Self::Year => "%Y",
        }
    }
}

impl fmt::Display for PeriodUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PeriodUnit {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|unit| unit.as_str() == text)
            .ok_or_else(|| format!("unknown period {text:?}: use day, month or year"))
    }
}

/// One period: its unit and its first day. Unused fields are 1 (a year's
/// month and day, a month's day).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Period {
    /// How long it lasts.
    pub unit: PeriodUnit,
    /// The year, 1 to 9999.
    pub year: u16,
    /// The month, 1 to 12 (1 for a year).
    pub month: u8,
    /// The day of the month, 1 to 31 (1 for a year or a month).
    pub day: u8,
}

impl Period {
    /// Reads a label (`2026`, `2026-11`, `2026-11-23`) of `unit`, checking
    /// that it names a real period.
    pub fn parse(unit: PeriodUnit, label: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "{label:?} is not a {unit} period (expected {})",
                unit.label_format()
            )
        };
        let fields: Vec<&str> = label.split('-').collect();
        let expected = match unit {
            PeriodUnit::Year => 1,
            PeriodUnit::Month => 2,
            PeriodUnit::Day => 3,
        };
        let widths = [4, 2, 2];
        if fields.len() != expected
            || fields.iter().zip(widths).any(|(field, width)| {
                field.len() != width || !field.bytes().all(|b| b.is_ascii_digit())
            })
        {
            return Err(bad());
        }
        let number = |i: usize| {
            fields
                .get(i)
                .map_or(Ok(1), |f| f.parse::<u16>().map_err(|_| bad()))
        };
        let (year, month, day) = (number(0)?, number(1)?, number(2)?);
        let period = Period {
            unit,
            year,
            month: u8::try_from(month).map_err(|_| bad())?,
            day: u8::try_from(day).map_err(|_| bad())?,
        };
        period
            .check()
            .map_err(|reason| format!("{label:?}: {reason}"))?;
        Ok(period)
    }

    /// Fails unless the fields name a real period of its unit.
    pub fn check(&self) -> Result<(), String> {
        if !(1..=9999).contains(&self.year) {
            return Err(format!("year {} is not 1 to 9999", self.year));
        }
        if !(1..=12).contains(&self.month) {
            return Err(format!("month {} is not 1 to 12", self.month));
        }
        let days = days_in_month(self.year, self.month);
        if !(1..=days).contains(&self.day) {
            return Err(format!(
                "day {} is not 1 to {days} ({}-{:02} has {days} days)",
                self.day, self.year, self.month
            ));
        }
        let first = match self.unit {
            PeriodUnit::Year => self.month == 1 && self.day == 1,
            PeriodUnit::Month => self.day == 1,
            PeriodUnit::Day => true,
        };
        if !first {
            return Err(format!("a {} period starts on its first day", self.unit));
        }
        Ok(())
    }
}

/// The label: `2026`, `2026-11` or `2026-11-23`.
impl fmt::Display for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.unit {
            PeriodUnit::Year => write!(f, "{:04}", self.year),
            PeriodUnit::Month => write!(f, "{:04}-{:02}", self.year, self.month),
            PeriodUnit::Day => write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day),
        }
    }
}

/// A period is shown as its label.
impl Serialize for Period {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

fn days_in_month(year: u16, month: u8) -> u8 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => {
            29
        }
        _ => 28,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_trip_and_impossible_periods_are_named() {
        for (unit, label) in [
            (PeriodUnit::Year, "2026"),
            (PeriodUnit::Month, "2026-11"),
            (PeriodUnit::Day, "2024-02-29"),
        ] {
            assert_eq!(Period::parse(unit, label).unwrap().to_string(), label);
        }
        for (unit, label, needle) in [
            (PeriodUnit::Day, "2026-02-29", "2026-02 has 28 days"),
            (PeriodUnit::Month, "2026-13", "month 13"),
            (PeriodUnit::Year, "26", "not a year period"),
            (PeriodUnit::Month, "2026", "not a month period"),
            (PeriodUnit::Year, "0000", "year 0"),
        ] {
            let error = Period::parse(unit, label).unwrap_err();
            assert!(error.contains(needle), "{label}: {error}");
        }
    }

    #[test]
    fn periods_order_as_their_labels() {
        let a = Period::parse(PeriodUnit::Month, "2026-09").unwrap();
        let b = Period::parse(PeriodUnit::Month, "2026-10").unwrap();
        assert!(a < b && a.to_string() < b.to_string());
    }
}
