//! [`Minters`]: the [`Minter`] of each (policy, counter, prefix) a server
//! has formatted IDs for, with the [`Batcher`] its policy calls go through.
//! Preparing a minter runs the checks that must pass
//! before a value is handed out (the counter owns the prefix and no other
//! counter does; the policy accepts the prefix and can serve the counter: a
//! few policy calls, run on the blocking pool with a policy slot); keeping
//! it makes those checks once per policy rather than once per request. A
//! swapped-in policy has another SHA-256, so its minters are prepared afresh
//! on their first request.
//!
//! What a new minter's first request waits for: the counter's document
//! (read when the counter was opened), then the lookup of the prefix's
//! other owners beside the rest: the policy's checks (no database, but
//! for a snowflake counter made before tags, given its tag first), then
//! the request's take ([`Minters::take`]). Neither side changes what the
//! other finds, and no value is handed out before the lookup has said the
//! prefix is the counter's alone; when it is not (two counters own the
//! prefix, which only documents without declared prefixes can bring about,
//! and which `idmint status` reports), the values that take consumed are
//! dropped unused: a gap, never a repeat. Every other refusal comes before
//! any value is taken.
//!
//! Prefixes come from requests, so their number is the clients' to choose:
//! the cache holds at most `Limits::max_minters` and evicts the least
//! recently used. A prepared minter is trusted for `Limits::minter_max_age`;
//! after that its prefix's ownership is checked again, beside the take as
//! above (one lookup by index: the counters that own it are this one
//! alone), so a prefix removed from a counter stops being served within that
//! age, and a request for the counter's default gets its new default (the
//! next prefix it owns) rather than the removed one: the minter is prepared
//! afresh and the values taken beside the lookup are dropped. A counter's
//! first minter is prepared from the document its opening read, if that was
//! within the same age. The policy's checks are not made again: the policy
//! has not changed (its SHA-256 is in the key) and remembers what it
//! accepted.
//!
//! A snowflake counter that does not own the empty prefix may format IDs
//! without one with a policy that writes its tag into each (a standard ID:
//! the core's `Namespace::Tag`): then no prefix is checked, the policy's
//! checks include reading the tag back, and an aged minter is trusted again
//! once the counter, read again by its name, still has the same tag (a
//! counter deleted and made again under its name has another).
//!
//! A refusal (a prefix not owned or refused, a policy that cannot serve the
//! counter) is kept in the same place for the same age: asking again costs
//! what an answer from a prepared minter costs, so refused requests cannot
//! keep the server or the database busy. A failure of the database or the
//! server is not kept.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use idmint::minter::{tagged, Minter, Namespace};
use idmint::parts::Stamp;
use idmint::policy::{Policy, PolicyError};
use idmint::sequence::{prefixes, CounterState, Sequence, SequenceError, SystemClock};
use mongodb::Database;

use super::batcher::{BatchMeter, Batcher};
use super::error::ApiError;
use super::pool::Served;
use super::slots::{run_blocking, PolicySlot, PolicySlots};

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

/// What a request's take came to ([`Minters::take`]).
pub struct Taken {
    /// The minter the values came from, with its batcher.
    pub prepared: Arc<Prepared>,
    /// The values, in the order they were issued.
    pub stamps: Vec<Stamp>,
    /// The policy slot the request formats them with.
    pub slot: PolicySlot,
}

/// What [`Minters::find`] found for a request.
enum Found {
    /// A minter kept from before; with `aged`, too old to trust until the
    /// lookup it names has passed.
    Kept {
        prepared: Arc<Prepared>,
        aged: Option<Box<Aged>>,
    },
    /// Nothing to trust: a minter to prepare for the counter as it is now
    /// (boxed: a counter's state is large beside a kept minter).
    Fresh(Box<Fresh>),
}

/// A kept minter past its age: trusted again once the counter is still its
/// prefix's only owner (a counter keeps its default while it owns it, so a
/// default still owned is still the default), or for IDs keyed by the
/// counter's tag, still has that tag; prepared afresh otherwise.
struct Aged {
    key: Key,
    sequence: Sequence,
    counter: String,
}

/// What preparing a minter afresh starts from.
struct Fresh {
    key: Key,
    database: Database,
    /// The counter as it is now.
    current: CounterState,
    /// The prefix: the one asked for, or the counter's default now.
    chosen: String,
}

