//! Background renewal for long holders: renews every third of the TTL and
//! reports when the lease is lost.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{lease, Lease, LockError};

/// Renews a lease in the background until stopped; [`Watchdog::lost`]
/// resolves once a renewal finds the lease gone.
#[derive(Debug)]
pub struct Watchdog {
    task: JoinHandle<()>,
    lost: watch::Receiver<Option<Arc<LockError>>>,
}

impl Watchdog {
    /// Starts renewing `lease` every `ttl / 3`.
    pub fn start(lease: &Lease) -> Self {
        let (lock, token, ttl) = (lease.lock().clone(), lease.token(), lease.ttl());
        let (sender, lost) = watch::channel(None);
        let task = tokio::spawn(async move {
            let period = ttl / 3;
            let mut transient_failures = 0u32;
            loop {
                tokio::time::sleep(period).await;
                match lease::renew(&lock, token, ttl).await {
                    Ok(()) => transient_failures = 0,
                    Err(error @ LockError::Lost { .. }) => {
                        let _ = sender.send(Some(Arc::new(error)));
                        return;
                    }
                    // A failed round trip: try again at once, up to the
                    // lease's end (three periods).
                    Err(error) => {
                        transient_failures += 1;
                        if transient_failures >= 2 {
                            let _ = sender.send(Some(Arc::new(error)));
                            return;
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            }
        });
        Self { task, lost }
    }

    /// Resolves with the reason once the lease is lost (never, while renewals succeed).
    pub async fn lost(&mut self) -> Arc<LockError> {
        loop {
            if let Some(error) = self.lost.borrow().clone() {
                return error;
            }
            if self.lost.changed().await.is_err() {
                // Stopped: never resolves.
                std::future::pending::<()>().await;
            }
        }
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
