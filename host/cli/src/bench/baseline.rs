//! `idmint bench --baseline FILE`: reads the stored run and this run's
//! figures, has the library compare them (`idmint::baseline`), and prints
//! what fell. Exit 1 when a figure fell; a baseline that cannot be read is
//! bad input (exit 2).

use std::fmt::Write;
use std::path::{Path, PathBuf};

use idmint::baseline::{compare, BaselineError, Comparison, Figure, Run, Threshold};

use super::sequence::BenchReport;
use crate::exit::{Outcome, UsageError};
use crate::Output;

/// A stored run to compare with, and how far a figure may fall.
#[derive(Debug)]
pub struct Guard {
    baseline: Run,
    threshold: Threshold,
}

impl Guard {
    /// Reads the baseline at `path` (a run's `--json` output) and checks
    /// `threshold_percent`, before anything is measured.
    pub fn read(path: &Path, threshold_percent: f64) -> anyhow::Result<Self> {
        let threshold = Threshold::percent(threshold_percent)?;
        Ok(Self {
            baseline: read_run(path)?,
            threshold,
        })
    }

    /// This run against the baseline.
    pub fn compare(&self, report: &BenchReport) -> Result<Comparison, BaselineError> {
        let figures = report
            .results
            .iter()
            .map(|result| Figure {
                mode: result.mode.clone(),
                concurrency: result.concurrency,
                ops_per_sec: result.ops_per_sec,
            })
            .collect();
        Ok(compare(&self.baseline, &Run::new(figures)?, self.threshold))
    }

    /// The run stored at `path` against the baseline.
    pub fn compare_with_file(&self, path: &Path) -> anyhow::Result<Comparison> {
        Ok(compare(&self.baseline, &read_run(path)?, self.threshold))
    }
}

/// A run stored at `path`; the file named in the error when it cannot be
/// read.
fn read_run(path: &Path) -> anyhow::Result<Run> {
    let named = |path: &Path| PathBuf::from(path).display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|error| UsageError(format!("cannot read {}: {error}", named(path))))?;
    Run::from_json(&text).map_err(|error| {
        anyhow::Error::new(error).context(format!("the benchmark run in {}", named(path)))
    })
}

/// What the comparison found, as text (empty without a baseline).
pub fn text(report: &BenchReport) -> String {
    let Some(comparison) = &report.baseline else {
        return String::new();
    };
    let mut text = format!(
        "against the baseline: {} figures compared, threshold {}%\n",
        comparison.compared, comparison.threshold_percent
    );
    for fall in &comparison.fell {
        let _ = writeln!(
            text,
            "fell: {} at concurrency {}: {:.0} ops/s, baseline {:.0} ({:.1}% lower)",
            fall.mode, fall.concurrency, fall.now, fall.baseline, fall.fell_percent
        );
    }
    for (what, figures) in [
        ("not measured", &comparison.not_measured),
        ("not in the baseline", &comparison.new),
    ] {
        if !figures.is_empty() {
            let names: Vec<String> = figures
                .iter()
                .map(|figure| format!("{}@{}", figure.mode, figure.concurrency))
                .collect();
            let _ = writeln!(text, "{what}: {}", names.join(", "));
        }
    }
    if !comparison.any_fell() {
        text.push_str("no figure fell\n");
    }
    text
}

/// Exit 1 when a figure fell, else 0.
pub fn outcome(report: &BenchReport) -> Outcome {
    match &report.baseline {
        Some(comparison) if comparison.any_fell() => Outcome::Failure,
        _ => Outcome::Success,
    }
}

/// Prints `report` (a comparison of two stored runs) and ends.
pub fn finish(report: &BenchReport, output: &Output) -> anyhow::Result<Outcome> {
    output.report(report, || text(report))?;
    Ok(outcome(report))
}
