//! [`PolicyFollower`]: the one lifecycle of a live policy, which every
//! long-running process holds (`idmint next --stream` through a
//! [`LiveMinter`](crate::LiveMinter), `idmint serve` through its server).
//!
//! 1. [`PolicyFollower::choose`] picks the first policy: the active stored
//!    version when following the policies collection and it passes its
//!    activation check, else the process's own (`local`). A stored version
//!    refused here is an event, not an error: the process starts on its own
//!    policy and the follower retries only when the active version changes.
//! 2. The holder checks what it needs of that policy (a minter: its counter,
//!    fit and prefix) with [`FirstPolicy::policy`], before a value is taken.
//! 3. [`FirstPolicy::follow`] runs the activation check on it, puts it in
//!    service in a [`LivePolicy`] and starts the followers of the sources
//!    asked for (`watch.rs`: a file, the policies collection).
//!
//! What happens to the policy from then on is sent as [`SwapEvent`]s on the
//! channel [`FirstPolicy::follow`] returns, which already holds any refusal
//! met while choosing. Each event says itself ([`SwapEvent`]'s `Display`
//! and [`SwapEvent::kind`]): the CLI prints it, the service logs it, with the
//! same words. Dropping the follower stops its tasks.

use std::path::PathBuf;
use std::sync::Arc;

use mongodb::Database;
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;

use super::activation::{self, ActivationOptions};
use super::error::PolicyError;
use super::live::LivePolicy;
use super::runtime::{Policy, PolicyRuntime};
use super::store::{PolicyStore, PolicyStoreError};
use super::watch::{self, SwapEvent};

/// The events of a [`PolicyFollower`], in the order they happened.
pub type PolicyEvents = UnboundedReceiver<SwapEvent>;

/// Which policy sources a [`PolicyFollower`] follows.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct FollowOptions {
    /// A policy file: when it is replaced, its new content is offered for a
    /// swap (the first policy is the process's own, loaded from it).
    pub file: Option<PathBuf>,
    /// Follow the active version of the policies collection.
    pub store: bool,
}

impl FollowOptions {
    /// Sets [`FollowOptions::file`].
    pub fn file(mut self, path: Option<PathBuf>) -> Self {
        self.file = path;
        self
    }

    /// Sets [`FollowOptions::store`].
    pub fn store(mut self, follow: bool) -> Self {
        self.store = follow;
        self
    }
}

/// The first policy of a [`PolicyFollower`], chosen but not yet in
/// service (see the module docs).
pub struct FirstPolicy {
    policy: Policy,
    local: Policy,
    checks: ActivationOptions,
    runtime: PolicyRuntime,
    file: Option<PathBuf>,
    store: Option<PolicyStore>,
    sender: UnboundedSender<SwapEvent>,
    events: PolicyEvents,
}

impl FirstPolicy {
    /// The policy chosen.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Runs the activation check on the chosen policy against the checks
    /// given to [`PolicyFollower::choose`], puts it in service and starts
    /// the followers. Returns the follower and the channel of its events.
    pub fn follow(self) -> Result<(PolicyFollower, PolicyEvents), PolicyError> {
        activation::check(&self.policy, &self.checks)?;
        let live = Arc::new(LivePolicy::new(self.policy, self.checks).with_local(self.local));
        let tasks = watch::follow(self.file, self.store, &self.runtime, &live, &self.sender);
        Ok((PolicyFollower { live, tasks }, self.events))
    }
}

/// A policy in service, swapped live from the sources followed (see the
/// module docs). Dropping it stops the followers.
pub struct PolicyFollower {
    live: Arc<LivePolicy>,
    tasks: Vec<JoinHandle<()>>,
}

impl PolicyFollower {
    /// Chooses the first policy of a process whose own policy is `local`:
    /// the active version of the policies collection of `database` if
    /// `follow.store` and it passes its activation check against `checks`
    /// (the prefix and counters the process serves), else `local`. Only a
    /// database failure is an error.
    pub async fn choose(
        database: &Database,
        runtime: &PolicyRuntime,
        local: Policy,
        checks: ActivationOptions,
        follow: FollowOptions,
    ) -> Result<FirstPolicy, PolicyStoreError> {
        let (sender, events) = mpsc::unbounded_channel();
        let store = follow.store.then(|| PolicyStore::new(database));
        let policy = match &store {
            Some(store) => watch::first_policy(store, runtime, &local, &checks, &sender).await?,
            None => local.clone(),
        };
        Ok(FirstPolicy {
            policy,
            local,
            checks,
            runtime: runtime.clone(),
            file: follow.file,
            store,
            sender,
            events,
        })
    }

    /// The policy to use for the next call.
    pub fn current(&self) -> Policy {
        self.live.current()
    }

    /// The live policy the followers swap.
    pub fn live(&self) -> &Arc<LivePolicy> {
        &self.live
    }

    /// Stops following the sources (also done on drop).
    pub fn stop(&self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Drop for PolicyFollower {
    fn drop(&mut self) {
        self.stop();
    }
}
