//! The command line itself: the clap tree of subcommands, dispatch, and how
//! a failed command is reported and mapped to its exit code.

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use idmint::mongo::round_trips;
use tracing::Instrument;

use crate::connect;
use crate::setting_help::kinds_list;
use crate::{
    bench, completions, counter, exit, install, lock, man, next, pipeline, policy, seq, series,
    serve, shell_loader, status, token, uninstall, validate, workers, ConnectArgs, Outcome, Output,
    EXIT_USAGE,
};

/// What `--version` prints: a deliberately broken build (the soak's, under
/// the `soak-broken` feature) says it is one.
const VERSION: &str = if cfg!(feature = "soak-broken") {
    concat!(
        env!("CARGO_PKG_VERSION"),
        " (soak-broken: a deliberately broken build, for scripts/soak.sh --broken and --canary only)"
    )
} else {
    env!("CARGO_PKG_VERSION")
};

/// Unique, time-correlated, formatted IDs coordinated through MongoDB.
#[derive(Debug, Parser)]
#[command(name = "idmint", version = VERSION, about, long_about = None, max_term_width = 100)]
#[command(
    after_help = "Exit codes: 0 ok, 1 invalid IDs or drift found, 2 bad input or usage, \
                        3 database unreachable or failed, 4 policy failed; lock run: COMMAND's code, \
                        75 lock not had within --wait, 76 lease lost while COMMAND ran."
)]
pub struct Cli {
    /// Print results as JSON (errors too, on stderr).
    #[arg(long, global = true)]
    pub json: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Install or upgrade what idmint needs: collections, stored functions, optionally roles
    /// (idempotent; --dry-run prints the plan and writes nothing).
    Install(install::InstallCmd),
    /// Report the server, what it offers and what idmint installed (exit 1 if not current).
    Status(status::StatusCmd),
    /// Remove what idmint installed (and, when asked, its data).
    Uninstall(uninstall::UninstallCmd),
    /// Create or inspect counters (of each kind idmint knows).
    #[command(subcommand, about = format!("Create or inspect counters ({})", kinds_list()))]
    Counter(counter::CounterCmd),
    /// Hand out raw sequence values, one per line, from a counter of any kind.
    Seq(seq::SeqCmd),
    /// Hand out formatted IDs, one per line.
    Next(next::NextCmd),
    /// Check policies offline, and store, list, activate and roll back the
    /// policies hosts with `next --stream --policy-from-db` follow.
    #[command(subcommand)]
    Policy(policy::PolicyCmd),
    /// Check IDs (arguments, or one per line on stdin) against the policy.
    Validate(validate::ValidateCmd),
    /// Measure throughput: sequence values of each kind of counter, one at a time and in blocks,
    /// against a raw $inc and the seed's CAS loop, and formatting (wasm policy vs native Rust).
    Bench(bench::BenchCmd),
    /// Distributed locks: run a command under a lease, show or force-release locks.
    #[command(subcommand)]
    Lock(lock::LockCmd),
    /// Print the exact command idmint sends to take values of a counter, for an app in
    /// another language to run with its own driver (runCommand).
    Pipeline(pipeline::PipelineCmd),
    /// List the worker leases of a snowflake counter.
    Workers(workers::WorkersCmd),
    /// Gap-free series for invoices: create, take a number with its record, audit (exit 1
    /// naming each hole).
    #[command(subcommand)]
    Series(series::SeriesCmd),
    /// Print the mongosh script that loads the installed functions into a shell session.
    ShellLoader(shell_loader::ShellLoaderCmd),
    /// Application tokens for `serve --tokens-from-db`: add (prints the token once), list, remove.
    #[command(subcommand)]
    Token(token::TokenCmd),
    /// Serve IDs over HTTP to apps in any language (JSON API, Leaf-compatible
    /// routes, metrics); runs until SIGTERM or Ctrl-C.
    Serve(serve::ServeCmd),
    /// Print the completion script of a shell (bash, elvish, fish, powershell, zsh).
    Completions(completions::CompletionsCmd),
    /// Print the manual page (idmint.1), or write every command's page into a directory.
    Man(man::ManCmd),
}

impl Command {
    /// The connection the command uses, if any (for error messages).
    fn connect_args(&self) -> Option<&ConnectArgs> {
        match self {
            Command::Install(cmd) => Some(&cmd.connect),
            Command::Status(cmd) => Some(&cmd.connect),
            Command::Uninstall(cmd) => Some(&cmd.connect),
            Command::Counter(cmd) => Some(cmd.connect()),
            Command::Seq(cmd) => Some(&cmd.connect),
            Command::Next(cmd) => Some(&cmd.connect),
            Command::Bench(cmd) => Some(&cmd.connect),
            Command::Policy(cmd) => cmd.connect(),
            Command::Lock(cmd) => Some(cmd.connect()),
            Command::Workers(cmd) => Some(&cmd.connect),
            Command::Series(cmd) => cmd.connect(),
            Command::Serve(cmd) => Some(&cmd.connect),
            Command::Token(cmd) => Some(cmd.connect()),
            Command::Pipeline(cmd) => Some(&cmd.connect),
            Command::Validate(_)
            | Command::ShellLoader(_)
            | Command::Completions(_)
            | Command::Man(_) => None,
        }
    }
}

