//! The client's clock, as a trait so tests can freeze it or step it back.
//!
//! idmint never trusts this reading blindly: the counter update keeps the last
//! issued timestamp and never goes below it (see [`super::CyclicCounter`]).

use std::time::{SystemTime, UNIX_EPOCH};

/// A source of the current time in microseconds since the Unix epoch.
pub trait Clock: Send + Sync {
    /// The current time, microseconds since 1970-01-01T00:00:00Z.
    fn now_micros(&self) -> u64;
}

/// The operating system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_micros(&self) -> u64 {
        // A clock set before 1970 reads as the epoch; the counter's own
        // timestamp then carries the IDs forward.
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|elapsed| u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX))
            .unwrap_or(0)
    }
}
