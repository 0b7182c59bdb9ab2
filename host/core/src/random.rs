//! Randomness from the OS generator: tokens (lock and worker-lease owners,
//! application access tokens), snowflake counters' salts and backoff jitter.

/// A fresh token: 128 random bits as 32 hex digits.
pub(crate) fn random_token() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the OS random generator is available");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// 64 random bits (a snowflake counter's salt).
pub(crate) fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the OS random generator is available");
    u64::from_le_bytes(bytes)
}

/// A uniformly random fraction in [0, 1), for jitter.
pub(crate) fn fraction() -> f64 {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the OS random generator is available");
    (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_differ_and_fractions_stay_in_range() {
        assert_ne!(super::random_token(), super::random_token());
        assert_eq!(super::random_token().len(), 32);
        assert!((0..1000)
            .map(|_| super::fraction())
            .all(|f| (0.0..1.0).contains(&f)));
    }
}
