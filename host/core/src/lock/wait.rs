//! Blocking acquire with a deadline, in line: a waiter that finds the lock
//! held joins its waiting line (`queue`), refreshes its place every
//! [`WaitOptions::refresh`], and is served in turn: a release hands the lock to the first
//! in line in the same write, and the waiter learns it from a change stream
//! on the lock's document (one per lock name per [`Locks`](super::Locks),
//! shared by its waiters: `watch`).
//! Without a change stream it learns it at its next refresh, which also
//! notices a lease that simply ran out (expiry writes nothing).
//!
//! Of the blocking acquires of one process for one lock, one waits in the
//! stored line at a time and the others in the process, where a holder
//! among them passes the lock straight on (`cohort`).

use std::sync::Arc;
use std::time::Duration;

use mongodb::bson::Document;
use mongodb::change_stream::event::ChangeStreamEvent;
use tokio::sync::broadcast;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::error::check_range;
use super::handles::{LockCohort as Cohort, LockJoined as Joined, LockTurn as Turn};
use super::queue::REFRESH;
use super::watch::Subscription;
use super::{Acquired, Lease, Lock, LockError, LockState};
use crate::random;

/// The longest wait accepted: one day.
pub const MAX_WAIT: Duration = Duration::from_secs(86_400);

/// How a blocking acquire waits.
#[derive(Debug, Clone)]
pub struct WaitOptions {
    /// How long to wait for the lock in all; zero tries once.
    pub wait: Duration,
    /// The first polling interval, without a change stream (doubled after
    /// every miss, jittered, at most `poll_max` and at most [`REFRESH`]).
    pub poll_min: Duration,
    /// The largest polling interval.
    pub poll_max: Duration,
    /// Wake on a change stream event for the lock (default: true).
    pub change_stream: bool,
    /// How often a waiter refreshes its place in line (default: [`REFRESH`],
    /// at least 100 ms); its place lapses after three refreshes missed.
    pub refresh: Duration,
    /// Ends the wait early, as its deadline would, once cancelled (default:
    /// none; [`WaitOptions::stop_on`]).
    pub stop: Option<CancellationToken>,
}

/// The polls of a waiter without a change stream: full jitter in
/// [interval/2, interval), the interval doubling from `poll_min` up to
/// `poll_max` and the refresh.
pub(crate) struct Polls {
    interval: Duration,
    most: Duration,
}

impl Polls {
    pub(crate) fn new(options: &WaitOptions) -> Self {
        let most = options.poll_max.min(options.refreshes());
        Self {
            interval: options.poll_min.min(most),
            most,
        }
    }

    /// How long to sleep before the next poll.
    pub(crate) fn next(&mut self) -> Duration {
        let sleep = self.interval.mul_f64(0.5 + random::fraction() / 2.0);
        self.interval = (self.interval * 2).min(self.most);
        sleep
    }
}

impl WaitOptions {
    /// How often a waiter refreshes its place in line: `refresh`, at least
    /// 100 ms.
    pub(crate) fn refreshes(&self) -> Duration {
        self.refresh.max(Duration::from_millis(100))
    }

    /// Waits up to `wait`, polling from 50 ms up to 1 s.
    pub fn new(wait: Duration) -> Self {
        Self {
            wait,
            poll_min: Duration::from_millis(50),
            poll_max: Duration::from_secs(1),
            change_stream: true,
            refresh: REFRESH,
            stop: None,
        }
    }

    /// Ends the wait when `stop` is cancelled, as its deadline would end it:
    /// the call leaves the line, passes on a lock handed to it in that
    /// moment, and fails with [`LockError::Busy`], all before it returns.
    /// (Dropping the call instead leaves the line from a spawned task, which
    /// a process about to exit may not let finish: `lock run` stopped by a
    /// signal while it waits.) A call that took the lock before it saw the
    /// stop returns its lease.
    pub fn stop_on(mut self, stop: CancellationToken) -> Self {
        self.stop = Some(stop);
        self
    }

    /// Whether the wait is to stop early ([`WaitOptions::stop_on`]).
    pub(crate) fn is_stopped(&self) -> bool {
        self.stop
            .as_ref()
            .is_some_and(CancellationToken::is_cancelled)
    }

    /// Completes once the wait is to stop early ([`WaitOptions::stop_on`]);
    /// never without a stop.
    pub(crate) async fn stopped(&self) {
        match &self.stop {
            Some(stop) => stop.cancelled().await,
            None => std::future::pending().await,
        }
    }

    /// Sets the polling bounds.
    pub fn poll(mut self, min: Duration, max: Duration) -> Self {
        self.poll_min = min;
        self.poll_max = max.max(min);
        self
    }
}

/// Takes a waiter out of line if its acquire is dropped before it ends
/// (cancelled): a spawned task removes its entry, and releases the lock if
/// it was handed over meanwhile.
struct InLine {
    lock: Lock,
    ticket: String,
    ttl: Duration,
    done: bool,
}

