//! What the monitor page shows: the database's side, read through the
//! library (counters, worker leases, locks, stored policies) and shared by
//! every viewer for a few seconds ([`DatabaseRead`], see `shared.rs`), and
//! this instance's side as the service hands it in (buffers, rates, the
//! policy in service), joined into one [`Snapshot`]. A part that cannot be
//! read is named in `problems` and the rest is still shown: the database's
//! parts are read at once, all within one deadline, so that a database that
//! is down or hung costs the page that deadline and no more, and is named
//! as unavailable.
//!
//! Of the counters, the database read keeps only the ones to look at first
//! (`counters.rs`); a search or a page of counters by name is read for the
//! request that asks for it, one page from the index on names.
//!
//! A lock's owner token is what renews and releases its lease: the page
//! shows a fingerprint of it instead, enough to tell holders apart.

use idmint::lock::{status_all, LOCKS_COLLECTION};
use idmint::policy::PolicyStore;
use idmint::sequence::prefixes::{self, Collision};
use idmint::sequence::striping::{self, Deployments, HealthReport, LaneReport};
use idmint::sequence::{self, CounterName, Listed};
use idmint::series::{summaries, SeriesSummary};
use idmint::{Clock, ErrorClass};
use mongodb::Database;
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

use super::counters::{AttentionCounts, CounterRow, Triage, SHOWN_PER_REASON};
use super::query::{PageRequest, View, DEFAULT_PER_PAGE};
use super::rates::{CounterActivity, RatePoint};

/// Everything the page shows.
#[derive(Debug, Clone, Serialize)]
pub struct Snapshot {
    /// When the database's side was read, RFC 3339, by this instance's
    /// clock (it is shared by the viewers of the next few seconds).
    pub taken_at: String,
    /// This instance.
    pub instance: Instance,
    /// The counters shown: the ones to look at first, or one page of them
    /// by name (`paging` says which).
    pub counters: Vec<CounterRow>,
    /// Which counters are shown, of how many.
    pub paging: Paging,
    /// The worker leases of every counter that has them, of every instance.
    pub workers: Vec<WorkerRow>,
    /// The locks held now.
    pub locks: Vec<LockRow>,
    /// Locks that exist but are free (released or expired).
    pub free_locks: usize,
    /// Every gap-free series, those with holes first.
    pub series: Vec<SeriesSummary>,
    /// The policy in service here and the stored versions.
    pub policy: PolicyView,
    /// Parts that could not be read, and why.
    pub problems: Vec<String>,
}

/// This instance's side.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Instance {
    /// `host:pid`.
    pub name: String,
    /// Its buffers of values, by counter.
    pub buffers: Vec<BufferRow>,
    /// Values and requests per second, oldest first.
    pub rates: Vec<RatePoint>,
    /// Each deployment a striped counter may span, as this instance knows
    /// its health (none: it was given one connection string).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deployments: Vec<HealthReport>,
}

/// One counter's buffers in this instance (the kinds that buffer values).
#[derive(Debug, Clone, Default, Serialize)]
pub struct BufferRow {
    /// The counter.
    pub counter: String,
    /// The segment values are handed out from, `[start, end)`.
    pub current: Option<(u64, u64)>,
    /// The next value it hands out.
    pub position: Option<u64>,
    /// The segment fetched ahead, `[start, end)`.
    pub next: Option<(u64, u64)>,
    /// The size of the next fetch.
    pub step: u64,
    /// Whether a fetch is in flight.
    pub loading: bool,
    /// Segments fetched so far.
    pub fetches: u64,
    /// Values handed out so far.
    pub values: u64,
}

