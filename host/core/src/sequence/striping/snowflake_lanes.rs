//! A striped snowflake counter's IDs (`docs/design/striped-counters.md`):
//! each lane owns the worker ids of its residue class and is the gate of
//! their time reservations (`kinds/snowflake/gate.rs`). A handle leases a
//! worker id of one lane, in that lane's deployment, and issues IDs from
//! memory as an unstriped counter's handle does; its holders issue only
//! above the lane's generation's floor, the highest time any lane before
//! it reserved, so no two holders ever issue one (time, worker id).
//!
//! This file holds the lease a handle holds; `snowflake_take.rs` how a
//! take gets one.

use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use super::deployments::Deployments;
use crate::parts::Layout;
use crate::sequence::error::SequenceError;
use crate::sequence::kinds::snowflake::{SnowflakeCounter, SnowflakeOptions};

/// How long letting a lease go (its release) may take before it is left
/// to expire.
const RELEASE_WITHIN: Duration = Duration::from_secs(5);

/// A striped snowflake counter's worker lease, in one of its lanes.
#[derive(Debug)]
pub(super) struct SnowflakeLanes {
    pub(super) layout: Layout,
    pub(super) options: SnowflakeOptions,
    /// The lease held now: read by every take, written when a lease is
    /// taken or let go.
    held: RwLock<Option<Arc<Holder>>>,
    /// Held while a lease is being taken, so that one taker leases and the
    /// others wait for it.
    pub(super) leasing: tokio::sync::Mutex<()>,
}

/// A worker id leased in one lane, and the deployment of that lane (each
/// take clones an `Arc` of it, nothing more).
#[derive(Debug)]
pub(super) struct Holder {
    pub(super) counter: SnowflakeCounter,
    pub(super) deployment: Option<String>,
}

impl SnowflakeLanes {
    /// Nothing leased yet; leases are held as `options` says, and a take
    /// across `deployments` waits on a lost lease no longer than its
    /// deadline: another lane is leased then.
    pub(super) fn new(
        layout: Layout,
        options: &SnowflakeOptions,
        deployments: Option<&Deployments>,
    ) -> Self {
        let mut options = options.clone();
        if let Some(deployments) = deployments {
            // Half of it: the other half leases a worker id elsewhere.
            options.lease_wait = options.lease_wait.min(deployments.take_deadline() / 2);
        }
        Self {
            layout,
            options,
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

    /// Lets the lease held now go, releasing it in the background (a dead
    /// deployment's lease expires instead).
    pub(super) fn let_go(&self, holder: &Holder) {
        let mut held = self.held.write().unwrap_or_else(PoisonError::into_inner);
        if held
            .as_ref()
            .is_some_and(|now| now.counter.same_as(&holder.counter))
        {
            *held = None;
        }
        drop(held);
        let counter = holder.counter.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(RELEASE_WITHIN, counter.close()).await;
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
            Some(holder) => holder.counter.close().await,
            None => Ok(()),
        }
    }
}
