//! The handles of a lock: [`Lock`] (one name, one owner), [`Locks`] (the
//! handles of one process, which share its cohorts) and [`Lease`] (a lock
//! held). Acquire, renew and release: one conditional update each, decided by the
//! server's clock, through the one lease primitive (`crate::lease`); what a
//! lock adds is its fencing token and its hold count (re-entrancy).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use mongodb::options::WriteConcern;
use mongodb::{Collection, Database};

use super::cohort::{Cohort, Cohorts, Held, Joined, Turn};
use super::document::{well_formed_expr, LOCK_FIELDS};
use super::error::check_range;
use super::holders::{self, Holding};
use super::queue;
use super::watch::{Subscription, Watchers};
use super::{LockError, LockName, LockState, LOCKS_COLLECTION, MAX_TTL, MIN_TTL};
use crate::lease::{self, Acquire, Deadline, LeaseStore};
use crate::mongo::durable_write_concern;
use crate::random;

/// A handle on one lock for one owner. Acquisitions through the same handle
/// (or handles made with the same owner token) are re-entrant.
#[derive(Debug, Clone)]
pub struct Lock {
    store: LeaseStore,
    name: LockName,
    owner: String,
    write_concern: WriteConcern,
    watchers: Arc<Watchers>,
    cohorts: Arc<Cohorts<Lease>>,
}

/// The locks of one database as one process uses them: every handle made
/// here shares one change stream per lock name among its waiters (see
/// `watch`), and the blocking acquires of its handles wait for a lock as
/// one member of its line, a holder among them passing it straight to the
/// next (see `cohort`), where handles made apart ([`Lock::new`]) do
/// neither. Make one per process (it is cheap to clone) and take handles
/// from it.
#[derive(Debug, Clone)]
pub struct Locks {
    database: Database,
    watchers: Arc<Watchers>,
    cohorts: Arc<Cohorts<Lease>>,
}

impl Locks {
    /// The locks of `database`.
    pub fn new(database: &Database) -> Self {
        Self {
            database: database.clone(),
            watchers: Arc::default(),
            cohorts: Arc::default(),
        }
    }

    /// How many blocking acquires of lock `name` wait in this process
    /// behind a call of its own that holds the lock or waits in its stored
    /// line (they have no entry there; see `cohort`).
    pub fn queued(&self, name: &LockName) -> usize {
        self.cohorts.queued(name.as_str())
    }

    /// A handle on lock `name` with a fresh random owner token.
    pub fn lock(&self, name: LockName) -> Lock {
        self.lock_with_owner(name, random::random_token())
    }

    /// A handle on lock `name` whose holder others can tell by `label`
    /// (a host and process, a node's name: a leader's identity in `lock
    /// status`, [`LockState::label`]). The owner token is `label/` and a
    /// fresh random token, so two handles given one label are still two
    /// owners, never re-entering each other's lock. `label` is 1 to 128
    /// printable characters.
    pub fn lock_labelled(&self, name: LockName, label: &str) -> Result<Lock, LockError> {
        super::document::check_label(label)?;
        Ok(self.lock_with_owner(name, format!("{label}/{}", random::random_token())))
    }

    /// A handle on lock `name` with a given owner token (to share
    /// re-entrancy across handles).
    pub fn lock_with_owner(&self, name: LockName, owner: String) -> Lock {
        Lock {
            store: LeaseStore::new(self.database.collection(LOCKS_COLLECTION), LOCK_FIELDS),
            name,
            owner,
            write_concern: durable_write_concern(),
            watchers: self.watchers.clone(),
            cohorts: self.cohorts.clone(),
        }
    }
}

/// What [`Lock::try_acquire`] found.
#[derive(Debug)]
pub enum Acquired {
    /// The caller holds the lock now.
    Held(Lease),
    /// Someone else does; their state as it was.
    Busy(LockState),
}

/// A held lease. Release it with [`Lease::release`]; dropping it unreleased
/// leaves the lock held until its TTL runs out (and says so on stderr).
///
/// It fails closed: [`Lease::is_live`] is true only until its local
/// deadline ([`Lease::deadline`]), the moment the last acquire or renewal
/// that was acknowledged was *sent*, plus the TTL, less a tenth of it. The
/// server cannot end the lease before that, so work stopped by then never
/// overlaps the next holder's, whatever the network does.
#[derive(Debug)]
pub struct Lease {
    pub(super) lock: Lock,
    pub(super) token: i64,
    count: i64,
    pub(super) ttl: Duration,
    /// How long from its acquisition the lock stays held whenever it is
    /// released (a scheduled job's; zero: none).
    pub(super) at_least: Duration,
    /// A shared holding (a permit, a reader: `shared.rs`), not the
    /// exclusive one.
    pub(super) shared: bool,
    deadline: Deadline,
    /// Released, or handed over (`lease_id`): dropping it says nothing.
    pub(super) released: bool,
}

