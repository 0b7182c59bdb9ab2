//! The README's examples that need no server run as tests (trycmd): every
//! ```` ```console ```` block of README.md, its commands, output and exit
//! codes. Examples that need a server are ```` ```text ```` blocks, captured
//! from real runs.

#[test]
fn readme_console_examples_run_as_written() {
    trycmd::TestCases::new()
        .register_bin("idmint", std::path::Path::new(env!("CARGO_BIN_EXE_idmint")))
        // Commands that take a server refuse bad input before connecting.
        .env("MONGODB_URI", "mongodb://127.0.0.1:9/")
        .case(crate::harness::workspace_root().join("README.md"));
}
