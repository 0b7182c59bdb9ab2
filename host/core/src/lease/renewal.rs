//! Keeping a lease renewed ([`keep_renewed`]): every third of its TTL,
//! each attempt bounded, after a failure again soon.

use std::future::Future;
use std::time::Duration;

/// What one renewal attempt found.
#[derive(Debug)]
pub(crate) enum Renewal<E> {
    /// Acknowledged: the attempt moved the deadline on itself.
    Renewed,
    /// The lease is no longer this holder's (or the holder is gone): stop.
    Lost(E),
    /// The attempt failed (the database did not answer, or not durably):
    /// try again soon.
    Failed(E),
}

/// The first pause after a failed renewal; doubled after each failure up
/// to the renewal period.
const RETRY_MIN: Duration = Duration::from_millis(50);

/// Renews a lease every `every` (a third of its TTL), each attempt bounded
/// by `every` (an attempt that takes longer is as good as failed: its
/// answer would come too late to matter, and a write it still makes only
/// lengthens the lease on the server); after a failure, again after a short
/// backoff. Returns when an attempt reports [`Renewal::Lost`]. The attempt
/// itself moves the [`Deadline`](super::Deadline) when acknowledged, from its *send* time.
pub(crate) async fn keep_renewed<E, F, Fut>(every: Duration, mut attempt: F) -> E
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Renewal<E>>,
{
    let mut next = tokio::time::Instant::now() + every;
    let mut backoff = RETRY_MIN;
    loop {
        tokio::time::sleep_until(next).await;
        let started = tokio::time::Instant::now();
        match tokio::time::timeout(every.max(RETRY_MIN), attempt()).await {
            Ok(Renewal::Renewed) => {
                next = started + every;
                backoff = RETRY_MIN;
            }
            Ok(Renewal::Lost(reason)) => return reason,
            Ok(Renewal::Failed(_)) | Err(_) => {
                next = tokio::time::Instant::now() + backoff;
                backoff = (backoff * 2).min(every.max(RETRY_MIN));
            }
        }
    }
}
