//! The policy kit: plain-Rust building blocks that idmint's policies share,
//! free of any WIT type: the failure types that mirror the WIT `format-error`
//! and `invalid-id`, the prefix rules, and the digit writer. Each policy crate
//! includes this file (and `civil.rs`, `adapter.rs`) by path, the way
//! `guest/check-digit/` does, since a policy crate exports a component of its
//! own and cannot be a library of another.

/// The longest prefix allowed, in bytes.
pub const MAX_PREFIX_LEN: usize = 32;
/// The last timestamp four year digits can write: 9999-12-31T23:59:59.999999Z.
pub const MAX_TIMESTAMP_MICROS: u64 = 253_402_300_799_999_999;

/// Why an ID cannot be formatted; mirrors WIT `format-error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormatFailure {
    /// The prefix breaks the prefix rules; the text says how.
    BadPrefix(String),
    /// The sequence value is at or above the policy's capacity.
    SequenceOutOfRange(u64),
    /// The timestamp is after [`MAX_TIMESTAMP_MICROS`].
    TimestampOutOfRange(u64),
}

/// Why a string is not a valid ID; mirrors WIT `invalid-id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalid {
    /// The ID is shorter or longer than the policy allows.
    WrongLength {
        /// Length found, in bytes (saturated to `u32::MAX`).
        found: u32,
        /// Shortest valid length.
        min: u32,
        /// Longest valid length.
        max: u32,
    },
    /// The prefix breaks the prefix rules or is not the expected one.
    BadPrefix(String),
    /// A byte that must be an ASCII digit is not one.
    NonDigit {
        /// Byte offset, in the ID, of the character holding the offending byte.
        position: u32,
        /// That character.
        found: char,
    },
    /// The digits name a time that does not exist or that precedes the epoch.
    ImpossibleDate(String),
    /// A separator or a check character is wrong; the text says which.
    Malformed(String),
}

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

/// Writes `value` as `buf.len()` decimal digits, zero-padded, keeping the low digits.
///
/// `u32` on purpose: wasm has no 64-bit multiply-high, so a `u64` division by
/// 10 compiles to a real `i64.div_u` (tens of cycles), while a `u32` one
/// becomes a multiply and a shift. Every field of an ID fits in 32 bits.
pub fn put_digits(buf: &mut [u8], mut value: u32) {
    for b in buf.iter_mut().rev() {
        *b = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

/// One ID: `prefix`, checked against the prefix rules, followed by the `N`
/// ASCII bytes `body` makes, in a string allocated once at its final size.
pub fn format_id<const N: usize>(
    prefix: &str,
    body: impl FnOnce() -> Result<[u8; N], FormatFailure>,
) -> Result<String, FormatFailure> {
    check_prefix(prefix).map_err(FormatFailure::BadPrefix)?;
    let body = body()?;
    let mut id = String::with_capacity(prefix.len() + N);
    id.push_str(prefix);
    // ASCII: each byte is one char, so this needs no UTF-8 check.
    id.extend(body.iter().map(|&b| char::from(b)));
    Ok(id)
}

/// One ID per `(timestamp_micros, sequence)` stamp, all with `prefix`, into
/// one string: each ID followed by `'\n'` (WIT `format-batch`).
///
/// The prefix is checked once and the buffer allocated once, which is what
/// makes a batch cheap: the host lifts one string instead of one per ID. The
/// first stamp out of range fails the batch.
pub fn format_batch<const N: usize, I>(
    prefix: &str,
    stamps: I,
    body: impl Fn(u64, u64) -> Result<[u8; N], FormatFailure>,
) -> Result<String, FormatFailure>
where
    I: ExactSizeIterator<Item = (u64, u64)>,
{
    check_prefix(prefix).map_err(FormatFailure::BadPrefix)?;
    let mut out = Vec::with_capacity(stamps.len() * (prefix.len() + N + 1));
    for (timestamp_micros, sequence) in stamps {
        out.extend_from_slice(prefix.as_bytes());
        out.extend_from_slice(&body(timestamp_micros, sequence)?);
        out.push(b'\n');
    }
    // The prefix is ASCII (checked above), bodies are ASCII by contract.
    String::from_utf8(out).map_err(|e| FormatFailure::BadPrefix(e.to_string()))
}

/// Reads ASCII digits as a number; callers have checked they are digits.
pub fn number(digits: &[u8]) -> u64 {
    digits.iter().fold(0, |n, &b| n * 10 + u64::from(b - b'0'))
}
