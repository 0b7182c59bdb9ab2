//! Every collection idmint uses, named once.

/// Counter documents, one per counter (the seed's name).
pub const COUNTERS: &str = "counters";
/// The history of prefixes: who owns or owned each one (`sequence/claims.rs`).
pub const PREFIXES: &str = "prefixes";
/// The claims of snowflake counters' tags, one per tag, never given back
/// (`sequence/kinds/snowflake/tag_claim.rs`).
pub const TAGS: &str = "tags";
/// Gap-free series, one document per series (`series/`).
pub const SERIES: &str = "series";
/// The record of every number of every gap-free series, one per number.
pub const SERIES_NUMBERS: &str = "series_numbers";
/// Lock documents, one per lock name.
pub const LOCKS: &str = "locks";
/// Snowflake worker leases, one per counter and worker id.
pub const WORKERS: &str = "workers";
/// Stored policies and the active pointer.
pub const POLICIES: &str = "policies";
/// Application tokens for `idmint serve --tokens-from-db`.
pub const TOKENS: &str = "tokens";
/// What `idmint install` installed, item by item.
pub const MANIFEST: &str = "idmint_manifest";
/// The stored JavaScript functions.
pub const SYSTEM_JS: &str = "system.js";
