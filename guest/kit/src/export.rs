//! The export macro: the `impl Guest` glue every policy would otherwise
//! copy, written once per contract version.
//!
//! The glue converts between the kit's plain types and the bindings the
//! policy crate generated from the WIT (`wit_bindgen::generate!` in the
//! module that calls the macro), so the kit never names a WIT type of its
//! own: the generated ones are reached through
//! `self::idmint::policy::types`, the module wit-bindgen makes there for the
//! package `idmint:policy`. Each contract's arm converts what that contract
//! has; a field an older contract lacks is `None` on the way in and
//! dropped on the way out, as the host does.

/// Exports a [`Policy`](crate::Policy) as the policy component's functions.
///
/// Call it, path-qualified, in the module of a `cdylib` crate that has
/// generated the bindings of the contract it names, best a module of their
/// own (the world's names, `Stamp`, `Period`, ..., would clash with the
/// kit's):
///
/// ```ignore
/// mod component {
///     use super::MyPolicy;
///
///     wit_bindgen::generate!({ path: "../wit", world: "id-policy" });
///     idmint_policy_kit::export!(MyPolicy); // the current contract, 0.5.0
/// }
/// ```
///
/// For an earlier contract, generate its bindings (`path: "../wit/0.2.0"`)
/// and name it: `idmint_policy_kit::export!(MyPolicy, "0.2.0")` (or
/// `"0.3.0"`, `"0.4.0"`). `MyPolicy` is a type name (an identifier, which wit-bindgen's
/// own `export!` requires), of a type in scope.
#[macro_export]
macro_rules! export {
    ($policy:ident) => {
        $crate::export!($policy, "0.5.0");
    };
    // 0.5.0 is 0.4.0 with the counter's tag and salt in the snowflake fields.
    ($policy:ident, "0.5.0") => {
        $crate::export!(@periods $policy, tagged);
    };
    ($policy:ident, "0.4.0") => {
        $crate::export!(@periods $policy, untagged);
    };
    (@periods $policy:ident, $fields:ident) => {
        const _: () = {
            use self::idmint::policy::types as wit;

            $crate::__kit_describe!($policy);
            $crate::__kit_invalid_id!();
            $crate::__kit_snowflake!($fields);

            fn __format_error(failure: $crate::FormatFailure) -> wit::FormatError {
                match failure {
                    $crate::FormatFailure::BadPrefix(why) => wit::FormatError::BadPrefix(why),
                    $crate::FormatFailure::SequenceOutOfRange(n) => {
                        wit::FormatError::SequenceOutOfRange(n)
                    }
                    $crate::FormatFailure::TimestampOutOfRange(n) => {
                        wit::FormatError::TimestampOutOfRange(n)
                    }
                    $crate::FormatFailure::BadPeriod(why) => wit::FormatError::BadPeriod(why),
                }
            }

            fn __period_in(period: wit::Period) -> $crate::Period {
                $crate::Period {
                    unit: match period.unit {
                        wit::PeriodUnit::Day => $crate::PeriodUnit::Day,
                        wit::PeriodUnit::Month => $crate::PeriodUnit::Month,
                        wit::PeriodUnit::Year => $crate::PeriodUnit::Year,
                    },
                    year: period.year,
                    month: period.month,
                    day: period.day,
                }
            }

            fn __period_out(period: $crate::Period) -> wit::Period {
                wit::Period {
                    unit: match period.unit {
                        $crate::PeriodUnit::Day => wit::PeriodUnit::Day,
                        $crate::PeriodUnit::Month => wit::PeriodUnit::Month,
                        $crate::PeriodUnit::Year => wit::PeriodUnit::Year,
                    },
                    year: period.year,
                    month: period.month,
                    day: period.day,
                }
            }

            fn __stamp(
                timestamp_micros: u64,
                sequence: u64,
                snowflake: Option<wit::SnowflakeFields>,
                period: Option<wit::Period>,
            ) -> $crate::Stamp {
                $crate::Stamp {
                    timestamp_micros,
                    sequence,
                    snowflake: snowflake.map(__fields_in),
                    period: period.map(__period_in),
                }
            }

            impl self::Guest for $policy {
                fn describe() -> wit::PolicyInfo {
                    __describe()
                }

                fn format(parts: wit::IdParts) -> Result<String, wit::FormatError> {
                    let stamp = __stamp(
                        parts.timestamp_micros,
                        parts.sequence,
                        parts.snowflake,
                        parts.period,
                    );
                    <$policy as $crate::Policy>::format(&parts.prefix, stamp)
                        .map_err(__format_error)
                }

                fn format_batch(
                    prefix: String,
                    stamps: Vec<wit::Stamp>,
                ) -> Result<String, wit::FormatError> {
                    let stamps = stamps.into_iter().map(|stamp| {
                        __stamp(
                            stamp.timestamp_micros,
                            stamp.sequence,
                            stamp.snowflake,
                            stamp.period,
                        )
                    });
                    <$policy as $crate::Policy>::format_batch(&prefix, stamps)
                        .map_err(__format_error)
                }

                fn validate(
                    id: String,
                    expected_prefix: Option<String>,
                    layout: Option<wit::SnowflakeLayout>,
                ) -> Result<wit::IdParts, wit::InvalidId> {
                    let layout = layout.map(__layout_in);
                    let parsed = <$policy as $crate::Policy>::validate(
                        &id,
                        expected_prefix.as_deref(),
                        layout.as_ref(),
                    )
                    .map_err(__invalid_id)?;
                    // Reuse the ID's allocation for the prefix, which is its head.
                    let mut prefix = id;
                    prefix.truncate(parsed.prefix_len);
                    Ok(wit::IdParts {
                        prefix,
                        timestamp_micros: parsed.timestamp_micros,
                        sequence: parsed.sequence,
                        snowflake: parsed.snowflake.map(__fields_out),
                        period: parsed.period.map(__period_out),
                    })
                }
            }
        };
        self::export!($policy);
    };
    ($policy:ident, "0.3.0") => {
        const _: () = {
            use self::idmint::policy::types as wit;

            $crate::__kit_describe!($policy);
            $crate::__kit_invalid_id!();
            $crate::__kit_snowflake!(untagged);
            $crate::__kit_format_error_without_period!("0.3.0");

            impl self::Guest for $policy {
                fn describe() -> wit::PolicyInfo {
                    __describe()
                }

                /// Contract 0.3.0 carries no period.
                fn format(parts: wit::IdParts) -> Result<String, wit::FormatError> {
                    let stamp = $crate::Stamp {
                        timestamp_micros: parts.timestamp_micros,
                        sequence: parts.sequence,
                        snowflake: parts.snowflake.map(__fields_in),
                        period: None,
                    };
                    <$policy as $crate::Policy>::format(&parts.prefix, stamp)
                        .map_err(__format_error)
                }

                fn format_batch(
                    prefix: String,
                    stamps: Vec<wit::Stamp>,
                ) -> Result<String, wit::FormatError> {
                    let stamps = stamps.into_iter().map(|stamp| $crate::Stamp {
                        timestamp_micros: stamp.timestamp_micros,
                        sequence: stamp.sequence,
                        snowflake: stamp.snowflake.map(__fields_in),
                        period: None,
                    });
                    <$policy as $crate::Policy>::format_batch(&prefix, stamps)
                        .map_err(__format_error)
                }

                /// A period read back is dropped: 0.3.0 cannot carry it.
                fn validate(
                    id: String,
                    expected_prefix: Option<String>,
                    layout: Option<wit::SnowflakeLayout>,
                ) -> Result<wit::IdParts, wit::InvalidId> {
                    let layout = layout.map(__layout_in);
                    let parsed = <$policy as $crate::Policy>::validate(
                        &id,
                        expected_prefix.as_deref(),
                        layout.as_ref(),
                    )
                    .map_err(__invalid_id)?;
                    let mut prefix = id;
                    prefix.truncate(parsed.prefix_len);
                    Ok(wit::IdParts {
                        prefix,
                        timestamp_micros: parsed.timestamp_micros,
                        sequence: parsed.sequence,
                        snowflake: parsed.snowflake.map(__fields_out),
                    })
                }
            }
        };
        self::export!($policy);
    };
    ($policy:ident, "0.2.0") => {
        const _: () = {
            use self::idmint::policy::types as wit;

            $crate::__kit_describe!($policy);
            $crate::__kit_invalid_id!();
            $crate::__kit_format_error_without_period!("0.2.0");

            impl self::Guest for $policy {
                fn describe() -> wit::PolicyInfo {
                    __describe()
                }

                /// Contract 0.2.0 carries neither snowflake fields nor a period.
                fn format(parts: wit::IdParts) -> Result<String, wit::FormatError> {
                    let stamp = $crate::Stamp::new(parts.timestamp_micros, parts.sequence);
                    <$policy as $crate::Policy>::format(&parts.prefix, stamp)
                        .map_err(__format_error)
                }

                fn format_batch(
                    prefix: String,
                    stamps: Vec<wit::Stamp>,
                ) -> Result<String, wit::FormatError> {
                    let stamps = stamps
                        .into_iter()
                        .map(|stamp| $crate::Stamp::new(stamp.timestamp_micros, stamp.sequence));
                    <$policy as $crate::Policy>::format_batch(&prefix, stamps)
                        .map_err(__format_error)
                }

                /// No layout: 0.2.0's `validate` has none.
                fn validate(
                    id: String,
                    expected_prefix: Option<String>,
                ) -> Result<wit::IdParts, wit::InvalidId> {
                    let parsed = <$policy as $crate::Policy>::validate(
                        &id,
                        expected_prefix.as_deref(),
                        None,
                    )
                    .map_err(__invalid_id)?;
                    let mut prefix = id;
                    prefix.truncate(parsed.prefix_len);
                    Ok(wit::IdParts {
                        prefix,
                        timestamp_micros: parsed.timestamp_micros,
                        sequence: parsed.sequence,
                    })
                }
            }
        };
        self::export!($policy);
    };
}

