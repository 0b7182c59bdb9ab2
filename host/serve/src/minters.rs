//! [`Minters`]: the [`Minter`] of each (policy, counter, prefix) a server
//! has formatted IDs for, with the [`Batcher`] its policy calls go through.
//! Preparing a minter runs the checks that must pass
//! before a value is consumed (the counter owns the prefix and no other
//! counter does; the policy accepts the prefix and can serve the counter: a
//! few policy calls, run on the blocking pool with a policy slot); keeping
//! it makes those checks once per policy rather than once per request. A
//! swapped-in policy has another SHA-256, so its minters are prepared afresh
//! on their first request.
//!
//! Prefixes come from requests, so their number is the clients' to choose:
//! the cache holds at most `Limits::max_minters` and evicts the least
//! recently used. A prepared minter is trusted for `Limits::minter_max_age`;
//! after that its prefix's ownership is checked again (one lookup by index:
//! the counters that own it are this one alone), so a prefix removed from a
//! counter stops being served within that age, and a request for the
//! counter's default gets its new default (the next prefix it owns) rather
//! than the removed one. A counter's first minter is prepared from the
//! document its opening read, if that was within the same age. The policy's checks are not made again: the policy has not
//! changed (its SHA-256 is in the key) and remembers what it accepted.
//!
//! A refusal (a prefix not owned or refused, a policy that cannot serve the
//! counter) is kept in the same place for the same age: asking again costs
//! what an answer from a prepared minter costs, so refused requests cannot
//! keep the server or the database busy. A failure of the database or the
//! server is not kept.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use idmint::minter::Minter;
use idmint::policy::{Policy, PolicyError};
use idmint::sequence::{prefixes, SystemClock};

use super::batcher::{BatchMeter, Batcher};
use super::error::ApiError;
use super::pool::Served;
use super::slots::{run_blocking, PolicySlots};

/// What a minter is prepared for: the policy's SHA-256, the counter, and
/// the prefix the request asked for.
type Key = (String, String, Option<String>);

/// A prepared minter, and the batcher that makes its policy calls, shared
/// by the requests that arrive together.
pub struct Prepared {
    /// Takes the values and knows the policy and the prefix.
    pub minter: Arc<Minter>,
    /// Formats the values of the minter's requests.
    pub batcher: Arc<Batcher>,
}

impl Prepared {
    fn new(minter: Minter, meter: BatchMeter) -> Self {
        let minter = Arc::new(minter);
        let formatter = minter.clone();
        let batcher = Batcher::new(
            Box::new(move |stamps: &[idmint::parts::Stamp]| {
                formatter
                    .policy()
                    .format_batch_packed(formatter.prefix(), stamps)
                    .map_err(ApiError::from)
            }),
            meter,
        );
        Self {
            minter,
            batcher: Arc::new(batcher),
        }
    }
}

/// What preparing a minter came to: the minter, or the refusal every
/// request for it gets until the entry is too old to trust.
type Outcome = Result<Arc<Prepared>, Arc<ApiError>>;

/// Prepared minters and refusals by `Key` (see the module docs).
pub struct Minters {
    cache: Mutex<Lru<Key, Outcome>>,
    max_age: Duration,
    meter: BatchMeter,
}

impl Minters {
    /// An empty cache of at most `capacity` minters, each trusted for
    /// `max_age`, whose batchers count their calls with `meter`.
    pub fn new(capacity: usize, max_age: Duration, meter: BatchMeter) -> Self {
        Self {
            cache: Mutex::new(Lru::new(capacity)),
            max_age,
            meter,
        }
    }

    /// The minter of `served` through `policy`, with `prefix` (default: the
    /// counter's own). A prefix the counter does not own, or another counter
    /// owns too, is a conflict; one the policy refuses is a bad request; a
    /// policy that cannot serve the counter makes the counter unservable;
    /// nothing is consumed either way, and the refusal is kept as long as a
    /// minter would be.
    pub async fn get(
        &self,
        served: &Served,
        policy: Policy,
        prefix: Option<&str>,
        slots: &PolicySlots,
    ) -> Result<Arc<Prepared>, ApiError> {
        let key = (
            policy.sha256().to_string(),
            served.state.name.clone(),
            prefix.map(str::to_string),
        );
        let cached = self.lock().get(&key);
        if let Some((outcome, when)) = &cached {
            if when.elapsed() <= self.max_age {
                return outcome.clone().map_err(ApiError::Repeated);
            }
        }
        let database = served.sequence.database();
        if let Some((Ok(prepared), _)) = &cached {
            // Too old to trust: is its prefix still the counter's alone? One
            // lookup says so when it is (the policy's checks cannot have
            // changed: same policy, same counter shape). A counter keeps its
            // default while it owns it, so a default still owned is still
            // the default.
            let owners = prefixes::owners(&database, prepared.minter.prefix()).await?;
            if owners == [served.state.name.as_str()] {
                self.lock().insert(key, Ok(prepared.clone()));
                return Ok(prepared.clone());
            }
        }
        // The counter as it is now: its prefixes, and so its default, may
        // have changed since the minter was prepared. Just opened, it was
        // read a moment ago.
        let current = if cached.is_none() && served.opened_at.elapsed() <= self.max_age {
            served.state.clone()
        } else {
            served.sequence.state().await?
        };
        let chosen = prefix
            .unwrap_or_else(|| current.default_prefix())
            .to_string();
        // New, refused before, no longer the counter's alone, or the
        // counter's default is another prefix now (its old one was removed):
        // prepared afresh, which names what is wrong.
        let outcome = self.prepare(served, current, policy, chosen, slots).await;
        match outcome {
            Ok(prepared) => {
                self.lock().insert(key, Ok(prepared.clone()));
                Ok(prepared)
            }
            Err(refusal) if refusal.is_lasting_refusal() => {
                let refusal = Arc::new(refusal);
                self.lock().insert(key, Err(refusal.clone()));
                Err(ApiError::Repeated(refusal))
            }
            Err(failure) => {
                // The database or the server failed: the next request tries
                // again rather than meet a stale answer.
                self.lock().remove(&key);
                Err(failure)
            }
        }
    }