/// Which counters a snapshot shows.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "view", rename_all = "snake_case")]
pub enum Paging {
    /// The counters to look at first ([`Triage`]), and a count of the rest.
    First {
        /// Every counter (`None`: they could not be read, see `problems`).
        total: Option<u64>,
        /// The counters not shown (search or page through them).
        more: Option<u64>,
        /// How many counters there are for each reason to look at them.
        attention: Option<AttentionCounts>,
        /// The most counters shown for each reason.
        shown_per_reason: usize,
        /// The query of the first page of every counter by name
        /// (`?page=1&per_page=50`, relative to this one's address).
        first_page: String,
    },
    /// One page of the counters by name.
    Page {
        /// The start of the names searched for (empty: every counter).
        q: String,
        /// The page, from 1.
        page: u64,
        /// Counters per page.
        per_page: u64,
        /// The counters found (every counter, without `q`).
        total: u64,
        /// The pages they fill.
        pages: u64,
        /// The query of the next page (relative to this one's address:
        /// `?q=…&page=…&per_page=…`), if there is one.
        next: Option<String>,
        /// The query of the page before, if there is one.
        previous: Option<String>,
    },
}

/// One worker lease.
#[derive(Debug, Clone, Serialize)]
pub struct WorkerRow {
    /// The counter.
    pub counter: String,
    /// The worker id.
    pub worker: u64,
    /// The holder's host and process id.
    pub host: String,
    /// The holder's process id.
    pub pid: u64,
    /// Milliseconds left by the server's clock (negative: expired).
    pub expires_in_ms: i64,
    /// Whether the lease is live by the server's clock.
    pub live: bool,
}

/// One lock held.
#[derive(Debug, Clone, Serialize)]
pub struct LockRow {
    /// The lock's name.
    pub name: String,
    /// The first 12 hexadecimal digits of the SHA-256 of the holder's
    /// owner token ([`holder_fingerprint`]): tells holders apart without
    /// showing the token, which would let its reader release the lock.
    pub holder_fingerprint: String,
    /// The holder's label (`lock elect --id`, `Locks::lock_labelled`): who
    /// leads. Not secret: the owner token adds a random part to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The fencing token of this holding (the latest, for a lock held
    /// shared only).
    pub token: i64,
    /// Shared holders now (a semaphore's permits, a read-write lock's
    /// readers); the fingerprint is empty when only they hold it.
    pub shared: usize,
    /// Re-entrant holds.
    pub count: i64,
    /// Milliseconds left by the server's clock.
    pub expires_in_ms: Option<i64>,
}

/// A policy: the one in service or a stored version.
#[derive(Debug, Clone, Serialize)]
pub struct PolicyRow {
    /// The stored version (`None`: the instance's own, not from the store).
    pub version: Option<i64>,
    /// The policy's name.
    pub name: String,
    /// The policy's own version (semver).
    pub policy_version: String,
    /// The SHA-256 of its bytes.
    pub sha256: String,
    /// The contract it implements (in service only; the store does not
    /// record it).
    pub contract: Option<String>,
    /// When it was pushed (stored versions).
    pub pushed_at: Option<String>,
    /// Whether it is the active stored version.
    pub active: bool,
}

/// The policy side.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PolicyView {
    /// The policy this instance formats with.
    pub serving: Option<PolicyRow>,
    /// The stored versions, newest first.
    pub stored: Vec<PolicyRow>,
    /// Versions active before the active one, most recent last.
    pub history: Vec<i64>,
}

/// The database's side of a snapshot, read once for every viewer of the
/// next few seconds.
#[derive(Debug, Clone)]
pub struct DatabaseRead {
    /// When it was read, RFC 3339, by this instance's clock.
    pub taken_at: String,
    /// The counters to look at first, if the counters could be read.
    pub triage: Option<Triage>,
    /// The busiest counters here when it was read, with their values over
    /// the last minute.
    pub busiest: Vec<(String, u64)>,
    /// Every prefix owned by more than one counter.
    pub collisions: Vec<Collision>,
    /// The worker leases of every counter that has them.
    pub workers: Vec<WorkerRow>,
    /// The locks held.
    pub locks: Vec<LockRow>,
    /// Locks that exist but are free.
    pub free_locks: usize,
    /// Every gap-free series, those with holes first.
    pub series: Vec<SeriesSummary>,
    /// The stored policies, newest first.
    pub stored: Vec<PolicyRow>,
    /// Versions active before the active one, most recent last.
    pub history: Vec<i64>,
    /// Parts that could not be read, and why.
    pub problems: Vec<String>,
}