impl Aged {
    /// Runs `work` beside the lookup, and hands its result back if the
    /// minter may serve again (kept again then); `None` if it is stale
    /// (forgotten then), whatever `work` did.
    async fn beside<T>(
        self,
        minters: &Minters,
        prepared: &Arc<Prepared>,
        work: impl Future<Output = Result<T, ApiError>>,
    ) -> Result<Option<T>, ApiError> {
        let still = self.still_serves(&prepared.minter);
        let (still, result) = tokio::join!(still, work);
        if still? {
            minters.lock().insert(self.key, Ok(prepared.clone()));
            Ok(Some(result?))
        } else {
            minters.lock().remove(&self.key);
            Ok(None)
        }
    }

    /// Whether `minter` may serve again: what keeps its IDs apart from
    /// other counters' holds as it did when it was prepared.
    async fn still_serves(&self, minter: &Minter) -> Result<bool, SequenceError> {
        let prepared = minter.counter();
        match Namespace::of(minter.policy(), prepared, minter.prefix()) {
            Namespace::Prefix => {
                let owners = prefixes::owners(&self.sequence.database(), minter.prefix()).await?;
                Ok(owners == [self.counter.as_str()])
            }
            Namespace::Tag => {
                let now = self.sequence.state().await?;
                Ok(
                    Namespace::of(minter.policy(), &now, minter.prefix()) == Namespace::Tag
                        && now.counter_tag() == prepared.counter_tag(),
                )
            }
        }
    }
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

    /// Takes `count` values of `served` for a request, through `policy`
    /// with `prefix` (default: the counter's own): finds the minter, lets
    /// `admit` refuse its prefix (the caller's rights), takes a policy slot
    /// to format with, then takes the values. A minter prepared afresh, or
    /// kept past its age, needs the lookup of its prefix's owners, which runs
    /// beside all that (see the module docs). A prefix the counter does not
    /// own, or another counter owns too, is a conflict; one the policy
    /// refuses is a bad request; a policy that cannot serve the counter makes
    /// the counter unservable; the refusal is kept as long as a minter would
    /// be. Every refusal but the lookup's comes before any value is taken;
    /// the lookup's comes before any is handed back.
    pub async fn take(
        &self,
        served: &Served,
        policy: Policy,
        prefix: Option<&str>,
        slots: &PolicySlots,
        count: usize,
        admit: impl Fn(&Minter) -> Result<(), ApiError>,
    ) -> Result<Taken, ApiError> {
        let mut stale = false;
        loop {
            let (prepared, aged) = match self.find(served, &policy, prefix, stale).await? {
                Found::Kept { prepared, aged } => (prepared, aged),
                Found::Fresh(fresh) => {
                    return self
                        .prepare_and_take(served, policy, slots, count, &admit, *fresh)
                        .await
                }
            };
            let admitted = admit(&prepared.minter);
            let Some(aged) = aged else {
                admitted?;
                return take_with(prepared, slots, count).await;
            };
            // An aged minter's lookup decides whether it serves; if it does
            // not (its prefix is no longer the counter's alone, or no longer
            // its default, whose successor the caller may use), it is found
            // again, prepared afresh.
            if let Err(refused) = admitted {
                match aged.beside(self, &prepared, async { Ok(()) }).await? {
                    Some(()) => return Err(refused),
                    None => stale = true,
                }
                continue;
            }
            let work = take_with(prepared.clone(), slots, count);
            match aged.beside(self, &prepared, work).await? {
                Some(taken) => return Ok(taken),
                None => stale = true,
            }
        }
    }

    /// What the cache holds for (`policy`, `served`, `prefix`), or what
    /// preparing it afresh needs: the counter as it is now (read again
    /// unless it was opened within the age a minter is trusted and nothing
    /// was kept for it, or just now found `stale`), its default prefix if
    /// none was asked for.
    async fn find(
        &self,
        served: &Served,
        policy: &Policy,
        prefix: Option<&str>,
        stale: bool,
    ) -> Result<Found, ApiError> {
        let key = (
            policy.sha256().to_string(),
            served.state.name.clone(),
            prefix.map(str::to_string),
        );
        let cached = self.lock().get(&key);
        // The database handle is made only where a lookup needs it, not on
        // a trusted minter's path.
        match cached {
            Some((outcome, when)) if when.elapsed() <= self.max_age => outcome
                .map(|prepared| Found::Kept {
                    prepared,
                    aged: None,
                })
                .map_err(ApiError::Repeated),
            // Too old to trust: the policy's checks cannot have changed
            // (same policy, same counter shape), its ownership may have.
            Some((Ok(prepared), _)) => Ok(Found::Kept {
                prepared,
                aged: Some(Box::new(Aged {
                    key,
                    sequence: served.sequence.clone(),
                    counter: served.state.name.clone(),
                })),
            }),
            // Nothing, and the counter opened within the age: read a moment
            // ago, and so prepared from what its opening read.
            None if !stale && served.opened_at.elapsed() <= self.max_age => {
                let current = served.state.clone();
                Ok(Found::Fresh(Box::new(fresh(key, served, current, prefix))))
            }
            // A refusal too old to trust, a minter just found stale, or a
            // counter opened long ago: prepared afresh from the counter as
            // it is now, which names what is wrong.
            Some((Err(_), _)) | None => {
                let current = served.sequence.state().await?;
                Ok(Found::Fresh(Box::new(fresh(key, served, current, prefix))))
            }
        }
    }

