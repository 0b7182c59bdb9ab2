//! Why a striped counter, its map or one of its lanes cannot be used or
//! changed.

use super::limits::MAX_LANES;
use crate::error::class::ErrorClass;

/// Why a striped counter, its map or a lane cannot be used or changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StripingError {
    /// A modulus out of 1..=[`MAX_LANES`].
    #[error("a striped counter has 1 to {MAX_LANES} lanes, not {0}")]
    Modulus(u64),
    /// A residue not below the modulus.
    #[error("lane {residue} does not exist in a generation of {modulus} lanes")]
    Residue {
        /// The residue asked for.
        residue: u64,
        /// The generation's modulus.
        modulus: u64,
    },
    /// A base that leaves a lane no value up to
    /// [`MAX_VALUE`](crate::sequence::MAX_VALUE).
    #[error(
        "a generation based at {base} with {modulus} lanes leaves a lane no value up to 2^53 - 1"
    )]
    Exhausted {
        /// The base.
        base: u64,
        /// The modulus.
        modulus: u64,
    },
    /// The counter's map (`striped`) is malformed.
    #[error("its stripe map is corrupt: {0}; it was left unchanged")]
    CorruptMap(String),
    /// A lane document is malformed.
    #[error("lane '{lane}' is corrupt: {reason}; it was left unchanged")]
    CorruptLane {
        /// The lane's `_id`.
        lane: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A lane the map names is missing, or of another generation than the
    /// map's (a change of stripes stopped half way).
    #[error(
        "lane '{lane}' of generation {generation} is missing or of another generation; \
         a change of stripes may have stopped half way: run `idmint counter stripes` again"
    )]
    LaneMissing {
        /// The lane's `_id`.
        lane: String,
        /// The generation the map names.
        generation: u64,
    },
    /// A lane was read as a counter: it is taken from through its
    /// counter only.
    #[error("it is a lane of a striped counter, taken from through that counter only; it was left unchanged")]
    Lane,
    /// The lanes' kind cannot be striped (yet).
    #[error("{kind} counters cannot be striped (only autoinc ones can, so far)")]
    NotStripable {
        /// The counter's kind.
        kind: String,
    },
    /// Every lane a take tried was sealed or missing, and the map did not
    /// move on: a change of stripes is under way or stopped half way.
    #[error(
        "no live lane after {attempts} tries: a change of stripes is under way or stopped \
         half way (`idmint counter stripes` finishes it); nothing was taken"
    )]
    Changing {
        /// How many lanes were tried.
        attempts: u32,
    },
    /// The map has no live lane: a change of stripes claimed its
    /// generation and has not finished (or stopped half way).
    #[error(
        "generation {generation} has no live lane yet: a change of stripes is under way or \
         stopped half way (`idmint counter stripes` finishes it)"
    )]
    NoLiveLane {
        /// The generation the change claimed.
        generation: u64,
    },
    /// Another change of the stripes ran at the same time and won.
    #[error(
        "another change of its stripes ran at the same time; nothing more was changed, try again"
    )]
    Concurrent,
}

impl StripingError {
    /// The class of the failure.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::Modulus(_) | Self::Residue { .. } | Self::NotStripable { .. } => {
                ErrorClass::BadInput
            }
            Self::Exhausted { .. } => ErrorClass::Exhausted,
            Self::Changing { .. } | Self::NoLiveLane { .. } => ErrorClass::Unavailable,
            Self::CorruptMap(_)
            | Self::CorruptLane { .. }
            | Self::LaneMissing { .. }
            | Self::Lane
            | Self::Concurrent => ErrorClass::Conflict,
        }
    }
}