impl Lock {
    /// A handle on lock `name` in `database` with a fresh random owner
    /// token, sharing nothing with other handles ([`Locks`] makes handles
    /// that share their change streams).
    pub fn new(database: &Database, name: LockName) -> Self {
        Locks::new(database).lock(name)
    }

    /// A handle with a given owner token (to share re-entrancy across handles).
    pub fn with_owner(database: &Database, name: LockName, owner: String) -> Self {
        Locks::new(database).lock_with_owner(name, owner)
    }

    /// The lock's name.
    pub fn name(&self) -> &LockName {
        &self.name
    }

    /// This handle's owner token.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    pub(crate) fn collection(&self) -> &Collection<Document> {
        self.store.collection()
    }

    /// Who this handle's shared holdings are (`holders`).
    fn holding(&self) -> Holding<'_> {
        Holding {
            collection: self.collection(),
            name: &self.name,
            owner: &self.owner,
        }
    }

    /// The blocking acquires of this lock in the process (see `cohort`).
    pub(crate) fn cohort(&self) -> Arc<LockCohort> {
        self.cohorts.of(self.name.as_str())
    }

    /// Applies `pipeline` to the lock's document, made if missing (the
    /// lease store's upsert): the document after, and when the write was
    /// sent.
    pub(crate) async fn upsert(
        &self,
        pipeline: Vec<Document>,
    ) -> Result<(Document, Instant), LockError> {
        self.store
            .upsert(self.name.as_str(), pipeline)
            .await
            .map_err(|error| LockError::database(&self.name, error))?
            .ok_or_else(|| LockError::NotHeld(self.name.clone()))
    }

    /// The events on this lock's document, from the stream its `Locks`
    /// shares among its waiters; `None`: no change streams, poll.
    pub(crate) async fn subscribe(&self) -> Option<Subscription> {
        self.watchers
            .subscribe(self.collection(), self.name.as_str())
            .await
    }

    /// Who holds a lease: `owner` with fencing token `token`. A holder that
    /// lost its lease no longer matches it, so it can neither release nor
    /// extend the lock.
    fn holder(owner: &str, token: i64) -> Document {
        doc! { "owner": owner, "token": token }
    }

    /// One attempt: takes the lock if it is free or expired (a new fencing
    /// token), or again if this owner holds it (the hold count grows, and
    /// the lease ends at the later of its current end and `ttl` from now).
    ///
    /// A free lock with waiters in line (see [`queue`]) is
    /// theirs first: this attempt then finds it busy.
    pub async fn try_acquire(&self, ttl: Duration) -> Result<Acquired, LockError> {
        let ttl = check_range("lease ttl", ttl, MIN_TTL, MAX_TTL)?;
        let ticket = random::random_token();
        Ok(self.attempt(&ticket, ttl, None).await?.0)
    }

    /// One acquire by call `ticket`; with `wait` (its refresh interval), a
    /// busy answer leaves the call in line (its entry added or refreshed). Also returns when the
    /// write was sent (the start of a handed-over lease's local deadline).
    pub(crate) async fn attempt(
        &self,
        ticket: &str,
        ttl: Duration,
        wait: Option<Duration>,
    ) -> Result<(Acquired, Instant), LockError> {
        let acquisition = self
            .store
            .acquire(
                self.name.as_str(),
                &self.owner,
                ttl,
                &acquire_fields(&self.owner, ticket, ttl, wait),
            )
            .await
            .map_err(|error| LockError::database(&self.name, error))?
            .ok_or_else(|| LockError::NotHeld(self.name.clone()))?;
        let state = LockState::from_document(&self.name, &acquisition.document)?;
        let acquired = if acquisition.held {
            Acquired::Held(self.lease(&state, ttl, acquisition.sent))
        } else {
            Acquired::Busy(state)
        };
        Ok((acquired, acquisition.sent))
    }

    /// The lease of holding `state` for `ttl`, proved by a write sent at
    /// `sent`.
    pub(crate) fn lease(&self, state: &LockState, ttl: Duration, sent: Instant) -> Lease {
        self.exclusive_lease(state.token, state.count, ttl, sent)
    }

    /// The lease of exclusive holding `token` with `count` holds, for
    /// `ttl`, proved by a write sent at `sent`.
    pub(crate) fn exclusive_lease(
        &self,
        token: i64,
        count: i64,
        ttl: Duration,
        sent: Instant,
    ) -> Lease {
        Lease {
            lock: self.clone(),
            token,
            count,
            ttl,
            at_least: Duration::ZERO,
            shared: false,
            deadline: Deadline::starting(lease::deadline_after(sent, ttl)),
            released: false,
        }
    }

    /// The lease of shared holding `token` for `ttl`, proved by a write
    /// sent at `sent`.
    pub(crate) fn shared_lease(&self, token: i64, ttl: Duration, sent: Instant) -> Lease {
        Lease {
            lock: self.clone(),
            token,
            count: 1,
            ttl,
            at_least: Duration::ZERO,
            shared: true,
            deadline: Deadline::starting(lease::deadline_after(sent, ttl)),
            released: false,
        }
    }

    /// Takes call `ticket` out of line (a waiter giving up); best effort.
    pub(crate) async fn leave(&self, ticket: &str) -> Result<(), LockError> {
        self.collection()
            .update_one(
                doc! { "_id": self.name.as_str() },
                queue::leave_pipeline(ticket),
            )
            .write_concern(self.write_concern.clone())
            .await
            .map_err(|error| LockError::database(&self.name, error))?;
        Ok(())
    }

    /// The lock's state, with the time left by the server's clock; `None`
    /// when it was never taken.
    pub async fn status(&self) -> Result<Option<LockState>, LockError> {
        let states = status_all(self.collection(), Some(&self.name)).await?;
        Ok(states.into_iter().next())
    }

    /// Clears whoever holds the lock (a DBA removing a dead holder) and
    /// returns the state removed. The fencing token is kept, so the next
    /// holder still gets a higher one.
    pub async fn force_release(&self) -> Result<LockState, LockError> {
        let Some(state) = self.status().await? else {
            return Err(LockError::NotHeld(self.name.clone()));
        };
        let Some(owner) = state.owner.clone() else {
            return Err(LockError::NotHeld(self.name.clone()));
        };
        let mut filter = doc! { "_id": self.name.as_str() };
        filter.extend(Self::holder(&owner, state.token));
        let result = self
            .collection()
            .update_one(
                filter,
                doc! { "$set": { "owner": Bson::Null, "ticket": Bson::Null, "expiresAt": Bson::Null, "count": 0_i64 } },
            )
            .write_concern(self.write_concern.clone())
            .await
            .map_err(|error| LockError::database(&self.name, error))?;
        if result.matched_count == 0 {
            // It changed hands between the read and the update: nothing removed.
            return Err(LockError::Lost {
                name: self.name.clone(),
                token: state.token,
            });
        }
        Ok(state)
    }
}

