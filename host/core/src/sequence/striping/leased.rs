//! The lease a taker whose values come from a lease held in one lane
//! ([`Takes::Leased`], a snowflake counter's worker id) holds: the lane's
//! kind leases it (`kinds/<kind>/lanes.rs`); the taker (`taker.rs`) says
//! which lane, and leases another when that lane is sealed by a change of
//! stripes, its deployment fails, or its lease is lost.
//!
//! [`Takes::Leased`]: crate::sequence::lane_kind::Takes::Leased

use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use crate::sequence::error::SequenceError;
use crate::sequence::lane_kind::{LaneLease, LaneLeaser};

/// How long letting a lease go (its release) may take before it is left
/// to expire.
const RELEASE_WITHIN: Duration = Duration::from_secs(5);

/// A taker's lease, in one of its counter's lanes.
#[derive(Debug)]
pub(super) struct Leased {
    /// What leases a lane.
    pub(super) leaser: Box<dyn LaneLeaser>,
    /// The lease held now: read by every take, written when a lease is
    /// taken or let go.
    held: RwLock<Option<Arc<Holder>>>,
    /// Held while a lease is being taken, so that one taker leases and the
    /// others wait for it.
    pub(super) leasing: tokio::sync::Mutex<()>,
}

/// A lease held in one lane, and the deployment of that lane (each take
/// clones an `Arc` of it, nothing more).
#[derive(Debug)]
pub(super) struct Holder {
    pub(super) lease: Box<dyn LaneLease>,
    pub(super) deployment: Option<String>,
}

impl Leased {
    /// Nothing leased yet; `leaser` leases.
    pub(super) fn new(leaser: Box<dyn LaneLeaser>) -> Self {
        Self {
            leaser,
            held: RwLock::new(None),
            leasing: tokio::sync::Mutex::new(()),
        }
    }

    /// The lease held now, if any.
    pub(super) fn held(&self) -> Option<Arc<Holder>> {
        self.held
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Holds `holder` from now on.
    pub(super) fn hold(&self, holder: Holder) -> Arc<Holder> {
        let holder = Arc::new(holder);
        *self.held.write().unwrap_or_else(PoisonError::into_inner) = Some(holder.clone());
        holder
    }

    /// Lets `holder` go, releasing it in the background (a dead
    /// deployment's lease expires instead).
    pub(super) fn let_go(&self, holder: &Arc<Holder>) {
        let mut held = self.held.write().unwrap_or_else(PoisonError::into_inner);
        if held.as_ref().is_some_and(|now| Arc::ptr_eq(now, holder)) {
            *held = None;
        }
        drop(held);
        let holder = holder.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(RELEASE_WITHIN, holder.lease.close()).await;
        });
    }

    /// Releases the lease held now, if any.
    pub(super) async fn close(&self) -> Result<(), SequenceError> {
        let holder = self
            .held
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match holder {
            Some(holder) => holder.lease.close().await,
            None => Ok(()),
        }
    }
}
