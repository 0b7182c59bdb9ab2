//! The decimal format in plain Rust, free of WIT types (see the crate docs).

use idmint_policy_kit::{self as kit, FormatFailure, Invalid, Period, PeriodUnit, MAX_PREFIX_LEN};

/// Values 0 to 10^16 - 1: sixteen digits at most.
pub const SEQUENCE_CAPACITY: u64 = 10_000_000_000_000_000;
/// Values below 10^9 are zero-padded to this many digits, with or without
/// a period: one rule, so that one reader reads both, and nine digits keep
/// a period's IDs one length (and sorted as their values) up to
/// 999,999,999 values per period, more than a day period takes at 10,000
/// IDs a second. Larger values grow the number rather than fail.
pub const MIN_DIGITS: usize = 9;
/// The most digits a value has.
pub const MAX_DIGITS: usize = 16;

/// Checks a prefix to format IDs with: [`check_prefix`]'s rules, and no
/// period's label and dash at its end (`X-2026-`), which an ID read
/// without its prefix reads as the period of a shorter prefix's ID: so
/// that every ID reads back with the prefix it was made with, and two
/// counters' prefixes (`X-` and `X-2026-`) never make the same ID.
pub fn check_new_prefix(prefix: &str) -> Result<(), String> {
    check_prefix(prefix)?;
    let bytes = prefix.as_bytes();
    if bytes.last() != Some(&b'-') {
        return Ok(());
    }
    let dash = bytes.len() - 1;
    for unit in [PeriodUnit::Day, PeriodUnit::Month, PeriodUnit::Year] {
        let Some(start) = dash.checked_sub(unit.label_len()) else {
            continue;
        };
        let starts_a_field = start == 0 || !bytes[start - 1].is_ascii_digit();
        if starts_a_field && is_label_shaped(bytes, start, unit) {
            return Err(format!(
                "the prefix must not end with what reads as a period's label and its dash \
                 ('{}' at byte {start}): its IDs would read back as a shorter prefix's",
                &prefix[start..]
            ));
        }
    }
    Ok(())
}

/// Checks the prefix of an ID: the shared rules, and no digit at its end.
pub fn check_prefix(prefix: &str) -> Result<(), String> {
    kit::check_prefix(prefix)?;
    match prefix.as_bytes().last() {
        Some(&last) if last.is_ascii_digit() => Err(format!(
            "the prefix must not end with a digit ('{}' at byte {}): the number would run into it",
            char::from(last),
            prefix.len() - 1
        )),
        _ => Ok(()),
    }
}

/// Appends `value` in decimal, at least [`MIN_DIGITS`] digits.
fn push_number(out: &mut Vec<u8>, value: u64) -> Result<(), FormatFailure> {
    if value >= SEQUENCE_CAPACITY {
        return Err(FormatFailure::SequenceOutOfRange(value));
    }
    let mut digits = [b'0'; MAX_DIGITS];
    let mut rest = value;
    let mut used = 0;
    while rest > 0 {
        digits[MAX_DIGITS - 1 - used] = b'0' + (rest % 10) as u8;
        rest /= 10;
        used += 1;
    }
    out.extend_from_slice(&digits[MAX_DIGITS - used.max(MIN_DIGITS)..]);
    Ok(())
}

/// Appends `period`'s label and the dash that ends it: `2026-`.
fn push_period(out: &mut Vec<u8>, period: &Period) -> Result<(), FormatFailure> {
    let (label, len) = period.label().map_err(FormatFailure::BadPeriod)?;
    out.extend_from_slice(&label[..len]);
    out.push(b'-');
    Ok(())
}

/// One ID: the prefix, the period's label and a dash if there is a
/// period, and the value.
pub fn format_id(
    prefix: &str,
    period: Option<Period>,
    value: u64,
) -> Result<String, FormatFailure> {
    format_batch(prefix, std::iter::once((period, value))).map(|mut id| {
        id.pop(); // the batch's line feed
        id
    })
}

/// Many IDs with one prefix, one per `(period, value)`, each followed by
/// `'\n'` (WIT `format-batch`).
pub fn format_batch<I>(prefix: &str, values: I) -> Result<String, FormatFailure>
where
    I: ExactSizeIterator<Item = (Option<Period>, u64)>,
{
    check_new_prefix(prefix).map_err(FormatFailure::BadPrefix)?;
    // Sized for IDs without a period, the common case; a period's label
    // (at most 11 bytes with its dash) grows the buffer a few times.
    let mut out = Vec::with_capacity(values.len() * (prefix.len() + MIN_DIGITS + 1));
    for (period, value) in values {
        out.extend_from_slice(prefix.as_bytes());
        if let Some(period) = &period {
            push_period(&mut out, period)?;
        }
        push_number(&mut out, value)?;
        out.push(b'\n');
    }
    // The prefix is ASCII (checked above), labels and digits too.
    String::from_utf8(out).map_err(|e| FormatFailure::BadPrefix(e.to_string()))
}

