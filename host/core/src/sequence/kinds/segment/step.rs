//! The adaptive step: how large a segment a process asks for next.
//!
//! Leaf's rule, towards a target lifetime `T` of a segment: a segment used
//! up in less than `T` doubles the next request, one that lasted between `T`
//! and `2T` keeps it, one that lasted longer halves it. The step never drops
//! below the counter's own `step` (the document's setting, the floor) nor
//! grows past the process's ceiling. A busy process so touches the counter
//! document rarely, and an idle one wastes few values when it stops.

use std::time::Duration;

/// The step to ask for next, after a segment of `step` values lasted
/// `lifetime` (from its fetch to the next fetch).
pub fn next_step(step: u64, lifetime: Duration, target: Duration, floor: u64, ceiling: u64) -> u64 {
    let ceiling = ceiling.max(floor);
    let next = if lifetime < target {
        step.saturating_mul(2)
    } else if lifetime < target.saturating_mul(2) {
        step
    } else {
        step / 2
    };
    next.clamp(floor, ceiling)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(900);

    #[test]
    fn grows_when_fast_keeps_when_on_target_shrinks_when_slow() {
        let secs = Duration::from_secs;
        assert_eq!(next_step(1000, secs(1), T, 1000, 1_000_000), 2000);
        assert_eq!(next_step(1000, secs(1000), T, 1000, 1_000_000), 1000);
        assert_eq!(next_step(8000, secs(4000), T, 1000, 1_000_000), 4000);
    }

    #[test]
    fn stays_within_the_floor_and_the_ceiling() {
        let secs = Duration::from_secs;
        assert_eq!(next_step(800_000, secs(1), T, 1000, 1_000_000), 1_000_000);
        assert_eq!(next_step(1000, secs(9000), T, 1000, 1_000_000), 1000);
        // A ceiling below the document's step gives way to the step.
        assert_eq!(next_step(5000, secs(1), T, 5000, 100), 5000);
    }
}
