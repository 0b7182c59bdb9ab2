//! The values and requests per second of this instance over the last
//! minutes: a fixed window of one-second points, sampled from the service's
//! running totals.

use std::collections::VecDeque;

use serde::Serialize;

/// How many one-second points the history keeps (ten minutes).
pub const RATE_WINDOW: usize = 600;

/// One second of this instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RatePoint {
    /// Values handed out in that second.
    pub values: u64,
    /// Requests answered in that second.
    pub requests: u64,
}

/// The last [`RATE_WINDOW`] seconds, oldest first, from running totals
/// sampled once a second.
#[derive(Debug, Clone, Default)]
pub struct RateHistory {
    points: VecDeque<RatePoint>,
    last_totals: Option<RatePoint>,
}

impl RateHistory {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the running totals one second after the previous sample; the
    /// first sample only sets where counting starts. Totals that went down
    /// (a restarted count) start counting again from there.
    pub fn sample(&mut self, totals: RatePoint) {
        if let Some(last) = self.last_totals {
            self.points.push_back(RatePoint {
                values: totals.values.saturating_sub(last.values),
                requests: totals.requests.saturating_sub(last.requests),
            });
            while self.points.len() > RATE_WINDOW {
                self.points.pop_front();
            }
        }
        self.last_totals = Some(totals);
    }

    /// The points, oldest first.
    pub fn points(&self) -> Vec<RatePoint> {
        self.points.iter().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(values: u64, requests: u64) -> RatePoint {
        RatePoint { values, requests }
    }

    #[test]
    fn a_point_is_the_difference_of_two_samples_and_the_window_is_bounded() {
        let mut history = RateHistory::new();
        history.sample(totals(100, 10));
        assert!(history.points().is_empty());
        history.sample(totals(160, 13));
        assert_eq!(history.points(), vec![totals(60, 3)]);
        history.sample(totals(5, 1));
        assert_eq!(history.points()[1], totals(0, 0));
        for second in 0..RATE_WINDOW as u64 + 10 {
            history.sample(totals(5 + second, 1));
        }
        assert_eq!(history.points().len(), RATE_WINDOW);
    }
}