/// A valid ID read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Read {
    /// Length of the prefix in bytes: the prefix is `id[..prefix_len]`.
    pub prefix_len: usize,
    /// The period, if the ID has one.
    pub period: Option<Period>,
    /// The value.
    pub value: u64,
}

/// Whether `bytes[start..end]` has the shape of a period label of
/// `unit`: digits, with dashes at bytes 4 and 7 of the label.
fn is_label_shaped(bytes: &[u8], start: usize, unit: PeriodUnit) -> bool {
    let end = start + unit.label_len();
    bytes.get(start..end).is_some_and(|label| {
        label.iter().enumerate().all(|(index, &byte)| {
            if index == 4 || index == 7 {
                byte == b'-'
            } else {
                byte.is_ascii_digit()
            }
        })
    })
}

/// Reads an ID back: its prefix's length, its period if it has one, and the
/// value.
///
/// With `expected_prefix`, what follows the prefix is either the number or
/// a period's label (its shape says its unit), a dash and the number.
/// Without one, the prefix is what precedes the number, unless a label
/// precedes it, at the start of the ID or after a character that is not a
/// digit: then that is the period. (So an ID is ambiguous only without an
/// expected prefix, and only for a prefix that itself ends with a label and
/// a dash, such as `INV-2026-`: it reads as `INV-` and the year 2026.)
pub fn validate(id: &str, expected_prefix: Option<&str>) -> Result<Read, Invalid> {
    let bytes = id.as_bytes();
    // The number is the digits after the last byte that is not one.
    let number_from = bytes
        .iter()
        .rposition(|b| !b.is_ascii_digit())
        .map_or(0, |last| last + 1);
    let (prefix_len, period) = match expected_prefix {
        Some(expected) => {
            if !id.starts_with(expected) {
                let found = &id[..kit::char_at(id, expected.len().min(id.len())).0];
                return Err(Invalid::BadPrefix(format!(
                    "expected prefix '{expected}', found '{found}'"
                )));
            }
            if number_from <= expected.len() {
                (expected.len(), None)
            } else if bytes[number_from - 1] != b'-' {
                // A character in the number that is not a digit, nor the
                // dash that would end a period's label.
                let (position, found) = kit::char_at(id, number_from - 1);
                return Err(Invalid::NonDigit {
                    position: position as u32,
                    found,
                });
            } else {
                let label = &id[expected.len()..number_from - 1];
                let period = Period::read_label(label, expected.len())?;
                (expected.len(), Some(period))
            }
        }
        None => {
            let label = [PeriodUnit::Day, PeriodUnit::Month, PeriodUnit::Year]
                .into_iter()
                .filter(|_| number_from > 0 && bytes[number_from - 1] == b'-')
                .map(|unit| (unit, (number_from - 1).checked_sub(unit.label_len())))
                .find_map(|(unit, start)| {
                    let start = start?;
                    let starts_a_field = start == 0 || !bytes[start - 1].is_ascii_digit();
                    (starts_a_field && is_label_shaped(bytes, start, unit)).then_some(start)
                });
            match label {
                Some(start) => {
                    let period = Period::read_label(&id[start..number_from - 1], start)?;
                    (start, Some(period))
                }
                None => (number_from, None),
            }
        }
    };
    let digits_from = match period {
        Some(period) => prefix_len + period.unit.label_len() + 1,
        None => prefix_len,
    };
    let digits = &bytes[digits_from..];
    let wrong_length = || Invalid::WrongLength {
        found: u32::try_from(id.len()).unwrap_or(u32::MAX),
        min: (digits_from + MIN_DIGITS) as u32,
        max: (digits_from - prefix_len + prefix_len.min(MAX_PREFIX_LEN) + MAX_DIGITS) as u32,
    };
    if !(MIN_DIGITS..=MAX_DIGITS).contains(&digits.len()) {
        return Err(wrong_length());
    }
    if digits.len() > MIN_DIGITS && digits[0] == b'0' {
        return Err(Invalid::Malformed(format!(
            "the number {} has a leading zero: values of ten digits or more are written without padding",
            &id[digits_from..]
        )));
    }
    check_prefix(&id[..prefix_len]).map_err(Invalid::BadPrefix)?;
    Ok(Read {
        prefix_len,
        period,
        value: kit::number(digits),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What an ID without a period reads back as.
    fn plain(prefix_len: usize, value: u64) -> Read {
        Read {
            prefix_len,
            period: None,
            value,
        }
    }

    fn period(unit: PeriodUnit, year: u16, month: u8, day: u8) -> Period {
        Period {
            unit,
            year,
            month,
            day,
        }
    }

    #[test]
    fn pads_to_nine_digits_and_grows_to_sixteen() {
        for (value, id) in [
            (42, "INV-000000042"),
            (0, "INV-000000000"),
            (999_999_999, "INV-999999999"),
            (1_000_000_000, "INV-1000000000"),
            (SEQUENCE_CAPACITY - 1, "INV-9999999999999999"),
        ] {
            assert_eq!(format_id("INV-", None, value).unwrap(), id);
            assert_eq!(validate(id, Some("INV-")).unwrap(), plain(4, value));
            assert_eq!(validate(id, None).unwrap(), plain(4, value));
        }
        assert_eq!(
            format_id("INV-", None, SEQUENCE_CAPACITY),
            Err(FormatFailure::SequenceOutOfRange(SEQUENCE_CAPACITY))
        );
    }

    #[test]
    fn a_batch_is_the_ids_one_per_line() {
        let year = Some(period(PeriodUnit::Year, 2026, 1, 1));
        let values = [(None, 1), (None, 2), (None, 12_345_678_901), (year, 3)];
        let batch = format_batch("", values.into_iter()).unwrap();
        assert_eq!(batch, "000000001\n000000002\n12345678901\n2026-000000003\n");
        assert_eq!(
            batch.lines().collect::<Vec<_>>(),
            values.map(|(period, v)| format_id("", period, v).unwrap())
        );
    }

    #[test]
    fn round_trips_with_every_kind_of_prefix() {
        for prefix in ["", "A", "INV-", "x.y_z-", "a1b"] {
            for value in [0, 7, 999_999_999, 1 << 53] {
                let id = format_id(prefix, None, value).unwrap();
                assert_eq!(
                    validate(&id, Some(prefix)).unwrap(),
                    plain(prefix.len(), value)
                );
                assert_eq!(validate(&id, None).unwrap(), plain(prefix.len(), value));
            }
        }
    }

    #[test]
    fn writes_the_period_label_and_a_dash_before_the_number() {
        for (p, id) in [
            (period(PeriodUnit::Year, 2026, 1, 1), "INV-2026-000000042"),
            (
                period(PeriodUnit::Month, 2026, 11, 1),
                "INV-2026-11-000000042",
            ),
            (
                period(PeriodUnit::Day, 2026, 11, 23),
                "INV-2026-11-23-000000042",
            ),
        ] {
            assert_eq!(format_id("INV-", Some(p), 42).unwrap(), id);
            let read = Read {
                prefix_len: 4,
                period: Some(p),
                value: 42,
            };
            assert_eq!(validate(id, Some("INV-")), Ok(read), "{id}");
            assert_eq!(validate(id, None), Ok(read), "{id}");
        }
    }

    #[test]
    fn periods_round_trip_at_every_edge_with_every_kind_of_prefix() {
        use PeriodUnit::*;
        let periods = [
            period(Year, 1, 1, 1),
            period(Year, 1970, 1, 1),
            period(Year, 9999, 1, 1),
            period(Month, 2026, 1, 1),
            period(Month, 2026, 12, 1),
            period(Month, 9999, 12, 1),
            period(Day, 2026, 1, 1),
            period(Day, 2026, 1, 31),
            period(Day, 2026, 4, 30),
            period(Day, 2023, 2, 28),
            period(Day, 2024, 2, 29),
            period(Day, 2000, 2, 29),
            period(Day, 2026, 12, 31),
            period(Day, 9999, 12, 31),
        ];
        for prefix in ["", "A", "INV-", "x.y_z-", "a1b", "Y2K."] {
            for p in periods {
                for value in [0, 1, 999_999_999, 1 << 53, SEQUENCE_CAPACITY - 1] {
                    let id = format_id(prefix, Some(p), value).unwrap();
                    let read = Read {
                        prefix_len: prefix.len(),
                        period: Some(p),
                        value,
                    };
                    assert_eq!(validate(&id, Some(prefix)), Ok(read), "{id}");
                    assert_eq!(validate(&id, None), Ok(read), "{id}");
                }
            }
        }
    }

    #[test]
    fn refuses_to_write_a_period_that_does_not_exist() {
        let refused = |p| match format_id("INV-", Some(p), 1) {
            Err(FormatFailure::BadPeriod(why)) => why,
            other => panic!("expected a bad period, got {other:?}"),
        };
        assert_eq!(
            refused(period(PeriodUnit::Day, 2026, 2, 29)),
            "day 29 of February 2026 does not exist"
        );
        assert!(refused(period(PeriodUnit::Year, 2026, 3, 1)).contains("starts on 1 January"));
        assert!(refused(period(PeriodUnit::Year, 10_000, 1, 1)).contains("year 10000"));
        // The first stamp out of range fails the whole batch.
        let batch = [
            (Some(period(PeriodUnit::Month, 2026, 1, 1)), 1),
            (Some(period(PeriodUnit::Month, 2026, 13, 1)), 2),
        ];
        assert!(matches!(
            format_batch("", batch.into_iter()),
            Err(FormatFailure::BadPeriod(_))
        ));
    }

    #[test]
    fn names_what_is_wrong_with_a_period() {
        let invalid = |id: &str| validate(id, Some("INV-")).unwrap_err();
        assert_eq!(
            invalid("INV-2026-02-30-000000001"),
            Invalid::ImpossibleDate(
                "the period \"2026-02-30\" does not exist: day 30 of February 2026 does not exist"
                    .into()
            )
        );
        assert!(matches!(
            invalid("INV-2026-13-000000001"),
            Invalid::ImpossibleDate(why) if why.contains("month 13")
        ));
        assert!(matches!(
            invalid("INV-0000-000000001"),
            Invalid::ImpossibleDate(why) if why.contains("year 0")
        ));
        assert_eq!(
            invalid("INV-20x6-000000001"),
            Invalid::NonDigit {
                position: 6,
                found: 'x'
            }
        );
        assert!(matches!(
            invalid("INV-2026-1-000000001"),
            Invalid::Malformed(why) if why.contains("yyyy-MM")
        ));
        assert_eq!(
            invalid("INV-2026-00000001"),
            Invalid::WrongLength {
                found: 17,
                min: 18,
                max: 25
            }
        );
        // Without an expected prefix, the same checks apply to a label.
        assert!(matches!(
            validate("INV-2026-02-30-000000001", None),
            Err(Invalid::ImpossibleDate(_))
        ));
    }

    #[test]
    fn refuses_a_prefix_that_ends_with_a_label_and_its_dash() {
        for (prefix, label, at) in [
            ("2026-", "2026-", 0),
            ("X-2026-", "2026-", 2),
            ("X-2026-11-", "2026-11-", 2),
            ("X.2026-11-23-", "2026-11-23-", 2),
        ] {
            assert_eq!(
                format_id(prefix, None, 1),
                Err(FormatFailure::BadPrefix(format!(
                    "the prefix must not end with what reads as a period's label and its dash \
                     ('{label}' at byte {at}): its IDs would read back as a shorter prefix's"
                ))),
                "{prefix}"
            );
        }
        // A label must start a field: after a digit it is not one.
        assert_eq!(format_id("A12026-", None, 1).unwrap(), "A12026-000000001");
        assert_eq!(format_id("X-26-", None, 1).unwrap(), "X-26-000000001");
    }

    #[test]
    fn only_an_expected_prefix_tells_a_label_in_the_prefix_from_a_period() {
        // Such a prefix is refused now (above); IDs made with one before
        // still read back with it.
        let id = "INV-2026-000000042";
        assert_eq!(validate(id, Some("INV-2026-")), Ok(plain(9, 42)));
        assert_eq!(
            validate(id, None),
            Ok(Read {
                prefix_len: 4,
                period: Some(period(PeriodUnit::Year, 2026, 1, 1)),
                value: 42
            })
        );
        // A label must start a field: after a digit, it is part of the prefix.
        assert_eq!(validate("A12026-000000042", None), Ok(plain(7, 42)));
    }

    #[test]
    fn refuses_a_prefix_that_ends_with_a_digit() {
        assert_eq!(
            format_id("INV7", None, 1),
            Err(FormatFailure::BadPrefix(
                "the prefix must not end with a digit ('7' at byte 3): the number would run into it"
                    .into()
            ))
        );
        assert!(matches!(
            format_id("a b", None, 1),
            Err(FormatFailure::BadPrefix(_))
        ));
    }

    #[test]
    fn names_what_is_wrong_with_an_id() {
        assert_eq!(
            validate("INV-00042", Some("INV-")),
            Err(Invalid::WrongLength {
                found: 9,
                min: 13,
                max: 20
            })
        );
        assert_eq!(
            validate("INV-0000x0042", Some("INV-")),
            Err(Invalid::NonDigit {
                position: 8,
                found: 'x'
            })
        );
        assert_eq!(
            validate("ORD-000000042", Some("INV-")),
            Err(Invalid::BadPrefix(
                "expected prefix 'INV-', found 'ORD-'".into()
            ))
        );
        assert!(matches!(
            validate("INV-0123456789", None),
            Err(Invalid::Malformed(why)) if why.contains("leading zero")
        ));
        assert!(matches!(
            validate("INV-12345678901234567", None),
            Err(Invalid::WrongLength { .. })
        ));
        assert!(matches!(
            validate("in v-000000001", None),
            Err(Invalid::BadPrefix(_))
        ));
    }
}