/// Parses the command line, runs the command and returns the exit code.
pub fn main() -> ExitCode {
    let matches = plain_usage(Cli::command()).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|error| error.exit());
    let output = Output::new(cli.json);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            output.error(
                &anyhow::Error::new(error).context("cannot start the async runtime"),
                EXIT_USAGE,
                None,
            );
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let name = command_path(&matches);
    if std::env::var_os("RUST_LOG").is_some() && !matches!(cli.command, Command::Serve(_)) {
        trace_to_stderr();
    }
    let result = runtime.block_on(async {
        // The command's span: the counter it opened (named by the library)
        // and the round trips it made, on its last log line.
        let span = tracing::info_span!(
            "command",
            name = name.as_str(),
            counter = tracing::field::Empty,
            kind = tracing::field::Empty,
            round_trips = tracing::field::Empty,
            servers = tracing::field::Empty,
        );
        let (result, trips) = round_trips::counting(run(&cli.command, &output))
            .instrument(span.clone())
            .await;
        span.record("round_trips", trips.count);
        if !trips.servers.is_empty() {
            span.record("servers", trips.servers_text());
        }
        span.in_scope(|| tracing::debug!(ok = result.is_ok(), "command done"));
        connect::shutdown_clients().await;
        result
    });
    match result {
        Ok(outcome) => ExitCode::from(outcome.code()),
        Err(error) if exit::is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            let code = exit::exit_code(&error);
            let server = cli
                .command
                .connect_args()
                .and_then(|connect| server_line(&error, connect));
            output.error(&error, code, server.as_deref());
            ExitCode::from(code)
        }
    }
}

/// The subcommands given, as one name (`counter show`).
fn command_path(matches: &clap::ArgMatches) -> String {
    let mut names = Vec::new();
    let mut current = matches;
    while let Some((name, sub)) = current.subcommand() {
        names.push(name);
        current = sub;
    }
    names.join(" ")
}

/// Log lines (and so each command's span) on stderr as `RUST_LOG` says;
/// `serve` sets up its own, with its `--log-format`.
fn trace_to_stderr() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// The server an error came from, password hidden, when the server failed
/// the command or could not be reached (the error holds a driver error);
/// with how long it was waited for when none could be selected. `None` for
/// errors of idmint's own (a lease that every worker holds, a busy lock).
fn server_line(error: &anyhow::Error, connect: &ConnectArgs) -> Option<String> {
    let driver = error
        .chain()
        .find_map(|cause| cause.downcast_ref::<mongodb::error::Error>())?;
    let uri = connect.redacted_uri();
    Some(
        if matches!(
            *driver.kind,
            mongodb::error::ErrorKind::ServerSelection { .. }
        ) {
            format!(
                "{uri} (a server is waited for up to {} s: --server-timeout)",
                connect.server_timeout
            )
        } else {
            uri
        },
    )
}

/// `command` with each (sub)command's usage line fixed to the one its help
/// shows. In an error, clap's usage line lists the arguments given, and counts
/// those taken from the environment or a default as given, so that
/// `MONGODB_URI` and `IDMINT_DB` made `--uri <URI> --db <DB>` read as
/// required flags (`Usage: idmint next --uri <URI> --stream --db <DB> <NAME>`).
fn plain_usage(mut command: clap::Command) -> clap::Command {
    // Builds every subcommand's bin name ("idmint counter create").
    command.build();
    fix_usage(command)
}

fn fix_usage(mut command: clap::Command) -> clap::Command {
    let usage = command.render_usage().to_string();
    let usage = usage.strip_prefix("Usage: ").unwrap_or(&usage).to_string();
    command.override_usage(usage).mut_subcommands(fix_usage)
}

