//! UUIDv7 and ULID made unique by construction from a snowflake counter's
//! fields (docs/design/standard-ids.md): after 48 bits of Unix milliseconds,
//! both carry the same payload, from the most significant bit:
//!
//! - **unique**, [`UNIQUE_BITS`]: `(worker << sequence_bits) | sequence`,
//!   the snowflake ID's own low bits: the (time unit, worker, sequence)
//!   triple a snowflake counter never repeats, less the time, which the
//!   milliseconds carry. In the snowflake layout's own order, so that a
//!   policy makes it from the 64-bit ID and its time alone, without the
//!   layout, which `format` is not given ([`Payload::of_stamp`]);
//! - **tag**, [`TAG_BITS`]: the counter's tag, unique in its database;
//! - **noise**, the rest ([`UUID_NOISE_BITS`], [`ULID_NOISE_BITS`]): a keyed
//!   mix of the fields above with the counter's salt, so that the IDs look
//!   random to anyone without the salt while a policy stays a pure function
//!   of its input.
//!
//! A UUIDv7 (RFC 9562) also holds the version (`0111`) and the variant
//! (`10`): the unique field's high 12 bits are its `rand_a`, the "fixed
//! bit-length dedicated counter" of RFC 9562 section 6.2, so that one
//! process's UUIDs grow within a millisecond.

use crate::snowflake::{Fields, Layout};
use crate::{expect_prefix, FormatFailure, Invalid, Parsed, Stamp};

/// Bits of the unique field: worker and sequence bits must fit in it.
pub const UNIQUE_BITS: u32 = 24;
/// Bits of the counter tag.
pub const TAG_BITS: u32 = 24;
/// The largest tag.
pub const MAX_TAG: u32 = (1 << TAG_BITS) - 1;
/// Noise bits of a UUIDv7: 128 - 48 (time) - 6 (version, variant) - 48.
pub const UUID_NOISE_BITS: u32 = 26;
/// Noise bits of a ULID: 128 - 48 (time) - 48.
pub const ULID_NOISE_BITS: u32 = 32;
/// The largest Unix time in milliseconds 48 bits hold (year 10889).
pub const MAX_UNIX_MILLIS: u64 = (1 << 48) - 1;

/// What a standard ID carries besides its noise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Payload {
    /// Milliseconds since 1970-01-01T00:00:00Z: the start of the ID's time unit.
    pub unix_millis: u64,
    /// `(sequence << worker_bits) | worker`.
    pub unique: u32,
    /// The counter's tag.
    pub tag: u32,
}

/// Why fields cannot be made into a standard ID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadError {
    /// The layout's worker and sequence bits do not fit the unique field.
    LayoutTooWide {
        worker_bits: u32,
        sequence_bits: u32,
    },
    /// The tag does not fit its field.
    TagTooLarge(u32),
    /// The time is past what 48 bits of milliseconds hold.
    TimeOutOfRange(u64),
    /// A field is larger than the layout allows.
    FieldOutOfRange(&'static str, u64),
    /// The ID's worker id and sequence take more bits than the unique
    /// field holds (its layout's worker and sequence bits add up to more).
    UniqueTooWide(u32),
    /// The stamp has no snowflake fields: it is not a snowflake counter's.
    NotSnowflake,
}

impl std::fmt::Display for PayloadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PayloadError::LayoutTooWide {
                worker_bits,
                sequence_bits,
            } => write!(
                f,
                "the layout's {worker_bits} worker and {sequence_bits} sequence bits add up to \
                 more than the {UNIQUE_BITS} a standard ID holds"
            ),
            PayloadError::TagTooLarge(tag) => {
                write!(f, "the counter tag {tag} is larger than {MAX_TAG}")
            }
            PayloadError::TimeOutOfRange(ms) => {
                write!(
                    f,
                    "the time {ms} ms is past what 48 bits of milliseconds hold"
                )
            }
            PayloadError::FieldOutOfRange(field, value) => {
                write!(f, "the {field} {value} does not fit the layout")
            }
            PayloadError::UniqueTooWide(bits) => write!(
                f,
                "the ID's worker id and sequence take {bits} bits, more than the \
                 {UNIQUE_BITS} a standard ID holds"
            ),
            PayloadError::NotSnowflake => f.write_str("it has no snowflake fields"),
        }
    }
}

