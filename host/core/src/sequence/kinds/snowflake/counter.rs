//! [`SnowflakeCounter`]: one counter's IDs issued from this process, under
//! a worker id it leases and keeps renewed (see the folder's `mod.rs`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mongodb::Database;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::gate::{Gate, LaneGate};
use super::generator::{Generator, RollbackOptions, Stall, SteadyWall};
use super::lease::{Held as HeldLease, Leases};
use crate::lease::{keep_renewed, Renewal};
use crate::parts::Layout;
use crate::sequence::clock::{Clock, SystemClock};
use crate::sequence::error::SequenceError;
use crate::sequence::kind_trait::LeaseStats;
use crate::sequence::name::CounterName;

/// How a [`SnowflakeCounter`] holds its worker id and treats the clock.
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

    /// The local deadline of a lease whose claim or renewal, sent at
    /// `sent`, was acknowledged (the lease primitive's rule: the TTL less a
    /// tenth, from the send).
    fn deadline_after(&self, sent: Instant) -> Instant {
        crate::lease::deadline_after(sent, self.lease_ttl)
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
    clock: WallClock,
    /// Woken when a lease is (re)gained.
    leased: Notify,
    /// The holding now; installs, seals and the close are decided under it.
    holding: std::sync::Mutex<Holding>,
    renewer: std::sync::Mutex<Option<JoinHandle<()>>>,
}

/// The wall clock a [`SnowflakeCounter`]'s generator reads.
enum WallClock {
    /// The system's, read through the monotonic clock: itself once per
    /// millisecond (see the generator's docs).
    System(SteadyWall),
    /// A caller's, read for each ID (tests step it).
    Given(Arc<dyn Clock>),
}

impl WallClock {
    /// The wall clock now, read itself.
    fn now_micros(&self) -> u64 {
        match self {
            WallClock::System(_) => SystemClock.now_micros(),
            WallClock::Given(clock) => clock.now_micros(),
        }
    }
}

/// The worker lease a [`SnowflakeCounter`] holds, and whether it was closed.
#[derive(Debug, Default)]
struct Holding {
    held: Option<HeldLease>,
    closed: bool,
    /// Its gate was sealed (the counter striped, its lane sealed): it
    /// issues nothing more, and its takes say so.
    retired: bool,
}

/// Issues snowflake IDs of one counter from this process (see the module
/// docs). Cheap to clone: clones share the generator and the lease.
#[derive(Clone)]
pub struct SnowflakeCounter {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SnowflakeCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snowflake")
            .field("layout", self.inner.generator.layout())
            .field("worker", &self.inner.generator.worker())
            .finish()
    }
}

impl SnowflakeCounter {
    /// Leases a worker id for counter `name` (whose layout is `layout`) and
    /// starts renewing it in the background.
    pub async fn start(
        database: &Database,
        name: CounterName,
        layout: Layout,
        options: SnowflakeOptions,
    ) -> Result<Self, SequenceError> {
        let clock = WallClock::System(SteadyWall::new(Box::new(SystemClock)));
        Self::start_under(database, name, layout, options, clock, Gate::Counter).await
    }

