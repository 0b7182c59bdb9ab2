//! `idmint counter create|show`.

use std::fmt::Write;

use clap::{Args, Subcommand};
use idmint::sequence::{
    CounterName, CounterSpec, CounterState, CyclicCounter, SequenceError, DEFAULT_MAXVAL,
};
use idmint::Clock;
use serde::Serialize;

use super::policy_args::PolicyArgs;
use super::{ConnectArgs, Outcome, Output};

/// `idmint counter ...`
#[derive(Debug, Subcommand)]
pub enum CounterCmd {
    /// Create a counter: val 0, wraps to 0 after --max.
    Create(CreateArgs),
    /// Show a counter's state.
    Show(ShowArgs),
}

/// Arguments of `idmint counter create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The counter's name: letters, digits, _ - . : (at most 128).
    pub name: String,
    /// The largest value; the one after it is 0.
    #[arg(long = "max", default_value_t = DEFAULT_MAXVAL, value_name = "N")]
    pub maxval: u64,
    /// Default prefix of this counter's IDs (checked against the policy).
    #[arg(long)]
    pub prefix: Option<String>,
    /// Succeed without changing anything if the counter already exists.
    #[arg(long)]
    pub exist_ok: bool,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// Arguments of `idmint counter show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The counter's name.
    pub name: String,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Serialize)]
struct CounterView<'a> {
    #[serde(flatten)]
    state: &'a CounterState,
    /// The last issued timestamp as RFC 3339, if any.
    last_issued_at: Option<String>,
}

impl CounterCmd {
    pub fn connect(&self) -> &ConnectArgs {
        match self {
            CounterCmd::Create(args) => &args.connect,
            CounterCmd::Show(args) => &args.connect,
        }
    }

    pub async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        match self {
            CounterCmd::Create(args) => {
                let name = CounterName::new(&args.name).map_err(idmint::Error::from)?;
                if let Some(prefix) = &args.prefix {
                    // Refuse a prefix the policy would refuse, before writing anything.
                    let policy = args.policy.load()?;
                    idmint::minter::check_prefix(&policy, prefix, idmint::SystemClock.now_micros())
                        .map_err(idmint::Error::from)?;
                }
                let database = args.connect.connect().await?;
                let spec = CounterSpec::default()
                    .maxval(args.maxval)
                    .prefix(args.prefix.clone());
                let counter = CyclicCounter::new(&database, name);
                match counter.create(&spec).await {
                    Ok(state) => print_state(output, &state, "created "),
                    Err(SequenceError::CounterExists(_)) if args.exist_ok => {
                        let state = counter.state().await.map_err(idmint::Error::from)?;
                        print_state(output, &state, "existing ")
                    }
                    Err(error) => Err(idmint::Error::from(error).into()),
                }
            }
            CounterCmd::Show(args) => {
                let name = CounterName::new(&args.name).map_err(idmint::Error::from)?;
                let database = args.connect.connect().await?;
                let state = CyclicCounter::new(&database, name)
                    .state()
                    .await
                    .map_err(idmint::Error::from)?;
                print_state(output, &state, "")
            }
        }
    }
}

fn print_state(output: &Output, state: &CounterState, verb: &str) -> anyhow::Result<Outcome> {
    let last_issued_at = (state.ts > 0).then(|| rfc3339_micros(state.ts));
    let view = CounterView {
        state,
        last_issued_at: last_issued_at.clone(),
    };
    output.report(&view, || {
        let mut text = String::new();
        let _ = writeln!(text, "{verb}counter '{}'", state.name);
        let _ = writeln!(
            text,
            "  val:    {} (values cycle 0..={})",
            state.val, state.maxval
        );
        let _ = writeln!(text, "  maxval: {}", state.maxval);
        let _ = writeln!(
            text,
            "  prefix: {}",
            state.prefix.as_deref().unwrap_or("(none)")
        );
        let _ = writeln!(
            text,
            "  last issued at: {}",
            last_issued_at.as_deref().unwrap_or("never")
        );
        text
    })?;
    Ok(Outcome::Success)
}

/// Microseconds since the epoch as RFC 3339 UTC with six decimals.
pub fn rfc3339_micros(micros: u64) -> String {
    i64::try_from(micros)
        .ok()
        .and_then(chrono::DateTime::from_timestamp_micros)
        .map(|time| time.to_rfc3339_opts(chrono::SecondsFormat::Micros, true))
        .unwrap_or_else(|| format!("{micros} µs after the epoch"))
}