impl Payload {
    /// The payload of a snowflake ID's fields under `layout`, for the
    /// counter tagged `tag`.
    pub fn of(layout: &Layout, fields: &Fields, tag: u32) -> Result<Payload, PayloadError> {
        let (worker_bits, sequence_bits) = (layout.worker_bits, layout.sequence_bits);
        if worker_bits + sequence_bits > UNIQUE_BITS {
            return Err(PayloadError::LayoutTooWide {
                worker_bits,
                sequence_bits,
            });
        }
        if tag > MAX_TAG {
            return Err(PayloadError::TagTooLarge(tag));
        }
        if fields.worker >> worker_bits != 0 {
            return Err(PayloadError::FieldOutOfRange("worker id", fields.worker));
        }
        if fields.sequence >> sequence_bits != 0 {
            return Err(PayloadError::FieldOutOfRange("sequence", fields.sequence));
        }
        let unix_millis = fields
            .time
            .checked_mul(layout.unit_millis)
            .and_then(|ms| ms.checked_add(layout.epoch_millis))
            .filter(|&ms| ms <= MAX_UNIX_MILLIS)
            .ok_or(PayloadError::TimeOutOfRange(fields.time))?;
        Ok(Payload {
            unix_millis,
            unique: ((fields.worker << sequence_bits) | fields.sequence) as u32,
            tag,
        })
    }

    /// The payload of a snowflake counter's stamp, without its layout: the
    /// time is the stamp's (the start of the ID's time unit), the unique
    /// field the 64-bit ID (`stamp.sequence`) less its time bits, and the
    /// tag the one the host passed in the fields. The ID's time bits are
    /// found from the fields' time: an ID is `time << n | unique`, so its
    /// bit length is `n` more than the time's.
    pub fn of_stamp(stamp: &Stamp) -> Result<Payload, PayloadError> {
        let fields = stamp.snowflake.ok_or(PayloadError::NotSnowflake)?;
        if fields.tag > MAX_TAG {
            return Err(PayloadError::TagTooLarge(fields.tag));
        }
        let id = stamp.sequence;
        let bit_length = |value: u64| 64 - value.leading_zeros();
        let unique_bits = bit_length(id).saturating_sub(bit_length(fields.time));
        if fields.time != 0 && id >> unique_bits != fields.time {
            return Err(PayloadError::FieldOutOfRange("time", fields.time));
        }
        let unique = id
            .checked_shr(unique_bits)
            .map_or(id, |_| id & ((1 << unique_bits) - 1));
        if unique >> UNIQUE_BITS != 0 {
            return Err(PayloadError::UniqueTooWide(unique_bits));
        }
        let unix_millis = stamp.timestamp_micros / 1000;
        if unix_millis > MAX_UNIX_MILLIS {
            return Err(PayloadError::TimeOutOfRange(unix_millis));
        }
        Ok(Payload {
            unix_millis,
            unique: unique as u32,
            tag: fields.tag,
        })
    }

    /// The snowflake fields back, under the counter's `layout`, the tag
    /// included (the salt, which cannot be read back, is 0); `None` when
    /// the payload does not fit it (another layout, or not its time unit).
    pub fn fields(&self, layout: &Layout) -> Option<Fields> {
        let since = self.unix_millis.checked_sub(layout.epoch_millis)?;
        if layout.unit_millis == 0 || since % layout.unit_millis != 0 {
            return None;
        }
        let unique = u64::from(self.unique);
        let worker = unique >> layout.sequence_bits;
        (worker >> layout.worker_bits == 0).then(|| Fields {
            time: since / layout.unit_millis,
            worker,
            sequence: unique & ((1 << layout.sequence_bits) - 1),
            tag: self.tag,
            salt: 0,
        })
    }

