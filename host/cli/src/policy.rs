//! `idmint policy ...`: check a policy offline, and manage the policies
//! collection that hosts started with `--policy-from-db` follow.

use std::fmt::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use idmint::policy::activation::{self, ActivationOptions};
use idmint::policy::store::RollbackReport;
use idmint::policy::{CacheUsage, CompileCache, PolicyStore, POLICY_CACHE_ENV};
use idmint::sequence::{CounterKind, CounterName, CounterSpec, CounterState, Setting};
use idmint::Clock;
use idmint::{PolicyRuntime, SystemClock};

use super::policy_args::PolicyArgs;
use super::{ConnectArgs, Outcome, Output};

/// The `policy` subcommands.
#[derive(Debug, Subcommand)]
pub enum PolicyCmd {
    /// Run the activation check on a policy file, offline (exit 4 with the reason if it fails).
    Check(CheckCmd),
    /// Check a policy file and store it as the next version (does not activate it).
    Push(PushCmd),
    /// List the stored policy versions and which one is active.
    List(ListCmd),
    /// Make a stored version the active one; hosts following the database switch to it.
    Activate(ActivateCmd),
    /// Make the previously active version active again.
    Rollback(RollbackCmd),
    /// Show where compiled policies are kept between processes (--clear empties it).
    Cache(CacheCmd),
}

impl PolicyCmd {
    /// The connection the command uses, if any.
    pub fn connect(&self) -> Option<&ConnectArgs> {
        match self {
            PolicyCmd::Check(_) | PolicyCmd::Cache(_) => None,
            PolicyCmd::Push(cmd) => Some(&cmd.connect),
            PolicyCmd::List(cmd) => Some(&cmd.connect),
            PolicyCmd::Activate(cmd) => Some(&cmd.connect),
            PolicyCmd::Rollback(cmd) => Some(&cmd.connect),
        }
    }

    pub async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        match self {
            PolicyCmd::Check(cmd) => cmd.execute(output),
            PolicyCmd::Push(cmd) => cmd.execute(output).await,
            PolicyCmd::List(cmd) => cmd.execute(output).await,
            PolicyCmd::Activate(cmd) => cmd.execute(output).await,
            PolicyCmd::Rollback(cmd) => cmd.execute(output).await,
            PolicyCmd::Cache(cmd) => cmd.execute(output),
        }
    }
}

/// Arguments of `idmint policy check`.
#[derive(Debug, Args)]
pub struct CheckCmd {
    /// The policy component (.wasm) to check, or a built-in one (builtin:NAME).
    pub file: PathBuf,
    /// The prefix the samples use (the one the policy will serve).
    #[arg(long, default_value = "")]
    pub prefix: String,
    /// Also check that a counter with this maxval fits the policy's sequence field.
    #[arg(long, value_name = "N")]
    pub maxval: Option<u64>,
}

impl CheckCmd {
    fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        let runtime = PolicyRuntime::new().map_err(idmint::Error::from)?;
        // A file, or builtin:NAME as `--policy` takes it.
        let policy = PolicyArgs {
            policy: Some(self.file.clone()),
        }
        .load_with(&runtime)?;
        let mut options = ActivationOptions::default()
            .prefix(self.prefix.clone())
            .now_micros(SystemClock.now_micros());
        if let Some(maxval) = self.maxval {
            options = options.counter(counter_with_maxval(maxval)?);
        }
        let report = activation::check(&policy, &options).map_err(idmint::Error::from)?;
        output.report(&report, || {
            format!(
                "ok: {} passes the activation check ({} samples): policy {} {} \
                 (contract {}), sequence capacity {}, sha256 {}",
                self.file.display(),
                report.samples,
                report.policy.name,
                report.policy.version,
                report.contract,
                report.policy.sequence_capacity,
                report.sha256
            )
        })?;
        Ok(Outcome::Success)
    }
}

