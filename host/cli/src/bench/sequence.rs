//! Benchmark-only code, hidden from the library's documented API: the
//! `idmint bench` measurements and the yardsticks they compare idmint with
//! ([`seed_cas`], the seed's loop; the format benchmark's are in
//! `format.rs`).
//!
//! The sequence benchmark: how many values per second each kind of counter
//! hands out, against two yardsticks that are not idmint's counters.
//!
//! - `raw_inc`: a plain `findOneAndUpdate` with `$inc`, no wrap and no
//!   timestamp: the limit of one hot document, one value per round trip.
//! - `seed_cas`: the seed's find + conditional update retry loop.
//! - `segment_allocator`: the yardstick of the `segment` mode, the segment
//!   kind's allocator driven directly ([`SegmentCounter::next_value`]),
//!   without [`Sequence`]: what the seam adds is the gap between the two.
//! - one mode per kind the registry lists, named after it (`autoinc`, ...):
//!   a counter of that kind opened through the library's one seam
//!   ([`Sequence`]), one value per take; a kind that takes its values from
//!   memory (a segment's buffers, a snowflake generator) hands them out
//!   without a round trip.
//! - `<kind>_block`: the same, [`BLOCK`] values per take.
//! - `<kind>_stripes<N>`, for each kind that can be striped
//!   ([`striping::STRIPABLE`]) and N in [`STRIPES`]: a counter of that kind
//!   striped over N lanes in this one deployment, one value per take, each
//!   take from the next lane in turn. `<kind>` itself is the one-stripe
//!   figure. On one server the lanes share its one journal and CPU, so the
//!   ratio says what striping costs or saves there, not what it gains on a
//!   sharded cluster (see docs/SCALE.md).
//! - `<kind>_across2_stripes<N>`, when `idmint bench` is given two
//!   deployments (`--uri eu=... --uri us=...`): a counter of that kind
//!   striped across both, N/2 lanes in each, its clients split in two
//!   halves that each prefer one deployment (as processes in two regions
//!   take from their own): what two deployments carry against one.
//!
//! No mode names a kind: the kinds come from [`CounterKind::ALL`], and each
//! counter is made with the settings that keep it from wrapping or running
//! short during a run, where its kind takes them (the largest cycle, the
//! snowflake layout with the most sequence bits). A kind that buffers
//! values reports the fetches it made per million values. The values of a
//! kind whose values never repeat are all kept and checked afterwards: a
//! value handed out twice fails the benchmark. They are kept as runs of
//! evenly spaced values ([`Runs`]), so that keeping them costs a comparison
//! per value rather than memory (a value each made the kernel clear a page
//! per 512 values: a quarter of an in-memory mode's time).
//!
//! The format benchmark is `format.rs`'s.
//!
//! All sequence modes use the same write concern (majority + journal), run in one
//! process against one server, and are interleaved in short slices at each
//! concurrency so that drift in the server (cache, disk) hits them alike:
//! compare ratios within one run, not figures across machines. Each client
//! is a task of its own on the multi-threaded runtime.
//!
//! What a client does besides its takes is kept off the per-take path: it
//! reads the end of the slice from a flag a timer thread sets (a relaxed
//! load, not a clock read), reads its clock (the `client_micros` it hands
//! each take) once per [`BURST`] takes, and yields to the other clients
//! once per [`YIELD_EVERY`] takes. A caller that reads its clock for every
//! take pays that read on top (about 20 ns on the machine of
//! docs/BENCHMARKS.md).

use super::seed_cas;

use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::try_join_all;
use mongodb::bson::{doc, Document};
use mongodb::options::ReturnDocument;
use mongodb::{Collection, Database};
use serde::Serialize;

use idmint::baseline::Comparison;
use idmint::mongo::durable_write_concern;

