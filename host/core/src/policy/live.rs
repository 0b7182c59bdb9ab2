//! [`LivePolicy`]: the policy a long-running process serves with, swapped
//! atomically while it runs.
//!
//! A [`Policy`] is already an `Arc` handle, so the holder is a lock around
//! one handle. Readers take a clone ([`LivePolicy::current`]) and call it
//! with no lock held: a call in flight finishes on the policy it started
//! with even if a swap lands meanwhile, and the old policy is dropped when
//! its last caller is done. [`LivePolicy::try_swap`] runs the activation
//! check (`activation.rs`) first and swaps only if it passes; the sources
//! that drive swaps (a file, the policies collection) are in `watch.rs`.

use std::sync::{PoisonError, RwLock};

use super::activation::{self, ActivationOptions, ActivationReport};
use super::error::PolicyError;
use super::runtime::Policy;

/// The policy in service, replaceable while calls run.
#[derive(Debug)]
pub struct LivePolicy {
    current: RwLock<Policy>,
    options: ActivationOptions,
    /// The process's own policy (its `--policy` or the default), served
    /// again when no stored version is active any more.
    local: Option<Policy>,
}

impl LivePolicy {
    /// Serves with `policy` from now on; every later swap is checked against
    /// `options` (the prefix and counters this process serves).
    ///
    /// The first policy is not checked here: run [`activation::check`] on it
    /// first if it did not come from a trusted build.
    pub fn new(policy: Policy, options: ActivationOptions) -> Self {
        LivePolicy {
            current: RwLock::new(policy),
            options,
            local: None,
        }
    }

    /// Sets the process's own policy, which a store follower returns to
    /// when the cluster-wide activation is undone (`policy rollback` of the
    /// first activation).
    pub fn with_local(mut self, local: Policy) -> Self {
        self.local = Some(local);
        self
    }

    /// The process's own policy, if set.
    pub fn local(&self) -> Option<&Policy> {
        self.local.as_ref()
    }

    /// The policy to use for the next call.
    pub fn current(&self) -> Policy {
        // A poisoned lock still holds a valid handle: the write is a plain
        // assignment that cannot panic halfway.
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// What the activation check of a swap runs against.
    pub fn options(&self) -> &ActivationOptions {
        &self.options
    }

    /// Runs the activation check on `candidate` and, if it passes, makes it
    /// the current policy. On failure the current policy stays.
    ///
    /// Returns the check's report; a candidate with the same bytes as the
    /// current policy is checked and "swapped" too, which changes nothing.
    pub fn try_swap(&self, candidate: Policy) -> Result<ActivationReport, PolicyError> {
        let report = activation::check(&candidate, &self.options)?;
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = candidate;
        Ok(report)
    }
}
