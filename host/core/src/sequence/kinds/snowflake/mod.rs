//! Snowflake IDs (seed 001, as Baidu's uid-generator and Twitter's snowflake
//! make them), with MongoDB as the only coordinator: a 64-bit ID of time,
//! worker id and sequence ([`Layout`]), issued from memory by a
//! [`SnowflakeCounter`] whose worker id is leased ([`lease`]) and whose generator
//! fails closed and never repeats an ID when the clock goes back
//! ([`generator`]).
//!
//! The counter document is `{_id, kind: "snowflake", time_bits,
//! worker_bits, seq_bits, unit, epoch_ms, prefix?}`; it is never written
//! after creation. The leases live in the `workers` collection.
//!
//! `mod.rs` holds the kind (settings, creation, reading the document) and
//! [`SnowflakeCounter`] (claiming a worker id, the renewer, `close`), `lease.rs`
//! the worker-lease documents and their time reservation, `generator.rs`
//! the word IDs are taken from and its fail-closed checks. This folder owns
//! its counters' documents (read only) and their `workers` documents
//! (`_id: "<counter>#<worker>"`), nothing else: it must not touch another
//! kind's documents nor the `locks` collection, and it does not write its
//! own lease rules (server-clock expiry, takeover, conditional renewal and
//! release, the local deadline): those are the one lease primitive's
//! (`crate::lease`), shared with locks; what this folder adds is the time
//! reservation (`floor`, `last_time`).

mod generator;
mod lease;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mongodb::Database;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

pub use generator::{OnRollback, RollbackOptions};
pub use lease::{WorkerLease, WORKERS_COLLECTION};

use mongodb::bson::{doc, Bson, Document};
use serde::Serialize;

use self::generator::{Generator, Stall};
use self::lease::{Held as HeldLease, Leases};
use crate::lease::{keep_renewed, Renewal};
use crate::mongo::collections::COUNTERS;
use crate::mongo::describe_value;
use crate::parts::snowflake::date;
use crate::parts::{Layout, Stamp, TimeUnit};
use crate::sequence::clock::{Clock, SystemClock};
use crate::sequence::counter::document::{find, read};
use crate::sequence::counter::fields::read_integer;
use crate::sequence::error::SequenceError;
use crate::sequence::kind_trait::{
    CommandOptions, Fact, Handle, Headroom, Held, Kind, LeaseStats, Repeats, ValueShape,
};
use crate::sequence::name::CounterName;
use crate::sequence::settings::{Setting, Settings};

/// The snowflake kind (see the module docs).
#[derive(Debug)]
pub struct SnowflakeKind;

/// A snowflake counter's fields: its layout (see [`Layout`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SnowflakeState {
    /// The layout.
    #[serde(flatten)]
    pub layout: Layout,
}

/// The layout `settings` ask for, defaults filled in.
pub fn layout_of(settings: &Settings) -> Layout {
    let default = Layout::default();
    let (time_bits, worker_bits, seq_bits) =
        settings
            .layout
            .unwrap_or((default.time_bits, default.worker_bits, default.seq_bits));
    Layout {
        time_bits,
        worker_bits,
        seq_bits,
        unit: settings.unit.unwrap_or(default.unit),
        epoch_ms: settings.epoch_ms.unwrap_or(default.epoch_ms),
    }
}

impl Kind for SnowflakeKind {
    const NAME: &'static str = "snowflake";
    const SUMMARY: &'static str = "snowflake IDs (seed 001, Baidu uid-generator): time, leased \
         worker id and sequence in 63 bits, issued from memory";
    const SETTINGS: &'static [Setting] = &[Setting::Layout, Setting::Unit, Setting::Epoch];
    const RUNS: bool = false;
    const FIT_ADVICE: &'static str = "use a policy that holds 64-bit IDs, such as the built-in \
         base32 policy (--policy builtin:base32)";
    type State = SnowflakeState;
    type Options = SnowflakeOptions;
    type Handle = SnowflakeCounter;

    fn read(document: &Document) -> Result<SnowflakeState, String> {
        let unit = match document.get("unit") {
            Some(Bson::String(unit)) => unit
                .parse::<TimeUnit>()
                .map_err(|reason| format!("unit: {reason}"))?,
            Some(other) => return Err(format!("unit is {}, not a string", describe_value(other))),
            None => return Err("unit is missing".into()),
        };
        let layout = Layout {
            time_bits: read_integer(document, "time_bits", 1, 62)? as u32,
            worker_bits: read_integer(document, "worker_bits", 1, 62)? as u32,
            seq_bits: read_integer(document, "seq_bits", 1, 62)? as u32,
            unit,
            epoch_ms: read_integer(document, "epoch_ms", 0, i64::MAX as u64)?,
        };
        layout.check_shape()?;
        Ok(SnowflakeState { layout })
    }

    /// Never updated by a pipeline: its document is read, not advanced.
    fn guard() -> Vec<Bson> {
        Vec::new()
    }

    fn fields(settings: &Settings, now_ms: u64) -> Result<Document, SequenceError> {
        let layout = layout_of(settings);
        layout
            .check_new(now_ms)
            .map_err(SequenceError::InvalidSpec)?;
        Ok(doc! {
            "time_bits": i64::from(layout.time_bits),
            "worker_bits": i64::from(layout.worker_bits),
            "seq_bits": i64::from(layout.seq_bits),
            "unit": layout.unit.as_str(),
            "epoch_ms": layout.epoch_ms as i64,
        })
    }

    fn shape(_state: &SnowflakeState) -> ValueShape {
        ValueShape {
            largest_value: i64::MAX as u64,
            repeats: Repeats::Never,
            server_timestamp: false,
        }
    }

