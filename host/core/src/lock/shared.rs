//! Shared holders of a lock: the permits of a semaphore and the readers of
//! a read-write lock, on the same document as its exclusive holder.
//!
//! A shared holding is an entry of the document's `shared` array,
//! `{owner, ticket, token, expiresAt, acquiredAt}`: its own lease, with its
//! own fencing token, taken from the same `token` counter as an exclusive
//! holding's, so tokens grow across every holder of the name, whatever the
//! shape. A call asks for one of `permits` places: a semaphore's N, or a
//! read-write lock's readers ([`READERS`]). The rules, decided on the
//! server in one write each:
//!
//! - **A shared call is admitted** when no exclusive lease is live, fewer
//!   than its `permits` shared leases are live, and it is first in the
//!   lock's line (or nobody waits). Otherwise it waits in the same line as
//!   exclusive calls (an entry marked `shared`).
//! - **An exclusive call** (a writer, or `lock run` without `--shared`) is
//!   admitted only when no shared lease is live either; a release by an
//!   exclusive holder hands the lock over only to an exclusive waiter first
//!   in line (a shared one takes its place itself).
//! - **Fairness: first come, first served.** Nobody is admitted ahead of a
//!   live entry of the line, so a writer waiting is not starved by readers
//!   who came after it: they queue behind it. Readers that come while
//!   readers hold and nobody waits are admitted at once.
//! - **Changing N is safe.** Each call brings its own `permits`; a call
//!   with a lower N than the holders were admitted under waits until fewer
//!   than its N hold, and admits no one meanwhile (it is first in line).
//! - **A scheduled job's place** ([`Lock::acquire_shared_at_least`]) is
//!   taken at least `at_least` from its `acquiredAt`, released or not.
//! - **A holder that dies frees its place** when its lease ends, by the
//!   server's clock, as an exclusive lease does; renewals and releases
//!   match its owner and token and a live lease, so a holder that lost its
//!   place can neither extend nor free another's.

use std::time::Duration;

use mongodb::bson::{doc, Bson, Document};

use super::document::well_formed_expr;
use super::error::check_range;
use super::holders::live;
use super::queue;
use super::wait::Polls;
use super::{Lease, Lock, LockError, LockState, WaitOptions, MAX_TTL, MAX_WAIT, MIN_TTL};
use crate::mongo::server_now_plus;
use crate::random;

/// The places of a read-write lock's readers: as many as anyone needs.
pub const READERS: u32 = 1_000_000;

/// The most permits a semaphore has.
pub const MAX_PERMITS: u32 = READERS;

/// The acquire pipeline of a shared call `ticket` of `owner` for `ttl`,
/// among `permits`; with `wait` (its refresh), a busy answer puts it in
/// line. See the module docs.
fn acquire_pipeline(
    owner: &str,
    ticket: &str,
    ttl: Duration,
    permits: u32,
    wait: Option<Duration>,
) -> Vec<Document> {
    let ttl_ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
    let exclusive_live = doc! { "$and": [
        { "$eq": [{ "$type": "$owner" }, "string"] },
        { "$eq": [{ "$type": "$expiresAt" }, "date"] },
        { "$gt": ["$expiresAt", "$$NOW"] },
    ]};
    let tickets = doc! { "$map": { "input": "$$s", "in": "$$this.ticket" } };
    // Admitted already (an attempt whose answer was lost): extended.
    let mine = doc! { "$in": [ticket, tickets] };
    let extended = doc! { "$mergeObjects": ["$$ROOT", {
        "shared": { "$map": { "input": "$$s", "in": { "$cond": [
            { "$eq": ["$$this.ticket", ticket] },
            { "$mergeObjects": ["$$this", { "expiresAt": { "$max": [
                "$$this.expiresAt", server_now_plus(ttl_ms),
            ]}}]},
            "$$this",
        ]}}},
    }]};
    let admitted = doc! { "$and": [
        { "$not": [exclusive_live] },
        { "$lt": [{ "$size": "$$s" }, i64::from(permits)] },
        queue::turn(ticket),
    ]};
    let token = doc! { "$add": [{ "$ifNull": ["$token", 0_i64] }, 1_i64] };
    let taken = doc! { "$mergeObjects": ["$$ROOT", {
        "token": token.clone(),
        "shared": { "$concatArrays": ["$$s", [{
            "owner": owner,
            "ticket": ticket,
            "token": token,
            "expiresAt": server_now_plus(ttl_ms),
            "acquiredAt": "$$NOW",
        }]]},
        "queue": queue::without(ticket),
    }]};
    let busy = match wait {
        Some(refresh) => {
            Bson::Document(queue::enqueued_shared(owner, ticket, ttl, refresh, permits))
        }
        None => Bson::String("$$ROOT".into()),
    };
    let decided = doc! { "$cond": [mine, extended, { "$cond": [admitted, taken, busy] }] };
    let mut vars = queue::vars();
    vars.insert("s", live());
    vec![doc! { "$replaceWith": { "$cond": [
        well_formed_expr(),
        { "$let": { "vars": vars, "in": decided } },
        "$$ROOT",
    ]}}]
}

