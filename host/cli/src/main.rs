//! The `idmint` command: parses arguments, calls the `idmint` library, prints
//! its reports. One file per subcommand, each a clap struct with an
//! `execute`; `cli.rs` holds the command tree and the exit. Nothing here
//! decides anything the library could: it converts flags into library
//! options and reports into text or JSON. The benchmarks (`bench/`) live
//! here too, out of the library's API.

mod bench;
mod cli;
mod completions;
mod connect;
mod counter;
mod duration_arg;
mod exit;
mod install;
mod job_control;
mod layout_args;
mod lock;
mod man;
mod next;
mod open_args;
mod output;
mod pipeline;
mod policy;
mod policy_args;
mod seq;
mod series;
mod serve;
mod setting_help;
mod shell_loader;
mod status;
mod token;
mod uninstall;
mod validate;
mod workers;

pub use connect::ConnectArgs;
pub use exit::{Outcome, EXIT_DATABASE, EXIT_USAGE};
pub use output::Output;

/// mimalloc rather than the system allocator: allocation was the largest
/// cost of `idmint serve` of its own (27-29% of its CPU with glibc's, most
/// of it in freeing and coalescing chunks when requests are spread over many
/// counters); with mimalloc a request spread over 1,000 counters costs the
/// server 10-20% less CPU (docs/BENCHMARKS.md, "The allocator").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}
