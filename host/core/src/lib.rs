//! idmint: unique, time-correlated, formatted IDs coordinated through MongoDB.
//!
//! An ID is made in two steps. A [`sequence`] counter hands out the next
//! values, whatever its kind (cyclic, autoinc, segment, snowflake,
//! periodic: one folder each under `sequence/kinds/`, listed once in the
//! registry), as [`parts::Stamp`]s; then a [`policy`], a WebAssembly
//! component loaded at run time and swappable live, writes them as text.
//! [`minter`] puts the two together. Beside them: distributed [`lock`]s,
//! the [`installer`] for DBAs (stored JavaScript twins, collections, the
//! prefixes index, roles), application [`tokens`], and one classification
//! of every failure ([`ErrorClass`]); and the [`baseline`] a benchmark run is
//! compared with.
//!
//! This crate is the library applications embed. It owns every write to
//! MongoDB that hands something out, and decides everything a command or a
//! request needs decided; it must not depend on HTTP or the command line
//! (axum, tower, clap: those are `idmint-serve` and `idmint-cli`), never
//! prints, never exits, and holds no test-only hook.
#![warn(missing_docs)]

pub mod baseline;
#[cfg(feature = "soak-broken")]
mod broken;
pub mod checksum;
pub mod config;
mod error;
mod error_class;
pub mod installer;
pub(crate) mod lease;
pub mod lock;
pub mod minter;
pub mod mongo;
pub mod parts;
pub mod policy;
pub(crate) mod random;
pub mod redact;
pub mod sequence;
pub mod series;
pub mod tokens;

pub use config::ConnectOptions;
pub use error::{Classify, Error, ErrorClass};
pub use lease::host_name;
pub use minter::{LiveMinter, Minter};
pub use parts::{IdParts, Stamp};
pub use policy::{Policy, PolicyRuntime};
pub use sequence::{Clock, CounterName, CyclicCounter, Sequence, SystemClock};