impl DatabaseRead {
    /// Reads the database's side, each part at once and all by `deadline`,
    /// choosing the counters to look at first with the `busiest` counters
    /// here. Reads only.
    pub async fn read(
        database: Database,
        deployments: Option<Deployments>,
        busiest: Vec<(String, u64)>,
        deadline: Deadline,
    ) -> Self {
        let now_ms = idmint::SystemClock.now_micros() / 1000;
        let (
            (triage, collisions, workers, mut problems),
            locks,
            series,
            (stored, history, policy_problems),
        ) = tokio::join!(
            read_counters(&database, deployments.as_ref(), now_ms, &busiest, deadline),
            deadline.read("locks", read_locks(&database)),
            deadline.read("gap-free series", summaries(&database)),
            read_policies(&database, deadline),
        );
        let series = series.unwrap_or_else(|problem| {
            problems.push(problem);
            Vec::new()
        });
        let (locks, free_locks) = match locks {
            Ok(locks) => locks,
            Err(problem) => {
                problems.push(problem);
                (Vec::new(), 0)
            }
        };
        problems.extend(policy_problems);
        DatabaseRead {
            taken_at: idmint::parts::rfc3339_micros(now_ms * 1000),
            triage,
            busiest,
            collisions,
            workers,
            locks,
            free_locks,
            series,
            stored,
            history,
            problems,
        }
    }
}

/// How long after its deadline a viewer waits for a read that is still
/// being assembled (the parts not read by the deadline are named as
/// unavailable by the read itself) before it is shown without it.
pub const ASSEMBLY_GRACE: Duration = Duration::from_millis(250);

impl DatabaseRead {
    /// What a viewer is shown of the database when the read it waits on is
    /// not done by `deadline` plus [`ASSEMBLY_GRACE`] (the read goes on in
    /// its own task and serves the viewers after).
    pub fn unfinished(deadline: Deadline) -> Self {
        let now_ms = idmint::SystemClock.now_micros() / 1000;
        DatabaseRead {
            taken_at: idmint::parts::rfc3339_micros(now_ms * 1000),
            triage: None,
            busiest: Vec::new(),
            collisions: Vec::new(),
            workers: Vec::new(),
            locks: Vec::new(),
            free_locks: 0,
            series: Vec::new(),
            stored: Vec::new(),
            history: Vec::new(),
            problems: vec![format!(
                "the database: the read was not done within {} ms; it goes on, and the next \
                 reload shows it",
                deadline.1.as_millis()
            )],
        }
    }
}

/// One page of counters by name, as read for the request that asked.
#[derive(Debug, Clone)]
pub struct PageRead {
    /// The page asked for.
    pub request: PageRequest,
    /// Its counters, by name, and how many were found in all (for a
    /// search; every counter's number is the shared read's); or why they
    /// could not be read.
    pub found: Result<(Vec<Listed>, Option<u64>), String>,
    /// The lanes of its striped counters, by counter name.
    pub lanes: HashMap<String, Vec<LaneReport>>,
    /// The lanes that could not be read, and why.
    pub problems: Vec<String>,
}

impl PageRead {
    /// Reads page `request` by `deadline`: its counters and, for a search,
    /// how many were found (at once; both from the index on names). Reads
    /// only.
    pub async fn read(
        database: &Database,
        deployments: Option<&Deployments>,
        request: PageRequest,
        deadline: Deadline,
    ) -> Self {
        let count = async {
            if request.start.is_empty() {
                return Ok(None);
            }
            deadline
                .read("counters", sequence::count(database, &request.start))
                .await
                .map(Some)
        };
        let (page, total) = tokio::join!(
            deadline.read(
                "counters",
                sequence::list_page(database, &request.start, request.skip(), request.per_page)
            ),
            count,
        );
        let found = page.and_then(|page| Ok((page, total?)));
        let mut problems = Vec::new();
        let lanes = match &found {
            Ok((listed, _)) => {
                read_lanes(
                    database,
                    deployments,
                    listed.iter(),
                    deadline,
                    &mut problems,
                )
                .await
            }
            Err(_) => HashMap::new(),
        };
        PageRead {
            request,
            found,
            lanes,
            problems,
        }
    }
}

