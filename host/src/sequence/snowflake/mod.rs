//! Snowflake IDs (seed 001, as Baidu's uid-generator and Twitter's snowflake
//! make them), with MongoDB as the only coordinator: a 64-bit ID of time,
//! worker id and sequence ([`layout`]), issued from memory by a
//! [`Snowflake`] whose worker id is leased ([`lease`]) and whose generator
//! fails closed and never repeats an ID when the clock goes back
//! ([`generator`]).
//!
//! The counter document is `{_id, kind: "snowflake", time_bits,
//! worker_bits, seq_bits, unit, epoch_ms, prefix?}`; it is never written
//! after creation. The leases live in the `workers` collection.

pub mod generator;
pub mod layout;
pub mod lease;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mongodb::Database;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

pub use generator::{OnRollback, RollbackOptions, Stall};
pub use layout::{Layout, SnowflakeParts, TimeUnit};
pub use lease::{WorkerLease, WORKERS_COLLECTION};

use self::generator::Generator;
use self::lease::Leases;
use super::{Clock, CounterName, SequenceError, SystemClock};

/// How a [`Snowflake`] holds its worker id and treats the clock.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SnowflakeOptions {
    /// How long a lease lives without renewal. Default: 10 s.
    pub lease_ttl: Duration,
    /// How often it is renewed. Default: a third of the time to live.
    pub renew_every: Duration,
    /// How long a taker waits for a lease to be (re)gained before failing.
    /// Default: the time to live.
    pub lease_wait: Duration,
    /// What the generator does when the clock goes back.
    pub rollback: RollbackOptions,
}

impl Default for SnowflakeOptions {
    fn default() -> Self {
        Self {
            lease_ttl: Duration::from_secs(10),
            renew_every: Duration::from_secs(10) / 3,
            lease_wait: Duration::from_secs(10),
            rollback: RollbackOptions::default(),
        }
    }
}

impl SnowflakeOptions {
    /// Sets the lease's time to live (and renews at a third of it).
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl;
        self.renew_every = ttl / 3;
        self.lease_wait = ttl;
        self
    }

    /// Sets what the generator does when the clock goes back.
    pub fn rollback(mut self, rollback: RollbackOptions) -> Self {
        self.rollback = rollback;
        self
    }

    /// The safety margin taken off each lease locally: the local deadline
    /// ends this long before the server's expiry could.
    fn margin(&self) -> Duration {
        self.lease_ttl / 10
    }
}

struct Inner {
    database: Database,
    generator: Generator,
    renewals: AtomicU64,
    failed_renewals: AtomicU64,
    losses: AtomicU64,
    leases: Leases,
    options: SnowflakeOptions,
    clock: Arc<dyn Clock>,
    /// Woken when a lease is (re)gained.
    leased: Notify,
    renewer: std::sync::Mutex<Option<JoinHandle<()>>>,
}

/// Issues snowflake IDs of one counter from this process (see the module
/// docs). Cheap to clone: clones share the generator and the lease.
#[derive(Clone)]
pub struct Snowflake {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Snowflake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snowflake")
            .field("layout", self.inner.generator.layout())
            .field("worker", &self.inner.generator.worker())
            .finish()
    }
}

impl Snowflake {
    /// Leases a worker id for counter `name` (whose layout is `layout`) and
    /// starts renewing it in the background.
    pub async fn start(
        database: &Database,
        name: CounterName,
        layout: Layout,
        options: SnowflakeOptions,
    ) -> Result<Self, SequenceError> {
        Self::start_with_clock(database, name, layout, options, Arc::new(SystemClock)).await
    }