/// Every lock (or the one named), read with the server's current time.
pub async fn status_all(
    collection: &Collection<Document>,
    name: Option<&LockName>,
) -> Result<Vec<LockState>, LockError> {
    let mut pipeline = Vec::new();
    if let Some(name) = name {
        pipeline.push(doc! { "$match": { "_id": name.as_str() } });
    }
    pipeline.push(doc! { "$addFields": { "serverNow": "$$NOW" } });
    pipeline.push(doc! { "$sort": { "_id": 1 } });
    let error_name = |n: Option<&LockName>| {
        n.cloned()
            .unwrap_or_else(|| LockName::new("locks").unwrap())
    };
    let documents: Vec<Document> = collection
        .aggregate(pipeline)
        .await
        .map_err(|e| LockError::database(&error_name(name), e))?
        .try_collect()
        .await
        .map_err(|e| LockError::database(&error_name(name), e))?;
    documents
        .iter()
        .map(|document| {
            let id = document.get_str("_id").unwrap_or_default();
            let lock_name = LockName::new(id).or_else(|_| LockName::new("invalid-name"))?;
            LockState::from_document(&lock_name, document)
        })
        .collect()
}

impl Lease {
    /// The fencing token: pass it to whatever the lock protects.
    pub fn token(&self) -> i64 {
        self.token
    }

    /// The hold count after this acquisition (1 for a first acquisition).
    pub fn count(&self) -> i64 {
        self.count
    }

    /// Whether it is a shared holding (a permit, a reader), not the
    /// exclusive one.
    pub fn is_shared(&self) -> bool {
        self.shared
    }