impl Snapshot {
    /// Joins the database's side, `read`, with `instance`, the policy
    /// `serving` here and what `view` asks to see of the counters (`page`,
    /// read for a [`View::Page`]); `activity` gives a page's counters their
    /// values of the last minute.
    pub fn assemble(
        read: &DatabaseRead,
        instance: Instance,
        serving: Option<PolicyRow>,
        view: &View,
        page: Option<PageRead>,
        activity: &CounterActivity,
    ) -> Self {
        let mut problems = read.problems.clone();
        let (counters, paging) = match (view, page) {
            (View::Page(_), Some(page)) => {
                problems.extend(page.problems.iter().cloned());
                let (rows, paging, problem) = page_rows(read, page, activity);
                problems.extend(problem);
                (rows, paging)
            }
            _ => (
                read.triage
                    .as_ref()
                    .map(|triage| triage.rows.clone())
                    .unwrap_or_default(),
                Paging::First {
                    total: read.triage.as_ref().map(|triage| triage.total),
                    more: read.triage.as_ref().map(Triage::more),
                    attention: read.triage.as_ref().map(|triage| triage.counts.clone()),
                    shown_per_reason: SHOWN_PER_REASON,
                    first_page: format!(
                        "?{}",
                        PageRequest {
                            start: String::new(),
                            page: 1,
                            per_page: DEFAULT_PER_PAGE,
                        }
                        .query_of(1)
                    ),
                },
            ),
        };
        Snapshot {
            taken_at: read.taken_at.clone(),
            instance,
            counters,
            paging,
            workers: read.workers.clone(),
            locks: read.locks.clone(),
            free_locks: read.free_locks,
            series: read.series.clone(),
            policy: policy_view(serving, read.stored.clone(), read.history.clone()),
            problems,
        }
    }
}

/// The rows and paging of a page read, and the problem met reading it.
fn page_rows(
    read: &DatabaseRead,
    page: PageRead,
    activity: &CounterActivity,
) -> (Vec<CounterRow>, Paging, Option<String>) {
    let now_ms = idmint::SystemClock.now_micros() / 1000;
    let request = page.request;
    let (rows, total, problem) = match page.found {
        Ok((listed, total)) => {
            // Every counter's number is the shared read's; without it, at
            // least those up to this page.
            let total = total
                .or(read.triage.as_ref().map(|triage| triage.total))
                .unwrap_or(request.skip() + listed.len() as u64);
            let rows = listed
                .iter()
                .map(|counter| {
                    let busy = read.busiest.iter().any(|(name, _)| *name == counter.name);
                    let recent = activity.recent(&counter.name);
                    let mut row = CounterRow::new(counter, now_ms, &read.collisions, recent, busy);
                    if let Some(lanes) = page.lanes.get(&counter.name) {
                        row.add_lanes(lanes);
                    }
                    row
                })
                .collect();
            (rows, total, None)
        }
        Err(problem) => (Vec::new(), 0, Some(problem)),
    };
    let pages = total.div_ceil(request.per_page);
    let query = |page: u64| format!("?{}", request.query_of(page));
    let paging = Paging::Page {
        q: request.start.clone(),
        page: request.page,
        per_page: request.per_page,
        total,
        pages,
        next: (request.page < pages).then(|| query(request.page + 1)),
        previous: (request.page > 1).then(|| query(request.page - 1)),
    };
    (rows, paging, problem)
}

/// When the database's side of a snapshot must have been read by, and how
/// long that was.
#[derive(Debug, Clone, Copy)]
pub struct Deadline(Instant, Duration);

impl Deadline {
    /// `timeout` from now.
    pub fn after(timeout: Duration) -> Self {
        Deadline(Instant::now() + timeout, timeout)
    }

