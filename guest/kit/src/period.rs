//! A periodic counter's period (WIT `period`, contract 0.4.0) and its label:
//! `2026` for a year, `2026-11` for a month, `2026-11-23` for a day, the
//! same labels the host stores. A label sorts as its periods do, and its
//! shape says its unit, so a policy that writes one can read the period
//! back without being told the unit.

use crate::civil;
use crate::digits::{number, put_digits};
use crate::prefix::char_at;
use crate::Invalid;

/// How long a period lasts (WIT `period-unit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PeriodUnit {
    /// A calendar day.
    Day,
    /// A calendar month.
    Month,
    /// A calendar year.
    Year,
}

impl PeriodUnit {
    /// The unit's name, as the host spells it.
    pub const fn as_str(self) -> &'static str {
        match self {
            PeriodUnit::Day => "day",
            PeriodUnit::Month => "month",
            PeriodUnit::Year => "year",
        }
    }

    /// The length of the unit's label in bytes: 10, 7 or 4.
    pub const fn label_len(self) -> usize {
        match self {
            PeriodUnit::Day => 10,
            PeriodUnit::Month => 7,
            PeriodUnit::Year => 4,
        }
    }
}

/// One period: its unit and its first day (WIT `period`). The fields a unit
/// does not use are 1: a year's month and day, a month's day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Period {
    /// How long it lasts.
    pub unit: PeriodUnit,
    /// The year, 1 to 9999.
    pub year: u16,
    /// The month, 1 to 12 (1 for a year).
    pub month: u8,
    /// The day of the month (1 for a year or a month).
    pub day: u8,
}

/// The longest label: a day's, `yyyy-MM-dd`.
pub const MAX_LABEL_LEN: usize = 10;

impl Period {
    /// Fails, saying why, unless the fields name a real period of its unit
    /// whose label four year digits can write: the checks the host makes
    /// of every period it hands out.
    pub fn check(&self) -> Result<(), String> {
        let Period {
            unit,
            year,
            month,
            day,
        } = *self;
        if !(1..=9999).contains(&year) {
            return Err(format!("year {year} is not 1 to 9999"));
        }
        if !(1..=12).contains(&month) {
            return Err(format!("month {month} is not 1 to 12"));
        }
        let days = civil::days_in_month(i64::from(year), u32::from(month));
        if !(1..=days).contains(&u32::from(day)) {
            return Err(format!(
                "day {day} of {} {year:04} does not exist",
                civil::MONTH_NAMES[usize::from(month) - 1]
            ));
        }
        match unit {
            PeriodUnit::Year if (month, day) != (1, 1) => Err(format!(
                "a year period starts on 1 January, not on {year:04}-{month:02}-{day:02}"
            )),
            PeriodUnit::Month if day != 1 => Err(format!(
                "a month period starts on its first day, not on {year:04}-{month:02}-{day:02}"
            )),
            _ => Ok(()),
        }
    }

    /// The label's bytes and their number, after [`Period::check`]: the
    /// caller writes `label[..len]`.
    pub fn label(&self) -> Result<([u8; MAX_LABEL_LEN], usize), String> {
        self.check()?;
        let mut label = *b"0000-00-00";
        put_digits(&mut label[0..4], u32::from(self.year));
        put_digits(&mut label[5..7], u32::from(self.month));
        put_digits(&mut label[8..10], u32::from(self.day));
        Ok((label, self.unit.label_len()))
    }

