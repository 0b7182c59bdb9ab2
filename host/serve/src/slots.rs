//! [`PolicySlots`]: how many policy calls a server runs at once.
//!
//! The policy runtime can run [`MAX_CONCURRENT_CALLS`] calls at once; one
//! more fails inside the runtime. A request that formats IDs takes a slot
//! *before* it takes any value, waiting at most `Limits::policy_wait` for
//! one, and is answered 503 having taken nothing when none comes: a burst
//! loses no value. The call itself runs on the blocking thread pool (for
//! IDs, one call shared by the requests that arrive together, each holding
//! its slot: `batcher.rs`), so a policy running to its deadline never holds
//! an executor thread, and a request abandoned meanwhile (a client gone, a
//! time limit) keeps the slot until the call really ends.
//!
//! [`MAX_CONCURRENT_CALLS`]: idmint::policy::MAX_CONCURRENT_CALLS

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::error::ApiError;

/// The policy slots of a server (see the module docs). Cheap to clone:
/// clones share the slots.
#[derive(Debug, Clone)]
pub struct PolicySlots {
    semaphore: Arc<Semaphore>,
    size: usize,
    wait: Duration,
}

/// A policy slot, held until dropped.
#[derive(Debug)]
pub struct PolicySlot(#[allow(dead_code)] OwnedSemaphorePermit);

impl PolicySlots {
    /// `size` slots, each waited for at most `wait`.
    pub fn new(size: usize, wait: Duration) -> Self {
        Self {
            semaphore: Arc::new(Semaphore::new(size)),
            size,
            wait,
        }
    }

    /// A slot, or 503 if none comes free in time.
    pub async fn acquire(&self) -> Result<PolicySlot, ApiError> {
        // A free slot is taken at once, with no timer.
        if let Ok(permit) = self.semaphore.clone().try_acquire_owned() {
            return Ok(PolicySlot(permit));
        }
        match tokio::time::timeout(self.wait, self.semaphore.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(PolicySlot(permit)),
            _ => Err(ApiError::Overloaded(format!(
                "all {} policy slots stayed busy for {} ms; nothing was taken: retry with backoff",
                self.size,
                self.wait.as_millis()
            ))),
        }
    }

    /// The semaphore the slots are permits of: an application that embeds
    /// the server and makes policy calls of its own with the same runtime
    /// takes its permits here, so that the two never exceed the runtime's
    /// limit together.
    pub fn semaphore(&self) -> &Arc<Semaphore> {
        &self.semaphore
    }

    /// How many slots are in use now.
    pub fn in_use(&self) -> usize {
        self.size - self.semaphore.available_permits()
    }

    /// How many slots there are.
    pub fn size(&self) -> usize {
        self.size
    }
}

/// Runs `call` (a policy call) on the blocking thread pool, holding `slot`
/// until it returns.
pub async fn run_blocking<T: Send + 'static>(
    slot: PolicySlot,
    call: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(move || {
        let result = call();
        drop(slot);
        result
    })
    .await
    .map_err(|panic| ApiError::library(idmint::ErrorClass::Policy, None, panic))
}
