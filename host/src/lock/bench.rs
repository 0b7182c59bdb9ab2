//! Lock benchmarks (wired into `idmint bench --only lock`).
