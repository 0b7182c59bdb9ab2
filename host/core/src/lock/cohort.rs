//! Lock cohorting: the blocking acquires of one process for one lock name
//! (the handles of one [`Locks`](super::Locks)) wait for it as one member of
//! the stored line, and a holder among them passes it straight to the next.
//!
//! Without it every waiting call has an entry of its own in the stored line
//! ([`queue`](super::queue)), and a holder that releases and asks again
//! writes its entry again: a handoff costs the release, a change-stream
//! event and that write, all on the lock's one document. With it:
//!
//! - **One call leads.** The first blocking acquire of a process waits in
//!   the stored line as any waiter does (its entry, its refreshes, the
//!   change stream). The ones after it wait **in the process**, in the order
//!   they came, with no entry and no write.
//! - **A holder passes the lock on.** When the leader holds the lock, its
//!   release gives it, in the same write, to the first call waiting in the
//!   process: that call's owner and ticket, the next fencing token, a hold
//!   count of 1, a lease of its TTL from the server's now. A handoff inside
//!   the process is one write; the call that released and asks again waits
//!   at the back, in the process.
//! - **The bound: [`MAX_PASSES`].** A holder passes the lock at most that
//!   many times in a row while anyone waits in the stored line (a call of
//!   another process, or of a handle made apart); the release after them
//!   hands it to the first in the stored line, and the process's first
//!   waiting call leads again, from the back of that line. A call in the
//!   stored line is therefore served after at most `MAX_PASSES` handoffs
//!   inside a process that held the lock when it joined, besides the order
//!   of the line itself.
//! - **A holder that cannot prove its lease stops leading.** A lease dropped
//!   unreleased, found lost, or past its local deadline with no renewal
//!   seen by a waiting call's periodic check (every
//!   [`WaitOptions::refresh`](super::WaitOptions::refresh)): the first call
//!   waiting in the process leads, and takes the lock through the stored
//!   line once the server has ended the lease, as any waiter would.
//! - **Leaving.** A call whose deadline passes, or that is cancelled, leaves
//!   the process's queue; one given the lock (or the lead) at that moment
//!   passes it on.
//! - A call of the holder's own owner token re-enters (the server counts its
//!   holds) instead of waiting behind it.
//!
//! The stored line, `idmint lock status` and the stored JavaScript see one
//! waiter per process; [`Locks::queued`](super::Locks::queued) says how many
//! calls wait in this one.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::oneshot;

use super::queue::Heir;
use crate::lease::Deadline;

/// The most handoffs in a row inside one process while someone waits in
/// the stored line.
pub const MAX_PASSES: u32 = 8;

/// How many lock names are kept before idle ones are forgotten.
const PRUNE_FROM: usize = 64;

/// The cohorts of one `Locks`, by lock name.
/// What a cohort needs of a held lease and of the lock handle a waiter
/// joins with (`locks.rs`'s `Lease` and `Lock`): the cohort decides who
/// goes next, the lease's own code takes and gives back.
pub(crate) trait Held: Send + Sized + 'static {
    /// The handle a waiter joins with.
    type Handle: Clone + Send + 'static;
    /// The owner a handle takes the lock as.
    fn owner_of(handle: &Self::Handle) -> &str;
    /// The owner that holds this lease.
    fn owner(&self) -> &str;
    /// Its fencing token.
    fn token(&self) -> i64;
    /// Its deadline, as renewals move it.
    fn deadline(&self) -> &Deadline;
    /// Gives the lease back in the background: it was passed to a waiter
    /// that had left.
    fn release_later(self);
}

pub(crate) struct Cohorts<H: Held> {
    by_name: Mutex<HashMap<String, Arc<Cohort<H>>>>,
}

impl<H: Held> Default for Cohorts<H> {
    fn default() -> Self {
        Self {
            by_name: Mutex::default(),
        }
    }
}

impl<H: Held> std::fmt::Debug for Cohorts<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = self.by_name.lock().map(|m| m.len()).unwrap_or_default();
        f.debug_struct("Cohorts").field("names", &names).finish()
    }
}

impl<H: Held> Cohorts<H> {
    /// The cohort of lock `name`.
    pub fn of(&self, name: &str) -> Arc<Cohort<H>> {
        let mut by_name = self.by_name.lock().unwrap();
        if let Some(cohort) = by_name.get(name) {
            return cohort.clone();
        }
        if by_name.len() >= PRUNE_FROM {
            // Forget the names nobody leads, waits for or is about to use.
            by_name.retain(|_, cohort| Arc::strong_count(cohort) > 1 || !cohort.is_idle());
        }
        by_name.entry(name.to_string()).or_default().clone()
    }

