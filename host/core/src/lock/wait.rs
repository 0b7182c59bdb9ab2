//! Blocking acquire with a deadline: a waiter sleeps until the lock's
//! document changes (a change stream on the locks collection, where the server
//! has one) or until a jittered backoff elapses (the fallback, and the only
//! way to notice a lease that simply ran out: expiry writes nothing).

use std::time::Duration;

use futures_util::StreamExt;
use mongodb::bson::doc;
use tokio::time::Instant;

use super::error::check_range;
use super::{Acquired, Lease, Lock, LockError};
use crate::random;

/// The longest wait accepted: one day.
pub const MAX_WAIT: Duration = Duration::from_secs(86_400);

/// How a blocking acquire waits.
#[derive(Debug, Clone)]
pub struct WaitOptions {
    /// How long to wait for the lock in all; zero tries once.
    pub wait: Duration,
    /// The first polling interval (doubled after every miss, jittered).
    pub poll_min: Duration,
    /// The largest polling interval.
    pub poll_max: Duration,
    /// Wake on a change stream event for the lock (default: true).
    pub change_stream: bool,
}

impl WaitOptions {
    /// Waits up to `wait`, polling from 50 ms up to 1 s.
    pub fn new(wait: Duration) -> Self {
        Self {
            wait,
            poll_min: Duration::from_millis(50),
            poll_max: Duration::from_secs(1),
            change_stream: true,
        }
    }

    /// Sets the polling bounds.
    pub fn poll(mut self, min: Duration, max: Duration) -> Self {
        self.poll_min = min;
        self.poll_max = max.max(min);
        self
    }
}

impl Lock {
    /// Takes the lock, waiting up to `options.wait` for it. Fails with
    /// [`LockError::Busy`] when the deadline passes first.
    pub async fn acquire(&self, ttl: Duration, options: &WaitOptions) -> Result<Lease, LockError> {
        check_range("wait", options.wait, Duration::ZERO, MAX_WAIT)?;
        let deadline = Instant::now() + options.wait;
        // Opened before the first attempt, so a release between the attempt
        // and the wait is still seen.
        let mut events = if options.change_stream && !options.wait.is_zero() {
            self.collection()
                .watch()
                .pipeline([doc! { "$match": { "documentKey._id": self.name().as_str() } }])
                .await
                .ok()
        } else {
            None
        };
        let mut interval = options.poll_min;
        loop {
            let busy = match self.try_acquire(ttl).await? {
                Acquired::Held(lease) => return Ok(lease),
                Acquired::Busy(state) => state,
            };
            let now = Instant::now();
            if now >= deadline {
                return Err(LockError::Busy {
                    name: self.name().clone(),
                    token: busy.token,
                });
            }
            // Full jitter in [interval/2, interval).
            let sleep = interval.mul_f64(0.5 + random::fraction() / 2.0);
            let until = (now + sleep).min(deadline);
            interval = (interval * 2).min(options.poll_max);
            match events.as_mut() {
                Some(stream) => {
                    tokio::select! {
                        event = stream.next() => if !matches!(event, Some(Ok(_))) {
                            // The stream ended or failed: fall back to polling.
                            events = None;
                        },
                        _ = tokio::time::sleep_until(until) => {}
                    }
                }
                None => tokio::time::sleep_until(until).await,
            }
        }
    }
}