use idmint::sequence::striping::{self, Deployments, Layout};
use idmint::sequence::{
    Clock, CounterKind, CounterName, CounterSpec, OpenOptions, Repeats, SegmentCounter,
    SegmentOptions, Sequence, SequenceError, Setting, Settings, SystemClock, COUNTERS_COLLECTION,
    MAX_MAXVAL,
};

/// Values per take in the `<kind>_block` modes.
pub const BLOCK: usize = 100;

/// The numbers of stripes of the `<kind>_stripes<N>` modes (one stripe is
/// the `<kind>` mode).
pub const STRIPES: [u64; 2] = [2, 4];

/// How many takes a client makes before it lets the others run: kinds that
/// hand out values from memory would otherwise keep a thread to themselves.
const YIELD_EVERY: u64 = 4096;

/// How many takes a client makes with one reading of its clock.
const BURST: u64 = 64;

/// What is measured (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchMode {
    /// `findOneAndUpdate` + `$inc`.
    RawInc,
    /// The seed's CAS loop.
    SeedCas,
    /// The segment kind's allocator alone, one value per call.
    SegmentAllocator,
    /// A counter of this kind, one value per take.
    Each(CounterKind),
    /// A counter of this kind, [`BLOCK`] values per take.
    Block(CounterKind),
    /// A counter of this kind striped over this many lanes, one value per
    /// take.
    Striped(CounterKind, u64),
    /// A counter of this kind striped over this many lanes across two
    /// deployments, half of them in each, one value per take.
    Across(CounterKind, u64),
}

impl BenchMode {
    /// Every mode, in report order: the yardsticks, then each kind's two,
    /// the striped ones, and (`across`: two deployments given) those
    /// across two deployments.
    pub fn all(across: bool) -> Vec<BenchMode> {
        let kinds = CounterKind::ALL
            .iter()
            .flat_map(|&kind| [BenchMode::Each(kind), BenchMode::Block(kind)]);
        let stripable = || {
            CounterKind::ALL
                .iter()
                .filter(|kind| striping::STRIPABLE.contains(&kind.as_str()))
        };
        let striped =
            stripable().flat_map(|&kind| STRIPES.map(|stripes| BenchMode::Striped(kind, stripes)));
        let across = stripable()
            .filter(|_| across)
            .flat_map(|&kind| STRIPES.map(|stripes| BenchMode::Across(kind, stripes)));
        [
            BenchMode::RawInc,
            BenchMode::SeedCas,
            BenchMode::SegmentAllocator,
        ]
        .into_iter()
        .chain(kinds)
        .chain(striped)
        .chain(across)
        .collect()
    }

    /// The mode's name in reports.
    pub fn name(self) -> String {
        match self {
            BenchMode::RawInc => "raw_inc".to_string(),
            BenchMode::SeedCas => "seed_cas".to_string(),
            BenchMode::SegmentAllocator => "segment_allocator".to_string(),
            BenchMode::Each(kind) => kind.as_str().to_string(),
            BenchMode::Block(kind) => format!("{kind}_block"),
            BenchMode::Striped(kind, stripes) => format!("{kind}_stripes{stripes}"),
            BenchMode::Across(kind, stripes) => format!("{kind}_across2_stripes{stripes}"),
        }
    }

    /// The kind of counter the mode uses: the yardsticks work on the seed's
    /// document, a counter of the default kind.
    fn kind(self) -> CounterKind {
        match self {
            BenchMode::RawInc | BenchMode::SeedCas => CounterKind::DEFAULT,
            BenchMode::SegmentAllocator => CounterKind::Segment,
            BenchMode::Each(kind)
            | BenchMode::Block(kind)
            | BenchMode::Striped(kind, _)
            | BenchMode::Across(kind, _) => kind,
        }
    }

