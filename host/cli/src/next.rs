//! `idmint next NAME`: formatted IDs, a fixed count of them or, with
//! `--stream`, until interrupted, as a long-running application would, with
//! the policy swapped live from a file (`--policy FILE`) or the policies
//! collection (`--policy-from-db`).

use std::io::{self, Write};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use idmint::minter::LiveOptions;
use idmint::policy::watch::SwapEvent;
use idmint::sequence::{CounterName, Sequence, MAX_BLOCK};
use idmint::{LiveMinter, Minter, PolicyRuntime, SystemClock};
use serde::Serialize;
use tokio::signal::unix::{signal, Signal, SignalKind};

use super::open_args::OpenArgs;
use super::policy_args::PolicyArgs;
use super::{ConnectArgs, Outcome, Output};

/// IDs are taken and printed in chunks of this many: one round trip (at
/// most) and one policy call each.
const CHUNK: u64 = MAX_BLOCK as u64;

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
    /// closes; IDs being taken at Ctrl-C are printed first (a second Ctrl-C
    /// abandons them). With --policy FILE, a replaced FILE switches the format live.
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
    pub open: OpenArgs,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// One ID, a JSON line with --json.
#[derive(Serialize)]
struct NextLine<'a> {
    counter: &'a str,
    id: &'a str,
    policy: &'a str,
}

impl NextCmd {
    pub async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        if self.stream {
            return self.stream(output).await;
        }
        let name = CounterName::new(&self.name).map_err(idmint::Error::from)?;
        let policy = self.policy.load()?;
        let mut open = self.open.options()?;
        // A bounded run: a segment counter fetches no more than it will use.
        open.segment = open.segment.wants(Some(self.count));
        let (database, deployments) = self.connect.connect_all().await?;
        open.deployments = deployments;
        let (sequence, state) = Sequence::open(&database, name, &open)
            .await
            .map_err(idmint::Error::from)?;
        let prepared = Minter::prepare_opened(
            sequence.clone(),
            state,
            policy,
            self.prefix.clone(),
            Arc::new(SystemClock),
        )
        .await;
        let minter = sequence.close_on_error(prepared).await?;
        let result = self.mint_all(&minter, output).await;
        // A segment counter gives back what it did not hand out, even after an error.
        let closed = minter.close().await;
        result?;
        closed?;
        Ok(Outcome::Success)
    }

    /// Takes and formats `--count` IDs a chunk at a time, printing each chunk
    /// as soon as it is formatted (a JSON line per ID with --json), so that
    /// an ID handed out is never lost to a later error.
    async fn mint_all(&self, minter: &Minter, output: &Output) -> anyhow::Result<()> {
        let policy = &minter.policy().info().name;
        let mut left = self.count;
        while left > 0 {
            let chunk = left.min(CHUNK);
            let ids = minter.next_ids(chunk as usize).await?;
            if output.is_json() {
                output.json_lines(ids.iter().map(|id| NextLine {
                    counter: &self.name,
                    id,
                    policy,
                }))?;
            } else {
                output.lines(&ids)?;
            }
            left -= chunk;
        }
        Ok(())
    }

    /// `--stream`: IDs until Ctrl-C or a closed stdout, through a
    /// [`LiveMinter`] whose followers swap the policy. Swaps and refusals are
    /// reported on stderr; a refused policy never stops the stream.
    async fn stream(&self, output: &Output) -> anyhow::Result<Outcome> {
        let name = CounterName::new(&self.name).map_err(idmint::Error::from)?;
        let runtime = PolicyRuntime::new().map_err(idmint::Error::from)?;
        let local = self.policy.load_with(&runtime)?;
        let (database, deployments) = self.connect.connect_all().await?;
        let mut options = LiveOptions::default()
            .prefix(self.prefix.clone())
            .follow_file(self.policy.file().map(Into::into))
            .follow_store(self.policy_from_db);
        options.open = self.open.options()?;
        options.open.deployments = deployments;
        let (minter, mut events) = LiveMinter::start(
            &database,
            name,
            &runtime,
            local,
            Arc::new(SystemClock),
            options,
        )
        .await?;
        // Ctrl-C is taken from here on (before, it ends the process as
        // usual): the values a step has taken are printed, never dropped
        // (see `finish`), and a segment's unused ones are given back.
        let mut interrupts = match signal(SignalKind::interrupt()) {
            Ok(interrupts) => interrupts,
            Err(error) => {
                let _ = minter.shutdown().await;
                return Err(error.into());
            }
        };
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
        let result = loop {
            // Between steps nothing is taken: an interrupt ends the stream here.
            tokio::select! {
                biased;
                _ = interrupts.recv() => break Ok(Outcome::Success),
                () = pace(pacer.as_mut()) => {}
            }
            let (step, interrupted) = match finish(
                minter.next_lines(batch),
                &mut interrupts,
                output,
            )
            .await
            {
                Finished::Done {
                    result,
                    interrupted,
                } => (result, interrupted),
                Finished::Abandoned => {
                    say(
                        output,
                        "abandoned",
                        "interrupted twice: the IDs being taken are abandoned (a gap, never a duplicate)",
                    );
                    break Ok(Outcome::Success);
                }
            };
            let printed = step.map_err(anyhow::Error::from).and_then(|lines| {
                let mut stdout = io::stdout().lock();
                stdout
                    .write_all(lines.as_bytes())
                    .and_then(|()| stdout.flush())
                    .map_err(anyhow::Error::from)
            });
            match printed {
                Err(error) => break Err(error),
                Ok(()) if interrupted => break Ok(Outcome::Success),
                Ok(()) => {}
            }
        };
        // A segment counter gives its unused values back on the way out.
        let closed = minter.shutdown().await;
        reporter.abort();
        let outcome = result?;
        closed?;
        Ok(outcome)
    }
}

/// Waits for the pace (`--rate`), if any.
async fn pace(pacer: Option<&mut tokio::time::Interval>) {
    if let Some(pacer) = pacer {
        pacer.tick().await;
    }
}

/// How a step that takes values ended under [`finish`].
enum Finished<T> {
    /// It ran to its end; `interrupted`: Ctrl-C came meanwhile.
    Done { result: T, interrupted: bool },
    /// A second Ctrl-C came before its end: it was dropped.
    Abandoned,
}

/// Runs `step` to its end even when interrupted (Ctrl-C) once: a take in
/// flight may already have moved the counter past its values (the update
/// applied, its answer on the way), and dropping it then would lose them,
/// a gap. The first interrupt is acknowledged on stderr (the database may
/// be slow to answer); a second one abandons the step.
async fn finish<T>(
    step: impl std::future::Future<Output = T>,
    interrupts: &mut Signal,
    output: &Output,
) -> Finished<T> {
    tokio::pin!(step);
    let mut interrupted = false;
    loop {
        tokio::select! {
            result = &mut step => return Finished::Done { result, interrupted },
            _ = interrupts.recv() => {
                if interrupted {
                    return Finished::Abandoned;
                }
                interrupted = true;
                say(
                    output,
                    "interrupted",
                    "interrupted: printing the IDs being taken, then stopping (interrupt again to abandon them)",
                );
            }
        }
    }
}

/// Reports a follower's event on stderr (a JSON line with --json), in the
/// words the library gives it.
fn report_event(output: &Output, event: &SwapEvent) {
    say(output, event.kind(), &event.to_string());
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
