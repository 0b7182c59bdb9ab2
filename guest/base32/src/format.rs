//! The base32 format in plain Rust, free of WIT types (see the crate docs).

use idmint_policy_kit::{self as kit, FormatFailure, Invalid, MAX_PREFIX_LEN};

/// Every value but `u64::MAX` (the capacity is a count of values).
pub const SEQUENCE_CAPACITY: u64 = u64::MAX;
/// Characters of a value: 13 x 5 bits hold 64.
pub const WIDTH: usize = 13;
/// Crockford's alphabet.
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// One character's value, read as Crockford allows (case-insensitive,
/// `I` and `L` as 1, `O` as 0), or `None`.
fn digit(byte: u8) -> Option<u64> {
    let upper = byte.to_ascii_uppercase();
    let upper = match upper {
        b'I' | b'L' => b'1',
        b'O' => b'0',
        other => other,
    };
    ALPHABET
        .iter()
        .position(|&c| c == upper)
        .map(|position| position as u64)
}

fn push_value(out: &mut Vec<u8>, value: u64) -> Result<(), FormatFailure> {
    if value == SEQUENCE_CAPACITY {
        return Err(FormatFailure::SequenceOutOfRange(value));
    }
    for index in (0..WIDTH).rev() {
        out.push(ALPHABET[((value >> (5 * index)) & 31) as usize]);
    }
    Ok(())
}

/// One ID.
pub fn format_id(prefix: &str, value: u64) -> Result<String, FormatFailure> {
    format_batch(prefix, std::iter::once(value)).map(|mut id| {
        id.pop(); // the batch's line feed
        id
    })
}

/// Many IDs with one prefix, each followed by `'\n'` (WIT `format-batch`).
pub fn format_batch<I>(prefix: &str, values: I) -> Result<String, FormatFailure>
where
    I: ExactSizeIterator<Item = u64>,
{
    kit::check_prefix(prefix).map_err(FormatFailure::BadPrefix)?;
    let mut out = Vec::with_capacity(values.len() * (prefix.len() + WIDTH + 1));
    for value in values {
        out.extend_from_slice(prefix.as_bytes());
        push_value(&mut out, value)?;
        out.push(b'\n');
    }
    // The prefix is ASCII (checked above), the alphabet too.
    String::from_utf8(out).map_err(|e| FormatFailure::BadPrefix(e.to_string()))
}

/// Reads an ID back: the prefix's length and the value.
pub fn validate(id: &str, expected_prefix: Option<&str>) -> Result<(usize, u64), Invalid> {
    let len = id.len();
    if !(WIDTH..=MAX_PREFIX_LEN + WIDTH).contains(&len) {
        return Err(Invalid::WrongLength {
            found: u32::try_from(len).unwrap_or(u32::MAX),
            min: (WIDTH + expected_prefix.map_or(0, str::len)) as u32,
            max: (WIDTH + expected_prefix.map_or(MAX_PREFIX_LEN, str::len)) as u32,
        });
    }
    // The last 13 bytes are the value; a multi-byte character there is not one.
    let prefix_len = len - WIDTH;
    if !id.is_char_boundary(prefix_len) {
        let (position, found) = kit::char_at(id, prefix_len);
        return Err(Invalid::Malformed(format!(
            "{found:?} at byte {position} is not a base32 character"
        )));
    }
    let (prefix, body) = id.split_at(prefix_len);
    kit::check_prefix(prefix).map_err(Invalid::BadPrefix)?;
    kit::expect_prefix(prefix, expected_prefix)?;
    let mut value: u64 = 0;
    for (offset, byte) in body.bytes().enumerate() {
        let Some(digit) = digit(byte) else {
            let position = prefix_len + offset;
            return Err(Invalid::Malformed(format!(
                "{:?} at byte {position} is not a base32 character",
                kit::char_at(id, position).1
            )));
        };
        // The first character holds only 4 bits (13 x 5 = 65).
        if offset == 0 && digit > 15 {
            return Err(Invalid::Malformed(format!(
                "the value {body} is larger than 64 bits"
            )));
        }
        value = (value << 5) | digit;
    }
    Ok((prefix_len, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_thirteen_characters_that_sort_as_the_values() {
        assert_eq!(format_id("EVT-", 0).unwrap(), "EVT-0000000000000");
        assert_eq!(format_id("", 31).unwrap(), "000000000000Z");
        assert_eq!(format_id("", (1 << 63) - 1).unwrap(), "7ZZZZZZZZZZZZ");
        let ids: Vec<String> = [1_u64, 2, 1000, 250_514_479_211_610_112, (1 << 63) - 1]
            .iter()
            .map(|&v| format_id("E-", v).unwrap())
            .collect();
        assert!(ids.windows(2).all(|pair| pair[0] < pair[1]));
        assert_eq!(
            format_id("", u64::MAX),
            Err(FormatFailure::SequenceOutOfRange(u64::MAX))
        );
    }

    #[test]
    fn round_trips_and_reads_leniently() {
        for value in [0, 7, 250_514_479_211_610_112, u64::MAX - 1] {
            for prefix in ["", "EVT-", "a1"] {
                let id = format_id(prefix, value).unwrap();
                assert_eq!(validate(&id, Some(prefix)).unwrap(), (prefix.len(), value));
                assert_eq!(validate(&id, None).unwrap(), (prefix.len(), value));
                assert_eq!(
                    validate(&id.to_ascii_lowercase(), None).unwrap().1,
                    value,
                    "lower case reads the same"
                );
            }
        }
        assert_eq!(validate("000000000000l", None).unwrap().1, 1);
        assert_eq!(validate("00000000000O1", None).unwrap().1, 1);
    }

    #[test]
    fn names_what_is_wrong() {
        assert!(matches!(
            validate("ABC", None),
            Err(Invalid::WrongLength { .. })
        ));
        assert!(matches!(
            validate("E-000000000000U", None),
            Err(Invalid::Malformed(why)) if why.contains("'U' at byte 14")
        ));
        assert!(matches!(
            validate("G000000000000", None),
            Err(Invalid::Malformed(why)) if why.contains("larger than 64 bits")
        ));
        assert!(matches!(
            validate("X-0000000000001", Some("E-")),
            Err(Invalid::BadPrefix(_))
        ));
    }
}