/// `fn __describe() -> wit::PolicyInfo` of `$policy`, the crate's version
/// being the policy's own (`env!` is read where the macro is called).
#[doc(hidden)]
#[macro_export]
macro_rules! __kit_describe {
    ($policy:ident) => {
        fn __describe() -> wit::PolicyInfo {
            wit::PolicyInfo {
                name: <$policy as $crate::Policy>::NAME.to_string(),
                version: env!("CARGO_PKG_VERSION").to_string(),
                sequence_capacity: <$policy as $crate::Policy>::SEQUENCE_CAPACITY,
                max_prefix_len: u32::try_from(<$policy as $crate::Policy>::MAX_PREFIX_LEN)
                    .unwrap_or(u32::MAX),
            }
        }
    };
}

/// `fn __invalid_id`: [`Invalid`](crate::Invalid) to WIT `invalid-id`, the
/// same in every contract the kit exports (0.2.0 added `malformed`).
#[doc(hidden)]
#[macro_export]
macro_rules! __kit_invalid_id {
    () => {
        fn __invalid_id(invalid: $crate::Invalid) -> wit::InvalidId {
            match invalid {
                $crate::Invalid::WrongLength { found, min, max } => {
                    wit::InvalidId::WrongLength(wit::WrongLength { found, min, max })
                }
                $crate::Invalid::BadPrefix(why) => wit::InvalidId::BadPrefix(why),
                $crate::Invalid::NonDigit { position, found } => {
                    wit::InvalidId::NonDigit(wit::NonDigit { position, found })
                }
                $crate::Invalid::ImpossibleDate(why) => wit::InvalidId::ImpossibleDate(why),
                $crate::Invalid::Malformed(why) => wit::InvalidId::Malformed(why),
            }
        }
    };
}

