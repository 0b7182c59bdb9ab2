//! Benchmark-only code, hidden from the library's documented API: the
//! `idmint bench` measurements and the yardsticks they compare idmint with
//! ([`seed_cas`], the seed's loop; [`native_format`], the default format in
//! plain Rust).
//!
//! The sequence benchmark: how many values per second each strategy hands
//! out, against the two yardsticks.
//!
//! - `raw_inc`: a plain `findOneAndUpdate` with `$inc`, no wrap and no
//!   timestamp: the limit of one hot document, one value per round trip.
//! - `pipeline`: idmint's cyclic counter, one value per round trip
//!   ([`CyclicCounter::next`]).
//! - `pipeline_block`: the cyclic counter reserving blocks of
//!   [`BLOCK`] values per round trip ([`CyclicCounter::take`]).
//! - `autoinc`: the auto-increment counter, one value per round trip.
//! - `seed_cas`: the seed's find + conditional update retry loop.
//! - `segment`: values handed out by one process's [`SegmentCounter`]
//!   from its buffers, one value per call, with the segment fetches it made
//!   per million values.
//! - `segment_batched`: the same, each client through a
//!   [`SegmentTaker`](idmint::sequence::SegmentTaker) of its own that takes
//!   256 values at a time from the shared buffers.
//! - `snowflake`: IDs issued by one process's [`SnowflakeCounter`] generator, one
//!   per call, with layout 41,8,14 (16,384 per ms); every ID of the run is
//!   kept and checked for duplicates afterwards, and a duplicate fails the
//!   benchmark.
//!
//! The format benchmark ([`run_format`]) measures the other half of an ID,
//! on one thread and with no database:
//!
//! - `format_wasm`: the embedded default policy's `format-batch`, through the
//!   sandbox (a fresh store and instance per batch), split into one `String`
//!   per ID: what `next` costs beyond the counter;
//! - `format_native`: the same format in plain Rust in the host
//!   ([`native_format`]), the yardstick.
//!
//! All sequence modes use the same write concern (majority + journal), run in one
//! process against one server, and are interleaved in short slices at each
//! concurrency so that drift in the server (cache, disk) hits them alike:
//! compare ratios within one run, not figures across machines. Each client
//! is a task of its own on the multi-threaded runtime.

use super::{native_format, seed_cas};

use std::time::{Duration, Instant};

use futures_util::future::try_join_all;
use mongodb::bson::{doc, Document};
use mongodb::options::ReturnDocument;
use mongodb::{Collection, Database};
use serde::Serialize;

use idmint::mongo::durable_write_concern;
use idmint::policy::{PolicyError, PolicyRuntime, Stamp};
use idmint::sequence::{
    self, AutoincCounter, Clock, CounterKind, CounterName, CounterSpec, CyclicCounter,
    SegmentCounter, SegmentOptions, SequenceError, Settings, SnowflakeCounter, SnowflakeOptions,
    SystemClock, COUNTERS_COLLECTION,
};

/// Values per round trip in `pipeline_block`.
pub const BLOCK: usize = 100;

/// What is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BenchMode {
    /// `findOneAndUpdate` + `$inc`.
    RawInc,
    /// idmint's cyclic pipeline update, one value per round trip.
    Pipeline,
    /// The cyclic pipeline update, [`BLOCK`] values per round trip.
    PipelineBlock,
    /// The auto-increment counter, one value per round trip.
    Autoinc,
    /// The seed's CAS loop.
    SeedCas,
    /// One process's segment allocator, shared by its clients.
    Segment,
    /// The same, each client through a taker of its own (batches of 256).
    SegmentBatched,
    /// One process's snowflake generator.
    Snowflake,
}

impl BenchMode {
    /// Every mode, in report order.
    pub const ALL: [BenchMode; 8] = [
        BenchMode::RawInc,
        BenchMode::Pipeline,
        BenchMode::PipelineBlock,
        BenchMode::Autoinc,
        BenchMode::SeedCas,
        BenchMode::Segment,
        BenchMode::SegmentBatched,
        BenchMode::Snowflake,
    ];

