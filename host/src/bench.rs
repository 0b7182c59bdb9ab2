//! The sequence benchmark: how many values per second one hot counter hands
//! out, by idmint's path and by the two it is measured against.
//!
//! - `raw_inc`: a plain `findOneAndUpdate` with `$inc`, no wrap and no
//!   timestamp: the limit of one hot document, the yardstick.
//! - `pipeline`: idmint's path, [`CyclicCounter::next`].
//! - `seed_cas`: the seed's find + conditional update retry loop.
//!
//! All modes use the same write concern (majority + journal), run in one
//! process against one server, and are interleaved in short slices at each
//! concurrency so that drift in the server (cache, disk) hits them alike:
//! compare ratios within one run, not figures across machines.

use std::time::{Duration, Instant};

use futures_util::future::try_join_all;
use mongodb::bson::{doc, Document};
use mongodb::options::ReturnDocument;
use mongodb::{Collection, Database};
use serde::Serialize;

use crate::config::durable_write_concern;
use crate::sequence::{
    seed_cas, Clock, CounterName, CounterSpec, CyclicCounter, SequenceError, SystemClock,
    COUNTERS_COLLECTION,
};

/// What is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BenchMode {
    /// `findOneAndUpdate` + `$inc`.
    RawInc,
    /// idmint's pipeline update.
    Pipeline,
    /// The seed's CAS loop.
    SeedCas,
}

impl BenchMode {
    /// Every mode, in report order.
    pub const ALL: [BenchMode; 3] = [BenchMode::RawInc, BenchMode::Pipeline, BenchMode::SeedCas];

    /// The mode's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            BenchMode::RawInc => "raw_inc",
            BenchMode::Pipeline => "pipeline",
            BenchMode::SeedCas => "seed_cas",
        }
    }
}

/// How to run the benchmark.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BenchOptions {
    /// Concurrent clients (tasks sharing one connection pool). Default: 1, 8, 32.
    pub concurrencies: Vec<usize>,
    /// Time spent per mode at each concurrency. Default: 3 s.
    pub duration: Duration,
    /// How many interleaved slices that time is cut into. Default: 3.
    pub slices: u32,
}

impl Default for BenchOptions {
    fn default() -> Self {
        Self {
            concurrencies: vec![1, 8, 32],
            duration: Duration::from_secs(3),
            slices: 3,
        }
    }
}

/// One measured figure.
#[derive(Debug, Clone, Serialize)]
pub struct BenchResult {
    /// The mode's name.
    pub mode: &'static str,
    /// Concurrent clients.
    pub concurrency: usize,
    /// Values handed out per second.
    pub ops_per_sec: f64,
    /// Values handed out in all.
    pub ops: u64,
    /// Seconds measured.
    pub seconds: f64,
}

/// Every figure of a run.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    /// One entry per mode and concurrency.
    pub results: Vec<BenchResult>,
}

impl BenchReport {
    /// `pipeline` ops/s divided by `raw_inc` ops/s at `concurrency`.
    pub fn pipeline_ratio(&self, concurrency: usize) -> Option<f64> {
        let rate = |mode: BenchMode| {
            self.results
                .iter()
                .find(|r| r.mode == mode.name() && r.concurrency == concurrency)
                .map(|r| r.ops_per_sec)
        };
        Some(rate(BenchMode::Pipeline)? / rate(BenchMode::RawInc)?)
    }
}

/// Runs every mode at every concurrency against `database`. Uses counters
/// named `bench.<mode>` (recreated first) and drops them afterwards.
pub async fn run(
    database: &Database,
    options: &BenchOptions,
) -> Result<BenchReport, SequenceError> {
    let collection: Collection<Document> = database.collection(COUNTERS_COLLECTION);
    let mut results = Vec::new();
    for &concurrency in &options.concurrencies {
        let mut totals = [(0_u64, Duration::ZERO); BenchMode::ALL.len()];
        for slice in 0..options.slices.max(1) {
            // Rotate which mode goes first so no mode always runs on a cold server.
            for offset in 0..BenchMode::ALL.len() {
                let index = (offset + slice as usize) % BenchMode::ALL.len();
                let mode = BenchMode::ALL[index];
                let slice_time = options.duration / options.slices.max(1);
                let (ops, elapsed) =
                    run_slice(database, &collection, mode, concurrency, slice_time).await?;
                totals[index].0 += ops;
                totals[index].1 += elapsed;
            }
        }
        for (mode, (ops, elapsed)) in BenchMode::ALL.into_iter().zip(totals) {
            let seconds = elapsed.as_secs_f64();
            results.push(BenchResult {
                mode: mode.name(),
                concurrency,
                ops_per_sec: ops as f64 / seconds,
                ops,
                seconds,
            });
        }
    }
    collection
        .delete_many(doc! { "_id": { "$regex": "^bench\\." } })
        .await
        .map_err(|source| SequenceError::Database {
            name: bench_counter(BenchMode::RawInc),
            source,
        })?;
    Ok(BenchReport { results })
}

fn bench_counter(mode: BenchMode) -> CounterName {
    // The names are constants that satisfy the naming rules.
    CounterName::new(format!("bench.{}", mode.name())).unwrap_or_else(|_| unreachable!())
}

/// Runs `concurrency` tasks on `mode` for `time`; returns values handed out and time taken.
async fn run_slice(
    database: &Database,
    collection: &Collection<Document>,
    mode: BenchMode,
    concurrency: usize,
    time: Duration,
) -> Result<(u64, Duration), SequenceError> {
    let name = bench_counter(mode);
    let counter = CyclicCounter::new(database, name.clone());
    // A fresh counter that will not wrap during the run.
    collection
        .delete_one(doc! { "_id": name.as_str() })
        .await
        .map_err(|source| SequenceError::Database {
            name: name.clone(),
            source,
        })?;
    counter
        .create(&CounterSpec::default().maxval(crate::sequence::MAX_MAXVAL))
        .await?;
    let started = Instant::now();
    let deadline = started + time;
    let workers = (0..concurrency).map(|_| {
        let counter = counter.clone();
        let collection = collection.clone();
        let name = name.clone();
        async move {
            let write_concern = durable_write_concern();
            let mut ops = 0_u64;
            while Instant::now() < deadline {
                match mode {
                    BenchMode::RawInc => {
                        collection
                            .find_one_and_update(
                                doc! { "_id": name.as_str() },
                                doc! { "$inc": { "val": 1_i64 } },
                            )
                            .return_document(ReturnDocument::After)
                            .write_concern(write_concern.clone())
                            .await
                            .map_err(|source| SequenceError::Database {
                                name: name.clone(),
                                source,
                            })?;
                    }
                    BenchMode::Pipeline => {
                        counter.next(SystemClock.now_micros()).await?;
                    }
                    BenchMode::SeedCas => {
                        seed_cas::next_value(&collection, &name, &write_concern).await?;
                    }
                }
                ops += 1;
            }
            Ok::<u64, SequenceError>(ops)
        }
    });
    let ops = try_join_all(workers).await?.into_iter().sum();
    Ok((ops, started.elapsed()))
}
