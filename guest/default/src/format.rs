//! The default ID format: prefix + UTC `yyyyMMddHHmmss` + 6-digit microseconds
//! + 2-digit sequence, e.g. `ORD-` `20261122031457` `123456` `07`.
//!
//! This module is the whole policy as plain Rust, free of any WIT type, so that
//! its unit tests run natively with `cargo test -p idmint-policy-default`;
//! `lib.rs` only hands it to the kit's export macro. Dates go through the
//! kit's [`civil`]. Formatting is on the host's hot path (one call per ID
//! minted), so it writes digits straight into a byte buffer and allocates
//! exactly one `String` per ID; `format!` is used only to word errors.

use idmint_policy_kit::{self as kit, char_at, civil, expect_prefix, number, put_digits};
pub use idmint_policy_kit::{
    check_prefix, FormatFailure, Invalid, MAX_PREFIX_LEN, MAX_TIMESTAMP_MICROS,
};

/// How many distinct sequence values an ID holds: two digits.
pub const SEQUENCE_CAPACITY: u64 = 100;
/// The number of digits after the prefix: 14 (date and time) + 6 (micros) + 2 (sequence).
pub const DIGITS: usize = 22;
/// The shortest valid ID, in bytes (empty prefix).
pub const MIN_LEN: usize = DIGITS;
/// The longest valid ID, in bytes (longest prefix).
pub const MAX_LEN: usize = DIGITS + MAX_PREFIX_LEN;

const MICROS_PER_SECOND: u64 = 1_000_000;
const SECONDS_PER_DAY: u64 = 86_400;

/// A valid ID read back; the prefix is `id[..prefix_len]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parsed {
    /// Length of the prefix in bytes; always a char boundary of the ID.
    pub prefix_len: usize,
    /// Microseconds since 1970-01-01T00:00:00Z.
    pub timestamp_micros: u64,
    /// The sequence value, 0..=99.
    pub sequence: u64,
}

/// The 22 digits for a timestamp and sequence value, checked against the limits.
fn digits(timestamp_micros: u64, sequence: u64) -> Result<[u8; DIGITS], FormatFailure> {
    if sequence >= SEQUENCE_CAPACITY {
        return Err(FormatFailure::SequenceOutOfRange(sequence));
    }
    if timestamp_micros > MAX_TIMESTAMP_MICROS {
        return Err(FormatFailure::TimestampOutOfRange(timestamp_micros));
    }
    // Two 64-bit divisions per ID, and remainders by multiplication; the
    // narrowing casts are lossless: micros < 10^6, second_of_day < 86_400,
    // days <= 2_932_896 after the range check above, sequence < 100.
    let secs = timestamp_micros / MICROS_PER_SECOND;
    let micros = (timestamp_micros - secs * MICROS_PER_SECOND) as u32;
    let days = secs / SECONDS_PER_DAY;
    let second_of_day = (secs - days * SECONDS_PER_DAY) as u32;
    let (year, month, day) = civil::civil_from_days_u32(days as u32);

    let mut buf = [0u8; DIGITS];
    put_digits(&mut buf[0..4], year);
    put_digits(&mut buf[4..6], month);
    put_digits(&mut buf[6..8], day);
    put_digits(&mut buf[8..10], second_of_day / 3600);
    put_digits(&mut buf[10..12], second_of_day / 60 % 60);
    put_digits(&mut buf[12..14], second_of_day % 60);
    put_digits(&mut buf[14..20], micros);
    put_digits(&mut buf[20..22], sequence as u32);
    Ok(buf)
}

/// Formats one ID.
pub fn format_id(
    prefix: &str,
    timestamp_micros: u64,
    sequence: u64,
) -> Result<String, FormatFailure> {
    kit::format_id(prefix, || digits(timestamp_micros, sequence))
}

/// Formats one ID per `(timestamp_micros, sequence)` stamp into one string,
/// each followed by `'\n'` (WIT `format-batch`).
pub fn format_batch<I>(prefix: &str, stamps: I) -> Result<String, FormatFailure>
where
    I: ExactSizeIterator<Item = (u64, u64)>,
{
    kit::format_batch(prefix, stamps, digits)
}