    /// Values per take.
    fn per_take(self) -> usize {
        match self {
            BenchMode::Block(_) => BLOCK,
            _ => 1,
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
    /// Two deployments, for the modes across them (the first is the one
    /// `run` is given).
    pub across: Option<Deployments>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        Self {
            concurrencies: vec![1, 8, 32],
            duration: Duration::from_secs(3),
            slices: 3,
            across: None,
        }
    }
}

/// One measured figure.
#[derive(Debug, Clone, Serialize)]
pub struct BenchResult {
    /// The mode's name.
    pub mode: String,
    /// Concurrent clients.
    pub concurrency: usize,
    /// Values handed out per second.
    pub ops_per_sec: f64,
    /// Values handed out in all.
    pub ops: u64,
    /// Seconds measured.
    pub seconds: f64,
    /// A kind that buffers values: ranges fetched from the database per
    /// million values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fetches_per_million: Option<f64>,
}

/// Every figure of a run.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    /// One entry per mode and concurrency.
    pub results: Vec<BenchResult>,
    /// With `--baseline`: this run against the stored one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Comparison>,
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
    let across = options
        .across
        .as_ref()
        .filter(|deployments| deployments.list().len() > 1)
        .map(Across::of)
        .transpose()?;
    let modes = BenchMode::all(across.is_some());
    let mut results = Vec::new();
    for &concurrency in &options.concurrencies {
        let mut totals = vec![Slice::default(); modes.len()];
        for slice in 0..options.slices.max(1) {
            // Rotate which mode goes first so no mode always runs on a cold server.
            for offset in 0..modes.len() {
                let index = (offset + slice as usize) % modes.len();
                let slice_time = options.duration / options.slices.max(1);
                let measured = run_slice(
                    database,
                    &collection,
                    across.as_ref(),
                    modes[index],
                    concurrency,
                    slice_time,
                )
                .await?;
                totals[index].ops += measured.ops;
                totals[index].elapsed += measured.elapsed;
                totals[index].fetches = match (totals[index].fetches, measured.fetches) {
                    (Some(total), Some(more)) => Some(total + more),
                    (total, more) => total.or(more),
                };
            }
        }
        for (mode, total) in modes.iter().zip(totals) {
            let seconds = total.elapsed.as_secs_f64();
            results.push(BenchResult {
                mode: mode.name(),
                concurrency,
                ops_per_sec: total.ops as f64 / seconds,
                ops: total.ops,
                seconds,
                fetches_per_million: total
                    .fetches
                    .map(|fetches| fetches as f64 * 1e6 / total.ops.max(1) as f64),
            });
        }
    }
    let cleanup_error = |source| SequenceError::Database {
        name: bench_counter(BenchMode::RawInc),
        source,
    };
    // In every deployment: the counters and lanes, the worker leases and
    // the prefixes claimed (a counter across deployments claims its own in
    // each).
    let mut everywhere = vec![database.clone()];
    if let Some(across) = &across {
        everywhere.push(across.second.preferred().database.clone());
    }
    for database in everywhere {
        database
            .collection::<Document>(COUNTERS_COLLECTION)
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
    }
    Ok(BenchReport {
        results,
        baseline: None,
    })
}

/// Two deployments, and the same two the other way round: half the
/// clients of an `across` mode prefer the one, half the other.
struct Across {
    first: Deployments,
    second: Deployments,
}

impl Across {
    fn of(deployments: &Deployments) -> Result<Self, SequenceError> {
        let list = deployments.list();
        if list.len() != 2 {
            return Err(SequenceError::InvalidSpec(format!(
                "the benchmark across deployments takes two, not {}",
                list.len()
            )));
        }
        let reversed = vec![list[1].clone(), list[0].clone()];
        let second = Deployments::new(reversed)
            .map_err(SequenceError::InvalidSpec)?
            .deadline(deployments.take_deadline());
        Ok(Self {
            first: deployments.clone(),
            second,
        })
    }

    /// The layout of `stripes` lanes, half in each.
    fn layout(&self, stripes: u64) -> Layout {
        let names = self.first.list();
        format!(
            "{}:{},{}:{}",
            names[0].name,
            stripes / 2,
            names[1].name,
            stripes - stripes / 2
        )
        .parse()
        .unwrap_or_else(|_| unreachable!("names are checked, counts 1 or more"))
    }

