//! [`CounterPool`]: the counters a server has opened, each opened once, on
//! its first request, and kept: a segment counter's buffers and a snowflake
//! counter's worker lease live as long as the server, so that their
//! requests are served from memory. On shutdown every counter is closed
//! (segment tails given back, worker leases released).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use mongodb::Database;
use tokio::sync::OnceCell;

use idmint::sequence::{CounterName, CounterState, OpenOptions, Sequence, SequenceError};

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
        let cell = self
            .lock()
            .entry(name.clone())
            .or_insert_with(|| Arc::new(OnceCell::new()))
            .clone();
        let opened = cell
            .get_or_try_init(|| async {
                let (sequence, state) =
                    Sequence::open(&self.database, name.clone(), &self.open).await?;
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

    /// Closes every opened counter: segment counters give their unused
    /// values back, snowflake counters release their worker leases. Returns
    /// the errors met, by counter; the others are closed regardless.
    pub async fn close_all(&self) -> Vec<(CounterName, SequenceError)> {
        let opened: Vec<Arc<Served>> = {
            let mut counters = self.lock();
            counters
                .drain()
                .filter_map(|(_, cell)| cell.get().cloned())
                .collect()
        };
        let mut failures = Vec::new();
        for served in opened {
            if let Err(error) = served.sequence.close().await {
                failures.push((served.sequence.name().clone(), error));
            }
        }
        failures
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CounterName, Arc<OnceCell<Arc<Served>>>>> {
        // A poisoned map is still a valid map: no insert panics halfway.
        self.counters.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
