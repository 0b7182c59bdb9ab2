//! `idmint counter create|show`.

use std::fmt::Write;

use clap::{Args, Subcommand};
use idmint::sequence::snowflake::layout;
use idmint::sequence::{
    self, CounterKind, CounterName, CounterSpec, CounterState, KindState, SequenceError,
};
use idmint::Clock;
use serde::Serialize;

use super::layout_args::LayoutArgs;
use super::policy_args::PolicyArgs;
use super::{ConnectArgs, Outcome, Output};

/// `idmint counter ...`
#[derive(Debug, Subcommand)]
pub enum CounterCmd {
    /// Create a counter: cyclic (the default), autoinc, segment or snowflake.
    Create(CreateArgs),
    /// Show a counter's kind and state.
    Show(ShowArgs),
}

/// Arguments of `idmint counter create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The counter's name: letters, digits, _ - . : (at most 128).
    pub name: String,
    /// cyclic: values 0..=max wrapping, with a server timestamp (IDs carry the
    /// time); autoinc: 1, 2, 3, ... one round trip per request; segment: ranges
    /// taken a step at a time and handed out from memory (fastest); snowflake:
    /// 64-bit IDs made in the process under a worker id leased in MongoDB.
    #[arg(long, default_value = "cyclic", value_parser = clap::value_parser!(CounterKind))]
    pub kind: CounterKind,
    /// cyclic: the largest value; the one after it is 0 [default: 99].
    #[arg(long = "max", value_name = "N")]
    pub maxval: Option<u64>,
    /// autoinc, segment: the first value handed out [default: 1].
    #[arg(long, value_name = "N")]
    pub start: Option<u64>,
    /// segment: the smallest segment a process takes [default: 1000].
    #[arg(long, value_name = "N")]
    pub step: Option<u64>,
    #[command(flatten)]
    pub snowflake: LayoutArgs,
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
    /// A cyclic counter's last issued timestamp as RFC 3339, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    last_issued_at: Option<String>,
    /// A snowflake counter: the date its time bits run out.
    #[serde(skip_serializing_if = "Option::is_none")]
    runs_out_on: Option<String>,
    /// A snowflake counter: a warning once fewer than two years are left.
    #[serde(skip_serializing_if = "Option::is_none")]
    warning: Option<String>,
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
                let mut spec = CounterSpec::of(args.kind).prefix(args.prefix.clone());
                spec.maxval = args.maxval;
                spec.start = args.start;
                spec.step = args.step;
                args.snowflake.apply(&mut spec)?;
                // Refuse a bad setting before connecting, and so before writing.
                spec.document(&name).map_err(idmint::Error::from)?;
                if let Some(prefix) = &args.prefix {
                    // Refuse a prefix the policy would refuse, before writing anything.
                    let policy = args.policy.load()?;
                    idmint::policy::check_prefix(&policy, prefix, idmint::SystemClock.now_micros())
                        .map_err(idmint::Error::from)?;
                }
                let database = args.connect.connect().await?;
                match sequence::create(&database, &name, &spec).await {
                    Ok(state) => print_state(output, &state, "created "),
                    Err(SequenceError::CounterExists(_)) if args.exist_ok => {
                        let state = sequence::state(&database, &name)
                            .await
                            .map_err(idmint::Error::from)?;
                        print_state(output, &state, "existing ")
                    }
                    Err(error) => Err(idmint::Error::from(error).into()),
                }
            }
            CounterCmd::Show(args) => {
                let name = CounterName::new(&args.name).map_err(idmint::Error::from)?;
                let database = args.connect.connect().await?;
                let state = sequence::state(&database, &name)
                    .await
                    .map_err(idmint::Error::from)?;
                print_state(output, &state, "")
            }
        }
    }
}

fn print_state(output: &Output, state: &CounterState, verb: &str) -> anyhow::Result<Outcome> {
    let last_issued_at = state
        .cyclic()
        .filter(|cyclic| cyclic.ts > 0)
        .map(|cyclic| rfc3339_micros(cyclic.ts));
    let (runs_out_on, warning) = match &state.kind {
        KindState::Snowflake(snowflake) => {
            let now = idmint::SystemClock.now_micros() / 1000;
            (
                Some(layout::date(snowflake.layout.runs_out_at_ms())),
                snowflake.layout.lifetime_warning(now),
            )
        }
        _ => (None, None),
    };
    let view = CounterView {
        state,
        last_issued_at: last_issued_at.clone(),
        runs_out_on: runs_out_on.clone(),
        warning: warning.clone(),
    };
    output.report(&view, || {
        let mut text = String::new();
        let _ = writeln!(text, "{verb}counter '{}'", state.name);
        let _ = writeln!(text, "  kind:   {}", state.kind());
        match &state.kind {
            KindState::Cyclic(cyclic) => {
                let _ = writeln!(
                    text,
                    "  val:    {} (values cycle 0..={})",
                    cyclic.val, cyclic.maxval
                );
                let _ = writeln!(text, "  maxval: {}", cyclic.maxval);
            }
            KindState::Autoinc(autoinc) => {
                let _ = writeln!(
                    text,
                    "  seq:    {} (the next value is {})",
                    autoinc.seq,
                    autoinc.seq + 1
                );
            }
            KindState::Segment(segment) => {
                let _ = writeln!(
                    text,
                    "  max:    {} (the next segment starts there)",
                    segment.max
                );
                let _ = writeln!(text, "  step:   {} (the smallest segment)", segment.step);
            }
            KindState::Snowflake(snowflake) => {
                let l = snowflake.layout;
                let _ = writeln!(
                    text,
                    "  layout: {},{},{} in {} from {}: {} worker ids, {} IDs per {} per worker",
                    l.time_bits,
                    l.worker_bits,
                    l.seq_bits,
                    l.unit,
                    layout::date(l.epoch_ms),
                    l.max_worker() + 1,
                    l.max_seq() + 1,
                    l.unit
                );
                let _ = writeln!(
                    text,
                    "  runs out on: {}",
                    runs_out_on.as_deref().unwrap_or_default()
                );
                if let Some(warning) = &warning {
                    let _ = writeln!(text, "  warning: {warning}");
                }
            }
        }
        let _ = writeln!(
            text,
            "  prefix: {}",
            state.prefix.as_deref().unwrap_or("(none)")
        );
        if state.cyclic().is_some() {
            let _ = writeln!(
                text,
                "  last issued at: {}",
                last_issued_at.as_deref().unwrap_or("never")
            );
        }
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
