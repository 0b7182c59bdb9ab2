//! `idmint bench`: sequence throughput by mode and concurrency, then format
//! throughput on one thread (the policies in wasm against the same format in
//! plain Rust, and the standard IDs against the `uuid` crate); with
//! `--baseline FILE`, the run compared with a stored one
//! (`idmint::baseline` decides which figures fell, `baseline.rs` prints).

use std::fmt::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
mod baseline;
mod format;
mod lock;
mod native_format;
mod seed_cas;
mod sequence;
mod series;
mod swap;

use self::format::{FormatBenchOptions, FormatMode};
use self::sequence::{BenchMode, BenchOptions};
use idmint::sequence::CounterKind;

use super::{ConnectArgs, Outcome, Output};

/// Arguments of `idmint bench`.
#[derive(Debug, Args)]
pub struct BenchCmd {
    /// Concurrent clients to measure at, comma separated.
    #[arg(long, value_delimiter = ',', default_values_t = [1_usize, 8, 32])]
    pub concurrency: Vec<usize>,
    /// Seconds per mode at each concurrency.
    #[arg(long, default_value_t = 3.0, value_name = "SECS")]
    pub seconds: f64,
    /// Which benchmarks to run.
    #[arg(long, value_enum, default_value_t = Only::All)]
    pub only: Only,
    /// Compare the run with this stored one (a run's --json output) and
    /// name each figure that fell by more than --threshold: exit 1 if any
    /// did.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// With --baseline: how far a figure may fall, in percent.
    #[arg(long, default_value_t = 20.0, value_name = "PCT")]
    pub threshold: f64,
    /// With --baseline: compare this stored run (a run's --json output)
    /// instead of measuring one; nothing is run.
    #[arg(long, value_name = "FILE", requires = "baseline")]
    pub compare: Option<PathBuf>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// A part of the benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Only {
    /// Sequence and format.
    All,
    /// Sequence modes only (needs the database): raw_inc, seed_cas and the
    /// segment kind's allocator alone (segment_allocator), then
    /// each kind of counter, one value per take and 100 per take (KIND_block),
    /// striped ones, and across two deployments when given two (--uri
    /// eu=... --uri us=...).
    Sequence,
    /// Format modes only (no database is contacted).
    Format,
    /// Lock modes only: lock_uncontended, lock_handoff, lock_handoff_apart, lock_polling (host/cli/src/bench/lock.rs).
    Lock,
    /// Gap-free series: series_txn, writers numbering an invoice per transaction
    /// (commits per second, and runs of a transaction per commit), and series_reserve,
    /// writers reserving a number and confirming it (host/cli/src/bench/series.rs).
    Series,
    /// Policy swap latency: a replaced file and `policy activate`, 10 swaps each
    /// (needs a --db without stored policies; it drops `policies` afterwards).
    Swap,
}

