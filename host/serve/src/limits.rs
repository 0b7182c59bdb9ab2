//! [`Limits`]: what a server allows one request, one connection and its
//! own shutdown, each checked here ([`Limits::check`]) so that a server
//! never starts with a limit that cannot work, whoever built the options.

use std::time::Duration;

use idmint::policy::MAX_CONCURRENT_CALLS;
use idmint::sequence::{MAX_BLOCK, MAX_STEP};

/// What a server allows (see the module docs). Each field names the
/// `idmint serve` flag that sets it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Limits {
    /// The largest `count` (and the most IDs one validate request may
    /// check), 1 to [`MAX_BLOCK`], so that a cyclic or auto-increment
    /// request is one round trip. `--max-count`, default 1000.
    pub max_count: usize,
    /// The largest `count` of a ranges request, 1 to [`MAX_STEP`].
    /// `--max-range`, default 1,000,000 (the largest step a segment adapts
    /// to).
    pub max_range: u64,
    /// The largest request body, in bytes, 1 to 16 MiB. `--max-body`,
    /// default 256 KiB.
    pub max_body_bytes: usize,
    /// How long a request may take, from its header to its answer, before
    /// it is answered 503. `--request-timeout`, default 5 s.
    pub request_timeout: Duration,
    /// How many requests may be in progress at once; more are answered 503
    /// at once. Bodies being read do not count. `--max-concurrent`, default
    /// 1024.
    pub max_concurrent: usize,
    /// How many connections the API listener keeps open at once; one more
    /// is answered 503 and closed. `--max-connections`, default 4096.
    pub max_connections: usize,
    /// How long a connection may take to deliver a request's header,
    /// counted from when it connects or its previous answer was sent: a
    /// connection that sends nothing (idle keep-alive) or dribbles its
    /// header is closed. This is both the header-read and the idle timeout.
    /// `--header-timeout`, default 10 s.
    pub header_timeout: Duration,
    /// How long an answer may wait to be written: a write that finds the
    /// client's window full (it does not read, or pipelines requests and
    /// never reads their answers) and stays blocked this long closes the
    /// connection, so that a client that never reads cannot hold a
    /// connection slot. The time runs between writes that make progress
    /// (nginx's `send_timeout`). `--write-timeout`, default 10 s.
    pub write_timeout: Duration,
    /// The most one connection queues, in bytes, of each of: requests read
    /// ahead of their turn (pipelined) and answers waiting to be written
    /// (in the server, and again as the socket's send buffer, which the
    /// kernel doubles). Once its answers fill it, nothing more is read from
    /// a connection until they are written; a request header larger than it
    /// is answered 431. 8 KiB to 16 MiB. `--connection-buffer`, default
    /// 64 KiB.
    pub connection_buffer: usize,
    /// How long a request body may take to arrive. It is read before the
    /// request takes one of the `max_concurrent` slots, so slow bodies hold
    /// a connection, never a slot. `--body-timeout`, default 5 s.
    pub body_timeout: Duration,
    /// How long shutdown waits for the requests in flight (and the clients
    /// reading their answers) before it abandons them and closes the
    /// counters all the same. `--shutdown-timeout`, default 10 s.
    pub shutdown_timeout: Duration,
    /// How long closing one counter at shutdown (giving a segment's tail
    /// back, releasing a worker lease) may take; counters are closed in
    /// parallel. Default 5 s.
    pub close_timeout: Duration,
    /// How many policy calls may run at once, 1 to the runtime's
    /// [`MAX_CONCURRENT_CALLS`] (one more would fail inside the policy
    /// runtime after its values were taken). Default: all of them.
    pub policy_slots: usize,
    /// How long a request waits for a policy slot before it is answered
    /// 503, having taken nothing. Default 1 s.
    pub policy_wait: Duration,
    /// How many prepared minters (one per policy, counter and prefix) are
    /// kept; the least recently used goes first. Default 4096.
    pub max_minters: usize,
    /// How many opened counters that hold nothing of their own (no value
    /// buffer, no worker lease: cyclic, autoinc and periodic ones) are kept
    /// open; past it the least recently used is dropped, to be opened again
    /// on its next request. Counters that hold buffers or leases stay open
    /// until shutdown, which gives them back. Default 4096.
    pub max_open_counters: usize,
    /// How long a prepared minter is trusted before the prefix's ownership
    /// is checked again: a prefix removed from a counter stays usable
    /// through this server for at most this long. Default 10 s.
    pub minter_max_age: Duration,
    /// How long `/readyz` waits for the database. Default 1 s.
    pub readiness_timeout: Duration,
    /// How long a readiness answer is reused: `/readyz` pings the database
    /// at most once per this, however often it is asked. Default 1 s.
    pub readiness_interval: Duration,
    /// A segment fetch waiting longer than this makes `/readyz` answer
    /// not ready, naming the counter. Default 2 s.
    pub stuck_fetch: Duration,
    /// How long the monitor page waits for the database: a part it cannot
    /// read by then is named on the page as the database being unavailable,
    /// and the rest (this instance's buffers, rates and policy, from
    /// memory) is shown all the same, well within the request time limit.
    /// Default 1 s.
    pub monitor_timeout: Duration,
    /// Requests the admin listener answers at once (more: 503 at once),
    /// each within `request_timeout`. Default 8.
    pub admin_max_concurrent: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_count: MAX_BLOCK,
            max_range: 1_000_000,
            max_body_bytes: 256 << 10,
            request_timeout: Duration::from_secs(5),
            max_concurrent: 1024,
            max_connections: 4096,
            header_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(10),
            connection_buffer: 64 << 10,
            body_timeout: Duration::from_secs(5),
            shutdown_timeout: Duration::from_secs(10),
            close_timeout: Duration::from_secs(5),
            policy_slots: MAX_CONCURRENT_CALLS as usize,
            policy_wait: Duration::from_secs(1),
            max_minters: 4096,
            max_open_counters: 4096,
            minter_max_age: Duration::from_secs(10),
            readiness_timeout: Duration::from_secs(1),
            readiness_interval: Duration::from_secs(1),
            stuck_fetch: Duration::from_secs(2),
            monitor_timeout: Duration::from_secs(1),
            admin_max_concurrent: 8,
        }
    }
}

