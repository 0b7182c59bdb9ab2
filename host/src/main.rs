//! The `idmint` command: see `idmint --help` and the README.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
