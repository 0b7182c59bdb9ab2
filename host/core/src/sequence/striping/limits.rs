//! The limits of striping, on their own so that the error type can name
//! them without importing what imports errors.

/// The most lanes one generation has.
pub const MAX_LANES: u64 = 1024;