impl Drop for InLine {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (lock, ticket, ttl) = (self.lock.clone(), self.ticket.clone(), self.ttl);
        runtime.spawn(async move { give_up(&lock, &ticket, ttl).await });
    }
}

/// Leaves the line; if the lock was handed to `ticket` meanwhile, releases
/// it (to the next in line).
async fn give_up(lock: &Lock, ticket: &str, ttl: Duration) {
    if lock.leave(ticket).await.is_err() {
        return;
    }
    if let Ok(Some(state)) = lock.status().await {
        if state.is_held_by_call(lock.owner(), ticket) {
            let lease = lock.lease(&state, ttl, std::time::Instant::now());
            let _ = lease.release().await;
        }
    }
}

/// The call of a process that waits in the stored line for it (see
/// `cohort`): if it stops waiting without the lock (failed, or dropped:
/// cancelled), the next call waiting in the process leads. Once it holds
/// the lock, stepping down is a no-op.
struct Leading {
    cohort: Arc<Cohort>,
    ticket: String,
}

impl Drop for Leading {
    fn drop(&mut self) {
        self.cohort.step_down(&self.ticket);
    }
}

/// A call waiting in the process (see `cohort`): if its acquire is dropped
/// before its turn came, it leaves the queue, or passes on the turn that
/// was on its way.
struct Queued {
    cohort: Arc<Cohort>,
    ticket: String,
    turn: Option<tokio::sync::oneshot::Receiver<Turn>>,
}

impl Queued {
    /// Stops waiting: out of the queue; the turn already on its way, if it
    /// was no longer there (to be passed on).
    fn leave(&mut self) -> Option<tokio::sync::oneshot::Receiver<Turn>> {
        let turn = self.turn.take()?;
        (!self.cohort.leave(&self.ticket)).then_some(turn)
    }

    /// Stops waiting at the deadline, passing on a turn on its way.
    async fn give_up(&mut self) {
        let Some(turn) = self.leave() else { return };
        decline(turn, &self.cohort, &self.ticket).await;
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        let Some(turn) = self.leave() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (cohort, ticket) = (self.cohort.clone(), self.ticket.clone());
        runtime.spawn(async move { decline(turn, &cohort, &ticket).await });
    }
}

/// Passes on the turn on its way to a call that no longer waits.
async fn decline(turn: tokio::sync::oneshot::Receiver<Turn>, cohort: &Cohort, ticket: &str) {
    let Ok(turn) = turn.await else { return };
    match turn {
        Turn::Passed(lease) => {
            let _ = lease.release().await;
        }
        Turn::Lead => cohort.step_down(ticket),
        Turn::Reenter => {}
    }
}

impl Lock {
    /// The events on this lock's document for a waiter with `options`: from
    /// the stream its `Locks` shares among its waiters; `None`: no change
    /// streams (or none asked for), poll.
    pub(crate) async fn events(&self, options: &WaitOptions) -> Option<Subscription> {
        if options.change_stream {
            self.subscribe().await
        } else {
            None
        }
    }

    /// [`Lock::acquire`] for a scheduled job (ShedLock's `lockAtLeastFor`):
    /// the lock stays held at least `at_least` from when this call got it,
    /// by the server's clock, however soon the job ends and whatever becomes
    /// of its holder. Its first lease lasts the longer of `ttl` and
    /// `at_least`, so a holder killed at once still holds the name that long;
    /// renewals ask for `ttl`, never shortening it; a release before then
    /// leaves the lock held until `at_least` has passed ([`Lease::release`]).
    /// So a job run by whoever takes the lock next starts at least
    /// `at_least` after this one did, whatever the clocks of the machines
    /// that run it.
    pub async fn acquire_at_least(
        &self,
        ttl: Duration,
        at_least: Duration,
        options: &WaitOptions,
    ) -> Result<Lease, LockError> {
        let at_least = check_range("at least", at_least, Duration::ZERO, super::MAX_TTL)?;
        let lease = self.acquire(ttl.max(at_least), options).await?;
        Ok(lease.held_at_least(ttl, at_least))
    }

