//! What this instance handed out lately: its values and requests per
//! second over the last minutes (a fixed window of one-second points,
//! sampled from the service's running totals), and each counter's values
//! over the last minute ([`CounterActivity`]), for the busiest counters.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Instant;

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

/// The slots of a counter's activity, and how long each one is: their sum
/// is the values of the last minute (to within one slot).
const SLOTS: usize = 6;
const SLOT_SECONDS: u64 = 10;

/// The values this instance handed out per counter over the last minute:
/// what tells the busiest counters. Recorded as values are handed out (a
/// lock and a map lookup each time); a counter idle for a minute is
/// forgotten, so it holds only the counters served lately.
#[derive(Debug)]
pub struct CounterActivity {
    started: Instant,
    inner: Mutex<Activity>,
}

#[derive(Debug, Default)]
struct Activity {
    counters: HashMap<String, Slots>,
    /// The slot of the last sweep of idle counters.
    swept: u64,
}

/// One counter's values in its last [`SLOTS`] slots.
#[derive(Debug, Clone, Copy, Default)]
struct Slots {
    /// The latest slot counted in.
    latest: u64,
    /// Values per slot, at `slot % SLOTS`.
    values: [u64; SLOTS],
}

impl Slots {
    /// Counts `values` in `slot` (the latest one, or after it).
    fn add(&mut self, slot: u64, values: u64) {
        if slot > self.latest {
            // The slots between are of a time with nothing handed out.
            for passed in (self.latest + 1..=slot).take(SLOTS) {
                self.values[passed as usize % SLOTS] = 0;
            }
            self.latest = slot;
        }
        if slot + (SLOTS as u64) > self.latest {
            self.values[slot as usize % SLOTS] += values;
        }
    }

    /// The most values of one of the [`SLOTS`] slots up to `now`.
    fn peak(&self, now: u64) -> u64 {
        (now.saturating_sub(SLOTS as u64 - 1)..=now.min(self.latest))
            .filter(|slot| slot + (SLOTS as u64) > self.latest)
            .map(|slot| self.values[slot as usize % SLOTS])
            .max()
            .unwrap_or(0)
    }

    /// The values of the [`SLOTS`] slots up to `now`.
    fn recent(&self, now: u64) -> u64 {
        (now.saturating_sub(SLOTS as u64 - 1)..=now.min(self.latest))
            .filter(|slot| slot + (SLOTS as u64) > self.latest)
            .map(|slot| self.values[slot as usize % SLOTS])
            .sum()
    }
}

impl Default for CounterActivity {
    fn default() -> Self {
        Self::new()
    }
}

impl CounterActivity {
    /// Nothing handed out yet.
    pub fn new() -> Self {
        Self {
            started: Instant::now(),
            inner: Mutex::default(),
        }
    }

    fn slot(&self) -> u64 {
        self.started.elapsed().as_secs() / SLOT_SECONDS
    }

    fn activity(&self) -> std::sync::MutexGuard<'_, Activity> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Counts `values` handed out from `counter` now.
    pub fn record(&self, counter: &str, values: u64) {
        self.record_at(self.slot(), counter, values);
    }

    fn record_at(&self, slot: u64, counter: &str, values: u64) {
        let mut activity = self.activity();
        match activity.counters.get_mut(counter) {
            Some(slots) => slots.add(slot, values),
            None => {
                let mut slots = Slots {
                    latest: slot,
                    ..Slots::default()
                };
                slots.add(slot, values);
                activity.counters.insert(counter.to_string(), slots);
            }
        }
        if slot >= activity.swept + SLOTS as u64 {
            activity
                .counters
                .retain(|_, slots| slots.latest + (SLOTS as u64) > slot);
            activity.swept = slot;
        }
    }

    /// The values handed out from `counter` over the last minute.
    pub fn recent(&self, counter: &str) -> u64 {
        let now = self.slot();
        self.activity()
            .counters
            .get(counter)
            .map_or(0, |slots| slots.recent(now))
    }

    /// The values per second `counter` handed out in its busiest slot of
    /// the last minute: the peak rate its headroom is judged by.
    pub fn peak_per_second(&self, counter: &str) -> f64 {
        let now = self.slot();
        self.activity()
            .counters
            .get(counter)
            .map_or(0, |slots| slots.peak(now)) as f64
            / SLOT_SECONDS as f64
    }

    /// The `count` counters that handed out the most values over the last
    /// minute (none that handed out nothing), the busiest first, with their
    /// values.
    pub fn busiest(&self, count: usize) -> Vec<(String, u64)> {
        self.busiest_at(self.slot(), count)
    }

    fn busiest_at(&self, now: u64, count: usize) -> Vec<(String, u64)> {
        let mut recent: Vec<(String, u64)> = self
            .activity()
            .counters
            .iter()
            .map(|(name, slots)| (name.clone(), slots.recent(now)))
            .filter(|(_, values)| *values > 0)
            .collect();
        recent.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        recent.truncate(count);
        recent
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

    #[test]
    fn the_peak_is_the_busiest_slot_of_the_last_minute() {
        let activity = CounterActivity::new();
        activity.record_at(0, "wraps", 500);
        activity.record_at(1, "wraps", 70);
        activity.record_at(1, "wraps", 30);
        let peak = |now| {
            activity
                .activity()
                .counters
                .get("wraps")
                .map_or(0, |slots| slots.peak(now))
        };
        assert_eq!(peak(1), 500);
        // The first slot has left the window.
        assert_eq!(peak(SLOTS as u64), 100);
        assert_eq!(activity.peak_per_second("idle"), 0.0);
    }

    #[test]
    fn the_busiest_counters_are_those_with_the_most_values_over_the_last_minute() {
        let activity = CounterActivity::new();
        activity.record_at(0, "old", 1000);
        activity.record_at(0, "steady", 10);
        activity.record_at(3, "steady", 10);
        activity.record_at(5, "steady", 10);
        activity.record_at(5, "burst", 25);
        assert_eq!(
            activity.busiest_at(5, 10),
            vec![
                ("old".to_string(), 1000),
                ("steady".to_string(), 30),
                ("burst".to_string(), 25),
            ]
        );
        // Slot 0 leaves the window at slot 6.
        assert_eq!(
            activity.busiest_at(6, 2),
            vec![("burst".to_string(), 25), ("steady".to_string(), 20)]
        );
        // Counting in slot 6 forgets what slot 0 held.
        activity.record_at(6, "steady", 1);
        assert_eq!(
            activity.busiest_at(6, 10),
            vec![("burst".to_string(), 25), ("steady".to_string(), 21)]
        );
        // A counter idle for a minute is swept at the next count and
        // nothing is left of it.
        activity.record_at(20, "new", 3);
        assert_eq!(activity.busiest_at(20, 10), vec![("new".to_string(), 3)]);
        assert_eq!(activity.activity().counters.len(), 1);
        // A long pause clears every slot.
        activity.record_at(1000, "new", 4);
        assert_eq!(activity.busiest_at(1000, 10), vec![("new".to_string(), 4)]);
    }
}