    /// The noise of this payload for a counter salted `salt`: the top
    /// `bits` of a keyed mix of the fields (SplitMix64's finalizer, twice).
    pub fn noise(&self, salt: u64, bits: u32) -> u64 {
        let fields =
            (self.unix_millis << 16) ^ (u64::from(self.unique) << 24 | u64::from(self.tag));
        mix(mix(salt ^ fields) ^ self.unix_millis.rotate_left(32)) >> (64 - bits)
    }

    /// The UUIDv7 of this payload, as a 128-bit number.
    pub fn uuidv7(&self, salt: u64) -> u128 {
        let unique = u128::from(self.unique);
        (u128::from(self.unix_millis) << 80)
            | (0x7 << 76)
            | ((unique >> 12) << 64)
            | (0b10 << 62)
            | ((unique & 0xfff) << 50)
            | (u128::from(self.tag) << UUID_NOISE_BITS)
            | u128::from(self.noise(salt, UUID_NOISE_BITS))
    }

    /// The payload of a UUIDv7, or why it is not a version 7, RFC variant UUID.
    pub fn from_uuidv7(uuid: u128) -> Result<Payload, String> {
        let version = (uuid >> 76) & 0xf;
        if version != 7 {
            return Err(format!("its version is {version}, not 7"));
        }
        if (uuid >> 62) & 0b11 != 0b10 {
            return Err("its variant is not RFC 9562's (10)".to_string());
        }
        let high = (uuid >> 64) & 0xfff;
        let low = (uuid >> 50) & 0xfff;
        Ok(Payload {
            unix_millis: (uuid >> 80) as u64,
            unique: ((high << 12) | low) as u32,
            tag: ((uuid >> UUID_NOISE_BITS) & u128::from(MAX_TAG)) as u32,
        })
    }

    /// The ULID of this payload, as a 128-bit number.
    pub fn ulid(&self, salt: u64) -> u128 {
        (u128::from(self.unix_millis) << 80)
            | (u128::from(self.unique) << (TAG_BITS + ULID_NOISE_BITS))
            | (u128::from(self.tag) << ULID_NOISE_BITS)
            | u128::from(self.noise(salt, ULID_NOISE_BITS))
    }

    /// The payload of a ULID.
    pub fn from_ulid(ulid: u128) -> Payload {
        Payload {
            unix_millis: (ulid >> 80) as u64,
            unique: ((ulid >> (TAG_BITS + ULID_NOISE_BITS)) & ((1 << UNIQUE_BITS) - 1)) as u32,
            tag: ((ulid >> ULID_NOISE_BITS) & u128::from(MAX_TAG)) as u32,
        }
    }
}

/// SplitMix64's finalizer: a bijection of 64 bits whose outputs look random.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A UUID's canonical text: lowercase `8-4-4-4-12` hex.
pub fn uuid_text(uuid: u128) -> String {
    let mut text = String::with_capacity(UUID_LEN);
    push_uuid(&mut text, uuid);
    text
}

/// The length of a UUID's canonical text.
const UUID_LEN: usize = 36;

/// Appends `uuid`'s canonical text to `out`, digit by digit from a table:
/// the formatting machinery (`format!("{:032x}")` and the slicing) cost
/// more than the rest of an ID together.
fn push_uuid(out: &mut String, uuid: u128) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = [b'-'; UUID_LEN];
    let mut digit = 0;
    for (position, byte) in text.iter_mut().enumerate() {
        if matches!(position, 8 | 13 | 18 | 23) {
            continue;
        }
        *byte = HEX[((uuid >> (124 - 4 * digit)) & 15) as usize];
        digit += 1;
    }
    out.push_str(std::str::from_utf8(&text).expect("hex digits and hyphens are ASCII"));
}

/// A UUID's number from its `8-4-4-4-12` hex text (either case), or why not.
pub fn parse_uuid(text: &str) -> Result<u128, String> {
    if text.len() != 36 {
        return Err(format!("{} bytes, not the 36 of a UUID", text.len()));
    }
    let mut value: u128 = 0;
    for (position, byte) in text.bytes().enumerate() {
        if matches!(position, 8 | 13 | 18 | 23) {
            if byte != b'-' {
                return Err(format!("byte {position} is not the hyphen of 8-4-4-4-12"));
            }
            continue;
        }
        let digit = (byte as char)
            .to_digit(16)
            .ok_or_else(|| format!("byte {position} is not a hex digit"))?;
        value = (value << 4) | u128::from(digit);
    }
    Ok(value)
}