    /// How many calls wait for lock `name` in the process.
    pub fn queued(&self, name: &str) -> usize {
        let by_name = self.by_name.lock().unwrap();
        by_name
            .get(name)
            .map_or(0, |cohort| cohort.state().queue.len())
    }
}

/// The calls of one process waiting for, or holding, one lock.
pub(crate) struct Cohort<H: Held> {
    state: Mutex<State<H>>,
}

impl<H: Held> Default for Cohort<H> {
    fn default() -> Self {
        Self {
            state: Mutex::new(State {
                leader: None,
                queue: VecDeque::new(),
                passes: 0,
            }),
        }
    }
}

struct State<H: Held> {
    /// The call that waits in the stored line or holds the lock.
    leader: Option<Leader>,
    /// The calls waiting in the process, in order.
    queue: VecDeque<Waiter<H>>,
    /// Handoffs in a row inside the process with someone in the stored line.
    passes: u32,
}

struct Leader {
    ticket: String,
    /// Set once it holds the lock.
    holding: Option<Holding>,
}

struct Holding {
    owner: String,
    token: i64,
    deadline: Deadline,
    /// Its release is under way (its deadline no longer says anything).
    releasing: bool,
}

impl Holding {
    fn of<H: Held>(lease: &H) -> Self {
        Self {
            owner: lease.owner().to_string(),
            token: lease.token(),
            deadline: lease.deadline().clone(),
            releasing: false,
        }
    }

    fn is(&self, owner: &str, token: i64) -> bool {
        self.owner == owner && self.token == token
    }
}

impl<H: Held> State<H> {
    /// The process's holding, if `(owner, token)` is it.
    fn holding(&mut self, owner: &str, token: i64) -> Option<&mut Holding> {
        self.leader
            .as_mut()
            .and_then(|l| l.holding.as_mut())
            .filter(|h| h.is(owner, token))
    }
}

/// A call waiting in the process.
pub(crate) struct Waiter<H: Held> {
    /// The handle it acquires through.
    pub lock: H::Handle,
    /// Its acquire call.
    pub ticket: String,
    /// The lease it asks for.
    pub ttl: Duration,
    turn: oneshot::Sender<Turn<H>>,
}

impl<H: Held> Waiter<H> {
    /// The heir of a release that passes the lock to this call.
    pub fn heir(&self) -> Heir<'_> {
        Heir {
            owner: H::owner_of(&self.lock),
            ticket: &self.ticket,
            ttl: self.ttl,
        }
    }

    /// Gives it the lease passed to it; if it stopped waiting meanwhile,
    /// the lease is released (passed on) instead.
    pub fn hand(self, lease: H) {
        if let Err(Turn::Passed(lease)) = self.turn.send(Turn::Passed(Box::new(lease))) {
            lease.release_later();
        }
    }
}

/// What a call waiting in the process is told.
pub(crate) enum Turn<H: Held> {
    /// The lock was passed to it.
    Passed(Box<H>),
    /// It leads now: it waits in the stored line.
    Lead,
    /// A handle of its owner holds the lock: it re-enters.
    Reenter,
}

/// How a blocking acquire goes on after [`Cohort::join`].
pub(crate) enum Joined<H: Held> {
    /// Its turn is now: it leads, or re-enters a holding of its own owner.
    Now(Turn<H>),
    /// It waits in the process for its turn.
    Queued(oneshot::Receiver<Turn<H>>),
}