    /// Takes the lock, waiting up to `options.wait` for it, in line (see the
    /// module docs). Fails with [`LockError::Busy`] when the deadline passes
    /// first; the call then leaves the line.
    pub async fn acquire(&self, ttl: Duration, options: &WaitOptions) -> Result<Lease, LockError> {
        check_range("wait", options.wait, Duration::ZERO, MAX_WAIT)?;
        let ttl = check_range("lease ttl", ttl, super::MIN_TTL, super::MAX_TTL)?;
        if options.wait.is_zero() {
            return match self.try_acquire(ttl).await? {
                Acquired::Held(lease) => Ok(lease),
                Acquired::Busy(state) => Err(LockError::Busy {
                    name: self.name().clone(),
                    token: state.token,
                }),
            };
        }
        let deadline = Instant::now() + options.wait;
        let ticket = random::random_token();
        let cohort = self.cohort();
        let turn = match cohort.join(self, &ticket, ttl) {
            Joined::Now(turn) => turn,
            Joined::Queued(turn) => {
                let queued = Queued {
                    cohort: cohort.clone(),
                    ticket: ticket.clone(),
                    turn: Some(turn),
                };
                self.wait_in_process(queued, options, deadline).await?
            }
        };
        match turn {
            Turn::Passed(lease) => Ok(*lease),
            Turn::Lead => self.lead(cohort, ticket, ttl, options, deadline).await,
            Turn::Reenter => self.wait_in_line(ticket, ttl, options, deadline).await,
        }
    }

    /// Waits in the stored line for the process, and holds the lock for it
    /// once taken.
    async fn lead(
        &self,
        cohort: Arc<Cohort>,
        ticket: String,
        ttl: Duration,
        options: &WaitOptions,
        deadline: Instant,
    ) -> Result<Lease, LockError> {
        let leading = Leading {
            cohort,
            ticket: ticket.clone(),
        };
        let result = self.wait_in_line(ticket, ttl, options, deadline).await;
        if let Ok(lease) = &result {
            leading.cohort.holds(&leading.ticket, lease);
        }
        result
    }

    /// Waits in the process for this call's turn (the lock passed to it,
    /// to lead, or to re-enter); checks every refresh that the holder still
    /// proves its lease.
    async fn wait_in_process(
        &self,
        mut queued: Queued,
        options: &WaitOptions,
        deadline: Instant,
    ) -> Result<Turn, LockError> {
        let refresh = options.refreshes();
        let turn = loop {
            let Some(turn) = queued.turn.as_mut() else {
                unreachable!("a queued call keeps its receiver until its turn")
            };
            let check = (Instant::now() + refresh).min(deadline);
            let stopped = tokio::select! {
                biased;
                _ = options.stopped() => true,
                turn = turn => {
                    queued.turn = None;
                    break turn;
                }
                _ = tokio::time::sleep_until(check) => Instant::now() >= deadline,
            };
            if stopped {
                queued.give_up().await;
                return Err(LockError::Busy {
                    name: self.name().clone(),
                    token: queued.cohort.holding_token().unwrap_or_default(),
                });
            }
            queued.cohort.check_holder();
        };
        // The cohort gone without a word (cannot happen while a handle
        // holds it): the stored line decides, as for a re-entry.
        Ok(turn.unwrap_or(Turn::Reenter))
    }

    /// Waits in the stored line (see the module docs).
    async fn wait_in_line(
        &self,
        ticket: String,
        ttl: Duration,
        options: &WaitOptions,
        deadline: Instant,
    ) -> Result<Lease, LockError> {
        let mut in_line = InLine {
            lock: self.clone(),
            ticket: ticket.clone(),
            ttl,
            done: false,
        };
        // Opened before the first attempt, so a handover between the
        // attempt and the wait is still seen.
        let mut events = self.events(options).await;
        let refresh = options.refreshes();
        let mut polls = Polls::new(options);
        loop {
            // One attempt: taken, handed over already, or in line.
            let (acquired, sent) = self.attempt(&ticket, ttl, Some(refresh)).await?;
            let busy = match acquired {
                Acquired::Held(lease) => {
                    in_line.done = true;
                    return Ok(lease);
                }
                Acquired::Busy(state) => state,
            };
            // The send of this acknowledged refresh: a lease handed over
            // from here on ends no earlier than this plus the TTL.
            let refreshed = sent;
            let mut next_attempt = if events.is_some() {
                Instant::now() + refresh
            } else {
                Instant::now() + polls.next()
            };
            loop {
                let now = Instant::now();
                if now >= deadline || options.is_stopped() {
                    return self
                        .give_up_at_deadline(&mut in_line, ttl, busy.token)
                        .await;
                }
                next_attempt = next_attempt.min(deadline);
                let Some(stream) = events.as_mut() else {
                    tokio::select! {
                        biased;
                        // Seen at the top of the loop.
                        _ = options.stopped() => continue,
                        _ = tokio::time::sleep_until(next_attempt) => break,
                    }
                };
                tokio::select! {
                    biased;
                    // Seen at the top of the loop.
                    _ = options.stopped() => {}
                    event = stream.recv() => match event {
                        Ok(event) => match self.seen(&event, &ticket) {
                            Seen::HandedOver(state) => {
                                in_line.done = true;
                                return self.handed_over(&state, ttl, refreshed).await;
                            }
                            Seen::Claim => match self.status().await? {
                                Some(state) if state.is_held_by_call(self.owner(), &ticket) => {
                                    in_line.done = true;
                                    return self.handed_over(&state, ttl, refreshed).await;
                                }
                                _ => break,
                            },
                            Seen::MyTurn => break,
                            Seen::Wait => {}
                        },
                        // Fell behind the stream: events were missed.
                        Err(broadcast::error::RecvError::Lagged(_)) => break,
                        // The stream ended or failed: poll from now on.
                        Err(broadcast::error::RecvError::Closed) => {
                            events = None;
                            break;
                        }
                    },
                    _ = tokio::time::sleep_until(next_attempt) => break,
                }
            }
        }
    }