/// Crockford's base32 alphabet, as ULIDs write it.
const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// A ULID's text: 26 characters of Crockford base32, upper case.
pub fn ulid_text(ulid: u128) -> String {
    let mut text = String::with_capacity(ULID_LEN);
    push_ulid(&mut text, ulid);
    text
}

/// The length of a ULID's text.
const ULID_LEN: usize = 26;

/// Appends `ulid`'s text to `out`.
fn push_ulid(out: &mut String, ulid: u128) {
    let mut text = [0_u8; ULID_LEN];
    for (index, byte) in text.iter_mut().enumerate() {
        *byte = CROCKFORD[((ulid >> (5 * (ULID_LEN - 1 - index))) & 31) as usize];
    }
    out.push_str(std::str::from_utf8(&text).expect("Crockford's alphabet is ASCII"));
}

/// A ULID's number from its text (case-insensitive; `I`, `L` read as 1 and
/// `O` as 0, as Crockford allows), or why not.
pub fn parse_ulid(text: &str) -> Result<u128, String> {
    if text.len() != 26 {
        return Err(format!("{} bytes, not the 26 of a ULID", text.len()));
    }
    let mut value: u128 = 0;
    for (position, byte) in text.bytes().enumerate() {
        let upper = match byte.to_ascii_uppercase() {
            b'I' | b'L' => b'1',
            b'O' => b'0',
            other => other,
        };
        let digit = CROCKFORD
            .iter()
            .position(|&c| c == upper)
            .ok_or_else(|| format!("byte {position} is not a base32 character"))?;
        if position == 0 && digit > 7 {
            return Err("its first character is above 7: more than 128 bits".to_string());
        }
        value = (value << 5) | digit as u128;
    }
    Ok(value)
}

