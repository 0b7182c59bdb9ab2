//! What the monitor page shows, read at one moment: the database's side
//! through the library (counters, worker leases, locks, stored policies) and
//! this instance's side as the service hands it in (buffers, rates, the
//! policy in service). A part that cannot be read is named in `problems`
//! and the rest is still shown: the database's parts are read at once, all
//! within one deadline, so that a database that is down or hung costs the
//! page that deadline and no more, and is named as unavailable.
//!
//! A lock's owner token is what renews and releases its lease: the page
//! shows a fingerprint of it instead, enough to tell holders apart.

use idmint::lock::{status_all, LOCKS_COLLECTION};
use idmint::policy::PolicyStore;
use idmint::sequence::{self, CounterKind, CounterName, Headroom};
use idmint::{Clock, ErrorClass};
use mongodb::Database;
use serde::Serialize;
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

use super::rates::RatePoint;

/// Everything the page shows.
#[derive(Debug, Clone, Serialize)]
pub struct Snapshot {
    /// When it was read, RFC 3339, by this instance's clock.
    pub taken_at: String,
    /// This instance.
    pub instance: Instance,
    /// Every counter, by name.
    pub counters: Vec<CounterRow>,
    /// The worker leases of every snowflake counter, of every instance.
    pub workers: Vec<WorkerRow>,
    /// The locks held now.
    pub locks: Vec<LockRow>,
    /// Locks that exist but are free (released or expired).
    pub free_locks: usize,
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
    /// Its segment buffers, by counter.
    pub buffers: Vec<BufferRow>,
    /// Values and requests per second, oldest first.
    pub rates: Vec<RatePoint>,
}

/// One segment counter's buffers in this instance.
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

/// One counter.
#[derive(Debug, Clone, Serialize)]
pub struct CounterRow {
    /// Its name.
    pub name: String,
    /// Its kind (empty when the document cannot be read).
    pub kind: String,
    /// What it says about itself, label and text, in order.
    pub facts: Vec<(String, String)>,
    /// The prefixes it owns, the default first (`(none)`: the empty prefix).
    pub prefixes: Vec<String>,
    /// How much is used; `None`: it never runs out.
    pub headroom: Option<Headroom>,
    /// What is wrong with its document, if anything.
    pub problem: Option<String>,
}

/// One worker lease.
#[derive(Debug, Clone, Serialize)]
pub struct WorkerRow {
    /// The snowflake counter.
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
    /// The fencing token of this holding.
    pub token: i64,
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

impl Snapshot {
    /// Reads the database's side, each part at once and all within
    /// `timeout`, and joins it with `instance` and the policy `serving`
    /// here. Reads only.
    pub async fn read(
        database: &Database,
        instance: Instance,
        serving: Option<PolicyRow>,
        timeout: Duration,
    ) -> Self {
        let now_ms = idmint::SystemClock.now_micros() / 1000;
        let deadline = Deadline(Instant::now() + timeout, timeout);
        let ((counters, workers, mut problems), locks, policy) = tokio::join!(
            read_counters(database, now_ms, deadline),
            deadline.read("locks", read_locks(database)),
            read_policies(database, serving, deadline),
        );
        let (locks, free_locks) = match locks {
            Ok(locks) => locks,
            Err(problem) => {
                problems.push(problem);
                (Vec::new(), 0)
            }
        };
        let (policy, policy_problems) = policy;
        problems.extend(policy_problems);
        Snapshot {
            taken_at: idmint::parts::rfc3339_micros(now_ms * 1000),
            instance,
            counters,
            workers,
            locks,
            free_locks,
            policy,
            problems,
        }
    }
}

/// When the database's side of a snapshot must have been read by, and how
/// long that was.
#[derive(Clone, Copy)]
struct Deadline(Instant, Duration);

impl Deadline {
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

/// Every counter, then the worker leases of the snowflake ones.
async fn read_counters(
    database: &Database,
    now_ms: u64,
    deadline: Deadline,
) -> (Vec<CounterRow>, Vec<WorkerRow>, Vec<String>) {
    let mut problems = Vec::new();
    let counters: Vec<CounterRow> = match deadline.read("counters", sequence::list(database)).await
    {
        Ok(listed) => listed
            .into_iter()
            .map(|listed| counter_row(listed, now_ms))
            .collect(),
        Err(problem) => {
            problems.push(problem);
            Vec::new()
        }
    };
    let workers = read_workers(database, &counters, deadline, &mut problems).await;
    (counters, workers, problems)
}

/// The locks held, and how many others there are.
async fn read_locks(database: &Database) -> Result<(Vec<LockRow>, usize), idmint::Error> {
    let states = status_all(&database.collection(LOCKS_COLLECTION), None).await?;
    let total = states.len();
    let held: Vec<LockRow> = states
        .into_iter()
        .filter(|state| state.is_held())
        .map(|state| LockRow {
            name: state.name,
            holder_fingerprint: holder_fingerprint(state.owner.as_deref().unwrap_or_default()),
            token: state.token,
            count: state.count,
            expires_in_ms: state.expires_in_ms,
        })
        .collect();
    let free = total - held.len();
    Ok((held, free))
}

fn counter_row(listed: sequence::Listed, now_ms: u64) -> CounterRow {
    match listed.state {
        Ok(state) => CounterRow {
            name: listed.name,
            kind: state.kind().as_str().to_string(),
            facts: state
                .facts(now_ms)
                .into_iter()
                .map(|fact| (fact.label.to_string(), fact.text))
                .collect(),
            prefixes: state
                .prefixes
                .iter()
                .map(|prefix| {
                    if prefix.is_empty() {
                        "(none)".to_string()
                    } else {
                        prefix.clone()
                    }
                })
                .collect(),
            headroom: state.headroom(now_ms),
            problem: None,
        },
        Err(problem) => CounterRow {
            name: listed.name,
            kind: String::new(),
            facts: Vec::new(),
            prefixes: Vec::new(),
            headroom: None,
            problem: Some(problem),
        },
    }
}

async fn read_workers(
    database: &Database,
    counters: &[CounterRow],
    deadline: Deadline,
    problems: &mut Vec<String>,
) -> Vec<WorkerRow> {
    let mut rows = Vec::new();
    let snowflakes = counters
        .iter()
        .filter(|row| row.kind == CounterKind::Snowflake.as_str());
    for row in snowflakes {
        let Ok(name) = CounterName::new(&row.name) else {
            continue;
        };
        let part = format!("worker leases of {}", row.name);
        match deadline
            .read(&part, sequence::workers(database, &name))
            .await
        {
            Ok((leases, server_now_ms)) => rows.extend(leases.into_iter().map(|lease| WorkerRow {
                counter: row.name.clone(),
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

/// The stored policies and the activation history, and the problems met.
async fn read_policies(
    database: &Database,
    serving: Option<PolicyRow>,
    deadline: Deadline,
) -> (PolicyView, Vec<String>) {
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
    // The policy in service names its stored version when its bytes are one.
    let serving = serving.map(|mut row| {
        if let Some(stored) = stored.iter().find(|s| s.sha256 == row.sha256) {
            row.version = stored.version;
            row.active = stored.active;
        }
        row
    });
    (
        PolicyView {
            serving,
            stored,
            history,
        },
        problems,
    )
}