/// Reads an ID back into its parts, or says precisely why it is not valid.
///
/// Checks, in order: the length; that the last [`DIGITS`] bytes are digits;
/// the prefix rules; `expected_prefix`; then the date and time.
pub fn validate(id: &str, expected_prefix: Option<&str>) -> Result<Parsed, Invalid> {
    let len = id.len();
    if !(MIN_LEN..=MAX_LEN).contains(&len) {
        return Err(Invalid::WrongLength {
            found: u32::try_from(len).unwrap_or(u32::MAX),
            min: MIN_LEN as u32,
            max: MAX_LEN as u32,
        });
    }
    let split = len - DIGITS;
    let tail = &id.as_bytes()[split..];
    if let Some(offset) = tail.iter().position(|b| !b.is_ascii_digit()) {
        // The offending byte may be in the middle of a multi-byte character,
        // even one that starts in the prefix: report that whole character.
        let (position, found) = char_at(id, split + offset);
        return Err(Invalid::NonDigit {
            position: u32::try_from(position).unwrap_or(u32::MAX),
            found,
        });
    }
    // The tail is all ASCII digits, so `split` is a char boundary and `get`
    // always succeeds; `get` rather than indexing keeps this panic-free anyway.
    let prefix = id.get(..split).unwrap_or_default();
    check_prefix(prefix).map_err(Invalid::BadPrefix)?;
    expect_prefix(prefix, expected_prefix)?;

    let year = number(&tail[0..4]);
    let month = number(&tail[4..6]);
    let day = number(&tail[6..8]);
    let hour = number(&tail[8..10]);
    let minute = number(&tail[10..12]);
    let second = number(&tail[12..14]);
    let micros = number(&tail[14..20]);
    let sequence = number(&tail[20..22]);

    let impossible = |what: String| Err(Invalid::ImpossibleDate(what));
    if !(1..=12).contains(&month) {
        return impossible(format!("month {month}"));
    }
    // 1 <= month <= 12 and year < 10000: the casts below are lossless.
    let (year, month) = (year as i64, month as u32);
    let month_len = civil::days_in_month(year, month);
    if day < 1 || day > u64::from(month_len) {
        let name = civil::MONTH_NAMES[month as usize - 1];
        return impossible(format!("day {day} of {name} {year:04}"));
    }
    if hour >= 24 {
        return impossible(format!("hour {hour}"));
    }
    if minute >= 60 {
        return impossible(format!("minute {minute}"));
    }
    if second >= 60 {
        return impossible(format!("second {second} (leap seconds are not written)"));
    }
    if year < 1970 {
        return impossible(format!(
            "year {year:04} is before 1970, the earliest year an ID can hold"
        ));
    }
    // year >= 1970, so days >= 0; at most 9999-12-31, so no overflow.
    let days = civil::days_from_civil(year, month, day as u32) as u64;
    let secs = days * SECONDS_PER_DAY + hour * 3600 + minute * 60 + second;
    Ok(Parsed {
        prefix_len: split,
        timestamp_micros: secs * MICROS_PER_SECOND + micros,
        sequence,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Microseconds since the epoch for a UTC date and time.
    fn micros(y: i64, mo: u32, d: u32, h: u64, mi: u64, s: u64, us: u64) -> u64 {
        let days = civil::days_from_civil(y, mo, d) as u64;
        (days * SECONDS_PER_DAY + h * 3600 + mi * 60 + s) * MICROS_PER_SECOND + us
    }

    fn round_trip(prefix: &str, ts: u64, seq: u64, expected: &str) {
        let id = format_id(prefix, ts, seq).unwrap();
        assert_eq!(id, expected);
        let parsed = validate(&id, Some(prefix)).unwrap();
        assert_eq!(
            parsed,
            Parsed {
                prefix_len: prefix.len(),
                timestamp_micros: ts,
                sequence: seq
            }
        );
        assert_eq!(validate(&id, None).unwrap(), parsed);
    }

    #[test]
    fn known_id() {
        let ts = micros(2026, 11, 22, 3, 14, 57, 123_456);
        assert_eq!(ts, 1_795_317_297_123_456);
        round_trip("ORD-", ts, 7, "ORD-2026112203145712345607");
    }

    #[test]
    fn boundaries_round_trip() {
        round_trip("", 0, 0, "1970010100000000000000");
        round_trip("a", 0, 99, "a1970010100000000000099");
        round_trip(
            "leap",
            micros(2024, 2, 29, 0, 0, 0, 0),
            1,
            "leap2024022900000000000001",
        );
        round_trip(
            "leap",
            micros(2024, 2, 29, 23, 59, 59, 999_999),
            2,
            "leap2024022923595999999902",
        );
        round_trip(
            "Y2K.",
            micros(1999, 12, 31, 23, 59, 59, 999_999),
            42,
            "Y2K.1999123123595999999942",
        );
        round_trip(
            "Y2K.",
            micros(2000, 1, 1, 0, 0, 0, 0),
            42,
            "Y2K.2000010100000000000042",
        );
        assert_eq!(
            micros(9999, 12, 31, 23, 59, 59, 999_999),
            MAX_TIMESTAMP_MICROS
        );
        let longest = "A-Za-z0-9._A-Za-z0-9._A-Za-z0-9.";
        assert_eq!(longest.len(), MAX_PREFIX_LEN);
        round_trip(
            longest,
            MAX_TIMESTAMP_MICROS,
            99,
            "A-Za-z0-9._A-Za-z0-9._A-Za-z0-9.9999123123595999999999",
        );
    }

    #[test]
    fn every_second_of_a_leap_day_and_year_end() {
        for start in [
            micros(2024, 2, 28, 23, 0, 0, 0),
            micros(1999, 12, 31, 23, 0, 0, 0),
        ] {
            for s in 0..7200 {
                let ts = start + s * MICROS_PER_SECOND + s;
                let id = format_id("x", ts, s % 100).unwrap();
                assert_eq!(validate(&id, None).unwrap().timestamp_micros, ts);
            }
        }
    }

    #[test]
    fn format_limits() {
        assert_eq!(
            format_id("", 0, 100),
            Err(FormatFailure::SequenceOutOfRange(100))
        );
        assert_eq!(
            format_id("", 0, u64::MAX),
            Err(FormatFailure::SequenceOutOfRange(u64::MAX))
        );
        assert_eq!(
            format_id("", MAX_TIMESTAMP_MICROS + 1, 0),
            Err(FormatFailure::TimestampOutOfRange(MAX_TIMESTAMP_MICROS + 1))
        );
        assert_eq!(
            format_id("", u64::MAX, 0),
            Err(FormatFailure::TimestampOutOfRange(u64::MAX))
        );
    }

    #[test]
    fn bad_prefixes() {
        assert_eq!(
            format_id("ORD 1", 0, 0),
            Err(FormatFailure::BadPrefix(
                "prefix has ' ' (U+0020) at byte 3; only A-Z, a-z, 0-9, '.', '_' and '-' are allowed"
                    .into()
            ))
        );
        assert_eq!(
            check_prefix("abé"),
            Err("prefix has 'é' (U+00E9) at byte 2; only A-Z, a-z, 0-9, '.', '_' and '-' are allowed".into())
        );
        assert_eq!(
            check_prefix("a\n"),
            Err("prefix has '\\n' (U+000A) at byte 1; only A-Z, a-z, 0-9, '.', '_' and '-' are allowed".into())
        );
        assert_eq!(
            check_prefix(&"a".repeat(33)),
            Err("prefix is 33 bytes long; the longest allowed is 32".into())
        );
        assert_eq!(check_prefix(""), Ok(()));
        assert_eq!(check_prefix("a.B_c-9"), Ok(()));
    }

    #[test]
    fn batch_matches_single() {
        let stamps = [
            (0, 0),
            (micros(2024, 2, 29, 12, 0, 0, 5), 50),
            (MAX_TIMESTAMP_MICROS, 99),
        ];
        let batch = format_batch("B-", stamps.iter().copied()).unwrap();
        let single: String = stamps
            .iter()
            .map(|&(ts, seq)| format_id("B-", ts, seq).unwrap() + "\n")
            .collect();
        assert_eq!(batch, single);
        assert_eq!(format_batch("B-", [].into_iter()), Ok(String::new()));
        assert_eq!(
            format_batch("B-", [(0, 0), (0, 100)].into_iter()),
            Err(FormatFailure::SequenceOutOfRange(100))
        );
        assert!(matches!(
            format_batch("B -", [].into_iter()),
            Err(FormatFailure::BadPrefix(_))
        ));
    }

    #[test]
    fn wrong_length() {
        let wrong = |found| {
            Err(Invalid::WrongLength {
                found,
                min: 22,
                max: 54,
            })
        };
        assert_eq!(validate("", None), wrong(0));
        assert_eq!(validate(&"1".repeat(21), None), wrong(21));
        assert_eq!(validate(&"1".repeat(55), None), wrong(55));
        // Length is counted in bytes: 11 two-byte characters are 22 bytes.
        assert!(matches!(
            validate(&"é".repeat(11), None),
            Err(Invalid::NonDigit { .. })
        ));
    }

    #[test]
    fn non_digits() {
        let good = "ORD-2026112203145712345607";
        for (pos, c) in [(4, 'x'), (25, 'x'), (14, ' '), (20, '-')] {
            let mut id = good.to_string();
            id.replace_range(pos..pos + 1, &c.to_string());
            assert_eq!(
                validate(&id, None),
                Err(Invalid::NonDigit {
                    position: pos as u32,
                    found: c
                }),
                "{id}"
            );
        }
        // A 2-byte character wholly inside the digits.
        let id = "A20261122031457123456é";
        assert_eq!(id.len(), 23);
        assert_eq!(
            validate(id, None),
            Err(Invalid::NonDigit {
                position: 21,
                found: 'é'
            })
        );
        // A character that starts in the prefix and straddles into the digits:
        // the first non-digit byte is a continuation byte at offset 2.
        let id = "Aé202611220314571234560";
        assert_eq!(id.len(), 24);
        assert_eq!(
            validate(id, None),
            Err(Invalid::NonDigit {
                position: 1,
                found: 'é'
            })
        );
        // A 4-byte character straddling the split by three bytes.
        let id = "😀202611220314571234560";
        assert_eq!(id.len(), 25);
        assert_eq!(
            validate(id, None),
            Err(Invalid::NonDigit {
                position: 0,
                found: '😀'
            })
        );
    }

    #[test]
    fn non_digit_never_panics_on_any_split() {
        // Put a multi-byte character at every offset around the split point.
        for c in ['é', '€', '😀'] {
            for lead in 0..8 {
                let id = format!("{}{c}{}", "a".repeat(lead), "1".repeat(30));
                for end in MIN_LEN..=id.len().min(MAX_LEN) {
                    if let Some(s) = id.get(..end) {
                        let _ = validate(s, None);
                    }
                }
                let _ = validate(&id, None);
            }
        }
    }

    #[test]
    fn bad_prefix_in_id() {
        assert_eq!(
            validate("😀2026112203145712345607", None),
            Err(Invalid::BadPrefix(
                "prefix has '😀' (U+1F600) at byte 0; only A-Z, a-z, 0-9, '.', '_' and '-' are allowed"
                    .into()
            ))
        );
        assert_eq!(
            validate("OR D2026112203145712345607", None),
            Err(Invalid::BadPrefix(
                "prefix has ' ' (U+0020) at byte 2; only A-Z, a-z, 0-9, '.', '_' and '-' are allowed"
                    .into()
            ))
        );
        assert_eq!(
            validate("INV-2026112203145712345607", Some("ORD-")),
            Err(Invalid::BadPrefix(
                "expected prefix 'ORD-', found 'INV-'".into()
            ))
        );
        assert_eq!(
            validate("2026112203145712345607", Some("ORD-")),
            Err(Invalid::BadPrefix(
                "expected prefix 'ORD-', found ''".into()
            ))
        );
        assert!(validate("2026112203145712345607", Some("")).is_ok());
    }

    #[test]
    fn impossible_dates() {
        let cases = [
            ("20231301000000000000", "month 13"),
            ("20230001000000000000", "month 0"),
            ("20230230000000000000", "day 30 of February 2023"),
            ("20230229000000000000", "day 29 of February 2023"),
            ("21000229000000000000", "day 29 of February 2100"),
            ("20230431000000000000", "day 31 of April 2023"),
            ("20230100000000000000", "day 0 of January 2023"),
            ("20230101240000000000", "hour 24"),
            ("20230101236000000000", "minute 60"),
            (
                "20230101235960000000",
                "second 60 (leap seconds are not written)",
            ),
            (
                "19691231235959999999",
                "year 1969 is before 1970, the earliest year an ID can hold",
            ),
            (
                "00000101000000000000",
                "year 0000 is before 1970, the earliest year an ID can hold",
            ),
        ];
        for (digits, message) in cases {
            let id = format!("P{digits}00");
            assert_eq!(
                validate(&id, None),
                Err(Invalid::ImpossibleDate(message.into())),
                "{id}"
            );
        }
        // Leap days that exist.
        assert!(validate("P2024022900000000000000", None).is_ok());
        assert!(validate("P2000022900000000000000", None).is_ok());
    }
}
