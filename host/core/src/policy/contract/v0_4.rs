//! Contract 0.4.0 (`guest/wit/0.4.0/`): everything the host has goes
//! across, the period of a periodic counter's value included, but for the
//! counter's tag and salt (0.5.0), which are dropped. The conversions of
//! what 0.4.0 added ([`period_conversions`]) are 0.5.0's too.

use super::adapter::adapter;
use crate::policy::types::{shared_conversions, snowflake_conversions};

adapter!(v0_4, "0.4.0", layout: yes);

shared_conversions!(crate::policy::bindings::v0_4::wit);
snowflake_conversions!(crate::policy::bindings::v0_4::wit, untagged);
period_conversions!(crate::policy::bindings::v0_4::wit);

/// The conversions of the contracts since 0.4.0 (`format-error` with
/// `bad-period`, `id-parts` and `stamp` with a period, the period), for
/// `$wit`, one version's generated `types` module.
macro_rules! period_conversions {
    ($wit:path) => {
        const _: () = {
            use $crate::parts::{IdParts, Period, PeriodUnit, Stamp};
            use $crate::policy::types::FormatError;
            use $wit as wit;

            impl From<wit::FormatError> for FormatError {
                fn from(error: wit::FormatError) -> Self {
                    match error {
                        wit::FormatError::BadPrefix(reason) => FormatError::BadPrefix(reason),
                        wit::FormatError::SequenceOutOfRange(n) => {
                            FormatError::SequenceOutOfRange(n)
                        }
                        wit::FormatError::TimestampOutOfRange(n) => {
                            FormatError::TimestampOutOfRange(n)
                        }
                        wit::FormatError::BadPeriod(reason) => FormatError::BadPeriod(reason),
                    }
                }
            }

            impl From<&IdParts> for wit::IdParts {
                fn from(parts: &IdParts) -> Self {
                    wit::IdParts {
                        prefix: parts.prefix.clone(),
                        timestamp_micros: parts.timestamp_micros,
                        sequence: parts.sequence,
                        snowflake: parts.snowflake.map(Into::into),
                        period: parts.period.map(Into::into),
                    }
                }
            }

            impl From<wit::IdParts> for IdParts {
                fn from(parts: wit::IdParts) -> Self {
                    IdParts {
                        prefix: parts.prefix,
                        timestamp_micros: parts.timestamp_micros,
                        sequence: parts.sequence,
                        snowflake: parts.snowflake.map(Into::into),
                        period: parts.period.map(Into::into),
                    }
                }
            }

            impl From<&Stamp> for wit::Stamp {
                fn from(stamp: &Stamp) -> Self {
                    wit::Stamp {
                        timestamp_micros: stamp.timestamp_micros,
                        sequence: stamp.sequence,
                        snowflake: stamp.snowflake.map(Into::into),
                        period: stamp.period.map(Into::into),
                    }
                }
            }

            impl From<Period> for wit::Period {
                fn from(period: Period) -> Self {
                    wit::Period {
                        unit: match period.unit {
                            PeriodUnit::Day => wit::PeriodUnit::Day,
                            PeriodUnit::Month => wit::PeriodUnit::Month,
                            PeriodUnit::Year => wit::PeriodUnit::Year,
                        },
                        year: period.year,
                        month: period.month,
                        day: period.day,
                    }
                }
            }

            /// A period as the policy read it back, checked later: a policy may
            /// return one that does not exist (`Policy::validate` refuses it).
            impl From<wit::Period> for Period {
                fn from(period: wit::Period) -> Self {
                    Period {
                        unit: match period.unit {
                            wit::PeriodUnit::Day => PeriodUnit::Day,
                            wit::PeriodUnit::Month => PeriodUnit::Month,
                            wit::PeriodUnit::Year => PeriodUnit::Year,
                        },
                        year: period.year,
                        month: period.month,
                        day: period.day,
                    }
                }
            }
        };
    };
}
pub(super) use period_conversions;