/// The largest request body a server accepts.
pub const MAX_BODY_BYTES: usize = 16 << 20;

/// The smallest connection buffer (hyper's own floor: a request line and
/// header of ordinary size must fit).
pub const MIN_CONNECTION_BUFFER: usize = 8 << 10;

/// The largest connection buffer.
pub const MAX_CONNECTION_BUFFER: usize = 16 << 20;

/// The longest any of the timeouts may be.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3600);

/// A limit a server cannot work with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} {value} is out of range {range}")]
pub struct LimitsError {
    /// The [`Limits`] field (its flag is the same words with dashes).
    pub field: &'static str,
    /// The value given.
    pub value: String,
    /// What it may be.
    pub range: String,
}

impl LimitsError {
    /// What kind of failure this is: bad input.
    pub fn class(&self) -> idmint::ErrorClass {
        idmint::ErrorClass::BadInput
    }
}

impl Limits {
    /// Fails unless every limit is one a server can work with.
    pub fn check(&self) -> Result<(), LimitsError> {
        fn count<T: PartialOrd + std::fmt::Display>(
            field: &'static str,
            value: T,
            low: T,
            high: T,
        ) -> Result<(), LimitsError> {
            if value < low || value > high {
                return Err(LimitsError {
                    field,
                    value: value.to_string(),
                    range: format!("{low} to {high}"),
                });
            }
            Ok(())
        }
        fn time(field: &'static str, value: Duration, low: Duration) -> Result<(), LimitsError> {
            if value < low || value > MAX_TIMEOUT {
                return Err(LimitsError {
                    field,
                    value: format!("{} s", value.as_secs_f64()),
                    range: format!("{} to {} seconds", low.as_secs_f64(), MAX_TIMEOUT.as_secs()),
                });
            }
            Ok(())
        }
        let ms = Duration::from_millis(1);
        count("max_count", self.max_count, 1, MAX_BLOCK)?;
        count("max_range", self.max_range, 1, MAX_STEP)?;
        count("max_body_bytes", self.max_body_bytes, 1, MAX_BODY_BYTES)?;
        count("max_concurrent", self.max_concurrent, 1, usize::MAX >> 4)?;
        count("max_connections", self.max_connections, 1, 1 << 20)?;
        count(
            "policy_slots",
            self.policy_slots,
            1,
            MAX_CONCURRENT_CALLS as usize,
        )?;
        count(
            "connection_buffer",
            self.connection_buffer,
            MIN_CONNECTION_BUFFER,
            MAX_CONNECTION_BUFFER,
        )?;
        count("max_minters", self.max_minters, 1, 1 << 20)?;
        count("max_open_counters", self.max_open_counters, 1, 1 << 20)?;
        count("admin_max_concurrent", self.admin_max_concurrent, 1, 1024)?;
        time("request_timeout", self.request_timeout, ms)?;
        time("header_timeout", self.header_timeout, ms)?;
        time("write_timeout", self.write_timeout, ms)?;
        time("body_timeout", self.body_timeout, ms)?;
        time("shutdown_timeout", self.shutdown_timeout, Duration::ZERO)?;
        time("close_timeout", self.close_timeout, ms)?;
        time("policy_wait", self.policy_wait, Duration::ZERO)?;
        time("minter_max_age", self.minter_max_age, Duration::ZERO)?;
        time("readiness_timeout", self.readiness_timeout, ms)?;
        time(
            "readiness_interval",
            self.readiness_interval,
            Duration::ZERO,
        )?;
        time("stuck_fetch", self.stuck_fetch, Duration::ZERO)?;
        time("monitor_timeout", self.monitor_timeout, ms)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_pass() {
        Limits::default().check().unwrap();
    }

    #[test]
    fn a_limit_out_of_range_is_named() {
        let limits = Limits {
            max_count: 0,
            ..Limits::default()
        };
        assert_eq!(
            limits.check().unwrap_err().to_string(),
            "max_count 0 is out of range 1 to 1000"
        );
        let limits = Limits {
            policy_slots: MAX_CONCURRENT_CALLS as usize + 1,
            ..Limits::default()
        };
        assert_eq!(limits.check().unwrap_err().field, "policy_slots");
        let limits = Limits {
            request_timeout: Duration::ZERO,
            ..Limits::default()
        };
        assert_eq!(
            limits.check().unwrap_err().to_string(),
            "request_timeout 0 s is out of range 0.001 to 3600 seconds"
        );
        let limits = Limits {
            max_range: MAX_STEP + 1,
            ..Limits::default()
        };
        assert_eq!(limits.check().unwrap_err().field, "max_range");
        // Below hyper's floor it would panic when serving, not refuse here.
        let limits = Limits {
            connection_buffer: MIN_CONNECTION_BUFFER - 1,
            ..Limits::default()
        };
        assert_eq!(
            limits.check().unwrap_err().to_string(),
            "connection_buffer 8191 is out of range 8192 to 16777216"
        );
    }
}