    /// [`Snowflake::start`] with a clock of the caller's (tests step it back).
    pub async fn start_with_clock(
        database: &Database,
        name: CounterName,
        layout: Layout,
        options: SnowflakeOptions,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, SequenceError> {
        let inner = Arc::new(Inner {
            database: database.clone(),
            generator: Generator::new(layout, options.rollback),
            renewals: AtomicU64::new(0),
            failed_renewals: AtomicU64::new(0),
            losses: AtomicU64::new(0),
            leases: Leases::new(database, name),
            options,
            clock,
            leased: Notify::new(),
            renewer: std::sync::Mutex::new(None),
        });
        inner.claim().await?;
        let renewer = tokio::spawn(renew_forever(Arc::downgrade(&inner)));
        *inner.renewer.lock().unwrap_or_else(|p| p.into_inner()) = Some(renewer);
        Ok(Self { inner })
    }

    /// The counter's name.
    pub fn name(&self) -> &CounterName {
        self.inner.leases.counter()
    }

    /// Reads the counter document as it is now.
    pub async fn state(&self) -> Result<super::CounterState, SequenceError> {
        super::state(&self.inner.database, self.name()).await
    }

    /// The layout.
    pub fn layout(&self) -> &Layout {
        self.inner.generator.layout()
    }

    /// The worker id this process holds now.
    pub fn worker(&self) -> u64 {
        self.inner.generator.worker()
    }

    /// The worker lease: whether it is held now, and how its renewals went.
    pub fn lease_stats(&self) -> LeaseStats {
        let inner = &self.inner;
        LeaseStats {
            worker: inner.generator.worker(),
            holding: inner.generator.holds_lease(),
            renewals: inner.renewals.load(Ordering::Relaxed),
            failed_renewals: inner.failed_renewals.load(Ordering::Relaxed),
            losses: inner.losses.load(Ordering::Relaxed),
        }
    }

    /// The next ID, waiting out a used-up time unit or a small clock step
    /// back, and a lease being regained (up to [`SnowflakeOptions::lease_wait`]).
    pub async fn next_id(&self) -> Result<u64, SequenceError> {
        let mut lease_deadline = None;
        loop {
            match self.inner.generator.try_next(&*self.inner.clock) {
                Ok(id) => return Ok(id),
                Err(Stall::Wait(ahead)) => {
                    if ahead < Duration::from_millis(2) {
                        tokio::task::yield_now().await;
                    } else {
                        tokio::time::sleep(ahead).await;
                    }
                }
                Err(Stall::ClockBehind(by)) => {
                    return Err(SequenceError::ClockBehind {
                        name: self.name().clone(),
                        by_ms: by.as_millis() as u64,
                    })
                }
                Err(Stall::TimeExhausted) => {
                    return Err(SequenceError::Exhausted {
                        name: self.name().clone(),
                        requested: 1,
                        limit: self.layout().max_time(),
                    })
                }
                Err(Stall::Lease | Stall::Reservation) => {
                    let deadline = *lease_deadline
                        .get_or_insert_with(|| Instant::now() + self.inner.options.lease_wait);
                    if Instant::now() >= deadline {
                        return Err(SequenceError::LeaseLost {
                            name: self.name().clone(),
                            waited_ms: self.inner.options.lease_wait.as_millis() as u64,
                        });
                    }
                    let notified = self.inner.leased.notified();
                    let _ = tokio::time::timeout(Duration::from_millis(50), notified).await;
                }
            }
        }
    }

    /// The next `count` IDs, increasing.
    pub async fn take(&self, count: usize) -> Result<Vec<u64>, SequenceError> {
        let mut ids = Vec::with_capacity(count);
        for _ in 0..count {
            ids.push(self.next_id().await?);
        }
        Ok(ids)
    }

    /// Stops issuing, stops renewing, and releases the lease with the last
    /// time unit issued, so that the next holder of the worker id starts
    /// right after it.
    pub async fn close(&self) -> Result<(), SequenceError> {
        if let Some(renewer) = self
            .inner
            .renewer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            renewer.abort();
        }
        let worker = self.inner.generator.worker();
        let last = self.inner.generator.seal();
        self.inner.leases.release(worker, last).await.map(drop)
    }
}

/// How a [`Snowflake`]'s worker lease is doing ([`Snowflake::lease_stats`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct LeaseStats {
    /// The worker id held (or last held).
    pub worker: u64,
    /// Whether the lease is proved valid now, so that IDs can be issued.
    pub holding: bool,
    /// Renewals that landed.
    pub renewals: u64,
    /// Renewals that failed (the database did not answer); retried at the
    /// next tick while the local deadline runs out.
    pub failed_renewals: u64,
    /// Leases found taken over at renewal (this process was paused past
    /// its expiry) and claimed again.
    pub losses: u64,
}

/// A snowflake counter's layout lifetime, for `idmint status`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Lifetime {
    /// The counter.
    pub counter: String,
    /// When its time bits run out, `YYYY-MM-DD`.
    pub runs_out_on: String,
    /// A warning once fewer than two years are left.
    pub warning: Option<String>,
}