    /// What an event on the lock's document means for call `ticket`. An
    /// update event names the fields it changed (no document is looked up:
    /// a lookup per event per waiter costs the server more than the event);
    /// an insert or a replacement carries the whole document.
    fn seen(&self, event: &ChangeStreamEvent<Document>, ticket: &str) -> Seen {
        if let Some(document) = &event.full_document {
            let Ok(state) = LockState::from_document(self.name(), document) else {
                return Seen::MyTurn;
            };
            if state.is_held_by_call(self.owner(), ticket) {
                return Seen::HandedOver(state);
            }
            let first = document
                .get_array("queue")
                .ok()
                .and_then(|queue| queue.first())
                .and_then(|entry| entry.as_document())
                .and_then(|entry| entry.get_str("ticket").ok());
            return if state.owner.is_none() && first == Some(ticket) {
                Seen::MyTurn
            } else {
                Seen::Wait
            };
        }
        let Some(description) = event.update_description.as_ref() else {
            // Deleted, or a kind of event with no fields: find out with an attempt.
            return Seen::MyTurn;
        };
        let changed = &description.updated_fields;
        // A shared holder (a permit, a reader) came or went: the lock may
        // be free of them now.
        let shared = |field: &str| field.starts_with("shared");
        if changed.keys().any(|field| shared(field))
            || description.removed_fields.iter().any(|field| shared(field))
            || description
                .truncated_arrays
                .iter()
                .flatten()
                .any(|truncated| shared(&truncated.field))
        {
            return Seen::MyTurn;
        }
        let owner = changed.get("owner");
        let handed = owner.and_then(|o| o.as_str()) == Some(self.owner())
            && changed.get_str("ticket").ok() == Some(ticket);
        if handed {
            // A handover sets the token, the count and the end: the event
            // carries the holding. (Otherwise read it.)
            let token = changed.get_i64("token").ok();
            let expires_at = changed.get_datetime("expiresAt").ok().copied();
            return match (token, expires_at) {
                (Some(token), Some(expires_at)) => Seen::HandedOver(LockState {
                    name: self.name().to_string(),
                    label: super::document::label_of(self.owner()).map(str::to_string),
                    owner: Some(self.owner().to_string()),
                    token,
                    count: changed.get_i64("count").unwrap_or(1),
                    expires_at: Some(expires_at),
                    expires_in_ms: None,
                    waiters: 0,
                    shared: Vec::new(),
                    ticket: Some(ticket.to_string()),
                }),
                _ => Seen::Claim,
            };
        }
        match owner {
            // Freed (not handed over): the first in line takes it; the
            // attempt's pipeline decides whose turn it is.
            Some(mongodb::bson::Bson::Null) => Seen::MyTurn,
            _ => Seen::Wait,
        }
    }

    /// The lease of a lock handed to this call, whose last acknowledged
    /// refresh was sent at `refreshed`. Renewed at once when the handover
    /// was seen so late that less than half its TTL is proved left.
    async fn handed_over(
        &self,
        state: &LockState,
        ttl: Duration,
        refreshed: std::time::Instant,
    ) -> Result<Lease, LockError> {
        let lease = self.lease(state, ttl, refreshed);
        let proved = lease
            .deadline()
            .map(|at| at.saturating_duration_since(std::time::Instant::now()))
            .unwrap_or_default();
        if proved < ttl / 2 {
            lease.renew().await?;
        }
        Ok(lease)
    }

    /// At the deadline: one last attempt (it may have been handed over just
    /// now), else out of line and busy.
    async fn give_up_at_deadline(
        &self,
        in_line: &mut InLine,
        ttl: Duration,
        token: i64,
    ) -> Result<Lease, LockError> {
        in_line.done = true;
        give_up(self, &in_line.ticket, ttl).await;
        Err(LockError::Busy {
            name: self.name().clone(),
            token,
        })
    }
}

/// What an event says to a waiter.
enum Seen {
    /// The lock was handed to this call.
    HandedOver(LockState),
    /// The lock was handed to this call, by an event that carries only the
    /// fields it changed: read the holding.
    Claim,
    /// It may be this call's turn (or it fell out of line): attempt now.
    MyTurn,
    /// Someone else is served first.
    Wait,
}
