//! [`FitMemo`]: the fits a policy has accepted, so that preparing another
//! counter of a shape it already serves, or the same counter again after a
//! while, asks the policy nothing. A policy's answers depend only on its
//! bytes (one [`Policy`](super::Policy) per SHA-256) and on what it is
//! asked, so an accepted fit stays accepted. Refusals are not kept here:
//! they name the counter, and the caller that keeps a prepared minter keeps
//! its refusal as long.

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

/// At most this many accepted fits are kept per policy; the memo starts
/// afresh when full (it is a cache: forgetting costs a few policy calls).
pub(crate) const MAX_REMEMBERED_FITS: usize = 65_536;

/// The fits a policy accepted, each named by [`FitMemo`]'s caller with a
/// key that holds everything the checks read.
#[derive(Debug, Default)]
pub(crate) struct FitMemo {
    accepted: Mutex<HashSet<String>>,
}

impl FitMemo {
    /// Whether the fit named `key` was accepted.
    pub(crate) fn accepted(&self, key: &str) -> bool {
        self.lock().contains(key)
    }

    /// Remembers that the fit named `key` was accepted.
    pub(crate) fn accept(&self, key: String) {
        let mut accepted = self.lock();
        if accepted.len() >= MAX_REMEMBERED_FITS {
            accepted.clear();
        }
        accepted.insert(key);
    }

    /// How many fits are remembered.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        // A poisoned memo is still a valid memo: no insert panics halfway.
        self.accepted.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
