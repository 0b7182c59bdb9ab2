//! The check-digit format as plain Rust, tested natively with
//! `cargo test -p idmint-policy-check-digit`: prefix +
//! `yyyyMMddTHHmmss.uuuuuuZ` + `-` + 3-digit sequence + `-` + Luhn digit.

use idmint_policy_kit::{self as kit, civil, expect_prefix, number, put_digits};
pub use idmint_policy_kit::{
    check_prefix, FormatFailure, Invalid, MAX_PREFIX_LEN, MAX_TIMESTAMP_MICROS,
};

/// How many distinct sequence values an ID holds: three digits.
pub const SEQUENCE_CAPACITY: u64 = 1000;
/// The bytes after the prefix: `20261122T031457.123456Z-007-4`.
pub const BODY_LEN: usize = 29;

/// The body's shape: `d` a digit, anything else that exact byte.
const SHAPE: &[u8; BODY_LEN] = b"ddddddddTdddddd.ddddddZ-ddd-d";

/// A valid ID read back; the prefix is `id[..prefix_len]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parsed {
    /// Length of the prefix in bytes.
    pub prefix_len: usize,
    /// Microseconds since the epoch.
    pub timestamp_micros: u64,
    /// The sequence value, 0..=999.
    pub sequence: u64,
}

/// The Luhn check digit for `digits` (ASCII digits): the digit that makes the
/// Luhn sum of `digits` followed by it a multiple of 10.
pub fn luhn(digits: impl DoubleEndedIterator<Item = u8>) -> u8 {
    let sum: u32 = digits
        .rev()
        .enumerate()
        .map(|(i, b)| {
            let d = u32::from(b - b'0');
            if i % 2 == 0 {
                let twice = d * 2;
                twice / 10 + twice % 10
            } else {
                d
            }
        })
        .sum();
    ((10 - sum % 10) % 10) as u8
}

/// The body for a timestamp and sequence value.
fn body(timestamp_micros: u64, sequence: u64) -> Result<[u8; BODY_LEN], FormatFailure> {
    if sequence >= SEQUENCE_CAPACITY {
        return Err(FormatFailure::SequenceOutOfRange(sequence));
    }
    if timestamp_micros > MAX_TIMESTAMP_MICROS {
        return Err(FormatFailure::TimestampOutOfRange(timestamp_micros));
    }
    let secs = timestamp_micros / 1_000_000;
    let second_of_day = secs % 86_400;
    let (year, month, day) = civil::civil_from_days((secs / 86_400) as i64);
    let mut b = *SHAPE;
    put_digits(&mut b[0..4], year as u32);
    put_digits(&mut b[4..6], month);
    put_digits(&mut b[6..8], day);
    put_digits(&mut b[9..11], (second_of_day / 3600) as u32);
    put_digits(&mut b[11..13], (second_of_day / 60 % 60) as u32);
    put_digits(&mut b[13..15], (second_of_day % 60) as u32);
    put_digits(&mut b[16..22], (timestamp_micros % 1_000_000) as u32);
    put_digits(&mut b[24..27], sequence as u32);
    b[28] = b'0' + luhn(digit_bytes(&b[..27]));
    Ok(b)
}

/// The digits of `body`, skipping separators.
fn digit_bytes(body: &[u8]) -> impl DoubleEndedIterator<Item = u8> + '_ {
    body.iter().copied().filter(u8::is_ascii_digit)
}

/// Formats one ID.
pub fn format_id(
    prefix: &str,
    timestamp_micros: u64,
    sequence: u64,
) -> Result<String, FormatFailure> {
    kit::format_id(prefix, || body(timestamp_micros, sequence))
}

/// Formats one ID per stamp into one string, each followed by `'\n'`.
pub fn format_batch<I>(prefix: &str, stamps: I) -> Result<String, FormatFailure>
where
    I: ExactSizeIterator<Item = (u64, u64)>,
{
    kit::format_batch(prefix, stamps, body)
}

