//! A test fixture, never embedded in idmint: the decimal policy, except
//! that `validate` reads every period back as the year it falls in
//! (`INV-2026-11-23-000000042` as the year 2026). It writes and reads year
//! periods exactly, so it passes the fit check's one-period probe (a year);
//! only the activation check's samples of every period unit catch it, and
//! the tests require them to (`host/core/src/policy/tests/activation.rs`).
//!
//! With the prefix [`ODD`], it reads a period back instead as a year period
//! that keeps its month and day: for a month or a day period, one that does
//! not exist (a year starting in November), which the host must refuse as
//! bad output rather than pass on.
//! Built for the tests by `idmint_guest_build::fixture("lossy-period")`.

use idmint_policy_decimal::DecimalPolicy;
use idmint_policy_kit::{
    FormatFailure, Invalid, Parsed, Period, PeriodUnit, Policy, SnowflakeLayout, Stamp,
};

/// The prefix under which periods are read back as periods that do not exist.
pub const ODD: &str = "ODD-";

/// The decimal policy, losing a period's month and day on the way back.
pub struct LossyPeriod;

impl Policy for LossyPeriod {
    const NAME: &'static str = "lossy-period";
    const SEQUENCE_CAPACITY: u64 = DecimalPolicy::SEQUENCE_CAPACITY;

    fn format_batch(
        prefix: &str,
        stamps: impl ExactSizeIterator<Item = Stamp>,
    ) -> Result<String, FormatFailure> {
        DecimalPolicy::format_batch(prefix, stamps)
    }

    fn validate(
        id: &str,
        expected_prefix: Option<&str>,
        layout: Option<&SnowflakeLayout>,
    ) -> Result<Parsed, Invalid> {
        let parsed = DecimalPolicy::validate(id, expected_prefix, layout)?;
        let odd = id.starts_with(ODD);
        Ok(Parsed {
            period: parsed.period.map(|period| {
                if odd {
                    Period {
                        unit: PeriodUnit::Year,
                        ..period
                    }
                } else {
                    Period {
                        unit: PeriodUnit::Year,
                        month: 1,
                        day: 1,
                        ..period
                    }
                }
            }),
            ..parsed
        })
    }
}

/// The component: the bindings of contract 0.4.0 and the exports, in a module
/// of their own so that the generated names (`Stamp`, `Period`, ...) stay
/// apart from the kit's. Its ABI functions take one parameter per field of
/// a flattened record, hence the allow.
#[allow(clippy::too_many_arguments)]
mod component {
    use super::LossyPeriod;

    wit_bindgen::generate!({ path: "../wit/0.4.0", world: "id-policy" });
    idmint_policy_kit::export!(LossyPeriod, "0.4.0");
}
