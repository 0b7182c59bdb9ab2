//! The flags that say how a counter is opened by a process that takes
//! values from it: the worker lease and clock rules of a snowflake counter.

use std::time::Duration;

use clap::{Args, ValueEnum};
use idmint::sequence::{OnRollback, OpenOptions, RollbackOptions, SnowflakeOptions};

/// How a counter is opened.
#[derive(Debug, Clone, Args)]
pub struct OpenArgs {
    /// snowflake: how long the worker lease lives without renewal (renewed
    /// every third of it; a process that cannot renew stops issuing).
    #[arg(
        long,
        env = "IDMINT_LEASE_TTL",
        value_name = "SECS",
        default_value_t = 10.0
    )]
    pub lease_ttl: f64,
    /// snowflake: when the clock is behind the last ID issued by more than
    /// 5 ms, keep issuing from the last time (borrow) or refuse.
    #[arg(long, env = "IDMINT_CLOCK_ROLLBACK", value_enum, default_value_t = Rollback::Borrow)]
    pub clock_rollback: Rollback,
}

/// `--clock-rollback`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Rollback {
    /// Issue from the last time on, borrowing the future.
    Borrow,
    /// Refuse until the clock catches up.
    Refuse,
}

impl OpenArgs {
    /// The library's options, or what is wrong with the flags.
    pub fn options(&self) -> anyhow::Result<OpenOptions> {
        if !(1.0..=3600.0).contains(&self.lease_ttl) {
            return Err(super::exit::UsageError(format!(
                "--lease-ttl {} is out of range 1 to 3600 seconds",
                self.lease_ttl
            ))
            .into());
        }
        let mut rollback = RollbackOptions::default();
        rollback.on_rollback = match self.clock_rollback {
            Rollback::Borrow => OnRollback::Borrow,
            Rollback::Refuse => OnRollback::Refuse,
        };
        let mut options = OpenOptions::default();
        options.snowflake = SnowflakeOptions::default()
            .lease_ttl(Duration::from_secs_f64(self.lease_ttl))
            .rollback(rollback);
        Ok(options)
    }
}
