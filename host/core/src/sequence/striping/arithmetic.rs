//! The arithmetic of a striped counter's lanes
//! (`docs/design/striped-counters.md`).
//!
//! A striped counter's values come from **lanes**, each an ordinary counter
//! document whose local values 1, 2, 3, ... are mapped into one residue
//! class of its **generation**'s modulus, above the generation's base:
//!
//! ```text
//! value = base + (local - 1) * modulus + residue + 1
//! ```
//!
//! so the lanes of one generation hand out disjoint values (two equal
//! values would need equal residues), and nothing is wasted while every
//! lane is used. A new generation (another modulus) starts above every value
//! the lanes of the last one handed out, which their seals report
//! ([`Generation::after`]). An unstriped counter is the generation
//! [`Generation::UNSTRIPED`]: one lane, whose values are its local values.

use std::fmt;
use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

use super::error::StripingError;
use crate::sequence::kind_trait::MAX_VALUE;
use crate::sequence::name::CounterName;

pub use super::limits::MAX_LANES;

/// What the separator of a lane's document `_id` is: a character no
/// counter name may contain, so that no lane is ever taken for a counter.
pub const LANE_SEPARATOR: char = '#';

/// One generation of a striped counter: its lanes hand out the residue
/// classes of `modulus`, above `base`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Generation {
    /// Every value of the generation is above it.
    pub base: u64,
    /// How many lanes the generation has.
    pub modulus: u64,
}

impl Generation {
    /// An unstriped counter: one lane, whose values are its local values.
    pub const UNSTRIPED: Generation = Generation {
        base: 0,
        modulus: 1,
    };

    /// A generation of `modulus` lanes above `base`, if each of its lanes
    /// has at least one value up to [`MAX_VALUE`].
    pub fn new(base: u64, modulus: u64) -> Result<Self, StripingError> {
        if !(1..=MAX_LANES).contains(&modulus) {
            return Err(StripingError::Modulus(modulus));
        }
        if base
            .checked_add(modulus)
            .is_none_or(|last| last > MAX_VALUE)
        {
            return Err(StripingError::Exhausted { base, modulus });
        }
        Ok(Self { base, modulus })
    }

    /// Lane `residue` of the generation.
    pub fn lane(self, residue: u64) -> Result<Lane, StripingError> {
        if residue >= self.modulus {
            return Err(StripingError::Residue {
                residue,
                modulus: self.modulus,
            });
        }
        Ok(Lane {
            generation: self,
            residue,
        })
    }

    /// Every lane of the generation, by residue.
    pub fn lanes(self) -> impl Iterator<Item = Lane> {
        (0..self.modulus).map(move |residue| Lane {
            generation: self,
            residue,
        })
    }

    /// The generation of `modulus` lanes that follows the `sealed` lanes,
    /// each given with the last local value it handed out (0: none): its
    /// base is the highest value any of them handed out, so every value of
    /// the new generation is above every value of the old one, whatever
    /// the order the lanes were sealed in.
    pub fn after(
        sealed: impl IntoIterator<Item = (Lane, u64)>,
        modulus: u64,
    ) -> Result<Self, StripingError> {
        let base = sealed
            .into_iter()
            .map(|(lane, last_local)| lane.high_water(last_local))
            .max()
            .unwrap_or(0);
        Self::new(base, modulus)
    }
}

/// One lane of a generation (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lane {
    generation: Generation,
    residue: u64,
}

impl Lane {
    /// The generation the lane belongs to.
    pub fn generation(self) -> Generation {
        self.generation
    }

    /// The lane's residue: which class of the modulus it hands out.
    pub fn residue(self) -> u64 {
        self.residue
    }

    /// The value handed out as the lane's `local`-th (from 1), or `None`
    /// for 0 or past [`MAX_VALUE`].
    pub fn value(self, local: u64) -> Option<u64> {
        let Generation { base, modulus } = self.generation;
        local
            .checked_sub(1)?
            .checked_mul(modulus)?
            .checked_add(base)?
            .checked_add(self.residue + 1)
            .filter(|&value| value <= MAX_VALUE)
    }

    /// The values of local values `locals`, in order, or `None` if any is
    /// past [`MAX_VALUE`]: what a take of a block from the lane hands out.
    pub fn values(self, locals: RangeInclusive<u64>) -> Option<Vec<u64>> {
        locals.map(|local| self.value(local)).collect()
    }

    /// Which local value of this lane `value` is, if the lane hands it out.
    pub fn local_of(self, value: u64) -> Option<u64> {
        let Generation { base, modulus } = self.generation;
        let offset = value.checked_sub(base)?.checked_sub(1)?;
        (offset % modulus == self.residue && value <= MAX_VALUE).then(|| offset / modulus + 1)
    }

    /// How many values the lane can hand out in all.
    pub fn capacity(self) -> u64 {
        let Generation { base, modulus } = self.generation;
        match MAX_VALUE.checked_sub(base + self.residue + 1) {
            Some(room) => room / modulus + 1,
            None => 0,
        }
    }

    /// The highest value handed out once the lane has handed out
    /// `last_local` local values: the generation's base if none.
    pub fn high_water(self, last_local: u64) -> u64 {
        self.value(last_local.min(self.capacity()))
            .unwrap_or(self.generation.base)
    }
}

impl fmt::Display for Lane {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "lane {} of {} (above {})",
            self.residue, self.generation.modulus, self.generation.base
        )
    }
}

