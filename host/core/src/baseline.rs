//! A guard against speed regressions: a benchmark run ([`Run`], what
//! `idmint bench --json` prints) compared with a stored one, the baseline,
//! figure by figure. A figure *fell* when it is lower than the baseline's
//! by more than the [`Threshold`]; [`compare`] names each one. Figures only
//! one of the two runs has (another `--concurrency`, a mode added or
//! removed) are listed apart, never counted as a fall.
//!
//! This decides; the CLI reads the files and prints. Nothing here measures
//! or reads a clock: a comparison of two fixed runs always comes out the
//! same.

use serde::{Deserialize, Serialize};

/// One figure of a run: how many operations per second `mode` did at
/// `concurrency` clients.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// The mode's name (`segment`, `raw_inc`, ...).
    pub mode: String,
    /// Concurrent clients.
    pub concurrency: usize,
    /// Operations (values, IDs) per second.
    pub ops_per_sec: f64,
}

/// The figures of one benchmark run.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    figures: Vec<Figure>,
}

/// What `idmint bench --json` prints: the figures under `results`, each
/// with more fields than a comparison reads.
#[derive(Deserialize)]
struct Report {
    results: Vec<Figure>,
}

/// Why a run could not be read or compared.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BaselineError {
    /// The text is not a run as `idmint bench --json` prints it.
    #[error("not a benchmark run as `idmint bench --json` prints it: {0}")]
    Malformed(String),
    /// A figure that cannot be compared.
    #[error("figure {mode} at concurrency {concurrency}: {reason}")]
    BadFigure {
        /// The figure's mode.
        mode: String,
        /// The figure's concurrency.
        concurrency: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A threshold that is no share of a figure.
    #[error("the threshold {0}% is not above 0 and below 100")]
    Threshold(f64),
}

impl Run {
    /// A run of these figures; each (mode, concurrency) at most once, its
    /// rate a finite number not below 0.
    pub fn new(figures: Vec<Figure>) -> Result<Self, BaselineError> {
        for (index, figure) in figures.iter().enumerate() {
            let bad = |reason: &str| BaselineError::BadFigure {
                mode: figure.mode.clone(),
                concurrency: figure.concurrency,
                reason: reason.to_string(),
            };
            if !figure.ops_per_sec.is_finite() || figure.ops_per_sec < 0.0 {
                return Err(bad("its rate is not a number of operations per second"));
            }
            if figures[..index]
                .iter()
                .any(|other| other.key() == figure.key())
            {
                return Err(bad("it appears twice"));
            }
        }
        Ok(Self { figures })
    }

    /// Reads a run as `idmint bench --json` prints it.
    pub fn from_json(text: &str) -> Result<Self, BaselineError> {
        let report: Report = serde_json::from_str(text)
            .map_err(|error| BaselineError::Malformed(error.to_string()))?;
        if report.results.is_empty() {
            return Err(BaselineError::Malformed("it holds no figures".into()));
        }
        Self::new(report.results)
    }

    /// Its figures, in the order read.
    pub fn figures(&self) -> &[Figure] {
        &self.figures
    }

    fn find(&self, key: (&str, usize)) -> Option<&Figure> {
        self.figures.iter().find(|figure| figure.key() == key)
    }
}

impl Figure {
    fn key(&self) -> (&str, usize) {
        (&self.mode, self.concurrency)
    }
}

/// How far a figure may fall below the baseline's before it counts: a
/// percentage above 0 and below 100.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Threshold(f64);

impl Threshold {
    /// The default: 20%.
    pub const DEFAULT: Threshold = Threshold(20.0);

    /// A threshold of `percent`.
    pub fn percent(percent: f64) -> Result<Self, BaselineError> {
        if percent > 0.0 && percent < 100.0 {
            Ok(Self(percent))
        } else {
            Err(BaselineError::Threshold(percent))
        }
    }

    /// The percentage.
    pub fn as_percent(self) -> f64 {
        self.0
    }
}

impl Default for Threshold {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// A figure that fell by more than the threshold.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fall {
    /// The mode.
    pub mode: String,
    /// At this many clients.
    pub concurrency: usize,
    /// The baseline's figure.
    pub baseline: f64,
    /// This run's.
    pub now: f64,
    /// By how much it fell, in percent of the baseline's.
    pub fell_percent: f64,
}

/// A figure only one of the two runs has.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unmatched {
    /// The mode.
    pub mode: String,
    /// At this many clients.
    pub concurrency: usize,
}

/// What a comparison found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The threshold, in percent.
    pub threshold_percent: f64,
    /// How many figures both runs have.
    pub compared: usize,
    /// Those that fell by more than the threshold, in the baseline's order.
    pub fell: Vec<Fall>,
    /// The baseline's figures this run does not have.
    pub not_measured: Vec<Unmatched>,
    /// This run's figures the baseline does not have.
    pub new: Vec<Unmatched>,
}