    fn second_collection(&self) -> Collection<Document> {
        self.second
            .preferred()
            .database
            .collection(COUNTERS_COLLECTION)
    }
}

/// What one slice measured.
#[derive(Debug, Clone, Copy, Default)]
struct Slice {
    ops: u64,
    elapsed: Duration,
    /// Ranges fetched, for a kind that buffers values.
    fetches: Option<u64>,
}

fn bench_counter(mode: BenchMode) -> CounterName {
    // The names are constants that satisfy the naming rules.
    CounterName::new(format!("bench.{}", mode.name())).unwrap_or_else(|_| unreachable!())
}

/// The spec of a fresh counter of `kind` that will not wrap or run short
/// during a run: the settings below, each where the kind takes it.
fn spec_for(kind: CounterKind) -> CounterSpec {
    let mut settings = Settings::default();
    let takes = |setting| kind.settings().contains(&setting);
    if takes(Setting::Maxval) {
        settings.maxval = Some(MAX_MAXVAL);
    }
    if takes(Setting::Layout) {
        // 16,384 values per millisecond.
        settings.layout = Some((41, 8, 14));
    }
    // Made and dropped within the run: no tag is drawn for it, so that the
    // bench leaves the database's tags document as it found it.
    CounterSpec::of(kind).settings(settings).draw_fields(false)
}

