//! `idmint next NAME`: formatted IDs, a fixed count of them or, with
//! `--stream`, until interrupted, as a long-running application would, with
//! the policy swapped live from a file (`--policy FILE`) or the policies
//! collection (`--policy-from-db`).

use std::io::{self, Write};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use idmint::policy::watch::{self, SwapEvent};
use idmint::policy::{
    activation, ActivationOptions, LivePolicy, PolicyInfo, PolicyStore, POLICIES_COLLECTION,
};
use idmint::sequence::{CounterName, CyclicCounter};
use idmint::{Minter, PolicyRuntime, SystemClock};
use serde::Serialize;
use tokio::sync::mpsc;

use super::policy_args::PolicyArgs;
use super::{ConnectArgs, Outcome, Output};

/// IDs are taken and printed in chunks of this many: one policy call each.
const CHUNK: u64 = 256;

/// Arguments of `idmint next`.
#[derive(Debug, Args)]
pub struct NextCmd {
    /// The counter's name.
    pub name: String,
    /// How many IDs to hand out.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=10_000_000),
          conflicts_with = "stream")]
    pub count: u64,
    /// Prefix of the IDs (default: the counter's own, else none).
    #[arg(long)]
    pub prefix: Option<String>,
    /// Keep printing IDs, one per line, until interrupted (Ctrl-C) or stdout
    /// closes. With --policy FILE, a replaced FILE switches the format live.
    #[arg(long)]
    pub stream: bool,
    /// With --stream: at most N IDs per second (default: as fast as the counter goes).
    #[arg(long, value_name = "N", requires = "stream",
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub rate: Option<u32>,
    /// With --stream: follow the active version of the policies collection
    /// (`idmint policy activate`), switching to it live.
    #[arg(long, requires = "stream")]
    pub policy_from_db: bool,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Serialize)]
struct NextReport<'a> {
    counter: &'a str,
    prefix: &'a str,
    policy: &'a PolicyInfo,
    ids: Vec<String>,
}

impl NextCmd {
    pub async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        if self.stream {
            return self.stream(output).await;
        }
        let name = CounterName::new(&self.name).map_err(idmint::Error::from)?;
        let policy = self.policy.load()?;
        let database = self.connect.connect().await?;
        let counter = CyclicCounter::new(&database, name);
        let minter =
            Minter::prepare(counter, policy, self.prefix.clone(), Arc::new(SystemClock)).await?;
        let mut all = Vec::new();
        let mut left = self.count;
        while left > 0 {
            let chunk = left.min(CHUNK);
            let ids = minter.next_ids(chunk as usize).await?;
            if output.is_json() {
                all.extend(ids);
            } else {
                output.lines(&ids)?;
            }
            left -= chunk;
        }
        if output.is_json() {
            let report = NextReport {
                counter: &self.name,
                prefix: minter.prefix(),
                policy: minter.policy().info(),
                ids: all,
            };
            output.report(&report, String::new)?;
        }
        Ok(Outcome::Success)
    }

    /// `--stream`: IDs until Ctrl-C or a closed stdout, through a
    /// [`LivePolicy`] that the followers swap. Swaps and refusals are
    /// reported on stderr; a refused policy never stops the stream.
    async fn stream(&self, output: &Output) -> anyhow::Result<Outcome> {
        let name = CounterName::new(&self.name).map_err(idmint::Error::from)?;
        let runtime = PolicyRuntime::new().map_err(idmint::Error::from)?;
        let database = self.connect.connect().await?;
        let counter = CyclicCounter::new(&database, name);
        let state = counter.state().await.map_err(idmint::Error::from)?;
        let store = PolicyStore::new(&database);

        // The first policy: the active stored one if following the database
        // and one is active and passes the check here, else --policy FILE or
        // the default. A stored policy refused here is reported, not fatal:
        // the follower retries it only when the active version changes.
        let prefix = self
            .prefix
            .clone()
            .or_else(|| state.prefix.clone())
            .unwrap_or_default();
        let options = ActivationOptions::default().prefix(prefix).counter(state);
        let mut first = None;
        if self.policy_from_db {
            if let Some(active) = store.active().await? {
                let source = format!("{POLICIES_COLLECTION} version {}", active.version);
                match store.load(&runtime, active.version).await {
                    Ok(policy) => match activation::check(&policy, &options) {
                        Ok(_) => first = Some(policy),
                        Err(error) => report_event(output, &SwapEvent::Refused { source, error }),
                    },
                    Err(error) if error.is_database() => return Err(error.into()),
                    Err(error) => warn(
                        output,
                        &format!("{source} refused, using the local policy: {error}"),
                    ),
                }
            }
        }
        let first = match first {
            Some(policy) => policy,
            None => self.policy.load_with(&runtime)?,
        };
        // Minter::prepare checks the counter, the capacity and the prefix.
        let minter = Minter::prepare(
            counter,
            first.clone(),
            self.prefix.clone(),
            Arc::new(SystemClock),
        )
        .await?;
        activation::check(&first, &options).map_err(idmint::Error::from)?;
        let live = Arc::new(LivePolicy::new(first, options));

        let (sender, mut events) = mpsc::unbounded_channel::<SwapEvent>();
        let mut followers = Vec::new();
        if let Some(path) = &self.policy.policy {
            followers.push(watch::follow_file(
                path.clone(),
                runtime.clone(),
                live.clone(),
                sender.clone(),
            ));
        }
        if self.policy_from_db {
            followers.push(watch::follow_store(
                store,
                runtime.clone(),
                live.clone(),
                sender.clone(),
            ));
        }
        drop(sender);
        // Events are reported by a task of their own, so that the loop below
        // never abandons a batch whose values it has already taken.
        let reporter = {
            let output = *output;
            tokio::spawn(async move {
                while let Some(event) = events.recv().await {
                    report_event(&output, &event);
                }
            })
        };

        let mut pacer = self.rate.map(|rate| {
            let mut interval =
                tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(rate)));
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            interval
        });
        let batch = if self.rate.is_some() {
            1
        } else {
            CHUNK as usize
        };
        let ctrl_c = tokio::signal::ctrl_c();
        tokio::pin!(ctrl_c);
        let result = loop {
            tokio::select! {
                _ = &mut ctrl_c => break Ok(Outcome::Success),
                step = next_lines(&minter, &live, batch, pacer.as_mut()) => match step {
                    Ok(lines) => {
                        let mut stdout = io::stdout().lock();
                        if let Err(error) = stdout.write_all(lines.as_bytes()).and_then(|()| stdout.flush()) {
                            break Err(anyhow::Error::from(error));
                        }
                    }
                    Err(error) => break Err(error),
                },
            }
        };
        for follower in followers {
            follower.abort();
        }
        reporter.abort();
        result
    }
}