    /// The mode's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            BenchMode::RawInc => "raw_inc",
            BenchMode::Pipeline => "pipeline",
            BenchMode::PipelineBlock => "pipeline_block",
            BenchMode::Autoinc => "autoinc",
            BenchMode::SeedCas => "seed_cas",
            BenchMode::Segment => "segment",
            BenchMode::SegmentBatched => "segment_batched",
            BenchMode::Snowflake => "snowflake",
        }
    }

    /// The kind of counter the mode uses.
    fn kind(self) -> CounterKind {
        match self {
            BenchMode::Autoinc => CounterKind::Autoinc,
            BenchMode::Segment | BenchMode::SegmentBatched => CounterKind::Segment,
            BenchMode::Snowflake => CounterKind::Snowflake,
            _ => CounterKind::Cyclic,
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
    /// Segment mode: segments fetched from the database per million values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fetches_per_million: Option<f64>,
}

/// Every figure of a run.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    /// One entry per mode and concurrency.
    pub results: Vec<BenchResult>,
}

impl BenchReport {
    /// `mode` ops/s divided by `yardstick` ops/s at `concurrency`, if both ran.
    pub fn ratio(&self, mode: BenchMode, yardstick: BenchMode, concurrency: usize) -> Option<f64> {
        let rate = |mode: BenchMode| {
            self.results
                .iter()
                .find(|r| r.mode == mode.name() && r.concurrency == concurrency)
                .map(|r| r.ops_per_sec)
        };
        Some(rate(mode)? / rate(yardstick)?)
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
        let mut totals = [Slice::default(); BenchMode::ALL.len()];
        for slice in 0..options.slices.max(1) {
            // Rotate which mode goes first so no mode always runs on a cold server.
            for offset in 0..BenchMode::ALL.len() {
                let index = (offset + slice as usize) % BenchMode::ALL.len();
                let mode = BenchMode::ALL[index];
                let slice_time = options.duration / options.slices.max(1);
                let measured =
                    run_slice(database, &collection, mode, concurrency, slice_time).await?;
                totals[index].ops += measured.ops;
                totals[index].elapsed += measured.elapsed;
                totals[index].fetches += measured.fetches;
            }
        }
        for (mode, total) in BenchMode::ALL.into_iter().zip(totals) {
            let seconds = total.elapsed.as_secs_f64();
            results.push(BenchResult {
                mode: mode.name(),
                concurrency,
                ops_per_sec: total.ops as f64 / seconds,
                ops: total.ops,
                seconds,
                fetches_per_million: matches!(mode, BenchMode::Segment | BenchMode::SegmentBatched)
                    .then(|| total.fetches as f64 * 1e6 / total.ops.max(1) as f64),
            });
        }
    }
    let cleanup_error = |source| SequenceError::Database {
        name: bench_counter(BenchMode::RawInc),
        source,
    };
    collection
        .delete_many(doc! { "_id": { "$regex": "^bench\\." } })
        .await
        .map_err(cleanup_error)?;
    for history in [
        idmint::sequence::WORKERS_COLLECTION,
        idmint::sequence::PREFIXES_COLLECTION,
    ] {
        database
            .collection::<Document>(history)
            .delete_many(doc! { "counter": { "$regex": "^bench\\." } })
            .await
            .map_err(cleanup_error)?;
    }
    Ok(BenchReport { results })
}