    /// `future`'s output, or `None` if it is not done by the deadline plus
    /// `grace`.
    pub async fn wait<T>(self, grace: Duration, future: impl Future<Output = T>) -> Option<T> {
        tokio::time::timeout_at(self.0 + grace, future).await.ok()
    }

    /// `read`'s answer, or the problem to name for `part`: the database
    /// unavailable (no answer by the deadline, or the driver's own verdict),
    /// or another failure in the library's words.
    async fn read<T, E>(
        self,
        part: &str,
        read: impl Future<Output = Result<T, E>>,
    ) -> Result<T, String>
    where
        E: Into<idmint::Error>,
    {
        match tokio::time::timeout_at(self.0, read).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => {
                let error: idmint::Error = error.into();
                Err(match error.class() {
                    ErrorClass::Unavailable => {
                        format!("{part}: the database is unavailable: {error}")
                    }
                    _ => format!("{part}: {error}"),
                })
            }
            Err(_) => Err(format!(
                "{part}: the database is unavailable: no answer within {} ms",
                self.1.as_millis()
            )),
        }
    }
}

/// The first 12 hexadecimal digits of the SHA-256 of a lock's owner token.
pub fn holder_fingerprint(owner: &str) -> String {
    let mut hash = idmint::checksum::sha256_hex(owner.as_bytes());
    hash.truncate(12);
    hash
}

/// Every counter (one read), then the worker leases of the counters that
/// have them: the counters to look at first (if the counters could be
/// read), the prefixes owned twice among them, the leases, and the
/// problems met.
async fn read_counters(
    database: &Database,
    deployments: Option<&Deployments>,
    now_ms: u64,
    busiest: &[(String, u64)],
    deadline: Deadline,
) -> (Option<Triage>, Vec<Collision>, Vec<WorkerRow>, Vec<String>) {
    let mut problems = Vec::new();
    let listed = match deadline.read("counters", sequence::list(database)).await {
        Ok(listed) => Some(listed),
        Err(problem) => {
            problems.push(problem);
            None
        }
    };
    let all = listed.as_deref().unwrap_or_default();
    let collisions =
        prefixes::collisions_among(all.iter().filter_map(|counter| counter.state.as_ref().ok()));
    let mut triage = listed.as_deref().map(|listed| {
        Triage::choose(
            listed,
            now_ms,
            &collisions,
            busiest,
            DEFAULT_PER_PAGE as usize,
        )
    });
    if let Some(triage) = triage.as_mut() {
        let shown: HashSet<&str> = triage.rows.iter().map(|row| row.name.as_str()).collect();
        let striped = all
            .iter()
            .filter(|counter| shown.contains(counter.name.as_str()));
        let lanes = read_lanes(database, deployments, striped, deadline, &mut problems).await;
        for row in &mut triage.rows {
            if let Some(lanes) = lanes.get(&row.name) {
                row.add_lanes(lanes);
            }
        }
    }
    let leased: Vec<&str> = all
        .iter()
        .filter(|counter| {
            counter
                .state
                .as_ref()
                .is_ok_and(|state| state.has_worker_leases())
        })
        .map(|counter| counter.name.as_str())
        .collect();
    let workers = read_workers(database, &leased, deadline, &mut problems).await;
    (triage, collisions, workers, problems)
}

/// The lanes of the striped counters among `counters`, by counter name,
/// read at once by `deadline` (one read of each counter's lanes; striped
/// counters are few, and only those shown are asked for). A counter whose
/// lanes cannot be read is shown without them, and named in `problems`.
async fn read_lanes<'a>(
    database: &Database,
    deployments: Option<&Deployments>,
    counters: impl Iterator<Item = &'a Listed>,
    deadline: Deadline,
    problems: &mut Vec<String>,
) -> HashMap<String, Vec<LaneReport>> {
    let reads = counters.filter_map(|counter| {
        let state = counter.state.as_ref().ok()?;
        let map = state.striped.as_ref()?;
        let name = CounterName::new(&counter.name).ok()?;
        Some(async move {
            let part = format!("the lanes of counter '{name}'");
            let lanes = deadline
                .read(&part, striping::lanes(database, deployments, &name, map))
                .await;
            (counter.name.clone(), lanes)
        })
    });
    let mut found = HashMap::new();
    for (name, lanes) in futures_util::future::join_all(reads).await {
        match lanes {
            Ok(lanes) => {
                found.insert(name, lanes);
            }
            Err(problem) => problems.push(problem),
        }
    }
    found
}