/// How far a lane, or a generation, got: the period of its last value
/// (periodic lanes only), and its last value (a cyclic lane's: its last
/// timestamp). Marks order by period first, then value: a later period's
/// values start again.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Mark {
    /// The label of the period (none: not periodic, or no period yet).
    pub period: Option<String>,
    /// The value, or timestamp.
    pub value: u64,
}

impl Mark {
    /// A mark of `value` in no period.
    pub fn of(value: u64) -> Self {
        Self {
            period: None,
            value,
        }
    }
}

/// The `_id` of lane `residue` of counter `name`: `orders#3`.
pub fn lane_id(name: &CounterName, residue: u64) -> String {
    format!("{name}{LANE_SEPARATOR}{residue}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_unstriped_counter_hands_out_its_local_values() {
        let lane = Generation::UNSTRIPED.lane(0).unwrap();
        assert_eq!(lane.values(1..=3), Some(vec![1, 2, 3]));
        assert_eq!(lane.capacity(), MAX_VALUE);
        assert_eq!(lane.value(MAX_VALUE), Some(MAX_VALUE));
        assert_eq!(lane.value(MAX_VALUE + 1), None);
        assert_eq!(lane.value(0), None);
        assert_eq!(lane.high_water(0), 0);
    }

    #[test]
    fn lanes_interleave_above_the_base() {
        let generation = Generation::new(100, 4).unwrap();
        let values: Vec<Vec<u64>> = generation
            .lanes()
            .map(|lane| lane.values(1..=3).unwrap())
            .collect();
        assert_eq!(
            values,
            [
                [101, 105, 109],
                [102, 106, 110],
                [103, 107, 111],
                [104, 108, 112]
            ]
        );
    }

    #[test]
    fn refuses_what_cannot_be_a_generation_or_a_lane() {
        assert_eq!(
            Generation::new(0, 0).unwrap_err().to_string(),
            "a striped counter has 1 to 1024 lanes, not 0"
        );
        assert_eq!(
            Generation::new(0, 2)
                .unwrap()
                .lane(2)
                .unwrap_err()
                .to_string(),
            "lane 2 does not exist in a generation of 2 lanes"
        );
        assert!(matches!(
            Generation::new(MAX_VALUE - 1, 2),
            Err(StripingError::Exhausted { .. })
        ));
        assert!(Generation::new(MAX_VALUE - 2, 2).is_ok());
    }

    #[test]
    fn a_lane_id_cannot_be_a_counter_name() {
        let name = CounterName::new("orders").unwrap();
        let id = lane_id(&name, 3);
        assert_eq!(id, "orders#3");
        assert!(CounterName::new(&id).is_err());
    }

    fn generation() -> impl Strategy<Value = Generation> {
        (
            prop_oneof![Just(0_u64), 0..1_000_000_u64, (MAX_VALUE - 5000)..MAX_VALUE],
            1..=64_u64,
        )
            .prop_filter_map("a generation with room", |(base, modulus)| {
                Generation::new(base, modulus).ok()
            })
    }

    proptest! {
        /// Two lanes of a generation never hand out one value, and each
        /// value reads back to its lane and local value.
        #[test]
        fn the_lanes_of_a_generation_are_disjoint(
            generation in generation(),
            a in 0..64_u64,
            b in 0..64_u64,
            local_a in 1..5000_u64,
            local_b in 1..5000_u64,
        ) {
            let (a, b) = (a % generation.modulus, b % generation.modulus);
            let (lane_a, lane_b) = (generation.lane(a).unwrap(), generation.lane(b).unwrap());
            if let (Some(x), Some(y)) = (lane_a.value(local_a), lane_b.value(local_b)) {
                prop_assert!(x > generation.base);
                if a != b {
                    prop_assert_ne!(x, y);
                } else {
                    prop_assert_eq!(x == y, local_a == local_b);
                }
                prop_assert_eq!(lane_a.local_of(x), Some(local_a));
                prop_assert_eq!(lane_b.local_of(x).is_some(), a == b);
            }
            prop_assert_eq!(
                lane_a.value(lane_a.capacity()).is_some() && lane_a.value(lane_a.capacity() + 1).is_none(),
                lane_a.capacity() > 0
            );
        }

        /// Whatever each sealed lane handed out, every value of the next
        /// generation is above every one of them.
        #[test]
        fn a_new_generation_starts_above_every_sealed_lane(
            old in generation(),
            handed_out in proptest::collection::vec(0..200_u64, 64),
            modulus in 1..=64_u64,
        ) {
            let sealed: Vec<(Lane, u64)> = old
                .lanes()
                .map(|lane| (lane, handed_out[lane.residue() as usize]))
                .collect();
            // Every value each lane handed out, one by one.
            let highest = sealed
                .iter()
                .flat_map(|&(lane, last)| (1..=last).filter_map(move |k| lane.value(k)))
                .max();
            if let Ok(new) = Generation::after(sealed.iter().copied(), modulus) {
                for lane in new.lanes() {
                    // A lane's values increase: its first is its least.
                    if let (Some(first), Some(highest)) = (lane.value(1), highest) {
                        prop_assert!(first > highest, "{first} <= {highest} in {lane}");
                        prop_assert!(lane.value(2).is_none_or(|second| second > first));
                    }
                }
            }
        }
    }
}