impl Comparison {
    /// Whether any figure fell.
    pub fn any_fell(&self) -> bool {
        !self.fell.is_empty()
    }
}

/// Compares `run` with `baseline`: each figure both have, and which fell
/// by more than `threshold` (see the module docs).
pub fn compare(baseline: &Run, run: &Run, threshold: Threshold) -> Comparison {
    let unmatched = |figure: &Figure| Unmatched {
        mode: figure.mode.clone(),
        concurrency: figure.concurrency,
    };
    let mut comparison = Comparison {
        threshold_percent: threshold.as_percent(),
        compared: 0,
        fell: Vec::new(),
        not_measured: Vec::new(),
        new: Vec::new(),
    };
    for before in &baseline.figures {
        let Some(now) = run.find(before.key()) else {
            comparison.not_measured.push(unmatched(before));
            continue;
        };
        comparison.compared += 1;
        if before.ops_per_sec <= 0.0 {
            // Nothing to fall from.
            continue;
        }
        let fell_percent = (1.0 - now.ops_per_sec / before.ops_per_sec) * 100.0;
        if fell_percent > threshold.as_percent() {
            comparison.fell.push(Fall {
                mode: before.mode.clone(),
                concurrency: before.concurrency,
                baseline: before.ops_per_sec,
                now: now.ops_per_sec,
                fell_percent,
            });
        }
    }
    comparison.new = run
        .figures
        .iter()
        .filter(|figure| baseline.find(figure.key()).is_none())
        .map(unmatched)
        .collect();
    comparison
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(figures: &[(&str, usize, f64)]) -> Run {
        Run::new(
            figures
                .iter()
                .map(|&(mode, concurrency, ops_per_sec)| Figure {
                    mode: mode.into(),
                    concurrency,
                    ops_per_sec,
                })
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn a_figure_fell_only_when_it_lost_more_than_the_threshold() {
        let baseline = run(&[
            ("segment", 1, 100.0),
            ("segment", 8, 100.0),
            ("raw_inc", 1, 10.0),
        ]);
        let now = run(&[
            ("segment", 1, 79.0),
            ("segment", 8, 80.0),
            ("raw_inc", 1, 30.0),
        ]);
        let comparison = compare(&baseline, &now, Threshold::DEFAULT);
        assert_eq!(comparison.compared, 3);
        assert_eq!(comparison.fell.len(), 1, "{comparison:?}");
        let fall = &comparison.fell[0];
        assert_eq!((fall.mode.as_str(), fall.concurrency), ("segment", 1));
        assert!((fall.fell_percent - 21.0).abs() < 1e-9);
        assert!(comparison.any_fell());
        // A looser threshold lets it pass.
        let loose = compare(&baseline, &now, Threshold::percent(25.0).unwrap());
        assert!(!loose.any_fell());
    }

    #[test]
    fn figures_only_one_run_has_are_listed_not_counted() {
        let baseline = run(&[("segment", 1, 100.0), ("segment", 32, 100.0)]);
        let now = run(&[("segment", 1, 100.0), ("segment_allocator", 1, 5.0)]);
        let comparison = compare(&baseline, &now, Threshold::DEFAULT);
        assert_eq!(comparison.compared, 1);
        assert!(!comparison.any_fell());
        assert_eq!(comparison.not_measured[0].concurrency, 32);
        assert_eq!(comparison.new[0].mode, "segment_allocator");
    }

    #[test]
    fn reads_what_the_bench_prints_and_refuses_anything_else() {
        let text = r#"{"results":[{"mode":"segment","concurrency":1,"ops_per_sec":5.0,"ops":15,"seconds":3.0}]}"#;
        assert_eq!(Run::from_json(text).unwrap().figures().len(), 1);
        for bad in [
            "",
            "[]",
            r#"{"results":[]}"#,
            r#"{"results":[{"mode":"segment","concurrency":1}]}"#,
            r#"{"results":[{"mode":"segment","concurrency":1,"ops_per_sec":-1.0}]}"#,
        ] {
            assert!(Run::from_json(bad).is_err(), "{bad:?} was read");
        }
        let twice = r#"{"results":[{"mode":"a","concurrency":1,"ops_per_sec":1.0},{"mode":"a","concurrency":1,"ops_per_sec":2.0}]}"#;
        assert!(matches!(
            Run::from_json(twice),
            Err(BaselineError::BadFigure { .. })
        ));
    }

    #[test]
    fn a_threshold_is_a_share_of_a_figure() {
        for bad in [0.0, -5.0, 100.0, f64::NAN] {
            assert!(Threshold::percent(bad).is_err(), "{bad}");
        }
        assert_eq!(Threshold::percent(12.5).unwrap().as_percent(), 12.5);
    }
}