/// The locks held, and how many others there are.
async fn read_locks(database: &Database) -> Result<(Vec<LockRow>, usize), idmint::Error> {
    let states = status_all(&database.collection(LOCKS_COLLECTION), None).await?;
    let total = states.len();
    let held: Vec<LockRow> = states
        .into_iter()
        .filter(|state| state.is_held() || state.live_shared().next().is_some())
        .map(|state| LockRow {
            shared: state.live_shared().count(),
            holder_fingerprint: match (state.is_held(), &state.owner) {
                (true, Some(owner)) => holder_fingerprint(owner),
                _ => String::new(),
            },
            name: state.name,
            label: state.label,
            token: state.token,
            count: state.count,
            expires_in_ms: state.expires_in_ms,
        })
        .collect();
    let free = total - held.len();
    Ok((held, free))
}

/// The worker leases of the counters named.
async fn read_workers(
    database: &Database,
    counters: &[&str],
    deadline: Deadline,
    problems: &mut Vec<String>,
) -> Vec<WorkerRow> {
    let mut rows = Vec::new();
    for &counter in counters {
        let Ok(name) = CounterName::new(counter) else {
            continue;
        };
        let part = format!("worker leases of {counter}");
        match deadline
            .read(&part, sequence::workers(database, &name))
            .await
        {
            Ok((leases, server_now_ms)) => rows.extend(leases.into_iter().map(|lease| WorkerRow {
                counter: counter.to_string(),
                worker: lease.worker,
                host: lease.host,
                pid: lease.pid,
                expires_in_ms: lease.expires_ms - server_now_ms,
                live: lease.live,
            })),
            Err(problem) => problems.push(problem),
        }
    }
    rows
}

/// The stored policies, newest first, the activation history, and the
/// problems met.
async fn read_policies(
    database: &Database,
    deadline: Deadline,
) -> (Vec<PolicyRow>, Vec<i64>, Vec<String>) {
    let mut problems = Vec::new();
    let store = PolicyStore::new(database);
    let (stored, active) = tokio::join!(
        deadline.read("stored policies", store.list()),
        deadline.read("active policy", store.active()),
    );
    let stored = match stored {
        Ok(mut stored) => {
            stored.sort_by_key(|stored| std::cmp::Reverse(stored.version));
            stored
                .into_iter()
                .map(|policy| PolicyRow {
                    version: Some(policy.version),
                    name: policy.name,
                    policy_version: policy.info.version,
                    sha256: policy.sha256,
                    contract: None,
                    pushed_at: Some(policy.pushed_at),
                    active: policy.active,
                })
                .collect()
        }
        Err(problem) => {
            problems.push(problem);
            Vec::new()
        }
    };
    let history = match active {
        Ok(active) => active.map(|active| active.history).unwrap_or_default(),
        Err(problem) => {
            problems.push(problem);
            Vec::new()
        }
    };
    (stored, history, problems)
}

/// The policy side: the policy `serving` here, naming its stored version
/// when its bytes are one, and the `stored` versions with their `history`.
fn policy_view(
    serving: Option<PolicyRow>,
    stored: Vec<PolicyRow>,
    history: Vec<i64>,
) -> PolicyView {
    let serving = serving.map(|mut row| {
        if let Some(stored) = stored.iter().find(|s| s.sha256 == row.sha256) {
            row.version = stored.version;
            row.active = stored.active;
        }
        row
    });
    PolicyView {
        serving,
        stored,
        history,
    }
}