    /// The lease's TTL: what each renewal asks for.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// How long from its acquisition the lock stays held when released
    /// ([`Lock::acquire_at_least`]; zero for a lease taken otherwise).
    pub fn at_least(&self) -> Duration {
        self.at_least
    }

    /// This lease renewed for `ttl` and released after `at_least` (see
    /// [`Lock::acquire_at_least`]).
    pub(crate) fn held_at_least(mut self, ttl: Duration, at_least: Duration) -> Self {
        self.ttl = ttl;
        self.at_least = at_least;
        self
    }

    /// The lock this lease is on.
    pub fn lock(&self) -> &Lock {
        &self.lock
    }

    /// The local deadline: until then the lease is proved held (see
    /// [`Lease`]); `None` once it was found lost.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline.at()
    }

    /// Whether the lease is proved held now (its local deadline not passed).
    pub fn is_live(&self) -> bool {
        self.deadline.is_live()
    }

    pub(crate) fn deadline_handle(&self) -> &Deadline {
        &self.deadline
    }

    /// Extends the lease to TTL from now (server clock; never shortening
    /// it), and its local deadline with it. Fails with [`LockError::Lost`]
    /// once the lease has ended or changed hands.
    pub async fn renew(&self) -> Result<(), LockError> {
        let result = renew(
            &self.lock,
            self.token,
            self.ttl,
            &self.deadline,
            self.shared,
        )
        .await;
        if matches!(result, Err(LockError::Lost { .. })) {
            self.deadline.revoke();
        }
        result
    }

    /// Releases one hold; when none is left, the lock goes to the next
    /// blocking acquire waiting for it in this process (see `cohort`), or to
    /// the first in its stored line, or is freed. Returns the hold count
    /// left. Fails with [`LockError::Lost`] when the lock is no longer this
    /// owner's with this token, or its lease has ended by the server's
    /// clock (nothing is changed then).
    ///
    /// A lease taken with [`Lock::acquire_at_least`] released before its
    /// `at_least` has passed since it was acquired (by the server's clock)
    /// leaves the lock held by its owner until then, with no holds; it is
    /// then free as any lease that ended is, and nobody is handed it early.
    pub async fn release(mut self) -> Result<i64, LockError> {
        self.released = true;
        if self.shared {
            self.deadline.revoke();
            return match holders::release(&self.lock.holding(), self.token, self.at_least).await? {
                true => Ok(0),
                false => Err(LockError::Lost {
                    name: self.lock.name.clone(),
                    token: self.token,
                }),
            };
        }
        let lock = &self.lock;
        let cohort = lock.cohort();
        // A job's lease may stay held: no call of this process is handed it.
        let heir = if self.at_least.is_zero() {
            cohort.release_begins(&lock.owner, self.token)
        } else {
            None
        };
        let result = lock
            .store
            .release(
                lock.name.as_str(),
                &Lock::holder(&lock.owner, self.token),
                queue::release_pipeline(heir.as_ref().map(|heir| heir.heir()), self.at_least),
            )
            .await;
        self.deadline.revoke();
        let read = match result {
            Ok(Some((document, sent))) => {
                LockState::from_document(&lock.name, &document).map(|state| (state, sent))
            }
            Ok(None) => Err(LockError::Lost {
                name: lock.name.clone(),
                token: self.token,
            }),
            Err(error) => Err(LockError::database(&lock.name, error)),
        };
        let (state, sent) = match read {
            Ok(read) => read,
            Err(error) => {
                match heir {
                    Some(heir) => cohort.pass_failed(heir),
                    None => cohort.ended(&lock.owner, self.token),
                }
                return Err(error);
            }
        };
        let still_ours =
            state.owner.as_deref() == Some(lock.owner.as_str()) && state.token == self.token;
        if still_ours && state.count == 0 {
            // Held until `at_least` has passed: the process's waiters wait
            // in the stored line for it to end.
            cohort.ended(&lock.owner, self.token);
            return Ok(0);
        }
        if still_ours {
            // Holds left (re-entry): nothing passed on.
            cohort.kept(&lock.owner, self.token, heir);
            return Ok(state.count);
        }
        match heir {
            Some(heir) if state.is_held_by_call(heir.lock.owner(), &heir.ticket) => {
                let lease = heir.lock.lease(&state, heir.ttl, sent);
                cohort.passed(&heir.ticket, &lease, state.waiters > 0);
                heir.hand(lease);
            }
            Some(heir) => cohort.pass_failed(heir),
            None => cohort.ended(&lock.owner, self.token),
        }
        Ok(0)
    }
}

