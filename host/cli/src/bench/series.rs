//! The gap-free series benchmark, run by `idmint bench --only series`:
//! `series_txn`, writers that each number an invoice per transaction
//! (`Series::number_with`: the series' number and its record, then the
//! invoice, committed with majority and journal), at each concurrency.
//! Transactions on one series serialise on its document: a writer whose
//! take conflicts runs its transaction again after a pause, and the figure
//! beside commits per second is how many runs each commit took. And
//! `series_reserve`, writers that each reserve a number with a client key
//! and confirm it (`Series::reserve`, `Series::confirm`: the way of an app
//! over HTTP), in reservations confirmed per second. The benchmark's own
//! check: the audit finds the series whole at the end (numbers 1 to the
//! last, none missing, each confirmed).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::try_join_all;
use futures_util::FutureExt;
use idmint::sequence::CounterName;
use idmint::series::{audit, create_series, Series, SeriesError};
use mongodb::bson::{doc, Document};
use mongodb::Database;
use serde::Serialize;

use super::sequence::BenchResult;

/// The series benchmark's figures.
#[derive(Debug, Clone, Serialize)]
pub struct SeriesBenchReport {
    /// `series_txn` (ops = commits) and `series_reserve` (ops = numbers
    /// reserved and confirmed) at each concurrency.
    pub results: Vec<BenchResult>,
    /// Runs of a transaction per commit of `series_txn`, at each
    /// concurrency.
    pub runs_per_commit: Vec<(usize, f64)>,
}

/// The collection the benchmark's invoices go to (emptied before each run).
const INVOICES: &str = "bench_invoices";

/// Runs `series_txn` at each of `concurrencies` for `duration`.
pub async fn run(
    database: &Database,
    concurrencies: &[usize],
    duration: Duration,
) -> Result<SeriesBenchReport, SeriesError> {
    let mut report = SeriesBenchReport {
        results: Vec::new(),
        runs_per_commit: Vec::new(),
    };
    for mode in [Mode::Transactions, Mode::Reservations] {
        for &writers in concurrencies {
            let (commits, runs, seconds) = run_writers(database, mode, writers, duration).await?;
            report.results.push(BenchResult {
                mode: mode.name().into(),
                concurrency: writers,
                ops_per_sec: commits as f64 / seconds,
                ops: commits,
                seconds,
                fetches_per_million: None,
            });
            if mode == Mode::Transactions {
                report
                    .runs_per_commit
                    .push((writers, runs as f64 / commits.max(1) as f64));
            }
        }
    }
    Ok(report)
}

/// How the benchmark's writers take their numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// In a transaction with the invoice (`series_txn`).
    Transactions,
    /// Reserved with a client key, then confirmed (`series_reserve`).
    Reservations,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Transactions => "series_txn",
            Mode::Reservations => "series_reserve",
        }
    }
}

/// `writers` writers on a fresh series for `duration`: numbers taken,
/// runs of a transaction (`series_txn`), seconds.
async fn run_writers(
    database: &Database,
    mode: Mode,
    writers: usize,
    duration: Duration,
) -> Result<(u64, u64, f64), SeriesError> {
    let started_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    // A series of its own for each run: a series is never deleted.
    let name = CounterName::new(format!("bench-series-{started_ns:x}"))?;
    create_series(database, &name, 1).await?;
    let database_error = |action, error| SeriesError::Database {
        name: name.clone(),
        action,
        source: error,
    };
    database
        .collection::<Document>(INVOICES)
        .delete_many(doc! {})
        .await
        .map_err(|error| database_error("empty the invoices", error))?;
    let series = Series::new(database, name.clone());
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let timer = {
        let stop = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(duration).await;
            stop.store(true, Ordering::Relaxed);
        })
    };
    let tasks =
        (0..writers).map(|writer| {
            let (database, series, stop) = (database.clone(), series.clone(), stop.clone());
            tokio::spawn(async move {
                let (mut commits, mut runs) = (0_u64, 0_u64);
                let mut session = database.client().start_session().await.map_err(|error| {
                    SeriesError::Database {
                        name: series.name().clone(),
                        action: "start a session",
                        source: error,
                    }
                })?;
                let invoices = database.collection::<Document>(INVOICES);
                while !stop.load(Ordering::Relaxed) {
                    let reference = format!("w{writer}-{commits}");
                    if mode == Mode::Reservations {
                        let reserved = series
                            .reserve(Duration::from_secs(60), Some(&reference))
                            .await?;
                        series.confirm(reserved.number, &reference).await?;
                        commits += 1;
                        continue;
                    }
                    let taken = series
                        .number_with(&mut session, &reference, |session, number| {
                            let invoice = doc! { "_id": &reference, "number": number as i64 };
                            let invoices = invoices.clone();
                            async move {
                                invoices
                                    .insert_one(invoice)
                                    .session(session)
                                    .await
                                    .map(|_| ())
                            }
                            .boxed()
                        })
                        .await?;
                    commits += 1;
                    runs += u64::from(taken.attempts);
                }
                Ok::<_, SeriesError>((commits, runs))
            })
        });
    let joined = try_join_all(tasks)
        .await
        .unwrap_or_else(|error| std::panic::resume_unwind(error.into_panic()));
    let seconds = started.elapsed().as_secs_f64();
    let _ = timer.await;
    let (mut commits, mut runs) = (0, 0);
    for result in joined {
        let (mine, tries) = result?;
        commits += mine;
        runs += tries;
    }
    let audit = audit(database, &name).await?;
    if !audit.is_whole() || audit.last != commits || audit.confirmed != commits {
        return Err(SeriesError::Corrupt {
            name,
            reason: format!(
                "the benchmark committed {commits} numbers but the audit found: {:?}",
                audit
            ),
        });
    }
    Ok((commits, runs, seconds))
}

/// The report as text.
pub fn text(report: &SeriesBenchReport) -> String {
    let mut text = format!(
        "{:<15} {:>11} {:>12} {:>10} {:>16}\n",
        "mode", "concurrency", "numbers/s", "numbers", "runs per commit"
    );
    for result in &report.results {
        let runs = report
            .runs_per_commit
            .iter()
            .find(|(writers, _)| result.mode == "series_txn" && *writers == result.concurrency)
            .map_or("-".to_string(), |(_, runs)| format!("{runs:.2}"));
        text += &format!(
            "{:<15} {:>11} {:>12.0} {:>10} {:>16}\n",
            result.mode, result.concurrency, result.ops_per_sec, result.ops, runs
        );
    }
    text
}