/// Runs `concurrency` tasks on `mode` for `time`; returns values handed out and time taken.
async fn run_slice(
    database: &Database,
    collection: &Collection<Document>,
    across: Option<&Across>,
    mode: BenchMode,
    concurrency: usize,
    time: Duration,
) -> Result<Slice, SequenceError> {
    let name = bench_counter(mode);
    let stripes = match mode {
        BenchMode::Striped(_, stripes) | BenchMode::Across(_, stripes) => stripes,
        _ => 1,
    };
    let across = across.filter(|_| matches!(mode, BenchMode::Across(..)));
    // A fresh counter that will not wrap or run out during the run (and
    // none of the lanes of a striped one), in every deployment it spans.
    let documents: Vec<String> = std::iter::once(name.to_string())
        .chain((0..stripes).map(|residue| striping::lane_id(&name, residue)))
        .collect();
    let mut collections = vec![collection.clone()];
    collections.extend(across.map(Across::second_collection));
    for collection in &collections {
        collection
            .delete_many(doc! { "_id": { "$in": &documents } })
            .await
            .map_err(|source| SequenceError::Database {
                name: name.clone(),
                source,
            })?;
    }
    // A prefix of its own, as a counter in production owns one (two bench
    // counters may not both own the empty prefix), and a new one for each
    // slice: the counter is made afresh, and a prefix once owned is never
    // owned again (the prefix history).
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let spec = spec_for(mode.kind()).prefixes(vec![format!("{name}-{started:x}-")]);
    match across {
        Some(across) => {
            let layout = across.layout(stripes);
            striping::create_laid_out(database, Some(&across.first), &name, &spec, &layout).await?;
        }
        None => {
            striping::create_striped(database, &name, &spec, stripes).await?;
        }
    }
    let open = |deployments: Option<&Deployments>| {
        let mut options = OpenOptions::default();
        options.deployments = deployments.cloned();
        let name = name.clone();
        async move { Sequence::open(database, name, &options).await }
    };
    let opened = match mode {
        BenchMode::Each(_) | BenchMode::Block(_) | BenchMode::Striped(..) => {
            Some(open(None).await?)
        }
        BenchMode::Across(..) => Some(open(across.map(|across| &across.first)).await?),
        BenchMode::RawInc | BenchMode::SeedCas | BenchMode::SegmentAllocator => None,
    };
    // Across deployments, the other half of the clients prefer the other.
    let other_half = match across {
        Some(across) => Some(open(Some(&across.second)).await?.0),
        None => None,
    };
    let allocator = (mode == BenchMode::SegmentAllocator)
        .then(|| SegmentCounter::new(database, name.clone(), SegmentOptions::default()));
    // The values of a kind that never repeats them are checked afterwards
    // (the allocator's too, so that it pays what its mode pays).
    let keep_values = allocator.is_some()
        || opened
            .as_ref()
            .is_some_and(|(_, state)| state.shape().repeats == Repeats::Never);
    let counter = opened.map(|(counter, _)| counter);
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let timer = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            std::thread::sleep(time);
            stop.store(true, Ordering::Relaxed);
        })
    };
    let workers = (0..concurrency).map(|client| {
        let counter = match &other_half {
            Some(other) if client % 2 == 1 => Some(other.clone()),
            _ => counter.clone(),
        };
        let allocator = allocator.clone();
        let collection = collection.clone();
        let name = name.clone();
        let stop = Arc::clone(&stop);
        tokio::spawn(async move {
            let write_concern = durable_write_concern();
            let mut ops = 0_u64;
            let mut takes = 0_u64;
            let mut values = Runs::default();
            let mut now = 0;
            while !stop.load(Ordering::Relaxed) {
                if takes.is_multiple_of(BURST) {
                    now = SystemClock.now_micros();
                }
                match (mode, &counter, &allocator) {
                    (BenchMode::RawInc, ..) => {
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
                        ops += 1;
                    }
                    (BenchMode::SeedCas, ..) => {
                        seed_cas::next_value(&collection, &name, &write_concern).await?;
                        ops += 1;
                    }
                    (BenchMode::SegmentAllocator, _, Some(allocator)) => {
                        let value = allocator.next_value().await?;
                        ops += 1;
                        values.push(value);
                    }
                    (_, Some(counter), _) => {
                        let stamps = counter.take(mode.per_take(), now).await?;
                        ops += stamps.len() as u64;
                        if keep_values {
                            for stamp in stamps.iter() {
                                values.push(stamp.sequence);
                            }
                        }
                    }
                    _ => unreachable!("a kind's mode opens its counter"),
                }
                takes += 1;
                if takes.is_multiple_of(YIELD_EVERY) {
                    tokio::task::yield_now().await;
                }
            }
            Ok::<(u64, Runs), SequenceError>((ops, values))
        })
    });
    let joined = match try_join_all(workers).await {
        Ok(joined) => joined,
        Err(error) => std::panic::resume_unwind(error.into_panic()),
    };
    let elapsed = started.elapsed();
    let _ = timer.join();
    let mut ops = 0;
    let mut runs = Vec::new();
    for result in joined {
        let (task_ops, task_values) = result?;
        ops += task_ops;
        runs.extend(task_values.runs);
    }
    let mut fetches = None;
    if let Some(allocator) = allocator {
        fetches = Some(allocator.stats().fetches);
        allocator.close().await?;
    }
    if let Some(counter) = counter {
        fetches = counter.held().buffers.map(|buffers| buffers.fetches);
        counter.close().await?;
    }
    // The benchmark's own check: no value of the run handed out twice.
    let twice = handed_out_twice(runs);
    if twice > 0 {
        return Err(SequenceError::InvalidSpec(format!(
            "the {} benchmark handed out {twice} values twice",
            mode.name(),
        )));
    }
    Ok(Slice {
        ops,
        elapsed,
        fetches,
    })
}

/// Values handed out, kept as runs of evenly spaced values in the order
/// taken: consecutive values of an unstriped counter, the values of one
/// lane of a striped one (`m` apart). A value one step past the last run
/// extends it; the second value of a run sets its step.
#[derive(Debug, Default)]
struct Runs {
    runs: Vec<Run>,
}

/// Values from `start`, `step` apart, up to before `next`, the value that
/// would extend it (`step` 0: one value so far, and `next` is `u64::MAX`,
/// which no value is): a value that extends it costs one comparison and
/// one addition, as a range's did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    start: u64,
    step: u64,
    next: u64,
}

