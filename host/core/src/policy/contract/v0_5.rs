//! Contract 0.5.0, the current one (`guest/wit/policy.wit`): everything
//! the host has goes across, a snowflake counter's tag and salt included
//! (the standard IDs, UUIDv7 and ULID, carry them).

use super::adapter::adapter;
use super::v0_4::period_conversions;
use crate::policy::types::{shared_conversions, snowflake_conversions};

adapter!(v0_5, "0.5.0", layout: yes);

shared_conversions!(crate::policy::bindings::v0_5::wit);
snowflake_conversions!(crate::policy::bindings::v0_5::wit, tagged);
period_conversions!(crate::policy::bindings::v0_5::wit);