    /// Prepares the minter of `served` as it is now (`current`) with
    /// `chosen`: ownership, the counter's rule, in the core's one place
    /// (`prefixes::check_use`: the counter owns the prefix, then one lookup
    /// by index says no other does), and the policy's checks off the
    /// executor (none if the policy has accepted this prefix for a counter
    /// of this shape before). The lookup and the policy's checks run at
    /// once, as neither consumes or writes anything; a failed ownership
    /// check is the answer whatever the policy's checks found.
    async fn prepare(
        &self,
        served: &Served,
        current: idmint::sequence::CounterState,
        policy: Policy,
        chosen: String,
        slots: &PolicySlots,
    ) -> Result<Arc<Prepared>, ApiError> {
        prefixes::check_owned(&current, &chosen)?;
        let database = served.sequence.database();
        let alone = prefixes::check_alone(&database, &current, &chosen);
        let sequence = served.sequence.clone();
        let (state, prefix) = (current.clone(), chosen.clone());
        let policy_checks = async move {
            let slot = slots.acquire().await?;
            run_blocking(slot, move || {
                Minter::checked(sequence, state, policy, prefix, Arc::new(SystemClock))
                    .map_err(Box::new)
            })
            .await
        };
        let (alone, minter) = tokio::join!(alone, policy_checks);
        alone?;
        let minter = minter?.map_err(|error| match *error {
            idmint::Error::Policy(PolicyError::Format(refusal)) => {
                ApiError::BadRequest(format!("the policy refuses the prefix: {refusal}"))
            }
            other => other.into(),
        })?;
        Ok(Arc::new(Prepared::new(minter, self.meter.clone())))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Lru<Key, Outcome>> {
        // A poisoned cache is still a valid cache: no update panics halfway.
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A map of at most `capacity` entries that evicts the least recently used
/// one, each entry with the time it was inserted or last refreshed.
struct Lru<K, V> {
    entries: HashMap<K, Entry<V>>,
    capacity: usize,
    clock: u64,
}

struct Entry<V> {
    value: V,
    used: u64,
    refreshed: Instant,
}

impl<K: Hash + Eq + Clone, V: Clone> Lru<K, V> {
    fn new(capacity: usize) -> Self {
        Self {
            entries: HashMap::new(),
            capacity: capacity.max(1),
            clock: 0,
        }
    }

    /// The value of `key` and when it was inserted or refreshed, marking it
    /// used.
    fn get(&mut self, key: &K) -> Option<(V, Instant)> {
        self.clock += 1;
        let entry = self.entries.get_mut(key)?;
        entry.used = self.clock;
        Some((entry.value.clone(), entry.refreshed))
    }

    /// Forgets `key`.
    fn remove(&mut self, key: &K) {
        self.entries.remove(key);
    }

    /// Inserts `value` under `key`; at capacity, the least recently used
    /// entry goes first (a scan: eviction only happens when a new key comes).
    fn insert(&mut self, key: K, value: V) {
        self.clock += 1;
        if !self.entries.contains_key(&key) && self.entries.len() >= self.capacity {
            if let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, entry)| entry.used)
                .map(|(key, _)| key.clone())
            {
                self.entries.remove(&oldest);
            }
        }
        self.entries.insert(
            key,
            Entry {
                value,
                used: self.clock,
                refreshed: Instant::now(),
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_entry_is_evicted() {
        let mut lru = Lru::new(3);
        for key in ["a", "b", "c"] {
            lru.insert(key, key.to_uppercase());
        }
        // "a" is used, so "b" is now the least recently used.
        assert_eq!(lru.get(&"a").unwrap().0, "A");
        lru.insert("d", "D".to_string());
        assert!(lru.get(&"b").is_none(), "b should have been evicted");
        for key in ["a", "c", "d"] {
            assert!(lru.get(&key).is_some(), "{key} was evicted");
        }
        // Replacing a key evicts nothing.
        lru.insert("a", "A2".to_string());
        assert_eq!(lru.entries.len(), 3);
        assert_eq!(lru.get(&"a").unwrap().0, "A2");
    }

    #[test]
    fn inserting_again_refreshes_the_time_and_the_value() {
        let mut lru = Lru::new(2);
        lru.insert("a", 1);
        let (_, first) = lru.get(&"a").unwrap();
        lru.insert("a", 2);
        let (value, second) = lru.get(&"a").unwrap();
        assert_eq!(value, 2);
        assert!(second >= first);
        lru.remove(&"a");
        assert!(lru.get(&"a").is_none());
    }
}
