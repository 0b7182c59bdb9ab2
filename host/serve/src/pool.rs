//! [`CounterPool`]: the counters a server has opened, each opened once, on
//! its first request, and kept: a segment counter's buffers and a snowflake
//! counter's worker lease live as long as the server, so that their
//! requests are served from memory. Counters that hold nothing of their own
//! (cyclic, autoinc, periodic:
//! [`Held::is_nothing`](idmint::sequence::Held::is_nothing)) are kept up to a
//! number (`Limits::max_open_counters`); past it the least recently used of
//! them is dropped and opened again on its next request, so that a server
//! asked for each of many counters in turn keeps a bounded few. A route that serves some kinds only
//! checks the kind first ([`CounterPool::get_kind`]), so that asking such a
//! route for a counter of another kind opens nothing (no worker id leased
//! for a snowflake counter asked for ranges). On shutdown every counter is
//! closed, in parallel and each within a deadline (segment tails given
//! back, worker leases released).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mongodb::Database;
use tokio::sync::OnceCell;

use idmint::sequence::striping::Deployments;
use idmint::sequence::{
    CounterKind, CounterName, CounterState, OpenOptions, Sequence, SequenceError,
};

/// A counter opened by the server: its sequence and its state when opened.
#[derive(Debug)]
pub struct Served {
    /// Where its values come from.
    pub sequence: Sequence,
    /// The counter document as read when it was opened.
    pub state: CounterState,
    /// When it was opened (and `state` read).
    pub opened_at: std::time::Instant,
}

/// Names the counter and its kind in the current span (a request's, whose
/// log lines then carry them).
fn traced(served: &Served) {
    let span = tracing::Span::current();
    span.record("counter", served.state.name.as_str());
    span.record("kind", served.sequence.kind().as_str());
}

/// A counter's place in the pool: opened once, and when it was last asked.
#[derive(Debug)]
struct Slot {
    cell: Arc<OnceCell<Arc<Served>>>,
    used: u64,
}

/// The opened counters, by name, with the tick of their last use.
#[derive(Debug, Default)]
struct Opened {
    slots: HashMap<CounterName, Slot>,
    clock: u64,
}

/// The opened counters, by name.
#[derive(Debug)]
pub struct CounterPool {
    database: Database,
    open: OpenOptions,
    /// At most this many counters that hold nothing are kept.
    capacity: usize,
    counters: Mutex<Opened>,
}

impl CounterPool {
    /// An empty pool over `database`; counters are opened with `open`, and
    /// at most `capacity` of those that hold nothing are kept.
    pub fn new(database: &Database, open: OpenOptions, capacity: usize) -> Self {
        Self {
            database: database.clone(),
            open,
            capacity: capacity.max(1),
            counters: Mutex::new(Opened::default()),
        }
    }

    /// The counter `name`, opened on first use. Concurrent first requests
    /// open it once. A counter that cannot be opened (unknown, corrupt,
    /// database down) is not remembered, so a later request tries again.
    pub async fn get(&self, name: &CounterName) -> Result<Arc<Served>, SequenceError> {
        let served = self.get_checked(name, None).await?;
        traced(&served);
        Ok(served)
    }

    /// The counter `name` if its kind is one `serves` accepts, opened on
    /// first use; otherwise `Ok(Err(kind))`, and nothing is opened: the
    /// document is read and its kind checked before the counter is opened.
    pub async fn get_kind(
        &self,
        name: &CounterName,
        serves: impl Fn(CounterKind) -> bool,
    ) -> Result<Result<Arc<Served>, CounterKind>, SequenceError> {
        if let Some(served) = self.peek(name) {
            traced(&served);
            let kind = served.sequence.kind();
            return Ok(if serves(kind) { Ok(served) } else { Err(kind) });
        }
        let (_, state) = Sequence::read_state(&self.database, name, &self.open).await?;
        if !serves(state.kind()) {
            return Ok(Err(state.kind()));
        }
        let served = self.get_checked(name, Some(state)).await?;
        traced(&served);
        Ok(Ok(served))
    }

