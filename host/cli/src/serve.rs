//! `idmint serve`: the ID service (the `idmint-serve` crate). Parses the flags into
//! the library's options (which the library checks: `Limits::check`), sets
//! up logging, binds, prints the addresses it listens on, and runs until
//! SIGTERM or Ctrl-C.

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::BoolishValueParser;
use clap::{Args, ValueEnum};
use idmint::sequence::CounterKind;
use idmint::tokens::Access;
use idmint::{Policy, PolicyRuntime};
use idmint_serve::{AdminAccess, Limits, ServeOptions, Server};
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
    #[arg(
        long,
        env = "IDMINT_LISTEN",
        default_value = "127.0.0.1:8080",
        value_name = "ADDR"
    )]
    pub listen: SocketAddr,
    /// Address of the admin listener: /readyz, /metrics, /openapi.json and
    /// the monitor page are served there only (port 0: any free port,
    /// printed at start). Without it they are not served. An address other
    /// hosts reach needs --admin-token-sha256 (or --admin-insecure).
    #[arg(long, env = "IDMINT_ADMIN_LISTEN", value_name = "ADDR")]
    pub admin_listen: Option<SocketAddr>,
    /// Require `Authorization: Bearer TOKEN` on the admin listener: the
    /// token's SHA-256, 64 hex digits (printf %s "$TOKEN" | sha256sum).
    #[arg(long, env = "IDMINT_ADMIN_TOKEN_SHA256", value_name = "HEX")]
    pub admin_token_sha256: Option<String>,
    /// Serve the admin listener without a token on an address other hosts
    /// reach (warned at start) instead of refusing to start.
    // Not `conflicts_with`: clap counts a flag its variable sets to false
    // as given (`conflicting_flags` says why it is checked here).
    #[arg(long, env = "IDMINT_ADMIN_INSECURE", value_parser = BoolishValueParser::new())]
    pub admin_insecure: bool,
    #[command(flatten)]
    pub connect: ConnectArgs,
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Follow the active version of the policies collection (swapped live).
    #[arg(long, env = "IDMINT_POLICY_FROM_DB", value_parser = BoolishValueParser::new())]
    pub policy_from_db: bool,
    /// A policy for the counters of one kind instead (not followed), e.g.
    /// snowflake=builtin:base32; repeatable, one per kind.
    #[arg(
        long,
        env = "IDMINT_POLICY_FOR",
        value_name = "KIND=POLICY",
        value_delimiter = ','
    )]
    pub policy_for: Vec<String>,
    #[command(flatten)]
    pub open: OpenArgs,
    /// Require bearer tokens: a JSON file of apps, each with its token's
    /// SHA-256 and the counters it may use (see README, "idmint serve").
    #[arg(long, env = "IDMINT_TOKENS_FILE", value_name = "FILE")]
    pub tokens: Option<PathBuf>,
    /// Require bearer tokens, from the tokens collection (`idmint token add`),
    /// read again every 10 s.
    #[arg(long, env = "IDMINT_TOKENS_FROM_DB", value_parser = BoolishValueParser::new())]
    pub tokens_from_db: bool,
    /// The largest `count` per request (1 to 1000).
    #[arg(
        long,
        env = "IDMINT_MAX_COUNT",
        default_value_t = 1000,
        value_name = "N"
    )]
    pub max_count: usize,
    /// The largest `count` of a ranges request.
    #[arg(
        long,
        env = "IDMINT_MAX_RANGE",
        default_value_t = 1_000_000,
        value_name = "N"
    )]
    pub max_range: u64,
    /// Requests in progress at once; more are answered 503 at once.
    #[arg(
        long,
        env = "IDMINT_MAX_CONCURRENT",
        default_value_t = 1024,
        value_name = "N"
    )]
    pub max_concurrent: usize,
    /// Connections open at once; one more takes the slot of the connection
    /// blocked longest on a client that does not read (closed), else is
    /// answered 503 and closed.
    #[arg(
        long,
        env = "IDMINT_MAX_CONNECTIONS",
        default_value_t = 4096,
        value_name = "N"
    )]
    pub max_connections: usize,
    /// Seconds a request may take before it is answered 503.
    #[arg(
        long,
        env = "IDMINT_REQUEST_TIMEOUT",
        default_value_t = 5.0,
        value_name = "SECS"
    )]
    pub request_timeout: f64,
    /// Seconds a connection may take to send a request's header, from
    /// connecting or its previous answer (the idle timeout too).
    #[arg(
        long,
        env = "IDMINT_HEADER_TIMEOUT",
        default_value_t = 10.0,
        value_name = "SECS"
    )]
    pub header_timeout: f64,
    /// Seconds an answer may wait to be written to a client that does not
    /// read it; then the connection is closed.
    #[arg(
        long,
        env = "IDMINT_WRITE_TIMEOUT",
        default_value_t = 10.0,
        value_name = "SECS"
    )]
    pub write_timeout: f64,
    /// Bytes one connection buffers of requests read ahead (pipelined) and
    /// of answers not yet written, each (8192 to 16777216).
    #[arg(long, env = "IDMINT_CONNECTION_BUFFER", default_value_t = 64 * 1024, value_name = "BYTES")]
    pub connection_buffer: usize,
    /// Seconds a request body may take to arrive (answered 408 past it).
    #[arg(
        long,
        env = "IDMINT_BODY_TIMEOUT",
        default_value_t = 5.0,
        value_name = "SECS"
    )]
    pub body_timeout: f64,
    /// Seconds shutdown waits for requests in flight before it abandons
    /// them (and still closes every counter).
    #[arg(
        long,
        env = "IDMINT_SHUTDOWN_TIMEOUT",
        default_value_t = 10.0,
        value_name = "SECS"
    )]
    pub shutdown_timeout: f64,
    /// The largest request body, in bytes.
    #[arg(long, env = "IDMINT_MAX_BODY", default_value_t = 256 * 1024, value_name = "BYTES")]
    pub max_body: usize,
    /// Log format on stderr.
    #[arg(long, env = "IDMINT_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
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
    #[serde(skip_serializing_if = "Option::is_none")]
    admin: Option<String>,
}

