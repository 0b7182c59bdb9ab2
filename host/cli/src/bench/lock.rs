//! Lock benchmarks, run by `idmint bench --only lock`:
//!
//! - `lock_uncontended`: acquire + release pairs per second, one client.
//! - `lock_handoff`: 8 contenders each looping acquire (blocking, in line,
//!   handed the lock by the release before theirs) then release; handoffs
//!   per second, the time from a release to the next acquisition by anyone
//!   (median, p99), and the share of acquisitions that went to a different
//!   contender than the one before (a fair lock: nearly all; a lock that
//!   lets the releasing client take it straight back: few).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mongodb::Database;
use serde::Serialize;

use super::sequence::BenchResult;
use idmint::lock::{Acquired, Lock, LockError, LockName, WaitOptions};

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
}

const TTL: Duration = Duration::from_secs(30);

/// Runs both lock benchmarks for `duration` each.
pub async fn run(database: &Database, duration: Duration) -> Result<LockBenchReport, LockError> {
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
        mode: "lock_uncontended",
        concurrency: 1,
        ops_per_sec: pairs as f64 / seconds,
        ops: pairs,
        seconds,
        fetches_per_million: None,
    }];

    // Handoff: events (is_release, when, contender), in order of occurrence.
    let events: Arc<Mutex<Vec<(bool, Instant, usize)>>> = Arc::default();
    let start = Instant::now();
    let contenders: Vec<_> = (0..8)
        .map(|contender| {
            let (lock, events) = (Lock::new(database, name("bench-handoff")), events.clone());
            tokio::spawn(async move {
                let options = WaitOptions::new(duration + Duration::from_secs(30));
                while start.elapsed() < duration {
                    let lease = lock.acquire(TTL, &options).await?;
                    events
                        .lock()
                        .unwrap()
                        .push((false, Instant::now(), contender));
                    let released = Instant::now();
                    // Recorded before the release is sent: the next holder's
                    // acquisition cannot precede it.
                    events.lock().unwrap().push((true, released, contender));
                    lease.release().await?;
                }
                Ok::<_, LockError>(())
            })
        })
        .collect();
    for contender in contenders {
        contender.await.expect("a contender panicked")?;
    }
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
    let handoffs = latencies.len() as u64;
    results.push(BenchResult {
        mode: "lock_handoff",
        concurrency: 8,
        ops_per_sec: handoffs as f64 / seconds,
        ops: handoffs,
        seconds,
        fetches_per_million: None,
    });
    Ok(LockBenchReport {
        results,
        handoff_latency: HandoffLatency {
            median_ms: at(0.5),
            p99_ms: at(0.99),
            samples: latencies.len(),
            to_another_holder,
        },
    })
}

/// The report as a table.
pub fn text(report: &LockBenchReport) -> String {
    let mut text = format!(
        "{:<17} {:>11} {:>12} {:>10}\n",
        "mode", "concurrency", "ops/s", "ops"
    );
    for r in &report.results {
        text += &format!(
            "{:<17} {:>11} {:>12.0} {:>10}\n",
            r.mode, r.concurrency, r.ops_per_sec, r.ops
        );
    }
    let l = &report.handoff_latency;
    text += &format!(
        "release -> next acquisition: median {:.2} ms, p99 {:.2} ms ({} handoffs, {:.1}% to another holder)\n",
        l.median_ms, l.p99_ms, l.samples, l.to_another_holder * 100.0
    );
    text
}