    /// Reads a label whose shape says its unit (`yyyy`, `yyyy-MM` or
    /// `yyyy-MM-dd`) that starts at byte `offset` of an ID (for the
    /// positions errors name), or says precisely what is wrong with it.
    pub fn read_label(label: &str, offset: usize) -> Result<Period, Invalid> {
        let bytes = label.as_bytes();
        let unit = match bytes.len() {
            4 => PeriodUnit::Year,
            7 => PeriodUnit::Month,
            10 => PeriodUnit::Day,
            _ => {
                return Err(Invalid::Malformed(format!(
                    "the period {label:?} is not yyyy, yyyy-MM or yyyy-MM-dd"
                )))
            }
        };
        for (index, &byte) in bytes.iter().enumerate() {
            let dash = index == 4 || index == 7;
            if dash && byte != b'-' {
                return Err(Invalid::Malformed(format!(
                    "the period {label:?} is not yyyy, yyyy-MM or yyyy-MM-dd"
                )));
            }
            if !dash && !byte.is_ascii_digit() {
                // The byte may be inside a multi-byte character: name it whole.
                let (start, found) = char_at(label, index);
                return Err(Invalid::NonDigit {
                    position: u32::try_from(offset + start).unwrap_or(u32::MAX),
                    found,
                });
            }
        }
        let field = |range: std::ops::Range<usize>| bytes.get(range).map_or(1, number);
        // Each field has at most four digits: the casts are lossless.
        let period = Period {
            unit,
            year: field(0..4) as u16,
            month: field(5..7) as u8,
            day: field(8..10) as u8,
        };
        period.check().map_err(|why| {
            Invalid::ImpossibleDate(format!("the period {label:?} does not exist: {why}"))
        })?;
        Ok(period)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn period(unit: PeriodUnit, year: u16, month: u8, day: u8) -> Period {
        Period {
            unit,
            year,
            month,
            day,
        }
    }

    fn label(period: &Period) -> String {
        let (bytes, len) = period.label().unwrap();
        String::from_utf8(bytes[..len].to_vec()).unwrap()
    }

    #[test]
    fn labels_round_trip_at_every_edge() {
        use PeriodUnit::*;
        for (p, text) in [
            (period(Year, 2026, 1, 1), "2026"),
            (period(Year, 1, 1, 1), "0001"),
            (period(Year, 9999, 1, 1), "9999"),
            (period(Month, 2026, 1, 1), "2026-01"),
            (period(Month, 2026, 12, 1), "2026-12"),
            (period(Day, 2026, 11, 23), "2026-11-23"),
            (period(Day, 2024, 2, 29), "2024-02-29"),
            (period(Day, 2000, 2, 29), "2000-02-29"),
            (period(Day, 2026, 12, 31), "2026-12-31"),
            (period(Day, 9999, 12, 31), "9999-12-31"),
        ] {
            assert_eq!(label(&p), text);
            assert_eq!(Period::read_label(text, 0), Ok(p), "{text}");
        }
    }

    #[test]
    fn impossible_periods_are_refused_naming_why() {
        use PeriodUnit::*;
        for (p, why) in [
            (
                period(Day, 2026, 2, 29),
                "day 29 of February 2026 does not exist",
            ),
            (period(Day, 1900, 2, 29), "day 29 of February 1900"),
            (period(Month, 2026, 13, 1), "month 13"),
            (period(Year, 0, 1, 1), "year 0 is not 1 to 9999"),
            (period(Year, 10_000, 1, 1), "year 10000"),
            (
                period(Year, 2026, 3, 1),
                "a year period starts on 1 January",
            ),
            (
                period(Month, 2026, 3, 2),
                "a month period starts on its first day",
            ),
        ] {
            let error = p.label().unwrap_err();
            assert!(error.contains(why), "{p:?}: {error}");
        }
    }

    #[test]
    fn bad_labels_say_what_is_wrong() {
        assert_eq!(
            Period::read_label("2026-02-30", 4),
            Err(Invalid::ImpossibleDate(
                "the period \"2026-02-30\" does not exist: day 30 of February 2026 does not exist"
                    .into()
            ))
        );
        assert_eq!(
            Period::read_label("20x6", 4),
            Err(Invalid::NonDigit {
                position: 6,
                found: 'x'
            })
        );
        assert!(matches!(
            Period::read_label("2026/11", 0),
            Err(Invalid::Malformed(why)) if why.contains("yyyy-MM")
        ));
        assert!(matches!(
            Period::read_label("202611", 0),
            Err(Invalid::Malformed(_))
        ));
        assert!(matches!(
            Period::read_label("0000", 0),
            Err(Invalid::ImpossibleDate(_))
        ));
    }
}
