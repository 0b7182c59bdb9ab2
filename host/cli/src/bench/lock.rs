//! Lock benchmarks, run by `idmint bench --only lock`:
//!
//! - `lock_uncontended`: acquire + release pairs per second, one client.
//! - `lock_handoff`: 8 contenders in one process (handles of one `Locks`,
//!   waiting as one cohort: the holder's release passes the lock to the next
//!   call waiting in the process, in the same write) each looping acquire
//!   (blocking) then release; handoffs
//!   per second, the time from a release to the next acquisition by anyone
//!   (median, p99), and the share of acquisitions that went to a different
//!   contender than the one before (a fair lock: nearly all; a lock that
//!   lets the releasing client take it straight back: few).
//! - `lock_handoff_apart`: the same with each contender as if in a process
//!   of its own: its own client, its own change stream, its own place in the
//!   stored line (handed the lock by the release before its turn).
//! - `lock_polling`: the yardstick, a polling lock as the libraries users
//!   would otherwise pick write it (ShedLock's MongoDB provider), with the
//!   same 8 contenders, the same figures, the same write concern.
//! - `semaphore_uncontended`: acquire + release pairs per second of one
//!   permit among 3, one client.
//! - `semaphore_handoff`: 8 contenders for 3 permits, each looping acquire
//!   (blocking) then release: permits handed on per second, and the time
//!   from a release to the next acquisition.
//! - `read_write_handoff`: 8 contenders of a read-write lock, 2 writers and
//!   6 readers, the same figures.
//!
//! An election's graceful handover (the leader's COMMAND ends, the first
//! standby in line leads) is `lock_handoff_apart`'s: each candidate is a
//! process of its own in the stored line. A dead leader's is its lease's
//! TTL, by design (`tests/lock_elect.rs` measures it).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mongodb::Database;
use serde::Serialize;

use super::sequence::BenchResult;
use idmint::lock::{Acquired, Lock, LockError, LockName, Locks, WaitOptions};

/// Release-to-next-acquisition times of `lock_handoff`.
#[derive(Debug, Clone, Serialize)]
pub struct HandoffLatency {
    /// Median, milliseconds.
    pub median_ms: f64,
    /// 99th percentile, milliseconds.
    pub p99_ms: f64,
    /// Handoffs measured.
    pub samples: usize,
    /// The share of acquisitions that went to a different contender than
    /// the one before, 0.0 to 1.0.
    pub to_another_holder: f64,
}

/// The lock benchmarks' figures.
#[derive(Debug, Clone, Serialize)]
pub struct LockBenchReport {
    /// `lock_uncontended` (ops = pairs) and `lock_handoff` (ops = handoffs).
    pub results: Vec<BenchResult>,
    /// The handoff latency of `lock_handoff`.
    pub handoff_latency: HandoffLatency,
    /// The same of `lock_handoff_apart`.
    pub apart_latency: HandoffLatency,
    /// The same of `lock_polling`, the yardstick.
    pub polling_latency: HandoffLatency,
    /// The same of `semaphore_handoff`.
    pub semaphore_latency: HandoffLatency,
    /// The same of `read_write_handoff`.
    pub read_write_latency: HandoffLatency,
}

/// How a contender takes the lock: exclusively, or one of `permits` shared
/// places.
#[derive(Debug, Clone, Copy)]
enum Shape {
    Exclusive,
    Shared(u32),
}

/// Permits of the semaphore benchmarks.
const PERMITS: u32 = 3;

const TTL: Duration = Duration::from_secs(30);