/// What one slice measured.
#[derive(Debug, Clone, Copy, Default)]
struct Slice {
    ops: u64,
    elapsed: Duration,
    fetches: u64,
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
) -> Result<Slice, SequenceError> {
    let name = bench_counter(mode);
    // A fresh counter that will not wrap or run out during the run.
    collection
        .delete_one(doc! { "_id": name.as_str() })
        .await
        .map_err(|source| SequenceError::Database {
            name: name.clone(),
            source,
        })?;
    let spec = match mode.kind() {
        CounterKind::Cyclic => CounterSpec::default().maxval(idmint::sequence::MAX_MAXVAL),
        CounterKind::Snowflake => {
            let mut settings = Settings::default();
            settings.layout = Some((41, 8, 14));
            CounterSpec::of(CounterKind::Snowflake).settings(settings)
        }
        kind => CounterSpec::of(kind),
    };
    // A prefix of its own, as a counter in production owns one (two bench
    // counters may not both own the empty prefix), and a new one for each
    // slice: the counter is made afresh, and a prefix once owned is never
    // owned again (the prefix history).
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let spec = spec.prefixes(vec![format!("{name}-{started:x}-")]);
    sequence::create(database, &name, &spec).await?;
    let counter = CyclicCounter::new(database, name.clone());
    let autoinc = AutoincCounter::new(database, name.clone());
    let segments = SegmentCounter::new(database, name.clone(), SegmentOptions::default());
    let snowflake = match mode {
        BenchMode::Snowflake => Some(
            SnowflakeCounter::start(
                database,
                name.clone(),
                idmint::sequence::layout_of(&spec.settings),
                SnowflakeOptions::default(),
            )
            .await?,
        ),
        _ => None,
    };
    let started = Instant::now();
    let deadline = started + time;
    let workers = (0..concurrency).map(|_| {
        let counter = counter.clone();
        let autoinc = autoinc.clone();
        let segments = segments.clone();
        let mut taker = segments.taker(256);
        let snowflake = snowflake.clone();
        let collection = collection.clone();
        let name = name.clone();
        tokio::spawn(async move {
            let write_concern = durable_write_concern();
            let mut ops = 0_u64;
            let mut ids = Vec::new();
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
                    BenchMode::PipelineBlock => {
                        counter.take(BLOCK, SystemClock.now_micros()).await?;
                        ops += BLOCK as u64 - 1;
                    }
                    BenchMode::Autoinc => {
                        autoinc.take(1).await?;
                    }
                    BenchMode::SeedCas => {
                        seed_cas::next_value(&collection, &name, &write_concern).await?;
                    }
                    BenchMode::Segment => {
                        // One value per call; the clock is read once per
                        // burst, and the task yields between bursts so that
                        // every client gets its turn on the two threads.
                        const BURST: u64 = 4096;
                        for _ in 0..BURST {
                            std::hint::black_box(segments.next_value().await?);
                        }
                        ops += BURST - 1;
                        tokio::task::yield_now().await;
                    }
                    BenchMode::SegmentBatched => {
                        const BURST: u64 = 4096;
                        for _ in 0..BURST {
                            std::hint::black_box(taker.next_value().await?);
                        }
                        ops += BURST - 1;
                        tokio::task::yield_now().await;
                    }
                    BenchMode::Snowflake => {
                        const BURST: u64 = 4096;
                        let snowflake = snowflake.as_ref().expect("started above");
                        for _ in 0..BURST {
                            ids.push(snowflake.next_id().await?);
                        }
                        ops += BURST - 1;
                        tokio::task::yield_now().await;
                    }
                }
                ops += 1;
            }
            Ok::<(u64, Vec<u64>), SequenceError>((ops, ids))
        })
    });
    let mut ops = 0;
    let joined = match try_join_all(workers).await {
        Ok(joined) => joined,
        Err(error) => std::panic::resume_unwind(error.into_panic()),
    };
    let elapsed = started.elapsed();
    let mut ids = Vec::new();
    for result in joined {
        let (task_ops, task_ids) = result?;
        ops += task_ops;
        ids.extend(task_ids);
    }
    if let Some(snowflake) = snowflake {
        snowflake.close().await?;
        // The benchmark's own check: no ID of the run issued twice.
        let issued = ids.len();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() != issued {
            return Err(SequenceError::InvalidSpec(format!(
                "the snowflake benchmark issued {} duplicate IDs",
                issued - ids.len()
            )));
        }
    }
    let fetches = segments.stats().fetches;
    if matches!(mode, BenchMode::Segment | BenchMode::SegmentBatched) {
        segments.close().await?;
    }
    Ok(Slice {
        ops,
        elapsed,
        fetches,
    })
}