async fn run(command: &Command, output: &Output) -> anyhow::Result<Outcome> {
    match command {
        Command::Install(cmd) => cmd.execute(output).await,
        Command::Status(cmd) => cmd.execute(output).await,
        Command::Uninstall(cmd) => cmd.execute(output).await,
        Command::Counter(cmd) => cmd.execute(output).await,
        Command::Seq(cmd) => cmd.execute(output).await,
        Command::Next(cmd) => cmd.execute(output).await,
        Command::Validate(cmd) => cmd.execute(output),
        Command::Bench(cmd) => cmd.execute(output).await,
        Command::Policy(cmd) => cmd.execute(output).await,
        Command::ShellLoader(cmd) => cmd.execute(output),
        Command::Lock(cmd) => cmd.execute(output).await,
        Command::Workers(cmd) => cmd.execute(output).await,
        Command::Series(cmd) => cmd.execute(output).await,
        Command::Pipeline(cmd) => cmd.execute(output).await,
        Command::Serve(cmd) => cmd.execute(output).await,
        // The same tree `main` parses with, handed down (the two modules
        // do not import this one back).
        Command::Completions(cmd) => cmd.execute(Cli::command()),
        Command::Man(cmd) => cmd.execute(
            output,
            plain_usage(Cli::command().disable_help_subcommand(true)),
        ),
        Command::Token(cmd) => cmd.execute(output).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_documented_command_line() {
        for line in [
            "idmint install --uri mongodb://h",
            "idmint install --dry-run --force --create-roles --json --uri mongodb://h",
            "idmint uninstall --drop-counters --yes --uri mongodb://h",
            "idmint status --json --uri mongodb://h --db x",
            "idmint counter create orders --max 999 --prefix ORD- --uri mongodb://h",
            "idmint counter show orders --uri mongodb://h",
            "idmint seq orders --count 3 --uri mongodb://h",
            "idmint seq orders --upsert --start 100 --uri mongodb://h",
            "idmint counter create inv --kind autoinc --start 42 --prefix INV- --uri mongodb://h",
            "idmint counter create ord --kind segment --step 500 --uri mongodb://h",
            "idmint next inv --count 3 --policy builtin:decimal --uri mongodb://h",
            "idmint counter create ids --kind snowflake --layout 49,3,11 --unit ms --epoch 2025-06-01 --uri mongodb://h",
            "idmint workers ids --json --uri mongodb://h",
            "idmint pipeline orders --count 100",
            "idmint pipeline inv --kind autoinc",
            "idmint pipeline orders --lane 2 --count 10 --uri mongodb://h",
            "idmint next orders --count 3 --prefix P --policy p.wasm --uri mongodb://h",
            "idmint validate A B --prefix P",
            "idmint serve --listen 127.0.0.1:0 --policy builtin:base32 --tokens t.json --max-count 10 --uri mongodb://h",
            "idmint token add billing --counters orders,invoices --uri mongodb://h",
            "idmint token remove billing --uri mongodb://h",
            "idmint serve --tokens-from-db --uri mongodb://h",
            "idmint serve --policy-from-db --log-format json --request-timeout 2 --max-concurrent 64 --uri mongodb://h",
            "idmint policy check p.wasm --prefix ORD- --maxval 99",
            "idmint policy push p.wasm --name cd --uri mongodb://h",
            "idmint policy list --uri mongodb://h",
            "idmint policy activate 2 --counter orders --uri mongodb://h",
            "idmint policy rollback --uri mongodb://h",
            "idmint next orders --stream --rate 50 --policy p.wasm --uri mongodb://h",
            "idmint next orders --stream --policy-from-db --uri mongodb://h",
            "idmint bench --json --uri mongodb://h",
            "idmint shell-loader",
            "idmint lock run nightly --ttl 10 --wait 5 --uri mongodb://h -- sh -c true",
            "idmint lock status --json --uri mongodb://h",
            "idmint lock status nightly --uri mongodb://h",
            "idmint lock release nightly --force --uri mongodb://h",
            "idmint series create invoices --start 1000 --uri mongodb://h",
            "idmint series next invoices --reference order-7731 --uri mongodb://h",
            "idmint series audit invoices --json --uri mongodb://h",
            "idmint series pipeline invoices",
        ] {
            let args = line.split(' ');
            if let Err(error) = Cli::try_parse_from(args) {
                panic!("{line}: {error}");
            }
        }
    }

    /// The test hooks exist only in the test suite's build.
    #[test]
    fn the_test_hooks_are_only_in_test_hook_builds() {
        for line in [
            "idmint install --crash-after-writes 1 --uri mongodb://h",
            "idmint series next inv --reference r --stop-before-commit --uri mongodb://h",
            "idmint lock run job --stop-guard-before-command --uri mongodb://h -- true",
            "idmint lock guard --watch-fd 3 --stop-before-command -- true",
        ] {
            let parsed = Cli::try_parse_from(line.split(' '));
            assert_eq!(parsed.is_ok(), cfg!(feature = "test-hooks"), "{line}");
        }
    }

    #[test]
    fn rejects_a_zero_count_and_a_missing_counter_name() {
        assert!(Cli::try_parse_from([
            "idmint",
            "next",
            "c",
            "--count",
            "0",
            "--uri",
            "mongodb://h"
        ])
        .is_err());
        assert!(Cli::try_parse_from(["idmint", "seq", "--uri", "mongodb://h"]).is_err());
    }
}
