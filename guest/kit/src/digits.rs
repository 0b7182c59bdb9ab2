//! Writing and reading digits, and the shape of a batch: what every policy
//! that writes numbers does on the host's hot path (one call per ID minted),
//! so it writes bytes into buffers allocated once.

use crate::prefix::check_prefix;
use crate::FormatFailure;

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
