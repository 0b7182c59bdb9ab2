//! The kinds of counter, one folder each. A kind's folder owns its document
//! rules (the Rust reader and its server-side guard twin), its creation
//! settings, its wire command, its handle and how it describes its state,
//! through the [`Kind`](super::kind_trait::Kind) trait, and reads its own
//! counters through `counter/document.rs`'s one reader; it must not touch
//! another kind's documents nor import another kind. The registry
//! (`../registry.rs`) is the one place that lists them.

pub mod autoinc;
pub mod cyclic;
pub mod periodic;
pub mod segment;
pub mod snowflake;
#[cfg(feature = "test-kind")]
pub mod tally;
