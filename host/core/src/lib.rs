//! idmint: unique, time-correlated, formatted IDs coordinated through MongoDB.
//!
//! An ID is made in two steps. A [`sequence`] strategy hands out the next
//! values of a counter: a cyclic counter in one atomic round trip per block,
//! with a server-decided timestamp so that its (timestamp, sequence) pairs
//! only ever increase whatever the client clocks do; an auto-increment
//! counter with `$inc`; a segment counter from this process's memory,
//! refilled a whole range at a time. Then a [`policy`], a
//! WebAssembly component loaded at run time, writes those parts as text. The
//! [`installer`] deploys the server-side JavaScript twin of the sequence algorithm
//! for DBAs and reports what the server offers.
#![warn(missing_docs)]

pub mod checksum;
pub mod config;
mod error;
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
pub mod tokens;

pub use config::ConnectOptions;
pub use error::{Error, ErrorClass};
pub use minter::{LiveMinter, Minter};
pub use parts::{IdParts, Stamp};
pub use policy::{Policy, PolicyRuntime};
pub use sequence::{Clock, CounterName, CyclicCounter, Sequence, SystemClock};