    /// Prepares the minter of `fresh` and takes `count` values from it,
    /// with the lookup of its prefix's other owners beside: the counter
    /// owns the prefix (the core's rule, `prefixes::check_owned`), the
    /// policy's checks off the executor (none if the policy has accepted
    /// this prefix for a counter of this shape before), `admit`, a policy
    /// slot, then the take. A failed lookup is the answer whatever the rest
    /// found, and then the values taken are dropped.
    async fn prepare_and_take(
        &self,
        served: &Served,
        policy: Policy,
        slots: &PolicySlots,
        count: usize,
        admit: &impl Fn(&Minter) -> Result<(), ApiError>,
        fresh: Fresh,
    ) -> Result<Taken, ApiError> {
        let Fresh {
            key,
            database,
            current,
            chosen,
        } = fresh;
        let namespace = Namespace::of(&policy, &current, &chosen);
        if namespace == Namespace::Prefix {
            if let Err(refusal) = prefixes::check_owned(&current, &chosen) {
                return Err(self.refused(key, refusal.into()));
            }
        }
        // IDs keyed by the counter's tag use no prefix: the policy's checks
        // read the tag back instead.
        let alone = async {
            match namespace {
                Namespace::Prefix => prefixes::check_alone(&database, &current, &chosen).await,
                Namespace::Tag => Ok(()),
            }
        };
        let work = async {
            let prepared = self
                .prepare(served, &current, policy, chosen.clone(), slots)
                .await?;
            let taken = match admit(&prepared.minter) {
                Ok(()) => take_with(prepared.clone(), slots, count).await,
                Err(refused) => Err(refused),
            };
            Ok::<_, ApiError>((prepared, taken))
        };
        let (alone, work) = tokio::join!(alone, work);
        if let Err(refusal) = alone {
            return Err(self.refused(key, refusal.into()));
        }
        match work {
            Ok((prepared, taken)) => {
                self.lock().insert(key, Ok(prepared));
                taken
            }
            Err(refusal) => Err(self.refused(key, refusal)),
        }
    }

    /// Keeps `error` as the answer to `key` if it is a lasting refusal, and
    /// forgets `key` if it is a failure of the database or the server (the
    /// next request tries again rather than meet a stale answer): what the
    /// request is answered.
    fn refused(&self, key: Key, error: ApiError) -> ApiError {
        if error.is_lasting_refusal() {
            let refusal = Arc::new(error);
            self.lock().insert(key, Err(refusal.clone()));
            ApiError::Repeated(refusal)
        } else {
            self.lock().remove(&key);
            error
        }
    }

    /// Prepares the minter of `served` as it is now (`current`) with
    /// `chosen`: a snowflake counter made before tags given its tag if the
    /// policy receives it ([`tagged`]), then the policy's checks, off the
    /// executor.
    async fn prepare(
        &self,
        served: &Served,
        current: &CounterState,
        policy: Policy,
        chosen: String,
        slots: &PolicySlots,
    ) -> Result<Arc<Prepared>, ApiError> {
        let sequence = served.sequence.clone();
        let state = tagged(&sequence, current.clone(), &policy).await?;
        let slot = slots.acquire().await?;
        let minter = run_blocking(slot, move || {
            Minter::checked(sequence, state, policy, chosen, Arc::new(SystemClock))
                .map_err(Box::new)
        })
        .await?
        .map_err(|error| match *error {
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

/// What preparing `key` afresh starts from: `current` (the counter of
/// `served` as it is now), and the prefix asked for or its default.
fn fresh(key: Key, served: &Served, current: CounterState, prefix: Option<&str>) -> Fresh {
    let chosen = prefix
        .unwrap_or_else(|| current.default_prefix())
        .to_string();
    Fresh {
        key,
        database: served.sequence.database(),
        current,
        chosen,
    }
}

/// Takes a policy slot, then `count` values of `prepared`: a request that
/// gets no slot is answered 503 having taken nothing.
async fn take_with(
    prepared: Arc<Prepared>,
    slots: &PolicySlots,
    count: usize,
) -> Result<Taken, ApiError> {
    let slot = slots.acquire().await?;
    let stamps = prepared.minter.next_stamps(count).await?;
    Ok(Taken {
        prepared,
        stamps,
        slot,
    })
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
