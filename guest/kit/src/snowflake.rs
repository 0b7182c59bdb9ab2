//! Reading a snowflake ID's fields out of its 64-bit value, for the policies
//! that write the value whole (`guest/decimal/`, `guest/base32/`). The
//! layout is the WIT `snowflake-layout`: one zero sign bit, then time,
//! worker and sequence bits adding up to 63.

use crate::Invalid;

/// How a snowflake counter packs an ID (WIT `snowflake-layout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Bits of time units since the epoch.
    pub time_bits: u32,
    /// Bits of worker id.
    pub worker_bits: u32,
    /// Bits of sequence within one time unit.
    pub sequence_bits: u32,
    /// The time unit in milliseconds.
    pub unit_millis: u64,
    /// The epoch, milliseconds since 1970.
    pub epoch_millis: u64,
}

/// A snowflake ID's fields (WIT `snowflake-fields`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Fields {
    /// Time units since the layout's epoch.
    pub time: u64,
    /// The worker id.
    pub worker: u64,
    /// The sequence within the time unit.
    pub sequence: u64,
    /// The counter's tag (contract 0.5.0; 0 before, or when it has none).
    pub tag: u32,
    /// The counter's salt (contract 0.5.0; 0 before, when it has none, and
    /// in an ID read back).
    pub salt: u64,
}

/// A snowflake ID's fields and the microsecond its time unit starts at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoded {
    /// Time units since the epoch.
    pub time: u64,
    /// The worker id.
    pub worker: u64,
    /// The sequence within the time unit.
    pub sequence: u64,
    /// Microseconds since 1970 at the start of the time unit.
    pub timestamp_micros: u64,
}

/// The fields of `value` under `layout`, or why it is not such an ID (the
/// text of an `invalid-id` `malformed`).
pub fn decode(value: u64, layout: &Layout) -> Result<Decoded, String> {
    let Layout {
        time_bits,
        worker_bits,
        sequence_bits,
        unit_millis,
        epoch_millis,
    } = *layout;
    if time_bits + worker_bits + sequence_bits != 63 || worker_bits == 0 || sequence_bits == 0 {
        return Err(format!(
            "the layout {time_bits},{worker_bits},{sequence_bits} is not one of 63 bits \
             with at least one worker and one sequence bit"
        ));
    }
    if value >> 63 != 0 {
        return Err(format!(
            "the value {value} has its sign bit set, so it is no snowflake ID"
        ));
    }
    let time = value >> (worker_bits + sequence_bits);
    let worker = (value >> sequence_bits) & ((1 << worker_bits) - 1);
    let sequence = value & ((1 << sequence_bits) - 1);
    let timestamp_micros = time
        .checked_mul(unit_millis)
        .and_then(|millis| millis.checked_add(epoch_millis))
        .and_then(|millis| millis.checked_mul(1000))
        .ok_or_else(|| format!("the time of the value {value} is past the year 500,000"))?;
    Ok(Decoded {
        time,
        worker,
        sequence,
        timestamp_micros,
    })
}

impl Decoded {
    /// The ID's fields.
    pub fn fields(&self) -> Fields {
        Fields {
            time: self.time,
            worker: self.worker,
            sequence: self.sequence,
            ..Fields::default()
        }
    }
}

/// What a policy that writes the value alone, with no time of its own,
/// reads back from an ID holding `value`: without a layout, timestamp 0
/// (how such a policy tells the host it writes no time) and no fields; with
/// one, the value decoded into its fields and the start of its time unit,
/// the very parts the host formatted it from, or `malformed` if the value
/// does not fit the layout.
pub fn read_value(value: u64, layout: Option<&Layout>) -> Result<(u64, Option<Fields>), Invalid> {
    match layout {
        None => Ok((0, None)),
        Some(layout) => {
            let decoded = decode(value, layout).map_err(Invalid::Malformed)?;
            Ok((decoded.timestamp_micros, Some(decoded.fields())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULT: Layout = Layout {
        time_bits: 41,
        worker_bits: 10,
        sequence_bits: 12,
        unit_millis: 1,
        epoch_millis: 1_735_689_600_000,
    };

    #[test]
    fn decodes_each_field_from_its_own_bits() {
        let value = (5 << 22) | (3 << 12) | 7;
        assert_eq!(
            decode(value, &DEFAULT),
            Ok(Decoded {
                time: 5,
                worker: 3,
                sequence: 7,
                timestamp_micros: (1_735_689_600_000 + 5) * 1000,
            })
        );
        let seconds = Layout {
            unit_millis: 1000,
            ..DEFAULT
        };
        assert_eq!(
            decode(value, &seconds).unwrap().timestamp_micros,
            (1_735_689_600_000 + 5000) * 1000
        );
    }

    #[test]
    fn refuses_a_set_sign_bit_and_a_layout_not_of_63_bits() {
        assert!(decode(1 << 63, &DEFAULT).unwrap_err().contains("sign bit"));
        let short = Layout {
            time_bits: 40,
            ..DEFAULT
        };
        assert!(decode(1, &short).unwrap_err().contains("63 bits"));
    }
}
