//! The decimal format in plain Rust, free of WIT types (see the crate docs).

use crate::kit::{self, FormatFailure, Invalid, MAX_PREFIX_LEN};

/// Values 0 to 10^16 - 1: sixteen digits at most.
pub const SEQUENCE_CAPACITY: u64 = 10_000_000_000_000_000;
/// Values below 10^9 are zero-padded to this many digits.
pub const MIN_DIGITS: usize = 9;
/// The most digits a value has.
pub const MAX_DIGITS: usize = 16;

/// Checks the prefix: the shared rules, and no digit at its end.
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

/// One ID.
pub fn format_id(prefix: &str, sequence: u64) -> Result<String, FormatFailure> {
    format_batch(prefix, std::iter::once(sequence)).map(|mut id| {
        id.pop(); // the batch's line feed
        id
    })
}

/// Many IDs with one prefix, each followed by `'\n'` (WIT `format-batch`).
pub fn format_batch<I>(prefix: &str, sequences: I) -> Result<String, FormatFailure>
where
    I: ExactSizeIterator<Item = u64>,
{
    check_prefix(prefix).map_err(FormatFailure::BadPrefix)?;
    let mut out = Vec::with_capacity(sequences.len() * (prefix.len() + MIN_DIGITS + 1));
    for sequence in sequences {
        out.extend_from_slice(prefix.as_bytes());
        push_number(&mut out, sequence)?;
        out.push(b'\n');
    }
    // The prefix is ASCII (checked above), the digits too.
    String::from_utf8(out).map_err(|e| FormatFailure::BadPrefix(e.to_string()))
}

/// Reads an ID back: the prefix's length and the value.
pub fn validate(id: &str, expected_prefix: Option<&str>) -> Result<(usize, u64), Invalid> {
    let bytes = id.as_bytes();
    let digits_from = match expected_prefix {
        Some(expected) => {
            if !id.starts_with(expected) {
                let found = &id[..kit::char_at(id, expected.len().min(id.len())).0];
                return Err(Invalid::BadPrefix(format!(
                    "expected prefix '{expected}', found '{found}'"
                )));
            }
            // Everything after the expected prefix must be the number.
            if let Some(offset) = bytes[expected.len()..]
                .iter()
                .position(|b| !b.is_ascii_digit())
            {
                let position = expected.len() + offset;
                return Err(Invalid::NonDigit {
                    position: position as u32,
                    found: kit::char_at(id, position).1,
                });
            }
            expected.len()
        }
        None => bytes
            .iter()
            .rposition(|b| !b.is_ascii_digit())
            .map_or(0, |last| last + 1),
    };
    let digits = &bytes[digits_from..];
    let wrong_length = || Invalid::WrongLength {
        found: u32::try_from(id.len()).unwrap_or(u32::MAX),
        min: (digits_from + MIN_DIGITS) as u32,
        max: (digits_from.min(MAX_PREFIX_LEN) + MAX_DIGITS) as u32,
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
    check_prefix(&id[..digits_from]).map_err(Invalid::BadPrefix)?;
    Ok((digits_from, kit::number(digits)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_to_nine_digits_and_grows_to_sixteen() {
        for (value, id) in [
            (42, "INV-000000042"),
            (0, "INV-000000000"),
            (999_999_999, "INV-999999999"),
            (1_000_000_000, "INV-1000000000"),
            (SEQUENCE_CAPACITY - 1, "INV-9999999999999999"),
        ] {
            assert_eq!(format_id("INV-", value).unwrap(), id);
            assert_eq!(validate(id, Some("INV-")).unwrap(), (4, value));
            assert_eq!(validate(id, None).unwrap(), (4, value));
        }
        assert_eq!(
            format_id("INV-", SEQUENCE_CAPACITY),
            Err(FormatFailure::SequenceOutOfRange(SEQUENCE_CAPACITY))
        );
    }

    #[test]
    fn a_batch_is_the_ids_one_per_line() {
        let batch = format_batch("", [1, 2, 12_345_678_901].into_iter()).unwrap();
        assert_eq!(batch, "000000001\n000000002\n12345678901\n");
        assert_eq!(
            batch.lines().collect::<Vec<_>>(),
            [1, 2, 12_345_678_901].map(|v| format_id("", v).unwrap())
        );
    }

    #[test]
    fn round_trips_with_every_kind_of_prefix() {
        for prefix in ["", "A", "INV-", "x.y_z-", "a1b"] {
            for value in [0, 7, 999_999_999, 1 << 53] {
                let id = format_id(prefix, value).unwrap();
                assert_eq!(validate(&id, Some(prefix)).unwrap(), (prefix.len(), value));
                assert_eq!(validate(&id, None).unwrap(), (prefix.len(), value));
            }
        }
    }

    #[test]
    fn refuses_a_prefix_that_ends_with_a_digit() {
        assert_eq!(
            format_id("INV7", 1),
            Err(FormatFailure::BadPrefix(
                "the prefix must not end with a digit ('7' at byte 3): the number would run into it"
                    .into()
            ))
        );
        assert!(matches!(
            format_id("a b", 1),
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
