//! The WIT exports of a policy that writes the sequence value alone, with no
//! time of its own (`guest/decimal/`, `guest/base32/`): included by path,
//! like `kit.rs`, into a crate whose `format` module has `SEQUENCE_CAPACITY`,
//! `format_id(prefix, value)`, `format_batch(prefix, values)` and
//! `validate(id, expected_prefix) -> (prefix_len, value)`, and a
//! `snowflake` module (`guest/src/snowflake.rs`).
//!
//! `format` ignores the timestamp and `validate` reads it back as 0, which
//! is how such a policy tells the host it writes no time (WIT `validate`).
//! Given a snowflake layout, `validate` decodes the value into its time,
//! worker id and sequence, the parts the host formatted the ID from.

/// Defines and exports the policy `$policy`, named `$name` in `describe`.
macro_rules! value_policy {
    ($policy:ident, $name:literal) => {
        /// The policy, exported to the host.
        struct $policy;

        impl Guest for $policy {
            fn describe() -> PolicyInfo {
                PolicyInfo {
                    name: $name.to_string(),
                    version: env!("CARGO_PKG_VERSION").to_string(),
                    sequence_capacity: format::SEQUENCE_CAPACITY,
                    max_prefix_len: kit::MAX_PREFIX_LEN as u32,
                }
            }

            fn format(parts: IdParts) -> Result<String, FormatError> {
                Ok(format::format_id(&parts.prefix, parts.sequence)?)
            }

            fn format_batch(prefix: String, stamps: Vec<Stamp>) -> Result<String, FormatError> {
                Ok(format::format_batch(
                    &prefix,
                    stamps.iter().map(|stamp| stamp.sequence),
                )?)
            }

            fn validate(
                id: String,
                expected_prefix: Option<String>,
                layout: Option<SnowflakeLayout>,
            ) -> Result<IdParts, InvalidId> {
                let (prefix_len, sequence) = format::validate(&id, expected_prefix.as_deref())?;
                let (timestamp_micros, snowflake) = match layout {
                    None => (0, None),
                    Some(layout) => {
                        let layout = snowflake::Layout {
                            time_bits: layout.time_bits.into(),
                            worker_bits: layout.worker_bits.into(),
                            sequence_bits: layout.sequence_bits.into(),
                            unit_millis: layout.unit_millis.into(),
                            epoch_millis: layout.epoch_millis,
                        };
                        let decoded =
                            snowflake::decode(sequence, &layout).map_err(InvalidId::Malformed)?;
                        let fields = SnowflakeFields {
                            time: decoded.time,
                            worker: decoded.worker,
                            sequence: decoded.sequence,
                        };
                        (decoded.timestamp_micros, Some(fields))
                    }
                };
                let mut prefix = id;
                prefix.truncate(prefix_len);
                Ok(IdParts {
                    prefix,
                    timestamp_micros,
                    sequence,
                    snowflake,
                })
            }
        }

        export!($policy);
    };
}
