//! Background renewal for long holders: renews every third of the TTL
//! (through the lease primitive's `keep_renewed`) and tells the holder when
//! it must stop: when a renewal finds the lease gone, or when no renewal
//! was acknowledged in time and the lease's local deadline comes near.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{handles, Lease, LockError, LockName};
use crate::lease::{keep_renewed, Deadline, Renewal};

/// Renews a lease in the background until stopped. [`Watchdog::expiring`]
/// resolves when the holder must stop: the lease was found lost, or its
/// local deadline is near because no renewal was acknowledged (a partition,
/// a database that does not answer, a process paused past it).
#[derive(Debug)]
pub struct Watchdog {
    task: JoinHandle<()>,
    deadline: Deadline,
    lost: watch::Receiver<Option<Arc<LockError>>>,
    last_failure: Arc<Mutex<Option<String>>>,
    name: LockName,
    token: i64,
}

impl Watchdog {
    /// Starts renewing `lease` every `ttl / 3`; each acknowledged renewal
    /// moves the lease's local deadline ([`Lease::deadline`]).
    pub fn start(lease: &Lease) -> Self {
        let (lock, token, ttl) = (lease.lock().clone(), lease.token(), lease.ttl());
        let shared = lease.is_shared();
        let deadline = lease.deadline_handle().clone();
        let (sender, lost) = watch::channel(None);
        let last_failure = Arc::new(Mutex::new(None));
        #[cfg(feature = "soak-broken")]
        if crate::broken::ignores_leases() {
            return Self {
                task: tokio::spawn(std::future::pending()),
                deadline,
                lost,
                last_failure,
                name: lease.lock().name().clone(),
                token,
            };
        }
        let task = {
            let (deadline, last_failure) = (deadline.clone(), last_failure.clone());
            tokio::spawn(async move {
                let reason = keep_renewed(ttl / 3, || {
                    let (lock, deadline, last_failure) =
                        (lock.clone(), deadline.clone(), last_failure.clone());
                    async move {
                        match handles::renew(&lock, token, ttl, &deadline, shared).await {
                            Ok(()) => Renewal::Renewed,
                            Err(error @ LockError::Lost { .. }) => Renewal::Lost(error),
                            Err(error) => {
                                *last_failure.lock().unwrap_or_else(|p| p.into_inner()) =
                                    Some(error.to_string());
                                Renewal::Failed(error)
                            }
                        }
                    }
                })
                .await;
                // The reason first, so that whoever the revocation wakes finds it.
                let _ = sender.send(Some(Arc::new(reason)));
                deadline.revoke();
            })
        };
        Self {
            task,
            deadline,
            lost,
            last_failure,
            name: lease.lock().name().clone(),
            token,
        }
    }

    /// The lease's local deadline now; `None` once it was found lost.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline.at()
    }

    /// When whatever the lease protects must be stopped by, for a second
    /// process that enforces it (`lock run`'s guard): the local deadline,
    /// `Some(now)` or earlier once the lease was found lost. `None` only in
    /// the soak's deliberately broken build, whose leases are not watched.
    pub fn stop_by(&self) -> Option<Instant> {
        #[cfg(feature = "soak-broken")]
        if crate::broken::ignores_leases() {
            return None;
        }
        Some(self.deadline.at().unwrap_or_else(Instant::now))
    }

    /// Resolves once the holder must stop within `before`: when the lease
    /// was found lost (at once), or when its local deadline is `before`
    /// away with no renewal acknowledged since. A renewal acknowledged while
    /// waiting moves the deadline, and the wait with it. The reason is
    /// [`LockError::Lost`] or [`LockError::Unrenewed`].
    pub async fn expiring(&mut self, before: Duration) -> Arc<LockError> {
        #[cfg(feature = "soak-broken")]
        if crate::broken::ignores_leases() {
            return std::future::pending().await;
        }
        self.deadline.within(before).await;
        if let Some(reason) = self.lost.borrow().clone() {
            return reason;
        }
        Arc::new(LockError::Unrenewed {
            name: self.name.clone(),
            token: self.token,
            last_failure: self
                .last_failure
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        })
    }

    /// Resolves once the lease is lost: found so by a renewal, or its local
    /// deadline passed (never, while renewals are acknowledged).
    pub async fn lost(&mut self) -> Arc<LockError> {
        self.expiring(Duration::ZERO).await
    }

    /// Stops renewing.
    pub fn stop(self) {
        self.task.abort();
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.task.abort();
    }
}
