//! [`LiveMinter`]: what `idmint next --stream` serves IDs with. It opens
//! the counter whatever its kind, holds a [`PolicyFollower`] (the first
//! policy, its activation check, the followers of the policy sources: the
//! same lifecycle `idmint serve` holds), and on shutdown stops the followers
//! and closes the counter (a segment counter gives its unused values back).
//!
//! What happens to the policy (swaps, refusals, a source that cannot be
//! read) is sent as [`SwapEvent`](crate::policy::watch::SwapEvent)s on a
//! channel the caller reports from.

use std::path::PathBuf;
use std::sync::Arc;

use mongodb::Database;

use super::Minter;
use crate::policy::{
    ActivationOptions, FollowOptions, Policy, PolicyEvents, PolicyFollower, PolicyRuntime,
};
use crate::sequence::{Clock, CounterName, GiveBack, OpenOptions, Sequence};
use crate::Error;
/// How a [`LiveMinter`] starts.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct LiveOptions {
    /// The prefix of the IDs; default: the counter's own, else none.
    pub prefix: Option<String>,
    /// A policy file to follow: when it is replaced, its new content is
    /// offered for a swap. (The first policy is the caller's local one.)
    pub follow_file: Option<PathBuf>,
    /// Follow the active version of the policies collection.
    pub follow_store: bool,
    /// How the counter is opened (segment buffers).
    pub open: OpenOptions,
}

impl LiveOptions {
    /// Sets [`LiveOptions::prefix`].
    pub fn prefix(mut self, prefix: Option<String>) -> Self {
        self.prefix = prefix;
        self
    }

    /// Sets [`LiveOptions::follow_file`].
    pub fn follow_file(mut self, path: Option<PathBuf>) -> Self {
        self.follow_file = path;
        self
    }

    /// Sets [`LiveOptions::follow_store`].
    pub fn follow_store(mut self, follow: bool) -> Self {
        self.follow_store = follow;
        self
    }
}

/// Serves IDs from one counter through a policy swapped live.
pub struct LiveMinter {
    minter: Minter,
    follower: PolicyFollower,
}

impl LiveMinter {
    /// Opens counter `name`, chooses the first policy (`local` unless a
    /// stored one is active and passes), checks it against the counter and
    /// starts the followers `options` asks for. Returns the minter and the
    /// channel of policy events, which already holds any refusal met while
    /// choosing.
    pub async fn start(
        database: &Database,
        name: CounterName,
        runtime: &PolicyRuntime,
        local: Policy,
        clock: Arc<dyn Clock>,
        options: LiveOptions,
    ) -> Result<(Self, PolicyEvents), Error> {
        let (sequence, state) = Sequence::open(database, name, &options.open).await?;
        let prefix = options
            .prefix
            .clone()
            .or_else(|| state.prefix.clone())
            .unwrap_or_default();
        let opened = state.clone();
        let checks = ActivationOptions::default()
            .prefix(prefix)
            .counter(state)
            .now_micros(clock.now_micros());
        let follow = FollowOptions::default()
            .file(options.follow_file)
            .store(options.follow_store);
        // Anything failing from here closes the counter again (a snowflake
        // counter's worker lease is released at once).
        let started = async {
            let first = PolicyFollower::choose(database, runtime, local, checks, follow).await?;
            // Minter::prepare checks the counter, the fit and the prefix; the
            // activation check (`follow`) then runs the samples.
            let minter = Minter::prepare_opened(
                sequence.clone(),
                opened,
                first.policy().clone(),
                options.prefix.clone(),
                clock,
            )
            .await?;
            let (follower, events) = first.follow()?;
            Ok::<_, Error>((Self { minter, follower }, events))
        }
        .await;
        sequence.close_on_error(started).await
    }

    /// The prefix in use.
    pub fn prefix(&self) -> &str {
        self.minter.prefix()
    }

    /// The policy in service now.
    pub fn policy(&self) -> Policy {
        self.follower.current()
    }

    /// The minter underneath (the counter, its sequence).
    pub fn minter(&self) -> &Minter {
        &self.minter
    }

    /// Takes `count` values and formats them with the policy in service at
    /// that moment: the IDs, each followed by a line feed. A swap landing
    /// meanwhile applies to the next call.
    pub async fn next_lines(&self, count: usize) -> Result<String, Error> {
        let stamps = self.minter.next_stamps(count).await?;
        let policy = self.follower.current();
        Ok(policy.format_batch_packed(self.minter.prefix(), &stamps)?)
    }

    /// Stops following the policy sources and closes the counter.
    pub async fn shutdown(self) -> Result<GiveBack, Error> {
        self.follower.stop();
        self.minter.close().await
    }
}