/// Runs the lock benchmarks for `duration` each; `apart` holds a database
/// handle of a client of its own for each of the [`CONTENDERS`] of
/// `lock_handoff_apart`.
pub async fn run(
    database: &Database,
    apart: &[Database],
    duration: Duration,
) -> Result<LockBenchReport, LockError> {
    let name = |n: &str| LockName::new(n).expect("a valid name");
    // Uncontended.
    let lock = Lock::new(database, name("bench-uncontended"));
    let start = Instant::now();
    let mut pairs = 0u64;
    while start.elapsed() < duration {
        match lock.try_acquire(TTL).await? {
            Acquired::Held(lease) => {
                lease.release().await?;
                pairs += 1;
            }
            Acquired::Busy(_) => unreachable!("nobody else uses the benchmark lock"),
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let mut results = vec![BenchResult {
        mode: "lock_uncontended".into(),
        concurrency: 1,
        ops_per_sec: pairs as f64 / seconds,
        ops: pairs,
        seconds,
        fetches_per_million: None,
    }];

    // Handoff, 8 contenders in one process: handles of one `Locks`, which
    // share one change stream.
    let locks = Locks::new(database);
    let shared = (0..CONTENDERS)
        .map(|_| locks.lock(name("bench-handoff")))
        .collect();
    let (handoff, handoff_latency) = run_handoff("lock_handoff", shared, duration).await?;
    results.push(handoff);
    // Handoff, 8 contenders as if in 8 processes: a client, and a change
    // stream, each.
    let apart = apart
        .iter()
        .map(|database| Lock::new(database, name("bench-handoff-apart")))
        .collect();
    let (handoff, apart_latency) = run_handoff("lock_handoff_apart", apart, duration).await?;
    results.push(handoff);

    // The yardstick: a polling lock as the libraries users would otherwise
    // pick write it (ShedLock's MongoDB provider: take it when `lockUntil`
    // has passed, by the client's clock; release by setting `lockUntil` to
    // now; a waiter polls every 10 ms, jittered).
    let polling = run_polling(database, duration).await?;
    let (polled, polling_latency) = handoffs("lock_polling", polling.0, &polling.1);
    results.push(polled);

    // A semaphore: one permit of three, uncontended; then 8 contenders.
    let semaphore = locks.lock(name("bench-semaphore"));
    let start = Instant::now();
    let mut pairs = 0u64;
    while start.elapsed() < duration {
        let lease = semaphore
            .try_acquire_shared(TTL, PERMITS)
            .await?
            .expect("nobody else uses the benchmark semaphore");
        lease.release().await?;
        pairs += 1;
    }
    let seconds = start.elapsed().as_secs_f64();
    results.push(BenchResult {
        mode: "semaphore_uncontended".into(),
        concurrency: 1,
        ops_per_sec: pairs as f64 / seconds,
        ops: pairs,
        seconds,
        fetches_per_million: None,
    });
    let contenders = (0..CONTENDERS)
        .map(|_| {
            (
                locks.lock(name("bench-semaphore-handoff")),
                Shape::Shared(PERMITS),
            )
        })
        .collect();
    let (handed, semaphore_latency) = run_shapes("semaphore_handoff", contenders, duration).await?;
    results.push(handed);
    // A read-write lock: 2 writers, 6 readers.
    let contenders = (0..CONTENDERS)
        .map(|n| {
            let shape = if n < 2 {
                Shape::Exclusive
            } else {
                Shape::Shared(idmint::lock::READERS)
            };
            (locks.lock(name("bench-read-write")), shape)
        })
        .collect();
    let (handed, read_write_latency) =
        run_shapes("read_write_handoff", contenders, duration).await?;
    results.push(handed);
    Ok(LockBenchReport {
        results,
        handoff_latency,
        apart_latency,
        polling_latency,
        semaphore_latency,
        read_write_latency,
    })
}

/// Each of `contenders` loops acquire (blocking, in its shape) then
/// release, for `duration`.
async fn run_shapes(
    mode: &'static str,
    contenders: Vec<(Lock, Shape)>,
    duration: Duration,
) -> Result<(BenchResult, HandoffLatency), LockError> {
    let events: Events = Arc::default();
    let start = Instant::now();
    let tasks: Vec<_> = contenders
        .into_iter()
        .enumerate()
        .map(|(contender, (lock, shape))| {
            let events = events.clone();
            tokio::spawn(async move {
                let options = WaitOptions::new(duration + Duration::from_secs(30));
                while start.elapsed() < duration {
                    let lease = match shape {
                        Shape::Exclusive => lock.acquire(TTL, &options).await?,
                        Shape::Shared(permits) => {
                            lock.acquire_shared(TTL, permits, &options).await?
                        }
                    };
                    record(&events, false, contender);
                    // Recorded before the release is sent: the next holder's
                    // acquisition cannot precede it.
                    record(&events, true, contender);
                    lease.release().await?;
                }
                Ok::<_, LockError>(())
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a contender panicked")?;
    }
    Ok(handoffs(mode, start, &events))
}

/// Each of `contenders` loops acquire (blocking, in line, handed the lock
/// by the release before its own) then release, for `duration`.
async fn run_handoff(
    mode: &'static str,
    contenders: Vec<Lock>,
    duration: Duration,
) -> Result<(BenchResult, HandoffLatency), LockError> {
    let contenders = contenders
        .into_iter()
        .map(|lock| (lock, Shape::Exclusive))
        .collect();
    run_shapes(mode, contenders, duration).await
}

/// Contenders of the handoff benchmarks.
pub const CONTENDERS: usize = 8;

/// Acquisitions and releases: (is_release, when, contender), in order.
type Events = Arc<Mutex<Vec<(bool, Instant, usize)>>>;

fn record(events: &Events, release: bool, contender: usize) {
    events
        .lock()
        .unwrap()
        .push((release, Instant::now(), contender));
}

/// The handoff figures of a run that started at `start`.
fn handoffs(mode: &'static str, start: Instant, events: &Events) -> (BenchResult, HandoffLatency) {
    let seconds = start.elapsed().as_secs_f64();
    let events = events.lock().unwrap().clone();
    let mut latencies: Vec<f64> = events
        .windows(2)
        .filter(|pair| pair[0].0 && !pair[1].0)
        .map(|pair| pair[1].1.duration_since(pair[0].1).as_secs_f64() * 1000.0)
        .collect();
    latencies.sort_by(f64::total_cmp);
    let at = |q: f64| {
        latencies
            .get(((latencies.len() as f64 - 1.0) * q).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    let holders: Vec<usize> = events.iter().filter(|e| !e.0).map(|e| e.2).collect();
    let changes = holders.windows(2).filter(|pair| pair[0] != pair[1]).count();
    let to_another_holder = changes as f64 / holders.len().saturating_sub(1).max(1) as f64;
    let count = latencies.len() as u64;
    (
        BenchResult {
            mode: mode.into(),
            concurrency: CONTENDERS,
            ops_per_sec: count as f64 / seconds,
            ops: count,
            seconds,
            fetches_per_million: None,
        },
        HandoffLatency {
            median_ms: at(0.5),
            p99_ms: at(0.99),
            samples: latencies.len(),
            to_another_holder,
        },
    )
}

/// The polling yardstick (see [`run`]): its start and its events.
async fn run_polling(
    database: &Database,
    duration: Duration,
) -> Result<(Instant, Events), LockError> {
    use mongodb::bson::{doc, DateTime, Document};
    let collection = database.collection::<Document>("bench_polling_locks");
    let lock_error = |source| LockError::Database {
        name: LockName::new("bench-polling").expect("a valid name"),
        source,
    };
    collection.drop().await.map_err(lock_error)?;
    let write_concern = idmint::mongo::durable_write_concern();
    let events: Events = Arc::default();
    let start = Instant::now();
    let contenders: Vec<_> = (0..CONTENDERS)
        .map(|contender| {
            let (collection, events, write_concern) =
                (collection.clone(), events.clone(), write_concern.clone());
            tokio::spawn(async move {
                let me = format!("contender-{contender}");
                while start.elapsed() < duration {
                    let now = DateTime::now();
                    let until = DateTime::from_millis(now.timestamp_millis() + TTL.as_millis() as i64);
                    let taken = collection
                        .find_one_and_update(
                            doc! { "_id": "bench-polling", "lockUntil": { "$lte": now } },
                            doc! { "$set": { "lockUntil": until, "lockedAt": now, "lockedBy": &me } },
                        )
                        .upsert(true)
                        .write_concern(write_concern.clone())
                        .await;
                    match taken {
                        Ok(_) => {
                            record(&events, false, contender);
                            record(&events, true, contender);
                            collection
                                .update_one(
                                    doc! { "_id": "bench-polling", "lockedBy": &me },
                                    doc! { "$set": { "lockUntil": DateTime::now() } },
                                )
                                .write_concern(write_concern.clone())
                                .await
                                .map_err(lock_error)?;
                        }
                        // Held: the upsert collides with the existing document.
                        Err(error) if idmint::mongo::is_duplicate_key(&error) => {
                            let sleep = Duration::from_millis(5 + (contender as u64 * 7919 + start.elapsed().as_micros() as u64) % 10);
                            tokio::time::sleep(sleep).await;
                        }
                        Err(error) => return Err(lock_error(error)),
                    }
                }
                Ok::<_, LockError>(())
            })
        })
        .collect();
    for contender in contenders {
        contender.await.expect("a contender panicked")?;
    }
    Ok((start, events))
}

/// The report as a table.
pub fn text(report: &LockBenchReport) -> String {
    let mut text = format!(
        "{:<21} {:>11} {:>12} {:>10}\n",
        "mode", "concurrency", "ops/s", "ops"
    );
    for r in &report.results {
        text += &format!(
            "{:<21} {:>11} {:>12.0} {:>10}\n",
            r.mode, r.concurrency, r.ops_per_sec, r.ops
        );
    }
    for (mode, l) in [
        ("lock_handoff", &report.handoff_latency),
        ("lock_handoff_apart", &report.apart_latency),
        ("lock_polling", &report.polling_latency),
        ("semaphore_handoff", &report.semaphore_latency),
        ("read_write_handoff", &report.read_write_latency),
    ] {
        text += &format!(
            "{mode}: release -> next acquisition median {:.2} ms, p99 {:.2} ms ({} handoffs, {:.1}% to another holder)\n",
            l.median_ms, l.p99_ms, l.samples, l.to_another_holder * 100.0
        );
    }
    text
}