/// `fn __format_error` for a contract without periods (before 0.4.0).
#[doc(hidden)]
#[macro_export]
macro_rules! __kit_format_error_without_period {
    ($contract:literal) => {
        fn __format_error(failure: $crate::FormatFailure) -> wit::FormatError {
            match failure {
                $crate::FormatFailure::BadPrefix(why) => wit::FormatError::BadPrefix(why),
                $crate::FormatFailure::SequenceOutOfRange(n) => {
                    wit::FormatError::SequenceOutOfRange(n)
                }
                $crate::FormatFailure::TimestampOutOfRange(n) => {
                    wit::FormatError::TimestampOutOfRange(n)
                }
                // The glue never gives such a policy a period, so it cannot
                // refuse one; were it to, the refusal still reaches the host.
                $crate::FormatFailure::BadPeriod(why) => wit::FormatError::BadPrefix(format!(
                    "{why} (contract {} carries no period)",
                    $contract
                )),
            }
        }
    };
}

/// The snowflake conversions of contracts 0.3.0 and later:
/// `__layout_in`, `__fields_in`, `__fields_out`; `tagged` (0.5.0) carries
/// the counter's tag and salt, `untagged` (0.3.0, 0.4.0) has none to carry:
/// they are 0 on the way in and dropped on the way out.
#[doc(hidden)]
#[macro_export]
macro_rules! __kit_snowflake {
    ($fields:ident) => {
        fn __layout_in(layout: wit::SnowflakeLayout) -> $crate::SnowflakeLayout {
            $crate::SnowflakeLayout {
                time_bits: layout.time_bits.into(),
                worker_bits: layout.worker_bits.into(),
                sequence_bits: layout.sequence_bits.into(),
                unit_millis: layout.unit_millis.into(),
                epoch_millis: layout.epoch_millis,
            }
        }

        $crate::__kit_snowflake!(@$fields);
    };
    (@tagged) => {
        fn __fields_in(fields: wit::SnowflakeFields) -> $crate::SnowflakeFields {
            $crate::SnowflakeFields {
                time: fields.time,
                worker: fields.worker,
                sequence: fields.sequence,
                tag: fields.tag,
                salt: fields.salt,
            }
        }

        fn __fields_out(fields: $crate::SnowflakeFields) -> wit::SnowflakeFields {
            wit::SnowflakeFields {
                time: fields.time,
                worker: fields.worker,
                sequence: fields.sequence,
                tag: fields.tag,
                salt: fields.salt,
            }
        }
    };
    (@untagged) => {
        fn __fields_in(fields: wit::SnowflakeFields) -> $crate::SnowflakeFields {
            $crate::SnowflakeFields {
                time: fields.time,
                worker: fields.worker,
                sequence: fields.sequence,
                tag: 0,
                salt: 0,
            }
        }

        fn __fields_out(fields: $crate::SnowflakeFields) -> wit::SnowflakeFields {
            wit::SnowflakeFields {
                time: fields.time,
                worker: fields.worker,
                sequence: fields.sequence,
            }
        }
    };
}