impl BenchCmd {
    pub async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        if self.concurrency.iter().any(|&c| c == 0 || c > 1024)
            || !(0.1..=600.0).contains(&self.seconds)
        {
            return Err(super::exit::UsageError(
                "--concurrency takes 1 to 1024 per entry and --seconds 0.1 to 600".into(),
            )
            .into());
        }
        let guard = self
            .baseline
            .as_deref()
            .map(|path| baseline::Guard::read(path, self.threshold))
            .transpose()?;
        if let (Some(guard), Some(stored)) = (&guard, &self.compare) {
            let report = sequence::BenchReport {
                results: Vec::new(),
                baseline: Some(guard.compare_with_file(stored)?),
            };
            return baseline::finish(&report, output);
        }
        if self.only == Only::Swap {
            let database = self.connect.connect().await?;
            let report = swap::run(&database, 10).await?;
            output.report(&report, || {
                let mut text = String::new();
                for result in &report.results {
                    let _ = writeln!(
                        text,
                        "swap by {:<8} {} swaps: median {:.0} ms, max {:.0} ms",
                        result.mode, result.swaps, result.median_ms, result.max_ms
                    );
                }
                text
            })?;
            return Ok(Outcome::Success);
        }
        if self.only == Only::Series {
            let pool = self.concurrency.iter().copied().max().unwrap_or(1) as u32;
            let (database, _) = self.connect.connect_all_pooled(Some(pool)).await?;
            let seconds = Duration::from_secs_f64(self.seconds);
            let report = series::run(&database, &self.concurrency, seconds)
                .await
                .map_err(idmint::Error::from)?;
            output.report(&report, || series::text(&report))?;
            return Ok(Outcome::Success);
        }
        if self.only == Only::Lock {
            let database = self.connect.connect().await?;
            let mut apart = Vec::new();
            for _ in 0..lock::CONTENDERS {
                apart.push(self.connect.connect().await?);
            }
            let seconds = Duration::from_secs_f64(self.seconds);
            let report = lock::run(&database, &apart, seconds).await?;
            output.report(&report, || lock::text(&report))?;
            return Ok(Outcome::Success);
        }
        let mut report = sequence::BenchReport {
            results: Vec::new(),
            baseline: None,
        };
        if matches!(self.only, Only::All | Only::Sequence) {
            let pool = self.concurrency.iter().copied().max().unwrap_or(1) as u32;
            let (database, deployments) = self.connect.connect_all_pooled(Some(pool)).await?;
            let options = BenchOptions {
                concurrencies: self.concurrency.clone(),
                duration: Duration::from_secs_f64(self.seconds),
                across: deployments,
                ..BenchOptions::default()
            };
            report = sequence::run(&database, &options)
                .await
                .map_err(idmint::Error::from)?;
        }
        if matches!(self.only, Only::All | Only::Format) {
            let options = FormatBenchOptions {
                duration: Duration::from_secs_f64(self.seconds),
                ..FormatBenchOptions::default()
            };
            // CPU-bound and single-threaded by design: off the async threads.
            let results = tokio::task::spawn_blocking(move || format::run_format(&options))
                .await?
                .map_err(idmint::Error::from)?;
            report.results.extend(results);
        }
        if let Some(guard) = &guard {
            report.baseline = Some(guard.compare(&report)?);
        }
        output.report(&report, || {
            let mut text = format!(
                "{:<24} {:>11} {:>13} {:>11} {:>14}\n",
                "mode", "concurrency", "ops/s", "ops", "fetches/1M"
            );
            for result in &report.results {
                let fetches = result
                    .fetches_per_million
                    .map(|f| format!("{f:.2}"))
                    .unwrap_or_default();
                let _ = writeln!(
                    text,
                    "{:<24} {:>11} {:>13.0} {:>11} {:>14}",
                    result.mode, result.concurrency, result.ops_per_sec, result.ops, fetches
                );
            }
            for &concurrency in &self.concurrency {
                // Each kind against a plain `$inc`, and its blocks against it.
                // A striped counter against the same kind unstriped.
                let pairs = CounterKind::ALL
                    .iter()
                    .flat_map(|&kind| {
                        [
                            (BenchMode::Each(kind), BenchMode::RawInc),
                            (BenchMode::Block(kind), BenchMode::Each(kind)),
                        ]
                    })
                    // The segment kind through the seam against its allocator alone.
                    .chain([(
                        BenchMode::Each(CounterKind::Segment),
                        BenchMode::SegmentAllocator,
                    )])
                    .chain(
                        BenchMode::all(true)
                            .into_iter()
                            .filter_map(|mode| match mode {
                                BenchMode::Striped(kind, _) => Some((mode, BenchMode::Each(kind))),
                                // Across two deployments against as many lanes in one.
                                BenchMode::Across(kind, stripes) => {
                                    Some((mode, BenchMode::Striped(kind, stripes)))
                                }
                                _ => None,
                            }),
                    );
                for (mode, yardstick) in pairs {
                    if let Some(ratio) = report.ratio(mode, yardstick, concurrency) {
                        let _ = writeln!(
                            text,
                            "{} / {} at concurrency {concurrency}: {ratio:.3}",
                            mode.name(),
                            yardstick.name()
                        );
                    }
                }
            }
            for (mode, yardstick) in FormatMode::RATIOS {
                if let Some(ratio) = report.format_ratio(mode, yardstick) {
                    let _ = writeln!(
                        text,
                        "{} / {} on one thread: {ratio:.3}",
                        mode.name(),
                        yardstick.name()
                    );
                }
            }
            text.push_str(&baseline::text(&report));
            text
        })?;
        Ok(baseline::outcome(&report))
    }
}