    /// [`CounterPool::get`], with the document already read, if it was.
    async fn get_checked(
        &self,
        name: &CounterName,
        read: Option<CounterState>,
    ) -> Result<Arc<Served>, SequenceError> {
        let cell = self.slot(name);
        let opened = cell
            .get_or_try_init(|| async {
                let (sequence, state) = match read {
                    Some(state) => {
                        let sequence =
                            Sequence::open_read(&self.database, name.clone(), &state, &self.open)
                                .await?;
                        (sequence, state)
                    }
                    None => Sequence::open(&self.database, name.clone(), &self.open).await?,
                };
                Ok::<_, SequenceError>(Arc::new(Served {
                    sequence,
                    state,
                    opened_at: std::time::Instant::now(),
                }))
            })
            .await
            .cloned();
        if opened.is_err() {
            let mut counters = self.lock();
            if counters.slots.get(name).is_some_and(|current| {
                Arc::ptr_eq(&current.cell, &cell) && !current.cell.initialized()
            }) {
                counters.slots.remove(name);
            }
        }
        opened
    }

    /// The cell of counter `name`, marked used; a new one (past capacity,
    /// the least recently used counter that holds nothing is dropped).
    fn slot(&self, name: &CounterName) -> Arc<OnceCell<Arc<Served>>> {
        let mut counters = self.lock();
        counters.clock += 1;
        let now = counters.clock;
        if let Some(slot) = counters.slots.get_mut(name) {
            slot.used = now;
            return slot.cell.clone();
        }
        if counters.slots.len() >= self.capacity {
            // A scan, only when a new counter comes at capacity. A request
            // that holds the dropped counter finishes with it.
            let oldest = counters
                .slots
                .iter()
                .filter(|(_, slot)| {
                    slot.cell
                        .get()
                        .is_some_and(|served| served.sequence.held().is_nothing())
                })
                .min_by_key(|(_, slot)| slot.used)
                .map(|(name, _)| name.clone());
            if let Some(oldest) = oldest {
                counters.slots.remove(&oldest);
            }
        }
        let cell = Arc::new(OnceCell::new());
        counters.slots.insert(
            name.clone(),
            Slot {
                cell: cell.clone(),
                used: now,
            },
        );
        cell
    }

    /// The counter `name`, if it has been opened (marked used).
    pub fn peek(&self, name: &CounterName) -> Option<Arc<Served>> {
        let mut counters = self.lock();
        counters.clock += 1;
        let now = counters.clock;
        let slot = counters.slots.get_mut(name)?;
        slot.used = now;
        slot.cell.get().cloned()
    }

    /// The counters opened and kept now.
    /// The deployments counters are opened with (a striped counter may
    /// span them).
    pub fn deployments(&self) -> Option<&Deployments> {
        self.open.deployments.as_ref()
    }

    /// Every counter opened now.
    pub fn opened(&self) -> Vec<Arc<Served>> {
        self.lock()
            .slots
            .values()
            .filter_map(|slot| slot.cell.get().cloned())
            .collect()
    }

    /// Closes every opened counter, all at once, each within `deadline`:
    /// segment counters give their unused values back, snowflake counters
    /// release their worker leases. Returns the errors met, by counter (a
    /// close past its deadline is [`SequenceError::Stalled`]); the others
    /// are closed regardless.
    pub async fn close_all(&self, deadline: Duration) -> Vec<(CounterName, SequenceError)> {
        let opened: Vec<Arc<Served>> = {
            let mut counters = self.lock();
            counters
                .slots
                .drain()
                .filter_map(|(_, slot)| slot.cell.get().cloned())
                .collect()
        };
        let closing = opened.into_iter().map(|served| async move {
            let name = served.sequence.name().clone();
            match tokio::time::timeout(deadline, served.sequence.close()).await {
                Ok(Ok(_)) => None,
                Ok(Err(error)) => Some((name, error)),
                Err(_) => Some((
                    name.clone(),
                    SequenceError::Stalled {
                        name,
                        action: "close",
                        waited_ms: deadline.as_millis() as u64,
                    },
                )),
            }
        });
        futures_util::future::join_all(closing)
            .await
            .into_iter()
            .flatten()
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Opened> {
        // A poisoned map is still a valid map: no insert panics halfway.
        self.counters.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