    /// Time: the share of the time bits' span gone by at `now_ms`.
    fn headroom(state: &SnowflakeState, now_ms: u64) -> Option<Headroom> {
        let l = state.layout;
        let (start, end) = (l.epoch_ms, l.runs_out_at_ms());
        let span = end.saturating_sub(start).max(1);
        Some(Headroom {
            used: (now_ms.saturating_sub(start) as f64 / span as f64).min(1.0),
            left: format!("until {}", date(end)),
        })
    }

    fn facts(state: &SnowflakeState, now_ms: u64) -> Vec<Fact> {
        let l = state.layout;
        let runs_out_on = date(l.runs_out_at_ms());
        let mut facts = vec![
            Fact::text(
                "layout",
                format!(
                    "{},{},{} in {} from {}: {} worker ids, {} IDs per {} per worker",
                    l.time_bits,
                    l.worker_bits,
                    l.seq_bits,
                    l.unit,
                    date(l.epoch_ms),
                    l.max_worker() + 1,
                    l.max_seq() + 1,
                    l.unit
                ),
            ),
            Fact::derived(
                "runs out on",
                runs_out_on.clone(),
                "runs_out_on",
                serde_json::Value::String(runs_out_on),
            ),
        ];
        let warning = l.lifetime_warning(now_ms);
        if let Some(text) = &warning {
            facts.push(Fact::derived(
                "warning",
                text.clone(),
                "warning",
                serde_json::Value::String(text.clone()),
            ));
        }
        facts
    }

    fn take_command(
        _name: &CounterName,
        _count: u64,
        _options: &CommandOptions,
    ) -> Result<(Document, Vec<Document>), SequenceError> {
        Err(SequenceError::NoCommand {
            kind: Self::NAME,
            reason: "snowflake IDs are made in the process that leases a worker id; \
                     no single command takes them",
        })
    }

    async fn open(
        database: &Database,
        name: CounterName,
        state: &SnowflakeState,
        options: &SnowflakeOptions,
    ) -> Result<SnowflakeCounter, SequenceError> {
        SnowflakeCounter::start(database, name, state.layout, options.clone()).await
    }
}

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
    clock: Arc<dyn Clock>,
    /// Woken when a lease is (re)gained.
    leased: Notify,
    /// The holding now; installs, seals and the close are decided under it.
    holding: std::sync::Mutex<Holding>,
    renewer: std::sync::Mutex<Option<JoinHandle<()>>>,
}

/// The worker lease a [`SnowflakeCounter`] holds, and whether it was closed.
#[derive(Debug, Default)]
struct Holding {
    held: Option<HeldLease>,
    closed: bool,
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
        Self::start_with_clock(database, name, layout, options, Arc::new(SystemClock)).await
    }

    /// [`SnowflakeCounter::start`] with a clock of the caller's (tests step it back).
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

/// A snowflake counter's layout lifetime, for `idmint status`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Lifetime {
    /// The counter.
    pub counter: String,
    /// Its kind's name (`status` shows it beside the counter).
    #[serde(skip)]
    pub kind: &'static str,
    /// When its time bits run out, `YYYY-MM-DD`.
    pub runs_out_on: String,
    /// A warning once fewer than two years are left.
    pub warning: Option<String>,
}

/// The layout lifetime of every snowflake counter in `database`, by name
/// (a corrupt counter is skipped: `counter show` names what is wrong).
pub async fn lifetimes(database: &Database, now_ms: u64) -> Result<Vec<Lifetime>, SequenceError> {
    let documents = crate::sequence::counter::document::find_counters(
        database,
        mongodb::bson::doc! { "kind": SnowflakeKind::NAME },
        mongodb::bson::doc! {},
    )
    .await?;
    Ok(documents
        .iter()
        .filter_map(|document| {
            let name = CounterName::new(document.get_str("_id").ok()?).ok()?;
            let bits = read::<SnowflakeKind>(&name, document).ok()?.kind.layout;
            Some(Lifetime {
                counter: name.to_string(),
                kind: SnowflakeKind::NAME,
                runs_out_on: date(bits.runs_out_at_ms()),
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
    find::<SnowflakeKind>(&database.collection(COUNTERS), name).await?;
    Leases::new(database, name.clone()).list().await
}

impl Inner {
    fn holding(&self) -> std::sync::MutexGuard<'_, Holding> {
        self.holding.lock().unwrap_or_else(|p| p.into_inner())
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

    /// Renews the lease once; claims another if it was lost.
    async fn renew(&self) -> Result<(), SequenceError> {
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

impl Handle for SnowflakeCounter {
    type Of = SnowflakeKind;

    fn name(&self) -> &CounterName {
        SnowflakeCounter::name(self)
    }

    fn database(&self) -> Database {
        self.inner.database.clone()
    }

    /// The IDs, each decomposed once into the stamp a policy formats.
    async fn take(&self, count: usize, _client_micros: u64) -> Result<Vec<Stamp>, SequenceError> {
        let layout = *self.layout();
        let ids = SnowflakeCounter::take(self, count).await?;
        Ok(ids
            .into_iter()
            .map(|id| Stamp::snowflake(id, &layout).expect("the generator issues 63-bit IDs"))
            .collect())
    }

    async fn close(&self) -> Result<crate::sequence::GiveBack, SequenceError> {
        SnowflakeCounter::close(self).await?;
        Ok(crate::sequence::GiveBack::default())
    }

    fn held(&self) -> Held {
        Held {
            buffers: None,
            lease: Some(self.lease_stats()),
        }
    }
}
