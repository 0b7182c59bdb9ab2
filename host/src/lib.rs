//! idmint: unique, time-correlated, formatted IDs coordinated through MongoDB.
//!
//! An ID is made in two steps. A [`sequence`] strategy asks MongoDB for the next
//! value of a counter in one atomic round trip, and the server decides the
//! timestamp that goes with it, so that the (timestamp, sequence) pair of a counter
//! only ever increases whatever the client clocks do. Then a [`policy`], a
//! WebAssembly component loaded at run time, writes those parts as text. The
//! [`installer`] deploys the server-side JavaScript twin of the sequence algorithm
//! for DBAs and reports what the server offers.
#![warn(missing_docs)]

pub mod bench;
pub mod checksum;
pub mod config;
mod error;
pub mod installer;
pub mod lock;
pub mod minter;
pub mod mongo;
pub mod policy;
pub mod redact;
pub mod sequence;

pub use config::ConnectOptions;
pub use error::Error;
pub use minter::Minter;
pub use policy::{Policy, PolicyRuntime};
pub use sequence::{Clock, CounterName, CyclicCounter, Issued, SystemClock};