/// The cohorts of this module's locks (see `cohort`).
pub(crate) type LockCohort = Cohort<Lease>;
/// A turn in a [`LockCohort`].
pub(crate) type LockTurn = Turn<Lease>;
/// Joining a [`LockCohort`].
pub(crate) type LockJoined = Joined<Lease>;

impl Held for Lease {
    type Handle = Lock;

    fn owner_of(handle: &Lock) -> &str {
        handle.owner()
    }

    fn owner(&self) -> &str {
        self.lock.owner()
    }

    fn token(&self) -> i64 {
        self.token
    }

    fn deadline(&self) -> &Deadline {
        self.deadline_handle()
    }

    fn release_later(self) {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = self.release().await;
            });
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if !self.released {
            // Whoever waits for it in the process waits in the stored line
            // from now on, for the server to end the lease.
            if !self.shared {
                self.lock.cohort().ended(&self.lock.owner, self.token);
            }
            eprintln!(
                "idmint: warning: lease on lock '{}' (fencing token {}) dropped without release; \
                 it stays held until its TTL ends",
                self.lock.name, self.token
            );
        }
    }
}

/// One renewal of `lock`'s lease with fencing token `token`; on success the
/// local `deadline` moves to this attempt's send time plus the TTL, less
/// the margin.
pub(crate) async fn renew(
    lock: &Lock,
    token: i64,
    ttl: Duration,
    deadline: &Deadline,
    shared: bool,
) -> Result<(), LockError> {
    if shared {
        return match holders::renew(&lock.holding(), token, ttl).await? {
            Some(sent) => {
                deadline.extend(lease::deadline_after(sent, ttl));
                Ok(())
            }
            None => Err(LockError::Lost {
                name: lock.name.clone(),
                token,
            }),
        };
    }
    let renewed = lock
        .store
        .renew(
            lock.name.as_str(),
            &Lock::holder(&lock.owner, token),
            ttl,
            Document::new(),
        )
        .await
        .map_err(|error| LockError::database(&lock.name, error))?;
    match renewed {
        Some((_, sent)) => {
            deadline.extend(lease::deadline_after(sent, ttl));
            Ok(())
        }
        None => Err(LockError::Lost {
            name: lock.name.clone(),
            token,
        }),
    }
}

/// What a lock's acquisition by call `ticket` sets besides the owner and
/// the end: a fresh one the next fencing token, a hold count of 1, when,
/// and the call's ticket, and takes the call out of line; a re-entry one
/// more hold. A free lock is taken only in turn (the waiting line, see
/// `queue`); a busy answer with `wait` puts the call in line.
fn acquire_fields(owner: &str, ticket: &str, ttl: Duration, wait: Option<Duration>) -> Acquire {
    Acquire {
        well_formed: well_formed_expr(),
        fresh: doc! {
            "ticket": ticket,
            "token": { "$add": [{ "$ifNull": ["$token", 0_i64] }, 1_i64] },
            "count": 1_i64,
            "acquiredAt": "$$NOW",
            "queue": queue::without(ticket),
            "shared": "$$s",
        },
        again: Some(doc! {
            "count": { "$add": [{ "$ifNull": ["$count", 0_i64] }, 1_i64] },
        }),
        vars: Some({
            let mut vars = queue::vars();
            vars.insert("s", holders::live());
            vars
        }),
        claimed: Some(queue::claimed(owner, ticket)),
        // In turn, and with no shared holder (a reader, a permit) live.
        turn: Some(doc! { "$and": [queue::turn(ticket), holders::none_live()] }),
        ended: queue::freed(),
        busy: wait.map(|refresh| queue::enqueued(owner, ticket, ttl, refresh)),
    }
}

/// The acquire update of a call that does not wait (see the module docs);
/// the JavaScript twin `mongo-js/getLock.js` sends the same pipeline (its
/// calls never re-enter: each is a new owner, and never wait in line).
pub fn acquire_pipeline(owner: &str, ttl_ms: i64) -> Vec<Document> {
    lease::acquire_pipeline(
        &LOCK_FIELDS,
        owner,
        Duration::from_millis(ttl_ms.max(0) as u64),
        &acquire_fields(
            owner,
            owner,
            Duration::from_millis(ttl_ms.max(0) as u64),
            None,
        ),
    )
}