/// The layout lifetime of every snowflake counter in `database`, by name
/// (a corrupt counter is skipped: `counter show` names what is wrong).
pub async fn lifetimes(database: &Database, now_ms: u64) -> Result<Vec<Lifetime>, SequenceError> {
    use futures_util::TryStreamExt;
    let documents: Vec<mongodb::bson::Document> = database
        .collection(super::COUNTERS_COLLECTION)
        .find(mongodb::bson::doc! { "kind": "snowflake" })
        .sort(mongodb::bson::doc! { "_id": 1 })
        .await
        .map_err(|source| SequenceError::ListCounters { source })?
        .try_collect()
        .await
        .map_err(|source| SequenceError::ListCounters { source })?;
    Ok(documents
        .iter()
        .filter_map(|document| {
            let name = CounterName::new(document.get_str("_id").ok()?).ok()?;
            let state = super::CounterState::from_document(&name, document).ok()?;
            let bits = state.snowflake_layout()?;
            Some(Lifetime {
                counter: name.to_string(),
                runs_out_on: layout::date(bits.runs_out_at_ms()),
                warning: bits.lifetime_warning(now_ms),
            })
        })
        .collect())
}

/// Every worker lease of counter `name`, by worker id, with the server's
/// time now (ms since 1970): what `idmint workers` lists. Only a snowflake
/// counter has worker leases: another counter is
/// [`SequenceError::WrongKind`], a missing one [`SequenceError::UnknownCounter`].
pub async fn workers(
    database: &Database,
    name: &CounterName,
) -> Result<(Vec<WorkerLease>, i64), SequenceError> {
    let state = super::state(database, name).await?;
    if state.kind() != super::CounterKind::Snowflake {
        return Err(SequenceError::WrongKind {
            name: name.clone(),
            expected: super::CounterKind::Snowflake,
            found: state.kind(),
        });
    }
    Leases::new(database, name.clone()).list().await
}

impl Inner {
    fn now_units(&self) -> u64 {
        self.generator
            .layout()
            .time_at(self.clock.now_micros() / 1000)
    }

    /// The time a lease reserves ahead: its time to live, in units, plus one.
    fn reserve_units(&self) -> u64 {
        let unit = self.generator.layout().unit.millis();
        (self.options.lease_ttl.as_millis() as u64).div_ceil(unit) + 1
    }

    /// Claims a worker id and installs it in the generator.
    async fn claim(&self) -> Result<(), SequenceError> {
        let sent = Instant::now();
        let held = self
            .leases
            .claim(
                self.generator.layout(),
                self.now_units(),
                self.reserve_units(),
                self.options.lease_ttl,
            )
            .await?;
        let deadline = sent + self.options.lease_ttl - self.options.margin();
        self.generator
            .install(held.worker, held.floor, held.reserved, deadline);
        self.leased.notify_waiters();
        Ok(())
    }

    /// Renews the lease once; claims another if it was lost.
    async fn renew(&self) -> Result<(), SequenceError> {
        let worker = self.generator.worker();
        let sent = Instant::now();
        match self
            .leases
            .renew(
                worker,
                self.now_units(),
                self.reserve_units(),
                self.options.lease_ttl,
            )
            .await?
        {
            Some(reserved) => {
                let deadline = sent + self.options.lease_ttl - self.options.margin();
                self.generator.renewed(reserved, deadline);
                self.renewals.fetch_add(1, Ordering::Relaxed);
                self.leased.notify_waiters();
                Ok(())
            }
            None => {
                // Taken over (we were paused past the lease): stop, then
                // lease again, possibly another worker id.
                self.generator.invalidate();
                self.losses.fetch_add(1, Ordering::Relaxed);
                self.claim().await
            }
        }
    }
}

/// Renews the lease until the [`Snowflake`] is dropped or closed. A failed
/// renewal is retried at the next tick; meanwhile the deadline runs out and
/// the generator issues nothing.
async fn renew_forever(inner: std::sync::Weak<Inner>) {
    loop {
        let Some(every) = inner.upgrade().map(|inner| inner.options.renew_every) else {
            return;
        };
        tokio::time::sleep(every).await;
        let Some(strong) = inner.upgrade() else {
            return;
        };
        if strong.renew().await.is_err() {
            strong.failed_renewals.fetch_add(1, Ordering::Relaxed);
        }
    }
}