impl Lock {
    /// One attempt at a shared place among `permits` (a semaphore's N, or
    /// [`READERS`] for a read-write lock's reader), for `ttl`; never waits.
    pub async fn try_acquire_shared(
        &self,
        ttl: Duration,
        permits: u32,
    ) -> Result<Option<Lease>, LockError> {
        let ttl = check_range("lease ttl", ttl, MIN_TTL, MAX_TTL)?;
        let permits = check_permits(permits)?;
        let ticket = random::random_token();
        Ok(self.attempt_shared(&ticket, ttl, permits, None).await?.ok())
    }

    /// Takes a shared place among `permits` for a scheduled job, as
    /// [`Lock::acquire_at_least`] takes the exclusive one: the place is held
    /// at least `at_least` from its acquisition by the server's clock,
    /// released or not, its holder killed or not.
    pub async fn acquire_shared_at_least(
        &self,
        ttl: Duration,
        at_least: Duration,
        permits: u32,
        options: &WaitOptions,
    ) -> Result<Lease, LockError> {
        let at_least = check_range("at least", at_least, Duration::ZERO, MAX_TTL)?;
        let lease = self
            .acquire_shared(ttl.max(at_least), permits, options)
            .await?;
        Ok(lease.held_at_least(ttl, at_least))
    }

    /// Takes a shared place among `permits` (see the module docs), waiting
    /// in the lock's line up to `options.wait`; [`LockError::Busy`] when the
    /// deadline passes first (the call then leaves the line).
    pub async fn acquire_shared(
        &self,
        ttl: Duration,
        permits: u32,
        options: &WaitOptions,
    ) -> Result<Lease, LockError> {
        check_range("wait", options.wait, Duration::ZERO, MAX_WAIT)?;
        let ttl = check_range("lease ttl", ttl, MIN_TTL, MAX_TTL)?;
        let permits = check_permits(permits)?;
        let ticket = random::random_token();
        let busy = |state: LockState| LockError::Busy {
            name: self.name().clone(),
            token: state.token,
        };
        if options.wait.is_zero() {
            return self
                .attempt_shared(&ticket, ttl, permits, None)
                .await?
                .map_err(busy);
        }
        let deadline = tokio::time::Instant::now() + options.wait;
        let mut events = self.events(options).await;
        let refresh = options.refreshes();
        let mut polls = Polls::new(options);
        loop {
            let found = match self
                .attempt_shared(&ticket, ttl, permits, Some(refresh))
                .await?
            {
                Ok(lease) => return Ok(lease),
                Err(found) => found,
            };
            let now = tokio::time::Instant::now();
            let wake = match &events {
                Some(_) => now + refresh,
                None => now + polls.next(),
            }
            .min(deadline);
            let stopped = now >= deadline
                || match events.as_mut() {
                    Some(events) => tokio::select! {
                        biased;
                        _ = options.stopped() => true,
                        _ = events.recv() => false,
                        _ = tokio::time::sleep_until(wake) => false,
                    },
                    None => tokio::select! {
                        biased;
                        _ = options.stopped() => true,
                        _ = tokio::time::sleep_until(wake) => false,
                    },
                };
            if stopped {
                let _ = self.leave(&ticket).await;
                return Err(busy(found));
            }
        }
    }

    /// One shared acquire by call `ticket`: the place taken, or the lock as
    /// it was found busy.
    async fn attempt_shared(
        &self,
        ticket: &str,
        ttl: Duration,
        permits: u32,
        wait: Option<Duration>,
    ) -> Result<Result<Lease, LockState>, LockError> {
        let pipeline = acquire_pipeline(self.owner(), ticket, ttl, permits, wait);
        let (document, sent) = self.upsert(pipeline).await?;
        let state = LockState::from_document(self.name(), &document)?;
        let held = state
            .shared
            .iter()
            .find(|holder| holder.ticket == ticket && holder.owner == self.owner())
            .map(|holder| holder.token);
        Ok(match held {
            Some(token) => Ok(self.shared_lease(token, ttl, sent)),
            None => Err(state),
        })
    }
}

fn check_permits(permits: u32) -> Result<u32, LockError> {
    if (1..=MAX_PERMITS).contains(&permits) {
        Ok(permits)
    } else {
        Err(LockError::InvalidPermits { permits })
    }
}
