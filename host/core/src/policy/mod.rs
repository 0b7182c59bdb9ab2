//! ID policies: WebAssembly components that turn the parts of an ID into text
//! and read such text back.
//!
//! The [`sequence`](crate::sequence) strategies decide the parts of an ID (a
//! timestamp from the server and a counter value); a policy only decides how
//! they are written. A policy implements the `id-policy` world of
//! `guest/wit/policy.wit` (contract 0.4.0; a policy built against 0.3.0 or
//! 0.2.0, `guest/wit/0.3.0/` and `guest/wit/0.2.0/`, still loads and runs,
//! through the adapter of its version: `contract.rs`), the only contract
//! between host and policy. idmint embeds a default one
//! ([`DEFAULT_POLICY_WASM`], built from `guest/default/` by `build.rs`): the
//! prefix, then the UTC time as `yyyyMMddHHmmss`, six digits of microseconds
//! and a two-digit sequence value.
//!
//! A [`PolicyRuntime`] (one per process) loads policies into [`Policy`]
//! handles, checking at load that they fulfil the contract; each call then
//! runs in a fresh sandbox with no files, environment or network and bounded
//! memory and CPU time ([`PolicyLimits`]).
//!
//! Before a policy serves, it passes the activation check
//! ([`activation::check`]): sample parts, edge values included, formatted and
//! read back by its own validator (and, for the counters it will serve,
//! snowflake IDs and periods), and its capacity held against those counters. A long-running process serves through a
//! [`LivePolicy`], swapped atomically when a followed file or the policies
//! collection ([`PolicyStore`], `watch` module) offers a policy that passes;
//! [`PolicyFollower`] is that lifecycle, held by every such process.
//!
//! ```
//! use idmint::policy::{IdParts, PolicyRuntime};
//!
//! let runtime = PolicyRuntime::new()?;
//! let policy = runtime.load_default()?;
//! let parts = IdParts {
//!     prefix: "ORD-".to_string(),
//!     timestamp_micros: 1_795_317_297_123_456, // 2026-11-22T03:14:57.123456Z
//!     sequence: 7,
//!     snowflake: None,
//!     period: None,
//! };
//! let id = policy.format(&parts)?;
//! assert_eq!(id, "ORD-2026112203145712345607");
//! assert_eq!(policy.validate(&id, Some("ORD-"), None)?, Ok(parts));
//! # Ok::<(), idmint::policy::PolicyError>(())
//! ```

pub mod activation;
mod bindings;
mod check_ids;
pub mod compile_cache;
mod contract;
mod error;
pub mod fit;
mod fit_error;
mod fit_memo;
pub mod follower;
mod live;
mod runtime;
mod sandbox;
pub mod store;
mod types;
pub mod watch;

#[cfg(test)]
mod tests;

pub use crate::parts::{IdParts, Stamp};
pub use activation::{ActivationOptions, ActivationReport};
pub use check_ids::{check_ids, Verdict};
pub use compile_cache::{CacheUsage, CompileCache, POLICY_CACHE_ENV};
pub use error::PolicyError;
pub use fit::{
    check_fit, check_prefix, check_prefix_reads_back, check_serves, check_tag_reads_back, writes,
    writes_period, writes_time, Writes,
};
pub use fit_error::FitError;
pub use follower::{FirstPolicy, FollowOptions, PolicyEvents, PolicyFollower};
pub use live::LivePolicy;
pub use runtime::{Compilations, Policy, PolicyRuntime, MAX_CONCURRENT_CALLS};
pub use sandbox::{PolicyLimits, DEFAULT_MAX_MEMORY_BYTES, DEFAULT_TIMEOUT, EPOCH_TICK};
pub use store::{PolicyStore, PolicyStoreError, POLICIES_COLLECTION};
pub use types::{FormatError, InvalidId, PolicyInfo};

/// The default policy component (`guest/default/`, crate `idmint-policy-default`),
/// built for `wasm32-wasip2` by `build.rs`, or taken from the file named by
/// `IDMINT_DEFAULT_POLICY_WASM` at build time.
pub const DEFAULT_POLICY_WASM: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/idmint_policy_default.wasm"));

/// The [`Policy::origin`] of the default policy.
pub const DEFAULT_POLICY_ORIGIN: &str = "built-in default";

/// The decimal policy component (`guest/decimal/`, crate
/// `idmint-policy-decimal`): the prefix, a periodic counter's period, and
/// the value as at least nine decimal digits, `INV-000000042` or
/// `INV-2026-000000042`, without the time, for auto-increment, segment and
/// periodic counters. Built by `build.rs` like the default one.
pub const DECIMAL_POLICY_WASM: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/idmint_policy_decimal.wasm"));

/// The base32 policy component (`guest/base32/`, crate
/// `idmint-policy-base32`): the prefix and a 64-bit value as 13 Crockford
/// base32 characters, for snowflake counters.
pub const BASE32_POLICY_WASM: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/idmint_policy_base32.wasm"));

/// The UUIDv7 policy component (`guest/uuidv7/`, crate
/// `idmint-policy-uuidv7`): RFC 9562 UUIDv7 text, unique by construction,
/// for snowflake counters (docs/design/standard-ids.md).
pub const UUIDV7_POLICY_WASM: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/idmint_policy_uuidv7.wasm"));

/// The ULID policy component (`guest/ulid/`, crate `idmint-policy-ulid`):
/// ULID text, unique by construction, for snowflake counters.
pub const ULID_POLICY_WASM: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/idmint_policy_ulid.wasm"));

/// The policies built into idmint, by the name `--policy builtin:NAME` uses.
pub const BUILTIN_POLICIES: [(&str, &[u8]); 5] = [
    ("default", DEFAULT_POLICY_WASM),
    ("decimal", DECIMAL_POLICY_WASM),
    ("base32", BASE32_POLICY_WASM),
    ("uuidv7", UUIDV7_POLICY_WASM),
    ("ulid", ULID_POLICY_WASM),
];