/// What the format benchmark measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FormatMode {
    /// The default policy, in WebAssembly.
    FormatWasm,
    /// The same format in plain Rust.
    FormatNative,
}

impl FormatMode {
    /// Every mode, in report order.
    pub const ALL: [FormatMode; 2] = [FormatMode::FormatWasm, FormatMode::FormatNative];

    /// The mode's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            FormatMode::FormatWasm => "format_wasm",
            FormatMode::FormatNative => "format_native",
        }
    }
}

/// How to run the format benchmark.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FormatBenchOptions {
    /// IDs formatted per call (one host/guest crossing for wasm). Default: 1024.
    pub batch: usize,
    /// Time spent per mode. Default: 3 s.
    pub duration: Duration,
    /// How many interleaved slices that time is cut into. Default: 3.
    pub slices: u32,
}

impl Default for FormatBenchOptions {
    fn default() -> Self {
        Self {
            batch: 1024,
            duration: Duration::from_secs(3),
            slices: 3,
        }
    }
}

/// Runs both format modes on this thread; one [`BenchResult`] each, with
/// `concurrency` 1 and `ops_per_sec` in IDs per second.
pub fn run_format(options: &FormatBenchOptions) -> Result<Vec<BenchResult>, PolicyError> {
    const PREFIX: &str = "ORD-";
    let policy = PolicyRuntime::new()?.load_default()?;
    let start = idmint::sequence::SystemClock.now_micros();
    let stamps: Vec<Stamp> = (0..options.batch.max(1) as u64)
        .map(|i| Stamp::new(start + i * 7, i % 100))
        .collect();
    let mut totals = [(0_u64, Duration::ZERO); FormatMode::ALL.len()];
    let slices = options.slices.max(1);
    for slice in 0..slices {
        for offset in 0..FormatMode::ALL.len() {
            let index = (offset + slice as usize) % FormatMode::ALL.len();
            let mode = FormatMode::ALL[index];
            let started = Instant::now();
            let deadline = started + options.duration / slices;
            let mut ids = 0_u64;
            while Instant::now() < deadline {
                let formatted = match mode {
                    FormatMode::FormatWasm => policy.format_batch(PREFIX, &stamps)?,
                    FormatMode::FormatNative => native_format::format_batch(PREFIX, &stamps)
                        .ok_or(PolicyError::Format(
                            idmint::policy::FormatError::SequenceOutOfRange(0),
                        ))?,
                };
                ids += std::hint::black_box(formatted).len() as u64;
            }
            totals[index].0 += ids;
            totals[index].1 += started.elapsed();
        }
    }
    Ok(FormatMode::ALL
        .into_iter()
        .zip(totals)
        .map(|(mode, (ops, elapsed))| BenchResult {
            mode: mode.name(),
            concurrency: 1,
            ops_per_sec: ops as f64 / elapsed.as_secs_f64(),
            ops,
            seconds: elapsed.as_secs_f64(),
            fetches_per_million: None,
        })
        .collect())
}

impl BenchReport {
    /// `format_wasm` IDs/s divided by `format_native` IDs/s, if both ran.
    pub fn format_ratio(&self) -> Option<f64> {
        let rate = |mode: FormatMode| {
            self.results
                .iter()
                .find(|r| r.mode == mode.name())
                .map(|r| r.ops_per_sec)
        };
        Some(rate(FormatMode::FormatWasm)? / rate(FormatMode::FormatNative)?)
    }
}