impl<H: Held> Cohort<H> {
    fn state(&self) -> MutexGuard<'_, State<H>> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn is_idle(&self) -> bool {
        let state = self.state();
        state.leader.is_none() && state.queue.is_empty()
    }

    /// A blocking acquire by call `ticket` through `lock` for `ttl`.
    pub fn join(&self, lock: &H::Handle, ticket: &str, ttl: Duration) -> Joined<H> {
        let mut state = self.state();
        match &state.leader {
            None => {
                state.leader = Some(Leader {
                    ticket: ticket.to_string(),
                    holding: None,
                });
                Joined::Now(Turn::Lead)
            }
            Some(Leader {
                holding: Some(holding),
                ..
            }) if holding.owner == H::owner_of(lock) => Joined::Now(Turn::Reenter),
            Some(_) => {
                let (turn, receiver) = oneshot::channel();
                state.queue.push_back(Waiter {
                    lock: lock.clone(),
                    ticket: ticket.to_string(),
                    ttl,
                    turn,
                });
                Joined::Queued(receiver)
            }
        }
    }

    /// The leader `ticket` holds the lock with `lease`. Calls of the same
    /// owner waiting in the process re-enter.
    pub fn holds(&self, ticket: &str, lease: &H) {
        let mut state = self.state();
        let Some(leader) = state.leader.as_mut().filter(|l| l.ticket == ticket) else {
            return;
        };
        let owner = lease.owner().to_string();
        leader.holding = Some(Holding::of(lease));
        let (same_owner, others) = std::mem::take(&mut state.queue)
            .into_iter()
            .partition::<VecDeque<_>, _>(|waiter| H::owner_of(&waiter.lock) == owner);
        state.queue = others;
        for waiter in same_owner {
            let _ = waiter.turn.send(Turn::Reenter);
        }
    }

    /// The leader `ticket` stopped waiting without the lock: the first call
    /// waiting in the process leads.
    pub fn step_down(&self, ticket: &str) {
        let mut state = self.state();
        if state
            .leader
            .as_ref()
            .is_some_and(|l| l.ticket == ticket && l.holding.is_none())
        {
            promote(&mut state);
        }
    }

    /// Holding `(owner, token)` begins a release: the call to pass the
    /// lock to, the first waiting in the process, unless the bound is
    /// reached or the holding is not the process's. Taken out of the queue;
    /// the release ends with [`Cohort::passed`], [`Cohort::kept`],
    /// [`Cohort::pass_failed`] or [`Cohort::ended`].
    pub fn release_begins(&self, owner: &str, token: i64) -> Option<Waiter<H>> {
        let mut state = self.state();
        let holding = state.holding(owner, token)?;
        holding.releasing = true;
        if state.passes >= MAX_PASSES {
            return None;
        }
        state.queue.pop_front()
    }

    /// The lock was passed to `lease`, taken by call `ticket`;
    /// `line_waiting`: someone waits in the stored line.
    pub fn passed(&self, ticket: &str, lease: &H, line_waiting: bool) {
        let mut state = self.state();
        state.passes = if line_waiting { state.passes + 1 } else { 0 };
        state.leader = Some(Leader {
            ticket: ticket.to_string(),
            holding: Some(Holding::of(lease)),
        });
    }

    /// A release of holding `(owner, token)` left holds (re-entry): it goes
    /// on holding, and `heir` waits first again.
    pub fn kept(&self, owner: &str, token: i64, heir: Option<Waiter<H>>) {
        let mut state = self.state();
        if let Some(holding) = state.holding(owner, token) {
            holding.releasing = false;
        }
        if let Some(heir) = heir {
            state.queue.push_front(heir);
        }
    }

    /// A release that was to pass the lock to `heir` failed (the lease was
    /// lost, or the answer never came): `heir` leads, and its first attempt
    /// finds out whether the lock became its own.
    pub fn pass_failed(&self, heir: Waiter<H>) {
        let mut state = self.state();
        state.passes = 0;
        if !lead(&mut state, heir) {
            promote(&mut state);
        }
    }

    /// Holding `(owner, token)` ended (released to the stored line, lost, or
    /// dropped): the first call waiting in the process leads.
    pub fn ended(&self, owner: &str, token: i64) {
        let mut state = self.state();
        if state.holding(owner, token).is_some() {
            state.passes = 0;
            promote(&mut state);
        }
    }

    /// A waiting call's periodic check: a holder whose lease is no longer
    /// proved (local deadline passed, not renewed) stops leading.
    pub fn check_holder(&self) {
        let mut state = self.state();
        let lapsed = state
            .leader
            .as_ref()
            .and_then(|l| l.holding.as_ref())
            .is_some_and(|h| !h.releasing && !h.deadline.is_live());
        if lapsed {
            state.passes = 0;
            promote(&mut state);
        }
    }

    /// Takes call `ticket` out of the process's queue; false when it was no
    /// longer there (its turn is on its way).
    pub fn leave(&self, ticket: &str) -> bool {
        let mut state = self.state();
        let before = state.queue.len();
        state.queue.retain(|waiter| waiter.ticket != ticket);
        state.queue.len() != before
    }

    /// The fencing token of the process's holding, if it holds the lock.
    pub fn holding_token(&self) -> Option<i64> {
        let state = self.state();
        state
            .leader
            .as_ref()
            .and_then(|l| l.holding.as_ref())
            .map(|h| h.token)
    }
}

/// The first call waiting in the process that still waits leads; none: no
/// leader.
fn promote<H: Held>(state: &mut State<H>) {
    state.leader = None;
    while let Some(waiter) = state.queue.pop_front() {
        if lead(state, waiter) {
            return;
        }
    }
}

/// Tells `waiter` it leads and makes it the leader; false (nothing
/// changed) when it no longer waits.
fn lead<H: Held>(state: &mut State<H>, waiter: Waiter<H>) -> bool {
    let ticket = waiter.ticket.clone();
    let told = waiter.turn.send(Turn::Lead).is_ok();
    if told {
        state.leader = Some(Leader {
            ticket,
            holding: None,
        });
    }
    told
}