/// Declares a policy (a unit struct `$policy` named `$name`) whose IDs are
/// the standard form [`Form::$form`](Form), for snowflake counters: any
/// 64-bit snowflake ID (what does not fit is refused by the format), no
/// prefix. The built-in `uuidv7` and `ulid` policies are each this and
/// their component's bindings.
#[macro_export]
macro_rules! standard_policy {
    ($(#[$meta:meta])* $policy:ident, $name:literal, $form:ident) => {
        $(#[$meta])*
        pub struct $policy;

        impl $crate::Policy for $policy {
            const NAME: &'static str = $name;
            /// Any 64-bit snowflake ID: what does not fit is refused by the format.
            const SEQUENCE_CAPACITY: u64 = u64::MAX;
            const MAX_PREFIX_LEN: usize = 0;

            fn format_batch(
                prefix: &str,
                stamps: impl ExactSizeIterator<Item = $crate::Stamp>,
            ) -> Result<String, $crate::FormatFailure> {
                $crate::standard::Form::$form.format_batch(prefix, stamps)
            }

            fn validate(
                id: &str,
                expected_prefix: Option<&str>,
                layout: Option<&$crate::SnowflakeLayout>,
            ) -> Result<$crate::Parsed, $crate::Invalid> {
                $crate::standard::Form::$form.validate(id, expected_prefix, layout)
            }
        }
    };
}

/// A standard ID's text form: what the policies `builtin:uuidv7` and
/// `builtin:ulid` write, on the same payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// RFC 9562 UUIDv7, canonical lowercase `8-4-4-4-12` hex.
    Uuidv7,
    /// ULID, 26 characters of Crockford base32.
    Ulid,
}

impl Form {
    /// The length of an ID's text, in bytes.
    pub const fn text_len(self) -> usize {
        match self {
            Form::Uuidv7 => 36,
            Form::Ulid => 26,
        }
    }

    /// What an ID of this form is called, in messages.
    const fn name(self) -> &'static str {
        match self {
            Form::Uuidv7 => "a UUIDv7",
            Form::Ulid => "a ULID",
        }
    }

    /// The ID of `payload`, its noise keyed by `salt`, as text.
    pub fn text(self, payload: &Payload, salt: u64) -> String {
        let mut text = String::with_capacity(self.text_len());
        self.push_text(&mut text, payload, salt);
        text
    }

    /// Appends [`Form::text`] to `out`.
    fn push_text(self, out: &mut String, payload: &Payload, salt: u64) {
        match self {
            Form::Uuidv7 => push_uuid(out, payload.uuidv7(salt)),
            Form::Ulid => push_ulid(out, payload.ulid(salt)),
        }
    }

    /// The payload of an ID's text, or why it is not one of this form.
    pub fn payload(self, text: &str) -> Result<Payload, String> {
        match self {
            Form::Uuidv7 => Payload::from_uuidv7(parse_uuid(text)?),
            Form::Ulid => Ok(Payload::from_ulid(parse_ulid(text)?)),
        }
    }

    /// Formats a batch of a snowflake counter's stamps (WIT `format-batch`):
    /// each ID followed by `'\n'`. There is no prefix (a UUID column holds
    /// none); a stamp without snowflake fields, or whose worker id and
    /// sequence do not fit, is refused as out of range; a time past 48 bits
    /// of milliseconds as a timestamp out of range.
    pub fn format_batch(
        self,
        prefix: &str,
        stamps: impl ExactSizeIterator<Item = Stamp>,
    ) -> Result<String, FormatFailure> {
        if !prefix.is_empty() {
            return Err(FormatFailure::BadPrefix(format!(
                "{} holds no prefix; serve it from a counter without one",
                self.name()
            )));
        }
        let mut out = String::with_capacity(stamps.len() * (self.text_len() + 1));
        for stamp in stamps {
            let payload = Payload::of_stamp(&stamp).map_err(|error| match error {
                PayloadError::TimeOutOfRange(_) => {
                    FormatFailure::TimestampOutOfRange(stamp.timestamp_micros)
                }
                _ => FormatFailure::SequenceOutOfRange(stamp.sequence),
            })?;
            let salt = stamp.snowflake.map_or(0, |fields| fields.salt);
            self.push_text(&mut out, &payload, salt);
            out.push('\n');
        }
        Ok(out)
    }

    /// Reads an ID of this form back (WIT `validate`): its time, and with
    /// the counter's `layout` its snowflake fields and tag and the 64-bit
    /// snowflake ID as its sequence, the parts it was made from (the salt
    /// cannot be read back: 0); without one, the unique field whole as its
    /// sequence and no fields.
    pub fn validate(
        self,
        id: &str,
        expected_prefix: Option<&str>,
        layout: Option<&Layout>,
    ) -> Result<Parsed, Invalid> {
        expect_prefix("", expected_prefix)?;
        if id.len() != self.text_len() {
            let len = self.text_len() as u32;
            return Err(Invalid::WrongLength {
                found: u32::try_from(id.len()).unwrap_or(u32::MAX),
                min: len,
                max: len,
            });
        }
        let payload = self.payload(id).map_err(Invalid::Malformed)?;
        let timestamp_micros = payload.unix_millis * 1000;
        let Some(layout) = layout else {
            return Ok(Parsed::new(0, timestamp_micros, u64::from(payload.unique)));
        };
        let fields = payload.fields(layout).ok_or_else(|| {
            Invalid::Malformed(format!(
                "its time and unique field do not fit the layout {},{},{}",
                layout.time_bits, layout.worker_bits, layout.sequence_bits
            ))
        })?;
        let unique_bits = layout.worker_bits + layout.sequence_bits;
        Ok(Parsed {
            snowflake: Some(fields),
            ..Parsed::new(
                0,
                timestamp_micros,
                (fields.time << unique_bits) | u64::from(payload.unique),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAYOUT: Layout = Layout {
        time_bits: 41,
        worker_bits: 10,
        sequence_bits: 12,
        unit_millis: 1,
        epoch_millis: 1_735_689_600_000,
    };

    fn fields(time: u64, worker: u64, sequence: u64) -> Fields {
        Fields {
            time,
            worker,
            sequence,
            ..Fields::default()
        }
    }

    #[test]
    fn a_uuidv7_reads_back_with_its_version_variant_and_fields() {
        let payload = Payload::of(&LAYOUT, &fields(86_400_000, 1023, 4095), 0xab_cdef).unwrap();
        let uuid = payload.uuidv7(42);
        let text = uuid_text(uuid);
        assert_eq!(text.len(), 36);
        assert_eq!(&text[14..15], "7", "{text}");
        assert!(matches!(&text[19..20], "8" | "9" | "a" | "b"), "{text}");
        assert_eq!(parse_uuid(&text), Ok(uuid));
        let back = Payload::from_uuidv7(uuid).unwrap();
        assert_eq!(back, payload);
        assert_eq!(
            back.fields(&LAYOUT),
            Some(Fields {
                tag: 0xab_cdef,
                ..fields(86_400_000, 1023, 4095)
            })
        );
        assert_eq!(back.unix_millis, LAYOUT.epoch_millis + 86_400_000);
    }

    #[test]
    fn the_texts_are_the_canonical_ones() {
        assert_eq!(
            uuid_text(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef),
            "01234567-89ab-cdef-0123-456789abcdef"
        );
        assert_eq!(uuid_text(0), "00000000-0000-0000-0000-000000000000");
        assert_eq!(ulid_text(u128::MAX), "7ZZZZZZZZZZZZZZZZZZZZZZZZZ");
        assert_eq!(ulid_text(1 << 5 | 31), "0000000000000000000000001Z");
    }

    #[test]
    fn a_ulid_reads_back_with_its_fields() {
        let payload = Payload::of(&LAYOUT, &fields(5, 3, 9), MAX_TAG).unwrap();
        let ulid = payload.ulid(7);
        let text = ulid_text(ulid);
        assert_eq!(text.len(), 26);
        assert_eq!(parse_ulid(&text), Ok(ulid));
        assert_eq!(parse_ulid(&text.to_ascii_lowercase()), Ok(ulid));
        assert_eq!(Payload::from_ulid(ulid), payload);
        assert_eq!(
            Payload::from_ulid(ulid).fields(&LAYOUT),
            Some(Fields {
                tag: MAX_TAG,
                ..fields(5, 3, 9)
            })
        );
    }

    #[test]
    fn ids_of_one_worker_grow_with_time_and_sequence() {
        let mut previous = (0_u128, 0_u128);
        for time in [1_u64, 2, 1000] {
            for sequence in [0_u64, 1, 2, 4095] {
                let payload = Payload::of(&LAYOUT, &fields(time, 7, sequence), 1).unwrap();
                let now = (payload.uuidv7(99), payload.ulid(99));
                assert!(now.0 > previous.0 && now.1 > previous.1);
                assert!(uuid_text(now.0) > uuid_text(previous.0));
                assert!(ulid_text(now.1) > ulid_text(previous.1));
                previous = now;
            }
        }
    }

    #[test]
    fn equal_fields_of_two_counters_differ_by_their_tags() {
        let a = Payload::of(&LAYOUT, &fields(10, 1, 1), 1).unwrap();
        let b = Payload::of(&LAYOUT, &fields(10, 1, 1), 2).unwrap();
        assert_ne!(a.uuidv7(5), b.uuidv7(5));
        assert_ne!(a.ulid(5), b.ulid(5));
    }

    #[test]
    fn the_noise_is_a_function_of_the_fields_and_the_salt() {
        let payload = Payload::of(&LAYOUT, &fields(10, 1, 1), 1).unwrap();
        assert_eq!(payload.uuidv7(5), payload.uuidv7(5));
        assert_ne!(payload.noise(5, 26), payload.noise(6, 26));
        assert!(payload.noise(5, 26) < 1 << 26 && payload.noise(5, 32) < 1 << 32);
    }

    #[test]
    fn what_does_not_fit_is_refused() {
        let wide = Layout {
            time_bits: 29,
            worker_bits: 20,
            sequence_bits: 14,
            unit_millis: 1000,
            ..LAYOUT
        };
        assert!(matches!(
            Payload::of(&wide, &fields(1, 1, 1), 1),
            Err(PayloadError::LayoutTooWide { .. })
        ));
        assert_eq!(
            Payload::of(&LAYOUT, &fields(1, 1, 1), MAX_TAG + 1),
            Err(PayloadError::TagTooLarge(MAX_TAG + 1))
        );
        assert!(
            Payload::from_uuidv7(parse_uuid("00000000-0000-4000-8000-000000000000").unwrap())
                .unwrap_err()
                .contains("version is 4")
        );
        assert!(parse_uuid("00000000-0000-7000-8000-00000000000g").is_err());
        assert!(parse_ulid("80000000000000000000000000").is_err());
    }

    /// The stamp the host passes for ID `fields` of `LAYOUT`, of counter
    /// tag `tag` and salt `salt`.
    fn stamp(fields: Fields, tag: u32, salt: u64) -> Stamp {
        let unique_bits = LAYOUT.worker_bits + LAYOUT.sequence_bits;
        Stamp {
            timestamp_micros: (LAYOUT.epoch_millis + fields.time) * 1000,
            sequence: (fields.time << unique_bits)
                | (fields.worker << LAYOUT.sequence_bits)
                | fields.sequence,
            snowflake: Some(Fields {
                tag,
                salt,
                ..fields
            }),
            period: None,
        }
    }

    #[test]
    fn a_stamp_makes_the_payload_its_layout_makes_and_reads_back() {
        for (time, worker, sequence) in [(0, 0, 0), (1, 1023, 4095), (86_400_000, 5, 7)] {
            let fields = fields(time, worker, sequence);
            let stamp = stamp(fields, 77, 99);
            assert_eq!(
                Payload::of_stamp(&stamp),
                Payload::of(&LAYOUT, &fields, 77),
                "{fields:?}"
            );
            for form in [Form::Uuidv7, Form::Ulid] {
                let text = form.format_batch("", [stamp].into_iter()).unwrap();
                let id = text.strip_suffix('\n').unwrap();
                let parsed = form.validate(id, Some(""), Some(&LAYOUT)).unwrap();
                assert_eq!(parsed.sequence, stamp.sequence, "{form:?} {id}");
                assert_eq!(parsed.timestamp_micros, stamp.timestamp_micros);
                assert_eq!(parsed.snowflake, Some(Fields { tag: 77, ..fields }));
                let bare = form.validate(id, None, None).unwrap();
                assert_eq!(bare.timestamp_micros, stamp.timestamp_micros);
                assert_eq!(bare.snowflake, None);
            }
        }
    }

    #[test]
    fn a_stamp_that_is_not_a_fitting_snowflake_is_refused() {
        let plain = Stamp::new(1_000_000, 5);
        assert_eq!(Payload::of_stamp(&plain), Err(PayloadError::NotSnowflake));
        assert_eq!(
            Form::Uuidv7.format_batch("", [plain].into_iter()),
            Err(FormatFailure::SequenceOutOfRange(5))
        );
        // 28,22,13: worker and sequence take 35 bits.
        let wide = Stamp {
            timestamp_micros: 5_000_000,
            sequence: (5 << 35) | (1 << 30),
            snowflake: Some(Fields {
                time: 5,
                worker: 1 << 17,
                ..Fields::default()
            }),
            period: None,
        };
        assert_eq!(
            Payload::of_stamp(&wide),
            Err(PayloadError::UniqueTooWide(35))
        );
        assert!(matches!(
            Form::Ulid.format_batch("X-", [stamp(fields(1, 1, 1), 1, 1)].into_iter()),
            Err(FormatFailure::BadPrefix(_))
        ));
        assert!(matches!(
            Form::Ulid.validate("0123", None, None),
            Err(Invalid::WrongLength { found: 4, .. })
        ));
    }
}