impl ServeCmd {
    /// The library's limits, or what is wrong with the flags.
    /// The library's limits (checked by the library; a refusal names the
    /// flag).
    fn limits(&self) -> anyhow::Result<Limits> {
        let seconds = |flag: &str, value: f64| {
            if value.is_finite() && value >= 0.0 {
                Ok(Duration::from_secs_f64(value.min(1e9)))
            } else {
                Err(UsageError(format!(
                    "--{flag} {value} is not a number of seconds"
                )))
            }
        };
        let mut limits = Limits::default();
        limits.max_count = self.max_count;
        limits.max_range = self.max_range;
        limits.max_concurrent = self.max_concurrent;
        limits.max_connections = self.max_connections;
        limits.request_timeout = seconds("request-timeout", self.request_timeout)?;
        limits.header_timeout = seconds("header-timeout", self.header_timeout)?;
        limits.write_timeout = seconds("write-timeout", self.write_timeout)?;
        limits.connection_buffer = self.connection_buffer;
        limits.body_timeout = seconds("body-timeout", self.body_timeout)?;
        limits.shutdown_timeout = seconds("shutdown-timeout", self.shutdown_timeout)?;
        limits.max_body_bytes = self.max_body;
        limits.check().map_err(|error| {
            let flag = match error.field {
                "max_body_bytes" => "max-body".to_string(),
                field => field.replace('_', "-"),
            };
            let value = error.value.trim_end_matches(" s");
            UsageError(format!("--{flag} {value} is out of range {}", error.range))
        })?;
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

    /// Who may use the admin listener; refused (before anything is
    /// started) when it would be open to other hosts without a token.
    fn admin_access(&self) -> anyhow::Result<AdminAccess> {
        let access = match &self.admin_token_sha256 {
            Some(sha256) => AdminAccess::token_sha256(sha256)
                .map_err(|error| UsageError(format!("--admin-token-sha256: {error}")))?,
            None => AdminAccess::default(),
        }
        .insecure(self.admin_insecure);
        if let Some(address) = self.admin_listen {
            access.check_address(address).map_err(|error| {
                UsageError(format!(
                    "{error}; give it a token (--admin-token-sha256, or IDMINT_ADMIN_TOKEN_SHA256), \
                     bind it to a loopback address, or pass --admin-insecure to serve it so"
                ))
            })?;
        }
        Ok(access)
    }

    /// Two settings that cannot go together, from flags or their
    /// variables. Checked here, not by clap's `conflicts_with`, which counts
    /// a flag whose variable says `false` as given and would refuse
    /// `IDMINT_TOKENS_FROM_DB=false` beside `--tokens`.
    fn conflicting_flags(&self) -> anyhow::Result<()> {
        let pairs = [
            (
                self.tokens.is_some() && self.tokens_from_db,
                "--tokens (IDMINT_TOKENS_FILE) and --tokens-from-db (IDMINT_TOKENS_FROM_DB)",
            ),
            (
                self.admin_token_sha256.is_some() && self.admin_insecure,
                "--admin-token-sha256 (IDMINT_ADMIN_TOKEN_SHA256) and --admin-insecure \
                 (IDMINT_ADMIN_INSECURE)",
            ),
        ];
        match pairs.iter().find(|(both, _)| *both) {
            Some((_, flags)) => {
                Err(UsageError(format!("{flags} cannot be given together: choose one")).into())
            }
            None => Ok(()),
        }
    }

    pub async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        self.conflicting_flags()?;
        let mut options = ServeOptions::default();
        options.limits = self.limits()?;
        options.admin = self.admin_access()?;
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
        if let Some(problem) = runtime.cache_problem() {
            tracing::warn!(
                problem,
                "compiled policies cannot be kept between processes: this one compiles its own"
            );
        }
        let local = self.policy.load_with(&runtime)?;
        options.kind_policies = self.kind_policies(&runtime)?;
        let (database, deployments) = self.connect.connect_all().await?;
        options.open.deployments = deployments;
        let server = Server::start(&database, &runtime, local, options).await?;
        let bind = |address: SocketAddr| async move {
            tokio::net::TcpListener::bind(address)
                .await
                .map_err(|error| UsageError(format!("cannot listen on {address}: {error}")))
        };
        let listener = bind(self.listen).await?;
        let admin = match self.admin_listen {
            Some(address) => Some(bind(address).await?),
            None => None,
        };
        let address = listener.local_addr()?;
        let admin_address = admin.as_ref().map(|admin| admin.local_addr()).transpose()?;
        // The one line on stdout: where the service is, for scripts.
        if output.is_json() {
            output.json_lines(std::iter::once(Listening {
                listening: address.to_string(),
                admin: admin_address.map(|admin| admin.to_string()),
            }))?;
        } else {
            let mut stdout = std::io::stdout().lock();
            match admin_address {
                Some(admin) => writeln!(
                    stdout,
                    "listening on http://{address} (admin on http://{admin})"
                )?,
                None => writeln!(stdout, "listening on http://{address}")?,
            }
            stdout.flush()?;
        }
        tracing::info!(%address, admin = admin_address.map(|a| a.to_string()), "listening");
        let failures = server.run_with(listener, admin, shutdown_signal()).await?;
        for (counter, error) in &failures {
            tracing::warn!(%counter, %error, "a counter could not be closed");
        }
        tracing::info!("stopped: connections closed, counters closed");
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
}
