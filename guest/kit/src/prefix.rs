//! The prefix rules every shipped policy follows: 0 to [`MAX_PREFIX_LEN`]
//! bytes of `[A-Za-z0-9._-]`, and how an ID's prefix is checked against the
//! expected one.

use crate::Invalid;

/// The longest prefix allowed, in bytes.
pub const MAX_PREFIX_LEN: usize = 32;

/// Whether `b` may appear in a prefix: ASCII `[A-Za-z0-9._-]`.
pub const fn is_prefix_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')
}

/// Checks the prefix rules: at most [`MAX_PREFIX_LEN`] bytes of `[A-Za-z0-9._-]`.
///
/// The error text names the first offending character and its byte offset,
/// which is also its offset in an ID since the prefix comes first.
pub fn check_prefix(prefix: &str) -> Result<(), String> {
    if prefix.len() > MAX_PREFIX_LEN {
        return Err(format!(
            "prefix is {} bytes long; the longest allowed is {MAX_PREFIX_LEN}",
            prefix.len()
        ));
    }
    match prefix.bytes().position(|b| !is_prefix_byte(b)) {
        None => Ok(()),
        Some(position) => {
            // Every byte before `position` is ASCII, so `position` starts a char.
            let found = char_at(prefix, position).1;
            Err(format!(
                "prefix has {found:?} (U+{:04X}) at byte {position}; only A-Z, a-z, 0-9, '.', '_' and '-' are allowed",
                u32::from(found)
            ))
        }
    }
}

/// The char containing byte `pos` of `s`, with the byte offset where it starts.
///
/// Never panics: `pos` may fall inside a multi-byte character, in which case
/// that character and its start are returned.
pub fn char_at(s: &str, pos: usize) -> (usize, char) {
    s.char_indices()
        .take_while(|&(start, _)| start <= pos)
        .last()
        .unwrap_or((pos, char::REPLACEMENT_CHARACTER))
}

/// Fails with [`Invalid::BadPrefix`] unless an ID's prefix, `found`, is the
/// `expected` one (any prefix is, when none is expected).
pub fn expect_prefix(found: &str, expected: Option<&str>) -> Result<(), Invalid> {
    match expected {
        Some(expected) if expected != found => Err(Invalid::BadPrefix(format!(
            "expected prefix '{expected}', found '{found}'"
        ))),
        _ => Ok(()),
    }
}