/// Waits for the pace, takes `count` values and formats them with the
/// policy in service at that moment; returns the lines to print.
async fn next_lines(
    minter: &Minter,
    live: &LivePolicy,
    count: usize,
    pacer: Option<&mut tokio::time::Interval>,
) -> anyhow::Result<String> {
    if let Some(pacer) = pacer {
        pacer.tick().await;
    }
    let stamps = minter.next_stamps(count).await?;
    // One handle for the whole batch: a swap landing now applies to the next.
    let policy = live.current();
    Ok(policy
        .format_batch_packed(minter.prefix(), &stamps)
        .map_err(idmint::Error::from)?)
}

/// Reports a follower's event on stderr (a JSON line with --json).
fn report_event(output: &Output, event: &SwapEvent) {
    let (kind, text) = match event {
        SwapEvent::Swapped { source, report } => (
            "swapped",
            format!(
                "policy swapped: now serving {} {} (sha256 {}) from {source}",
                report.policy.name, report.policy.version, report.sha256
            ),
        ),
        SwapEvent::Refused { source, error } => (
            "refused",
            format!("policy from {source} refused, keeping the current one: {error}"),
        ),
        SwapEvent::SourceError { source, message } => {
            ("source-error", format!("cannot read {source}: {message}"))
        }
        SwapEvent::Polling { reason } => (
            "polling",
            format!("no change stream ({reason}); polling the policies collection"),
        ),
        _ => ("other", format!("{event:?}")),
    };
    say(output, kind, &text);
}

/// Reports a problem that does not stop the stream on stderr.
fn warn(output: &Output, text: &str) {
    say(output, "warning", text);
}

/// Writes one line to stderr (a JSON object with --json).
fn say(output: &Output, kind: &str, text: &str) {
    let mut stderr = io::stderr().lock();
    let _ = if output.is_json() {
        writeln!(
            stderr,
            "{}",
            serde_json::json!({ "event": kind, "message": text })
        )
    } else {
        writeln!(stderr, "idmint: {text}")
    };
}
