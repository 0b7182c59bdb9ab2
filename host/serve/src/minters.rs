//! [`Minters`]: the [`Minter`] of each (policy, counter, prefix) a server
//! has formatted IDs for. Preparing a minter runs the checks that must pass
//! before a value is consumed (the prefix, the policy's fit to the counter:
//! a few policy calls); keeping it makes those checks once per policy
//! rather than once per request. A swapped-in policy has another SHA-256,
//! so its minters are prepared afresh on their first request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use idmint::minter::Minter;
use idmint::policy::{Policy, PolicyError};
use idmint::sequence::SystemClock;

use super::error::ApiError;
use super::pool::Served;

/// Above this many minters the cache starts over: prefixes come from
/// requests, so their number is the clients' to choose.
const MAX_MINTERS: usize = 4096;

/// What a minter is prepared for: the policy's SHA-256, the counter, and
/// the prefix the request asked for.
type Key = (String, String, Option<String>);

/// Prepared minters by [`Key`].
#[derive(Default)]
pub struct Minters {
    prepared: Mutex<HashMap<Key, Arc<Minter>>>,
}

impl Minters {
    /// The minter of `served` through `policy`, with `prefix` (default: the
    /// counter's own). A bad prefix is a bad request; a policy that cannot
    /// serve the counter makes the counter unservable; nothing is consumed
    /// either way.
    pub async fn get(
        &self,
        served: &Served,
        policy: Policy,
        prefix: Option<&str>,
    ) -> Result<Arc<Minter>, ApiError> {
        let key = (
            policy.sha256().to_string(),
            served.state.name.clone(),
            prefix.map(str::to_string),
        );
        if let Some(minter) = self.lock().get(&key) {
            return Ok(minter.clone());
        }
        let minter = Minter::prepare_opened(
            served.sequence.clone(),
            served.state.clone(),
            policy,
            prefix.map(str::to_string),
            Arc::new(SystemClock),
        )
        .await
        .map_err(|error| match error {
            idmint::Error::Policy(PolicyError::Format(refusal)) => {
                ApiError::BadRequest(format!("the policy refuses the prefix: {refusal}"))
            }
            other => other.into(),
        })?;
        let minter = Arc::new(minter);
        let mut prepared = self.lock();
        if prepared.len() >= MAX_MINTERS {
            prepared.clear();
        }
        prepared.insert(key, minter.clone());
        Ok(minter)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Arc<Minter>>> {
        self.prepared.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