/// Reads an ID back into its parts, or says precisely why it is not valid.
pub fn validate(id: &str, expected_prefix: Option<&str>) -> Result<Parsed, Invalid> {
    let len = id.len();
    if !(BODY_LEN..=BODY_LEN + MAX_PREFIX_LEN).contains(&len) {
        return Err(Invalid::WrongLength {
            found: u32::try_from(len).unwrap_or(u32::MAX),
            min: BODY_LEN as u32,
            max: (BODY_LEN + MAX_PREFIX_LEN) as u32,
        });
    }
    let split = len - BODY_LEN;
    let body = &id.as_bytes()[split..];
    for (offset, (&found, &want)) in body.iter().zip(SHAPE).enumerate() {
        let ok = if want == b'd' {
            found.is_ascii_digit()
        } else {
            found == want
        };
        if !ok {
            let position = split + offset;
            let found_char = kit::char_at(id, position).1;
            return Err(if want == b'd' {
                Invalid::NonDigit {
                    position: position as u32,
                    found: found_char,
                }
            } else {
                Invalid::Malformed(format!(
                    "expected {:?} at byte {position}, found {found_char:?}",
                    char::from(want)
                ))
            });
        }
    }
    let prefix = id.get(..split).unwrap_or_default();
    check_prefix(prefix).map_err(Invalid::BadPrefix)?;
    expect_prefix(prefix, expected_prefix)?;
    let check = luhn(digit_bytes(&body[..27]));
    if body[28] - b'0' != check {
        return Err(Invalid::Malformed(format!(
            "check digit is {}, but the digits before it give {check}: a digit is mistyped",
            char::from(body[28])
        )));
    }
    let (year, month, day) = (
        number(&body[0..4]),
        number(&body[4..6]),
        number(&body[6..8]),
    );
    let (hour, minute, second) = (
        number(&body[9..11]),
        number(&body[11..13]),
        number(&body[13..15]),
    );
    let impossible = |what: String| Err(Invalid::ImpossibleDate(what));
    if !(1..=12).contains(&month) {
        return impossible(format!("month {month}"));
    }
    if day < 1 || day > u64::from(civil::days_in_month(year as i64, month as u32)) {
        return impossible(format!("day {day} of month {month} of {year:04}"));
    }
    if hour >= 24 || minute >= 60 || second >= 60 {
        return impossible(format!("time {hour:02}:{minute:02}:{second:02}"));
    }
    if year < 1970 {
        return impossible(format!("year {year:04} is before 1970"));
    }
    let days = civil::days_from_civil(year as i64, month as u32, day as u32) as u64;
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second;
    Ok(Parsed {
        prefix_len: split,
        timestamp_micros: secs * 1_000_000 + number(&body[16..22]),
        sequence: number(&body[24..27]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOWN: u64 = 1_795_317_297_123_456; // 2026-11-22T03:14:57.123456Z

    #[test]
    fn known_id_round_trips() {
        let id = format_id("ORD-", KNOWN, 7).unwrap();
        assert_eq!(&id[..31], "ORD-20261122T031457.123456Z-007");
        let parsed = validate(&id, Some("ORD-")).unwrap();
        assert_eq!(
            parsed,
            Parsed {
                prefix_len: 4,
                timestamp_micros: KNOWN,
                sequence: 7
            }
        );
    }

    #[test]
    fn luhn_known_value() {
        // The classic example: 7992739871 has check digit 3.
        assert_eq!(luhn(b"7992739871".iter().copied()), 3);
    }

    #[test]
    fn every_single_digit_typo_is_caught() {
        for (ts, seq) in [(0, 0), (KNOWN, 7), (MAX_TIMESTAMP_MICROS, 999)] {
            let id = format_id("P", ts, seq).unwrap();
            for (i, b) in id.bytes().enumerate().skip(1) {
                if !b.is_ascii_digit() {
                    continue;
                }
                for d in b'0'..=b'9' {
                    if d == b {
                        continue;
                    }
                    let mut typo = id.clone().into_bytes();
                    typo[i] = d;
                    let typo = String::from_utf8(typo).unwrap();
                    match validate(&typo, None) {
                        Err(_) => {}
                        Ok(p) => panic!("{typo} (typo of {id}) accepted as {p:?}"),
                    }
                }
            }
        }
    }

    #[test]
    fn limits_and_shape() {
        assert_eq!(
            format_id("", 0, 1000),
            Err(FormatFailure::SequenceOutOfRange(1000))
        );
        assert!(matches!(
            format_id("a b", 0, 0),
            Err(FormatFailure::BadPrefix(_))
        ));
        assert!(matches!(
            validate("short", None),
            Err(Invalid::WrongLength { .. })
        ));
        let id = format_id("", KNOWN, 5).unwrap();
        let dashed = id.replace('T', "X");
        assert!(matches!(
            validate(&dashed, None),
            Err(Invalid::Malformed(_))
        ));
        assert_eq!(
            format_batch("Q", [(0, 1), (KNOWN, 2)].into_iter()).unwrap(),
            format!(
                "{}\n{}\n",
                format_id("Q", 0, 1).unwrap(),
                format_id("Q", KNOWN, 2).unwrap()
            )
        );
    }
}
