//! The lease a taker whose values come from a lease held in one lane
//! ([`Takes::Leased`], a snowflake counter's worker id) holds: the lane's
//! kind leases it (`kinds/<kind>/lanes.rs`); the taker (`taker.rs`) says
//! which lane, and leases another when that lane is sealed by a change of
//! stripes, its deployment fails, or its lease is lost.
//!
//! [`Takes::Leased`]: crate::sequence::lane_kind::Takes::Leased

use std::sync::Arc;
use std::time::Duration;

use arc_swap::{ArcSwapOption, Guard};

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
    /// The lease held now: read by every take (a load that writes to no
    /// memory the takers of other cores read), written when a lease is
    /// taken or let go.
    held: ArcSwapOption<Holder>,
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
            held: ArcSwapOption::empty(),
            leasing: tokio::sync::Mutex::new(()),
        }
    }

    /// The lease held now, if any, for a take: a guard that keeps it
    /// alive for as long as the take uses it.
    pub(super) fn held(&self) -> Guard<Option<Arc<Holder>>> {
        self.held.load()
    }

    /// Holds `holder` from now on.
    pub(super) fn hold(&self, holder: Holder) -> Arc<Holder> {
        let holder = Arc::new(holder);
        self.held.store(Some(holder.clone()));
        holder
    }

    /// Lets `holder` go, releasing it in the background (a dead
    /// deployment's lease expires instead). A lease taken since by
    /// another taker stays held.
    pub(super) fn let_go(&self, holder: &Arc<Holder>) {
        let current = self.held.load();
        if current.as_ref().is_some_and(|now| Arc::ptr_eq(now, holder)) {
            self.held.compare_and_swap(&current, None);
        }
        let holder = holder.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(RELEASE_WITHIN, holder.lease.close()).await;
        });
    }

    /// Releases the lease held now, if any.
    pub(super) async fn close(&self) -> Result<(), SequenceError> {
        match self.held.swap(None) {
            Some(holder) => holder.lease.close().await,
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parts::Stamp;
    use crate::sequence::lane_kind::{Boxed, LiveLane};
    use crate::sequence::name::CounterName;
    use mongodb::Database;

    /// A lease that hands out nothing and closes at once.
    #[derive(Debug)]
    struct Idle;

    impl LaneLease for Idle {
        fn take(&self, _count: u64) -> Boxed<'_, Result<Vec<Stamp>, SequenceError>> {
            Box::pin(async { Ok(Vec::new()) })
        }

        fn close(&self) -> Boxed<'_, Result<(), SequenceError>> {
            Box::pin(async { Ok(()) })
        }
    }

    /// A leaser the test never asks.
    #[derive(Debug)]
    struct Unused;

    impl LaneLeaser for Unused {
        fn lease<'a>(
            &'a self,
            _database: &'a Database,
            _name: &'a CounterName,
            _lane: LiveLane,
        ) -> Boxed<'a, Result<Box<dyn LaneLease>, SequenceError>> {
            unreachable!("the test leases nothing")
        }
    }

    fn holder() -> Holder {
        Holder {
            lease: Box::new(Idle),
            deployment: None,
        }
    }

    #[tokio::test]
    async fn letting_a_lease_go_leaves_the_one_taken_since_held() {
        let leased = Leased::new(Box::new(Unused));
        assert!(leased.held().is_none());
        let old = leased.hold(holder());
        let new = leased.hold(holder());
        // A taker whose take failed on the old lease lets it go after
        // another taker leased anew: the new lease stays.
        leased.let_go(&old);
        let held = leased.held();
        assert!(held.as_ref().is_some_and(|held| Arc::ptr_eq(held, &new)));
        drop(held);
        leased.let_go(&new);
        assert!(leased.held().is_none());
        leased.hold(holder());
        leased.close().await.unwrap();
        assert!(leased.held().is_none());
    }
}
