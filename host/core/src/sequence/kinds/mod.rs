//! The kinds of counter, one folder each. A kind's folder owns its document
//! rules (the Rust reader and its server-side guard twin), its creation
//! settings, its wire command, its handle and how it describes its state,
//! through the [`Kind`](super::kind_trait::Kind) trait, and reads its own
//! counters through `counter/document.rs`'s one reader; it must not touch
//! another kind's documents nor import another kind. The registry
//! (`../registry.rs`) is the one place that lists them for the types that
//! dispatch on a kind.
//!
//! A kind whose counters can be striped says what its lanes are in its
//! folder too (`lanes.rs`, the
//! [`Stripable`](super::lane_kind::Stripable) trait); [`lanes`] finds the
//! kinds that do, for `striping/`, which knows a kind by name only (the
//! registry's types sit above `striping/`, and so cannot be asked from it).

// `stripable!` needs both answers in scope (`NotStripable`'s for a kind
// whose folder does not implement the trait: none, in some builds).
#[allow(unused_imports)]
use super::lane_kind::{stripable, IsStripable, KindLanes, NotStripable};

pub mod autoinc;
pub mod cyclic;
pub mod periodic;
pub mod segment;
pub mod snowflake;
#[cfg(feature = "test-kind")]
pub mod tally;

/// The lanes of the kinds whose counters can be striped: those whose
/// folder implements [`Stripable`](super::lane_kind::Stripable). Every
/// kind is asked (a kind is not listed as stripable anywhere).
fn stripable_kinds() -> &'static [&'static dyn KindLanes] {
    static KINDS: std::sync::LazyLock<Vec<&'static dyn KindLanes>> =
        std::sync::LazyLock::new(|| {
            [
                stripable!(cyclic::CyclicKind),
                stripable!(autoinc::AutoincKind),
                stripable!(segment::SegmentKind),
                stripable!(snowflake::SnowflakeKind),
                stripable!(periodic::PeriodicKind),
                #[cfg(feature = "test-kind")]
                stripable!(tally::TallyKind),
            ]
            .into_iter()
            .flatten()
            .collect()
        });
    &KINDS
}

/// The lanes of kind `kind`, if its counters can be striped.
pub(crate) fn lanes(kind: &str) -> Option<&'static dyn KindLanes> {
    stripable_kinds()
        .iter()
        .copied()
        .find(|lanes| lanes.name() == kind)
}

/// The names of the kinds whose counters can be striped.
pub(crate) fn stripable_names() -> Vec<&'static str> {
    stripable_kinds().iter().map(|lanes| lanes.name()).collect()
}
