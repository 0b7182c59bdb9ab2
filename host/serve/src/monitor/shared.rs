//! One read shared by everyone who asks at about the same time: the
//! monitor page's database side is read by at most one task at once, and
//! what it read is reused for a few seconds, so that many viewers (or one
//! reloading fast) cost the database what one viewer costs.
//!
//! The read runs in a task of its own: a viewer that goes away does not
//! abandon it half-way for those still waiting on it.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::{BoxFuture, FutureExt, Shared};

/// A read finished, and when.
type Finished<T> = (Instant, Arc<T>);

/// Shares one read of a `T` among concurrent callers and reuses it for
/// `reuse` after it finished.
pub struct SharedRead<T> {
    reuse: Duration,
    latest: Mutex<Option<Shared<BoxFuture<'static, Finished<T>>>>>,
}

impl<T: Send + Sync + 'static> SharedRead<T> {
    /// Nothing read yet; a read is reused for `reuse` after it finished.
    pub fn new(reuse: Duration) -> Self {
        Self {
            reuse,
            latest: Mutex::new(None),
        }
    }

    /// How long a read is reused.
    pub fn reuse(&self) -> Duration {
        self.reuse
    }

    /// The read in flight, if any; else the last one if it finished less
    /// than `reuse` ago; else a new one, made by `read`.
    pub async fn get<F>(&self, read: impl FnOnce() -> F) -> Arc<T>
    where
        F: Future<Output = T> + Send + 'static,
    {
        let shared = {
            let mut latest = self.latest.lock().unwrap_or_else(|p| p.into_inner());
            let usable = latest.as_ref().filter(|shared| {
                shared
                    .peek()
                    .is_none_or(|(finished, _)| finished.elapsed() < self.reuse)
            });
            match usable {
                Some(shared) => shared.clone(),
                None => {
                    let task = tokio::spawn(read());
                    let shared = async move {
                        let value = match task.await {
                            Ok(value) => value,
                            Err(failed) => std::panic::resume_unwind(failed.into_panic()),
                        };
                        (Instant::now(), Arc::new(value))
                    }
                    .boxed()
                    .shared();
                    *latest = Some(shared.clone());
                    shared
                }
            }
        };
        shared.await.1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A read that counts itself and finishes once `open` is true, with
    /// how many reads there were.
    fn counted(
        reads: &Arc<AtomicUsize>,
        open: &tokio::sync::watch::Receiver<bool>,
    ) -> impl Fn() -> BoxFuture<'static, usize> + Clone + Send + 'static {
        let (reads, open) = (reads.clone(), open.clone());
        move || {
            let (reads, mut open) = (reads.clone(), open.clone());
            async move {
                open.wait_for(|open| *open).await.unwrap();
                reads.fetch_add(1, Ordering::SeqCst) + 1
            }
            .boxed()
        }
    }

    // One thread: a spawned caller runs up to its first wait before the
    // test goes on.
    #[tokio::test(flavor = "current_thread")]
    async fn callers_at_once_share_one_read() {
        let reads = Arc::new(AtomicUsize::new(0));
        let (open, opened) = tokio::sync::watch::channel(false);
        let read = counted(&reads, &opened);
        // Not reused at all once finished: only sharing can spare a read.
        let shared = Arc::new(SharedRead::new(Duration::ZERO));
        let arrived = Arc::new(AtomicUsize::new(0));
        let callers: Vec<_> = (0..8)
            .map(|_| {
                let (shared, read, arrived) = (shared.clone(), read.clone(), arrived.clone());
                tokio::spawn(async move {
                    arrived.fetch_add(1, Ordering::SeqCst);
                    *shared.get(read).await
                })
            })
            .collect();
        while arrived.load(Ordering::SeqCst) < 8 {
            tokio::task::yield_now().await;
        }
        open.send(true).unwrap();
        for caller in callers {
            assert_eq!(caller.await.unwrap(), 1);
        }
        assert_eq!(reads.load(Ordering::SeqCst), 1);
        // Finished and not reused: the next caller reads again.
        assert_eq!(*shared.get(read).await, 2);
    }

    #[tokio::test]
    async fn a_finished_read_is_reused_while_fresh() {
        let reads = Arc::new(AtomicUsize::new(0));
        let (_open, opened) = tokio::sync::watch::channel(true);
        let read = counted(&reads, &opened);
        let shared = SharedRead::new(Duration::from_secs(3600));
        assert_eq!(*shared.get(read.clone()).await, 1);
        assert_eq!(*shared.get(read).await, 1);
        assert_eq!(reads.load(Ordering::SeqCst), 1);
    }
}
