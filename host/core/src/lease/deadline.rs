//! A lease's local deadline ([`Deadline`]): when its holder stops trusting
//! it, on the monotonic clock, the send time of the last acknowledged write
//! plus the TTL less a margin (see the lease module's docs).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// The safety margin taken off a lease locally: a tenth of its TTL.
fn margin(ttl: Duration) -> Duration {
    ttl / 10
}

/// The local deadline of a lease whose acquire or renewal, sent at `sent`,
/// was acknowledged: `sent + ttl - margin(ttl)`.
pub(crate) fn deadline_after(sent: Instant, ttl: Duration) -> Instant {
    sent + proved_for(ttl)
}

/// How long after it sent the acquire or renewal that was acknowledged a
/// holder trusts its lease: `ttl - margin(ttl)`.
pub(crate) fn proved_for(ttl: Duration) -> Duration {
    ttl - margin(ttl)
}

/// A lease's local deadline on the monotonic clock (see the module docs):
/// shared by the holder's renewer and whoever must stop before it passes.
/// Cheap to clone; clones share it.
#[derive(Debug, Clone)]
pub(crate) struct Deadline(Arc<DeadlineInner>);

#[derive(Debug)]
struct DeadlineInner {
    base: Instant,
    /// Nanoseconds after `base`; 0: none (not held, or lost).
    at: AtomicU64,
    changed: Notify,
}

impl Default for Deadline {
    fn default() -> Self {
        Self(Arc::new(DeadlineInner {
            base: Instant::now(),
            at: AtomicU64::new(0),
            changed: Notify::new(),
        }))
    }
}

impl Deadline {
    /// A deadline starting at `at`.
    pub fn starting(at: Instant) -> Self {
        let deadline = Self::default();
        deadline.set(at);
        deadline
    }

    fn nanos(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.0.base).as_nanos())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    /// A new lease: its deadline is `at`, whatever it was.
    pub fn set(&self, at: Instant) {
        self.0.at.store(self.nanos(at), Ordering::SeqCst);
        self.0.changed.notify_waiters();
    }

    /// A renewal of the same lease was acknowledged: the deadline moves to
    /// `at` unless it is already later (answers may come back out of order).
    /// A lost lease stays lost.
    pub fn extend(&self, at: Instant) {
        let nanos = self.nanos(at);
        let _ = self
            .0
            .at
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |current| {
                (current != 0 && current < nanos).then_some(nanos)
            });
        self.0.changed.notify_waiters();
    }

    /// The lease is lost: no deadline until [`Deadline::set`] again.
    pub fn revoke(&self) {
        self.0.at.store(0, Ordering::SeqCst);
        self.0.changed.notify_waiters();
    }

    /// The deadline; `None` once lost (or before the first lease).
    pub fn at(&self) -> Option<Instant> {
        match self.0.at.load(Ordering::Acquire) {
            0 => None,
            nanos => Some(self.0.base + Duration::from_nanos(nanos)),
        }
    }

    /// Whether the lease is proved held now: a deadline not yet passed.
    pub fn is_live(&self) -> bool {
        let at = self.0.at.load(Ordering::Acquire);
        at != 0 && self.nanos(Instant::now()) < at
    }

    /// Resolves once the deadline is within `before` of now (or lost).
    /// Follows renewals: a deadline moved later is waited for anew.
    pub async fn within(&self, before: Duration) {
        loop {
            let changed = self.0.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let Some(at) = self.at() else { return };
            let alarm = at.checked_sub(before).unwrap_or(self.0.base);
            if Instant::now() >= alarm {
                return;
            }
            tokio::select! {
                _ = tokio::time::sleep_until(alarm.into()) => {}
                _ = changed => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deadline_is_the_send_plus_the_ttl_less_a_tenth() {
        let sent = Instant::now();
        let ttl = Duration::from_secs(10);
        assert_eq!(deadline_after(sent, ttl), sent + Duration::from_secs(9));
    }

    #[test]
    fn a_deadline_extends_never_backwards_and_stays_lost() {
        let now = Instant::now();
        let deadline = Deadline::starting(now + Duration::from_secs(60));
        assert!(deadline.is_live());
        deadline.extend(now + Duration::from_secs(30));
        assert_eq!(deadline.at(), Some(now + Duration::from_secs(60)));
        deadline.extend(now + Duration::from_secs(90));
        assert_eq!(deadline.at(), Some(now + Duration::from_secs(90)));
        deadline.revoke();
        deadline.extend(now + Duration::from_secs(120));
        assert_eq!(deadline.at(), None, "a late answer revived a lost lease");
        assert!(!deadline.is_live());
        deadline.set(now);
        assert!(!deadline.is_live(), "a deadline already passed");
    }

    #[tokio::test]
    async fn within_wakes_on_a_loss_and_at_once_when_already_near() {
        let deadline = Deadline::starting(Instant::now() + Duration::from_secs(3600));
        let waiter = {
            let deadline = deadline.clone();
            tokio::spawn(async move { deadline.within(Duration::from_secs(1)).await })
        };
        // A waiter an hour early wakes when the lease is lost.
        tokio::task::yield_now().await;
        deadline.revoke();
        waiter.await.unwrap();
        deadline.set(Instant::now() + Duration::from_secs(1));
        deadline.within(Duration::from_secs(2)).await;
    }
}