/// Arguments of `idmint policy push`.
#[derive(Debug, Args)]
pub struct PushCmd {
    /// The policy component (.wasm) to store.
    pub file: PathBuf,
    /// A name to list it under (default: the name the policy gives itself).
    #[arg(long)]
    pub name: Option<String>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

impl PushCmd {
    async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        let bytes = std::fs::read(&self.file)
            .map_err(|source| idmint::policy::PolicyError::Read {
                path: self.file.clone(),
                source,
            })
            .map_err(idmint::Error::from)?;
        let runtime = PolicyRuntime::new().map_err(idmint::Error::from)?;
        let database = self.connect.connect().await?;
        let report = PolicyStore::new(&database)
            .push(
                &runtime,
                &bytes,
                &self.file.display().to_string(),
                self.name.as_deref(),
            )
            .await?;
        output.report(&report, || {
            let verb = if report.created { "pushed" } else { "already stored" };
            format!(
                "{verb}: version {} ({} {}, sha256 {}); activate it with `idmint policy activate {}`",
                report.stored.version,
                report.stored.name,
                report.stored.info.version,
                report.stored.sha256,
                report.stored.version
            )
        })?;
        Ok(Outcome::Success)
    }
}

/// Arguments of `idmint policy list`.
#[derive(Debug, Args)]
pub struct ListCmd {
    #[command(flatten)]
    pub connect: ConnectArgs,
}

impl ListCmd {
    async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        let database = self.connect.connect().await?;
        let store = PolicyStore::new(&database);
        let policies = store.list().await?;
        let active = store.active().await?;
        let report = serde_json::json!({ "policies": policies, "active": active });
        output.report(&report, || {
            let mut text = format!(
                "{:<3}{:>7}  {:<20} {:<10} {:>9}  {:<24} {}\n",
                "", "version", "name", "policy", "capacity", "pushed", "sha256"
            );
            for p in &policies {
                let _ = writeln!(
                    text,
                    "{:<3}{:>7}  {:<20} {:<10} {:>9}  {:<24} {}",
                    if p.active { "*" } else { "" },
                    p.version,
                    p.name,
                    p.info.version,
                    p.info.sequence_capacity,
                    p.pushed_at,
                    &p.sha256[..16.min(p.sha256.len())]
                );
            }
            if active.is_none() {
                text.push_str("no version is active: hosts use their own policy\n");
            }
            text
        })?;
        Ok(Outcome::Success)
    }
}

/// Arguments of `idmint policy activate`.
#[derive(Debug, Args)]
pub struct ActivateCmd {
    /// The stored version to activate (see `idmint policy list`).
    pub version: i64,
    /// Also check the policy against this counter's maxval before activating it.
    #[arg(long, value_name = "NAME")]
    pub counter: Option<String>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

impl ActivateCmd {
    async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        let runtime = PolicyRuntime::new().map_err(idmint::Error::from)?;
        let database = self.connect.connect().await?;
        let store = PolicyStore::new(&database);
        if let Some(counter) = &self.counter {
            let name = CounterName::new(counter).map_err(idmint::Error::from)?;
            let state = idmint::sequence::state(&database, &name)
                .await
                .map_err(idmint::Error::from)?;
            let policy = store.load(&runtime, self.version).await?;
            let prefix = state.prefix.clone().unwrap_or_default();
            let writes = idmint::policy::writes(&policy, &prefix).map_err(idmint::Error::from)?;
            idmint::policy::check_fit(&policy, &state, writes)
                .map_err(idmint::Error::from)
                .with_context(|| format!("version {} not activated", self.version))?;
        }
        let report = store.activate(&runtime, self.version).await?;
        print_activation(output, &report, "activated")
    }
}

/// Arguments of `idmint policy rollback`.
#[derive(Debug, Args)]
pub struct RollbackCmd {
    #[command(flatten)]
    pub connect: ConnectArgs,
}

