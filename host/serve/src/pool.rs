//! [`CounterPool`]: the counters a server has opened, each opened once, on
//! its first request, and kept: a segment counter's buffers and a snowflake
//! counter's worker lease live as long as the server, so that their
//! requests are served from memory. A route that serves some kinds only
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
}

/// The opened counters, by name.
#[derive(Debug)]
pub struct CounterPool {
    database: Database,
    open: OpenOptions,
    counters: Mutex<HashMap<CounterName, Arc<OnceCell<Arc<Served>>>>>,
}

impl CounterPool {
    /// An empty pool over `database`; counters are opened with `open`.
    pub fn new(database: &Database, open: OpenOptions) -> Self {
        Self {
            database: database.clone(),
            open,
            counters: Mutex::new(HashMap::new()),
        }
    }

    /// The counter `name`, opened on first use. Concurrent first requests
    /// open it once. A counter that cannot be opened (unknown, corrupt,
    /// database down) is not remembered, so a later request tries again.
    pub async fn get(&self, name: &CounterName) -> Result<Arc<Served>, SequenceError> {
        self.get_checked(name, None).await
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
            let kind = served.sequence.kind();
            return Ok(if serves(kind) { Ok(served) } else { Err(kind) });
        }
        let state = idmint::sequence::state(&self.database, name).await?;
        if !serves(state.kind()) {
            return Ok(Err(state.kind()));
        }
        self.get_checked(name, Some(state)).await.map(Ok)
    }

    /// [`CounterPool::get`], with the document already read, if it was.
    async fn get_checked(
        &self,
        name: &CounterName,
        read: Option<CounterState>,
    ) -> Result<Arc<Served>, SequenceError> {
        let cell = self
            .lock()
            .entry(name.clone())
            .or_insert_with(|| Arc::new(OnceCell::new()))
            .clone();
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
                Ok::<_, SequenceError>(Arc::new(Served { sequence, state }))
            })
            .await
            .cloned();
        if opened.is_err() {
            let mut counters = self.lock();
            if counters
                .get(name)
                .is_some_and(|current| Arc::ptr_eq(current, &cell) && !current.initialized())
            {
                counters.remove(name);
            }
        }
        opened
    }

    /// The counter `name`, if it has been opened.
    pub fn peek(&self, name: &CounterName) -> Option<Arc<Served>> {
        self.lock().get(name).and_then(|cell| cell.get().cloned())
    }

    /// The counters opened so far.
    pub fn opened(&self) -> Vec<Arc<Served>> {
        self.lock()
            .values()
            .filter_map(|cell| cell.get().cloned())
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
                .drain()
                .filter_map(|(_, cell)| cell.get().cloned())
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

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CounterName, Arc<OnceCell<Arc<Served>>>>> {
        // A poisoned map is still a valid map: no insert panics halfway.
        self.counters.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