impl Run {
    fn one(value: u64) -> Self {
        Self {
            start: value,
            step: 0,
            next: u64::MAX,
        }
    }

    /// How many values it holds.
    fn len(&self) -> u64 {
        match self.step {
            0 => 1,
            step => (self.next - self.start) / step,
        }
    }
}

impl Runs {
    fn push(&mut self, value: u64) {
        match self.runs.last_mut() {
            // Values stay below 2^53, steps too: no overflow.
            Some(run) if run.next == value => run.next += run.step,
            Some(run) if run.step == 0 && value > run.start => {
                run.step = value - run.start;
                run.next = value + run.step;
            }
            _ => self.runs.push(Run::one(value)),
        }
    }
}

/// How many values `runs` (of any takers, in any order) hold more than
/// once. Runs of the step most values were taken with are checked as
/// ranges of their residue class (no value is expanded); a run of another
/// step is checked value by value.
fn handed_out_twice(runs: Vec<Run>) -> u64 {
    let mut by_step: HashMap<u64, u64> = HashMap::new();
    for run in runs.iter().filter(|run| run.step > 0) {
        *by_step.entry(run.step).or_default() += run.len();
    }
    let step = by_step
        .into_iter()
        .max_by_key(|&(step, len)| (len, std::cmp::Reverse(step)))
        .map_or(1, |(step, _)| step);
    // Per residue modulo `step`: ranges of indices (value / step).
    let mut classes: HashMap<u64, Vec<Range<u64>>> = HashMap::new();
    let mut add = |start: u64, len: u64| {
        let index = start / step;
        classes
            .entry(start % step)
            .or_default()
            .push(index..index + len);
    };
    for run in runs {
        let len = run.len();
        if len == 1 || run.step == step {
            add(run.start, len);
        } else {
            (0..len).for_each(|at| add(run.start + at * run.step, 1));
        }
    }
    classes.into_values().map(overlaps).sum()
}

/// How many indices `ranges` hold more than once.
fn overlaps(mut ranges: Vec<Range<u64>>) -> u64 {
    ranges.sort_unstable_by_key(|range| range.start);
    let mut covered_to = 0;
    let mut twice = 0;
    for range in ranges {
        twice += covered_to.min(range.end).saturating_sub(range.start);
        covered_to = covered_to.max(range.end);
    }
    twice
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_keep_evenly_spaced_values_as_one_and_find_overlaps() {
        let run = |start: u64, step: u64, len: u64| Run {
            start,
            step,
            next: if step == 0 {
                u64::MAX
            } else {
                start + step * len
            },
        };
        let mut runs = Runs::default();
        for value in [5, 6, 7, 9, 10, 2] {
            runs.push(value);
        }
        assert_eq!(runs.runs, [run(5, 1, 3), run(9, 1, 2), run(2, 0, 1)]);
        assert_eq!(handed_out_twice(runs.runs.clone()), 0);
        // Two lanes of four, values 4 apart, then a value of the first again.
        let mut runs = Runs::default();
        for value in [1, 5, 9, 2, 6, 10, 5] {
            runs.push(value);
        }
        assert_eq!(runs.runs, [run(1, 4, 3), run(2, 4, 3), run(5, 0, 1)]);
        assert_eq!(handed_out_twice(runs.runs), 1);
        assert_eq!(
            handed_out_twice(vec![run(5, 1, 3), run(0, 1, 6), run(7, 1, 1)]),
            2
        );
        assert_eq!(
            handed_out_twice(vec![run(0, 1, 10), run(2, 1, 2), run(3, 1, 2)]),
            4
        );
        // Runs of another step are checked value by value.
        assert_eq!(
            handed_out_twice(vec![run(0, 2, 50), run(10, 3, 3), run(11, 5, 2)]),
            3
        );
    }
}