impl RollbackCmd {
    async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        let runtime = PolicyRuntime::new().map_err(idmint::Error::from)?;
        let database = self.connect.connect().await?;
        match PolicyStore::new(&database).rollback(&runtime).await? {
            RollbackReport::RolledBack(report) => print_activation(output, &report, "rolled back"),
            report @ RollbackReport::Deactivated { previous } => {
                output.report(&report, || {
                    format!(
                        "deactivated: no stored version is active (was {previous}); hosts \
                         following the database return to their own --policy or the default"
                    )
                })?;
                Ok(Outcome::Success)
            }
        }
    }
}

fn print_activation(
    output: &Output,
    report: &idmint::policy::store::ActivateReport,
    verb: &str,
) -> anyhow::Result<Outcome> {
    output.report(report, || {
        let previous = report
            .previous
            .map_or_else(|| "none".to_string(), |v| v.to_string());
        format!(
            "{verb}: version {} is active (was {previous}); sha256 {}",
            report.version, report.sha256
        )
    })?;
    Ok(Outcome::Success)
}

/// Arguments of `idmint policy cache`.
#[derive(Debug, Args)]
pub struct CacheCmd {
    /// Empty the cache: the next process to load each policy compiles it again.
    #[arg(long)]
    pub clear: bool,
}

/// What `idmint policy cache` reports.
#[derive(Debug, serde::Serialize)]
struct CacheView {
    /// The directory, or null when the cache is off.
    directory: Option<PathBuf>,
    /// What it holds (held, with --clear).
    #[serde(flatten)]
    usage: CacheUsage,
    /// Whether it was emptied.
    cleared: bool,
    /// Why compiled policies cannot be kept there, if they cannot (exit 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    problem: Option<String>,
}

impl CacheCmd {
    fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        if let Some(problem) = CompileCache::env_problem() {
            return Err(super::exit::UsageError(problem).into());
        }
        let cache = CompileCache::from_env();
        let directory = cache.directory().map(PathBuf::from);
        let where_ = directory
            .as_ref()
            .map_or_else(String::new, |dir| format!(" in {}", dir.display()));
        // A directory that cannot be made holds nothing to show or clear.
        let problem = cache.problem();
        let usage = match (&problem, self.clear) {
            (Some(_), _) => Ok(CacheUsage::default()),
            (None, true) => cache.clear(),
            (None, false) => cache.usage(),
        }
        .with_context(|| format!("cannot read the compiled policies{where_}"))?;
        let view = CacheView {
            directory,
            usage,
            cleared: self.clear,
            problem,
        };
        output.report(&view, || match (&view.directory, &view.problem) {
            (None, _) => format!(
                "compiled policies are not kept ({POLICY_CACHE_ENV}=off, or no home directory): \
                 each process compiles its policy"
            ),
            (Some(dir), Some(problem)) => format!(
                "compiled policies cannot be kept in {}: {problem}; each process compiles its \
                 policy (set {POLICY_CACHE_ENV} to a directory it can write, or to off)",
                dir.display()
            ),
            (Some(dir), None) => format!(
                "compiled policies{}: {} ({} entries, {} bytes){}",
                if self.clear { " cleared" } else { "" },
                dir.display(),
                usage.entries,
                usage.bytes,
                if self.clear {
                    ""
                } else {
                    "\none entry per policy content and wasmtime build; --clear empties it"
                }
            ),
        })?;
        Ok(match view.problem {
            Some(_) => Outcome::Failure,
            None => Outcome::Success,
        })
    }
}

/// A new counter of the kind that takes a maxval, with `maxval`, for
/// `policy check --maxval`. It has no name, so that the refusal reads "a
/// cyclic counter hands out values up to N".
fn counter_with_maxval(maxval: u64) -> anyhow::Result<CounterState> {
    let kind = CounterKind::taking(Setting::Maxval)
        .next()
        .expect("a kind takes maxval");
    let name = CounterName::new("maxval").map_err(idmint::Error::from)?;
    let document = CounterSpec::of(kind)
        .maxval(maxval)
        .document(&name, 0)
        .map_err(idmint::Error::from)?;
    let mut counter = CounterState::from_document(&name, &document).map_err(idmint::Error::from)?;
    counter.name = String::new();
    Ok(counter)
}
