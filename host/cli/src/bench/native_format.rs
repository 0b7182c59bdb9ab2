//! The default policy's format written in plain Rust in the host: the
//! yardstick `idmint bench` measures the WebAssembly policy against
//! (`format_native` vs `format_wasm`). Nothing else uses it: IDs are always
//! formatted by a policy component, so that swapping the policy swaps the
//! format. A unit test holds its output equal to the embedded default
//! policy's over sample parts.
//!
//! It is the same algorithm as `guest/default/src/format.rs` (Hinnant's
//! `civil_from_days`, digits written into a byte buffer), with no checks of
//! the prefix or ranges beyond what is needed to stay correct: a yardstick
//! should be the fastest honest version.

use idmint::policy::Stamp;

/// The digits after the prefix: 14 (date and time) + 6 (micros) + 2 (sequence).
const DIGITS: usize = 22;

/// Formats one ID per stamp, all with `prefix`, as the default policy's
/// `format` would, one `String` each.
pub fn format_batch(prefix: &str, stamps: &[Stamp]) -> Option<Vec<String>> {
    stamps
        .iter()
        .map(|stamp| {
            let digits = digits(stamp.timestamp_micros, stamp.sequence)?;
            let mut id = String::with_capacity(prefix.len() + DIGITS);
            id.push_str(prefix);
            id.extend(digits.iter().map(|&b| char::from(b)));
            Some(id)
        })
        .collect()
}

/// The 22 digits for a timestamp and sequence value.
fn digits(timestamp_micros: u64, sequence: u64) -> Option<[u8; DIGITS]> {
    const MAX_TIMESTAMP_MICROS: u64 = 253_402_300_799_999_999;
    if sequence >= 100 || timestamp_micros > MAX_TIMESTAMP_MICROS {
        return None;
    }
    // The same arithmetic as the guest, casts included (all lossless here).
    let secs = timestamp_micros / 1_000_000;
    let micros = (timestamp_micros - secs * 1_000_000) as u32;
    let days = secs / 86_400;
    let second_of_day = (secs - days * 86_400) as u32;
    let (year, month, day) = civil_from_days(u32::try_from(days).ok()?);
    let mut buf = [0u8; DIGITS];
    put_digits(&mut buf[0..4], year);
    put_digits(&mut buf[4..6], month);
    put_digits(&mut buf[6..8], day);
    put_digits(&mut buf[8..10], second_of_day / 3600);
    put_digits(&mut buf[10..12], second_of_day / 60 % 60);
    put_digits(&mut buf[12..14], second_of_day % 60);
    put_digits(&mut buf[14..20], micros);
    put_digits(&mut buf[20..22], sequence as u32);
    Some(buf)
}

/// Writes `value` as `buf.len()` zero-padded decimal digits.
fn put_digits(buf: &mut [u8], mut value: u32) {
    for b in buf.iter_mut().rev() {
        // `value % 10` < 10, so the narrowing is lossless.
        *b = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

/// The date `(year, month, day)` that is `days` days after 1970-01-01
/// (Hinnant's `civil_from_days` in 32-bit arithmetic, as the guest's
/// `civil_from_days_u32`).
fn civil_from_days(days: u32) -> (u32, u32, u32) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u32::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use idmint::policy::{PolicyRuntime, Stamp};

    /// The yardstick must write exactly what the default policy writes, or
    /// the benchmark compares two different things.
    #[test]
    fn native_format_equals_the_default_policy() {
        let policy = PolicyRuntime::new().unwrap().load_default().unwrap();
        // 2026-11-22T03:14:57.123456Z, and the last microsecond of 9999.
        let stamps: Vec<Stamp> = [
            0,
            999_999,
            86_400_000_000,
            1_795_317_297_123_456,
            1_798_761_599_999_999,
            253_402_300_799_999_999,
        ]
        .into_iter()
        .flat_map(|timestamp_micros| {
            [0, 1, 42, 99].map(|sequence| Stamp::new(timestamp_micros, sequence))
        })
        .collect();
        for prefix in ["", "ORD-", "a.b_c"] {
            assert_eq!(
                super::format_batch(prefix, &stamps).unwrap(),
                policy.format_batch(prefix, &stamps).unwrap()
            );
        }
    }
}