    /// [`SnowflakeCounter::start`] with a clock of the caller's (tests step it back).
    pub async fn start_with_clock(
        database: &Database,
        name: CounterName,
        layout: Layout,
        options: SnowflakeOptions,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, SequenceError> {
        let clock = WallClock::Given(clock);
        Self::start_under(database, name, layout, options, clock, Gate::Counter).await
    }

    /// Leases a worker id of lane `lane` of striped counter `name` (in the
    /// lane's deployment, `database`), and keeps it renewed while the lane
    /// is live; once it is sealed, takes fail with
    /// [`SequenceError::Striped`], and another lane is to be opened.
    pub async fn start_in_lane(
        database: &Database,
        name: CounterName,
        layout: Layout,
        options: SnowflakeOptions,
        lane: LaneGate,
    ) -> Result<Self, SequenceError> {
        let clock = WallClock::System(SteadyWall::new(Box::new(SystemClock)));
        Self::start_under(database, name, layout, options, clock, Gate::Lane(lane)).await
    }

    async fn start_under(
        database: &Database,
        name: CounterName,
        layout: Layout,
        options: SnowflakeOptions,
        clock: WallClock,
        gate: Gate,
    ) -> Result<Self, SequenceError> {
        let inner = Arc::new(Inner {
            database: database.clone(),
            generator: Generator::new(layout, options.rollback),
            renewals: AtomicU64::new(0),
            failed_renewals: AtomicU64::new(0),
            losses: AtomicU64::new(0),
            leases: Leases::new(database, name, gate),
            options,
            clock,
            leased: Notify::new(),
            holding: std::sync::Mutex::new(Holding::default()),
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

    /// Whether `other` is a clone of this handle (shares its lease).
    pub fn same_as(&self, other: &SnowflakeCounter) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The database the counter is in.
    pub(super) fn database(&self) -> Database {
        self.inner.database.clone()
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

    /// The next ID if the generator can issue it now, with no await
    /// (`None`: a stall, which [`SnowflakeCounter::next_id`] waits out or
    /// reports).
    pub fn try_next_id(&self) -> Option<u64> {
        self.inner.try_next().ok()
    }

    /// The next ID, waiting out a used-up time unit or a small clock step
    /// back, and a lease being regained (up to [`SnowflakeOptions::lease_wait`]).
    pub async fn next_id(&self) -> Result<u64, SequenceError> {
        let mut lease_deadline = None;
        loop {
            match self.inner.try_next() {
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
                    if self.inner.holding().retired {
                        return Err(SequenceError::Striped {
                            name: self.name().clone(),
                        });
                    }
                    if self.inner.holding().closed {
                        return Err(SequenceError::LeaseLost {
                            name: self.name().clone(),
                            waited_ms: 0,
                        });
                    }
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
    /// right after it. The release applies only while the lease is still
    /// this holding's live one; a second close does nothing.
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
        let (held, last) = {
            let mut holding = self.inner.holding();
            holding.closed = true;
            let Some(held) = holding.held.take() else {
                return Ok(());
            };
            (held, self.inner.generator.seal())
        };
        // Nothing issued since the install (a seal racing a re-lease):
        // leave the reservation as it is rather than guess.
        let Some(last) = last else { return Ok(()) };
        self.inner.leases.release(&held, last).await.map(drop)
    }
}

impl Inner {
    fn holding(&self) -> std::sync::MutexGuard<'_, Holding> {
        self.holding.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One ID from the generator, or why none now.
    #[inline]
    fn try_next(&self) -> Result<u64, Stall> {
        match &self.clock {
            WallClock::System(wall) => self.generator.try_next_steady(wall),
            WallClock::Given(clock) => self.generator.try_next(&**clock),
        }
    }

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

    /// Claims a worker id and installs it in the generator (unless the
    /// sequence was closed meanwhile: then the new lease is released).
    async fn claim(&self) -> Result<(), SequenceError> {
        let held = self
            .leases
            .claim(
                self.generator.layout(),
                self.now_units(),
                self.reserve_units(),
                self.options.lease_ttl,
            )
            .await?;
        {
            let mut holding = self.holding();
            if !holding.closed {
                let deadline = self.options.deadline_after(held.sent);
                self.generator
                    .install(held.worker, held.floor, held.reserved, deadline);
                holding.held = Some(held);
                drop(holding);
                self.leased.notify_waiters();
                return Ok(());
            }
        }
        // Closed while claiming: nothing was issued under this lease.
        self.leases
            .release(&held, held.floor as i64 - 1)
            .await
            .map(drop)
    }

    /// Stops for good: its gate was sealed. What it reserved, the seal
    /// counted; it issues nothing more, and its lease is released with the
    /// last time it issued, so that its worker id is free at once.
    async fn retire(&self) {
        let (held, last) = {
            let mut holding = self.holding();
            holding.retired = true;
            holding.closed = true;
            (holding.held.take(), self.generator.seal())
        };
        self.leased.notify_waiters();
        if let (Some(held), Some(last)) = (held, last) {
            // Best effort: a lease not released expires.
            let _ = self.leases.release(&held, last).await;
        }
    }

    /// Renews the lease once; claims another if it was lost; retires when
    /// its gate is sealed.
    async fn renew(&self) -> Result<(), SequenceError> {
        let outcome = self.renew_or_claim().await;
        if let Err(SequenceError::Striped { .. }) = &outcome {
            self.retire().await;
        }
        outcome
    }

    async fn renew_or_claim(&self) -> Result<(), SequenceError> {
        let Some(held) = self.holding().held.clone() else {
            return Ok(());
        };
        match self
            .leases
            .renew(
                &held,
                self.now_units(),
                self.reserve_units(),
                self.options.lease_ttl,
            )
            .await?
        {
            Some((reserved, sent)) => {
                self.generator
                    .renewed(reserved, self.options.deadline_after(sent));
                self.renewals.fetch_add(1, Ordering::Relaxed);
                self.leased.notify_waiters();
                Ok(())
            }
            None => {
                // Ended or taken over (we were paused, or cut off, past it):
                // stop, then lease again, possibly another worker id.
                self.generator.invalidate();
                self.losses.fetch_add(1, Ordering::Relaxed);
                self.claim().await
            }
        }
    }
}

/// Renews the lease every third of its TTL (the lease primitive's
/// `keep_renewed`) until the [`SnowflakeCounter`] is dropped or closed. A failed
/// renewal is retried soon; meanwhile the deadline runs out and the
/// generator issues nothing.
async fn renew_forever(inner: std::sync::Weak<Inner>) {
    let Some(every) = inner.upgrade().map(|inner| inner.options.renew_every) else {
        return;
    };
    keep_renewed(every, || {
        let inner = inner.clone();
        async move {
            let Some(strong) = inner.upgrade() else {
                return Renewal::Lost(());
            };
            match strong.renew().await {
                Ok(()) => Renewal::Renewed,
                Err(_) => {
                    strong.failed_renewals.fetch_add(1, Ordering::Relaxed);
                    Renewal::Failed(())
                }
            }
        }
    })
    .await;
}
