//! `idmint serve`: the ID service (the `idmint-serve` crate). Parses the flags into
//! the library's options, sets up logging, binds, prints the address it
//! listens on, and runs until SIGTERM or Ctrl-C.

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use idmint::sequence::CounterKind;
use idmint::tokens::Access;
use idmint::{Policy, PolicyRuntime};
use idmint_serve::{Limits, ServeOptions, Server};
use serde::Serialize;
use tracing_subscriber::EnvFilter;

use super::connect::ConnectArgs;
use super::exit::UsageError;
use super::open_args::OpenArgs;
use super::policy_args::PolicyArgs;
use super::{Outcome, Output};

/// Arguments of `idmint serve`.
#[derive(Debug, Args)]
pub struct ServeCmd {
    /// Address to listen on (port 0: any free port, printed at start).
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR")]
    pub listen: SocketAddr,
    #[command(flatten)]
    pub connect: ConnectArgs,
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Follow the active version of the policies collection (swapped live).
    #[arg(long)]
    pub policy_from_db: bool,
    /// A policy for the counters of one kind instead (not followed), e.g.
    /// snowflake=builtin:base32; repeatable, one per kind.
    #[arg(long, value_name = "KIND=POLICY")]
    pub policy_for: Vec<String>,
    #[command(flatten)]
    pub open: OpenArgs,
    /// Require bearer tokens: a JSON file of apps, each with its token's
    /// SHA-256 and the counters it may use (see README, "idmint serve").
    #[arg(
        long,
        env = "IDMINT_TOKENS_FILE",
        value_name = "FILE",
        conflicts_with = "tokens_from_db"
    )]
    pub tokens: Option<PathBuf>,
    /// Require bearer tokens, from the tokens collection (`idmint token add`),
    /// read again every 10 s.
    #[arg(long)]
    pub tokens_from_db: bool,
    /// The largest `count` per request (1 to 1000).
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub max_count: usize,
    /// The largest `count` of a ranges request.
    #[arg(long, default_value_t = 1_000_000, value_name = "N")]
    pub max_range: u64,
    /// Requests in progress at once; more are answered 503 at once.
    #[arg(long, default_value_t = 1024, value_name = "N")]
    pub max_concurrent: usize,
    /// Seconds a request may take before it is answered 503.
    #[arg(long, default_value_t = 5.0, value_name = "SECS")]
    pub request_timeout: f64,
    /// The largest request body, in bytes.
    #[arg(long, default_value_t = 256 * 1024, value_name = "BYTES")]
    pub max_body: usize,
    /// Log format on stderr.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

#[derive(Serialize)]
struct Listening {
    listening: String,
}

impl ServeCmd {
    /// The library's limits, or what is wrong with the flags.
    fn limits(&self) -> anyhow::Result<Limits> {
        let mut limits = Limits::default();
        if !(1..=limits.max_count).contains(&self.max_count) {
            return Err(UsageError(format!(
                "--max-count {} is out of range 1 to {}",
                self.max_count, limits.max_count
            ))
            .into());
        }
        if !(1..=idmint::sequence::MAX_STEP).contains(&self.max_range) {
            return Err(UsageError(format!(
                "--max-range {} is out of range 1 to {}",
                self.max_range,
                idmint::sequence::MAX_STEP
            ))
            .into());
        }
        if self.max_concurrent == 0 {
            return Err(UsageError("--max-concurrent must be at least 1".into()).into());
        }
        if !(0.001..=3600.0).contains(&self.request_timeout) {
            return Err(UsageError(format!(
                "--request-timeout {} is out of range 0.001 to 3600 seconds",
                self.request_timeout
            ))
            .into());
        }
        limits.max_count = self.max_count;
        limits.max_range = self.max_range;
        limits.max_concurrent = self.max_concurrent;
        limits.request_timeout = Duration::from_secs_f64(self.request_timeout);
        limits.max_body_bytes = self.max_body;
        Ok(limits)
    }

    /// `--policy-for KIND=POLICY`, each kind once, each policy loaded.
    fn kind_policies(&self, runtime: &PolicyRuntime) -> anyhow::Result<Vec<(CounterKind, Policy)>> {
        let mut policies: Vec<(CounterKind, Policy)> = Vec::new();
        for given in &self.policy_for {
            let (kind, policy) = given.split_once('=').ok_or_else(|| {
                UsageError(format!(
                    "--policy-for {given:?} must be KIND=POLICY, e.g. snowflake=builtin:base32"
                ))
            })?;
            let kind: CounterKind =
                kind.parse()
                    .map_err(|error: idmint::sequence::UnknownKind| {
                        UsageError(format!("--policy-for {given:?}: {error}"))
                    })?;
            if policies.iter().any(|(seen, _)| *seen == kind) {
                return Err(UsageError(format!("--policy-for names {kind} twice")).into());
            }
            let args = PolicyArgs {
                policy: Some(policy.into()),
            };
            policies.push((kind, args.load_with(runtime)?));
        }
        Ok(policies)
    }

    pub async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        let mut options = ServeOptions::default();
        options.limits = self.limits()?;
        options.open = self.open.options()?;
        options.access = self
            .tokens
            .as_deref()
            .map(Access::from_file)
            .transpose()
            .map_err(|error| UsageError(error.to_string()))?;
        options.access_from_db = self.tokens_from_db;
        options.follow_file = self.policy.file().map(Into::into);
        options.follow_store = self.policy_from_db;
        init_logging(self.log_format);

        let runtime = PolicyRuntime::new().map_err(idmint::Error::from)?;
        let local = self.policy.load_with(&runtime)?;
        options.kind_policies = self.kind_policies(&runtime)?;
        let database = self.connect.connect().await?;
        let server = Server::start(&database, &runtime, local, options).await?;
        let listener = tokio::net::TcpListener::bind(self.listen)
            .await
            .map_err(|error| UsageError(format!("cannot listen on {}: {error}", self.listen)))?;
        let address = listener.local_addr()?;
        // The one line on stdout: where the service is, for scripts.
        if output.is_json() {
            output.json_lines(std::iter::once(Listening {
                listening: address.to_string(),
            }))?;
        } else {
            let mut stdout = std::io::stdout().lock();
            writeln!(stdout, "listening on http://{address}")?;
            stdout.flush()?;
        }
        tracing::info!(%address, "listening");
        let failures = server.run(listener, shutdown_signal()).await?;
        tracing::info!("stopped: requests finished, counters closed");
        match failures.into_iter().next() {
            None => Ok(Outcome::Success),
            Some((_, error)) => Err(idmint::Error::from(error).into()),
        }
    }
}

/// Logs to stderr, `RUST_LOG` style filtering (default `info`).
fn init_logging(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

/// Completes on SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
    tracing::info!("shutting down: no new connections, finishing requests in flight");
}
