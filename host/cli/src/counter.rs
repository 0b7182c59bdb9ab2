//! `idmint counter create|show|stripes|prefix`.

use std::fmt::Write;

use clap::{Args, Subcommand};
use idmint::parts::PeriodUnit;
use idmint::sequence::striping::{self, Deployments, LaneReport, LaneView, Layout};
use idmint::sequence::{
    self, CounterKind, CounterName, CounterSpec, CounterState, SequenceError, Setting, Settings,
};
use idmint::Clock;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use super::layout_args::LayoutArgs;
use super::policy_args::PolicyArgs;
use super::setting_help::{kinds_choice, kinds_summary, setting_help};
use super::{ConnectArgs, Outcome, Output};

/// `idmint counter ...`
#[derive(Debug, Subcommand)]
pub enum CounterCmd {
    /// Create a counter, of any kind idmint knows.
    #[command(about = format!("Create a counter: {}", kinds_choice()))]
    Create(CreateArgs),
    /// Show a counter's kind and state (a striped counter: each lane's).
    Show(ShowArgs),
    /// Give a counter a new generation of lanes (stripes), in one
    /// deployment or across several (--set eu:2,us:2): every lane of the
    /// current one is sealed, and the new lanes hand out values above all
    /// they handed out (a cyclic counter's: timestamps above all they
    /// issued; a snowflake counter's: times). An unstriped autoinc,
    /// segment, cyclic, periodic or snowflake counter becomes striped.
    Stripes(StripesArgs),
    /// Add a prefix to the ones a counter owns, or remove one (a prefix is
    /// owned by one counter, once, so that formatted IDs never collide).
    #[command(subcommand)]
    Prefix(PrefixCmd),
}

/// `idmint counter prefix add|remove NAME PREFIX`.
#[derive(Debug, Subcommand)]
pub enum PrefixCmd {
    /// Make the counter own PREFIX too (refused if another counter owns it or
    /// ever did, or the policy would not read it back out of the counter's
    /// IDs); on a counter made before idmint declared owners, this declares
    /// them.
    Add(PrefixArgs),
    /// Make the counter give up PREFIX for good (its default becomes the next
    /// one it owns; no counter owns PREFIX again, this one included). A
    /// running `idmint serve` stops serving it within 10 s; `next --stream`
    /// keeps using it until it restarts.
    Remove(PrefixArgs),
}

/// Arguments of `idmint counter prefix add|remove`.
#[derive(Debug, Args)]
pub struct PrefixArgs {
    /// The counter's name.
    pub name: String,
    /// The prefix (the empty prefix is `''`).
    pub prefix: String,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// Arguments of `idmint counter create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The counter's name: letters, digits, _ - . : (at most 128).
    pub name: String,
    #[arg(long, default_value_t = CounterKind::DEFAULT, value_parser = clap::value_parser!(CounterKind), help = kinds_summary())]
    pub kind: CounterKind,
    #[arg(long = "max", value_name = "N", help = setting_help(Setting::Maxval, "the largest value; the one after it is 0 [default: 99]"))]
    pub maxval: Option<u64>,
    #[arg(long, value_name = "N", help = setting_help(Setting::Start, "the first value handed out [default: 1]"))]
    pub start: Option<u64>,
    #[arg(long, value_name = "N", help = setting_help(Setting::Step, "the smallest segment a process takes [default: 1000]"))]
    pub step: Option<u64>,
    #[command(flatten)]
    pub snowflake: LayoutArgs,
    #[arg(long, value_parser = clap::value_parser!(PeriodUnit), help = setting_help(Setting::Period, "how long a period lasts, day, month or year [default: year]"))]
    pub period: Option<PeriodUnit>,
    #[arg(long, value_name = "ZONE", help = setting_help(Setting::Zone, "the time zone periods are counted in, an IANA name such as Europe/Paris, or UTC [default: UTC]"))]
    pub zone: Option<String>,
    /// A prefix this counter's IDs use, owned by this counter alone (checked
    /// against the policy); repeat it for more, the first is the default
    /// [default: the empty prefix, which then no other counter may own].
    #[arg(long = "prefix", value_name = "PREFIX", conflicts_with = "raw")]
    pub prefixes: Vec<String>,
    /// Own no prefix: the counter hands out raw values only (seq, values,
    /// ranges) and its values can never be formatted into IDs until it is
    /// given a prefix (`idmint counter prefix add`).
    #[arg(long)]
    pub raw: bool,
    /// How many lanes (stripes) the counter's values come from, each a
    /// document of its own, so that takes spread over them (autoinc,
    /// segment, cyclic, periodic and snowflake counters): its values (a
    /// cyclic counter's pairs, a periodic counter's in each period) are
    /// then unique, not increasing; a snowflake counter's lanes split its
    /// worker ids. 1: an unstriped counter.
    /// Across deployments: DEPLOYMENT:N,... (as in eu:2,us:2), each named
    /// with --uri NAME=URI.
    #[arg(long, value_name = "N|LAYOUT", default_value = "1", value_parser = parse_layout)]
    pub stripes: Layout,
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

/// Arguments of `idmint counter stripes`.
#[derive(Debug, Args)]
pub struct StripesArgs {
    /// The counter's name.
    pub name: String,
    /// How many lanes the new generation has, or, across deployments,
    /// DEPLOYMENT:N,... (as in eu:2,us:2), each named with --uri NAME=URI.
    /// A deployment that dies during the change stops it half way: the
    /// command goes on finishing it for up to 30 s while the deployment
    /// comes back, then fails (exit 3) and leaves it to the takers.
    #[arg(
        long,
        value_name = "N|LAYOUT",
        value_parser = parse_layout,
        required_unless_present_any = ["resume", "forget"],
        conflicts_with = "resume"
    )]
    pub set: Option<Layout>,
    /// Finish a change of stripes that stopped half way (a deployment it
    /// needed died, or the command was killed), as its claim recorded it;
    /// takers do it on their own once every deployment it needs answers.
    #[arg(long)]
    pub resume: bool,
    /// Forget DEPLOYMENT, lost for good (its data gone): a new generation
    /// without it, above every value its lanes may have handed out (the
    /// ceilings the other deployments recorded for them; a cyclic or
    /// snowflake counter's: after every time they recorded; a periodic
    /// counter's: in the latest period recorded), with as many lanes in
    /// each other deployment as now, or as --set says (naming those
    /// only). Give DEPLOYMENT's URI too: refused while it answers.
    #[arg(long, value_name = "DEPLOYMENT", conflicts_with = "resume")]
    pub forget: Option<String>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// A counter as `--json` shows it: its fields, and the facts the kind
/// derives from them (a cyclic counter's `last_issued_at`, a snowflake
/// counter's `runs_out_on`, ...).
struct CounterView<'a> {
    state: &'a CounterState,
    facts: &'a [idmint::sequence::Fact],
    /// A striped counter's live lanes.
    lanes: Option<&'a [LaneReport]>,
    /// What is left of it, if it can run out.
    headroom: Option<idmint::sequence::Headroom>,
}

impl Serialize for CounterView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let fields = serde_json::to_value(self.state).map_err(serde::ser::Error::custom)?;
        let mut map = serializer.serialize_map(None)?;
        if let serde_json::Value::Object(fields) = fields {
            for (key, value) in fields {
                map.serialize_entry(&key, &value)?;
            }
        }
        for (key, value) in self.facts.iter().filter_map(|fact| fact.json.as_ref()) {
            map.serialize_entry(key, value)?;
        }
        if let Some(lanes) = self.lanes {
            let lanes: Vec<LaneView> = lanes.iter().map(LaneReport::view).collect();
            map.serialize_entry("lanes", &lanes)?;
        }
        if let Some(headroom) = &self.headroom {
            map.serialize_entry("headroom", headroom)?;
        }
        map.end()
    }
}

impl CounterCmd {
    pub fn connect(&self) -> &ConnectArgs {
        match self {
            CounterCmd::Create(args) => &args.connect,
            CounterCmd::Show(args) => &args.connect,
            CounterCmd::Stripes(args) => &args.connect,
            CounterCmd::Prefix(PrefixCmd::Add(args) | PrefixCmd::Remove(args)) => &args.connect,
        }
    }

    pub async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        match self {
            CounterCmd::Create(args) => {
                let name = CounterName::new(&args.name).map_err(idmint::Error::from)?;
                let mut settings = Settings::default();
                settings.maxval = args.maxval;
                settings.start = args.start;
                settings.step = args.step;
                settings.period = args.period;
                settings.zone = args.zone.clone();
                args.snowflake.apply(&mut settings)?;
                let prefixes = match (args.raw, args.prefixes.is_empty()) {
                    (true, _) => Vec::new(),
                    (false, true) => vec![String::new()],
                    (false, false) => args.prefixes.clone(),
                };
                let spec = CounterSpec::of(args.kind)
                    .settings(settings)
                    .prefixes(prefixes.clone());
                // Refuse a bad setting before connecting, and so before writing.
                let document = spec
                    .document(&name, idmint::SystemClock.now_micros() / 1000)
                    .map_err(idmint::Error::from)?;
                // Refuse a prefix the policy would refuse, or would not read
                // back out of this counter's IDs, before writing anything.
                let non_empty: Vec<&String> = prefixes.iter().filter(|p| !p.is_empty()).collect();
                if !non_empty.is_empty() {
                    let policy = args.policy.load()?;
                    let state = CounterState::from_document(&name, &document)
                        .map_err(idmint::Error::from)?;
                    for prefix in non_empty {
                        check_policy_prefix(&policy, &state, prefix)?;
                    }
                }
                let (database, deployments) = args.connect.connect_all().await?;
                let deployments = deployments.as_ref();
                match striping::create_laid_out(&database, deployments, &name, &spec, &args.stripes)
                    .await
                {
                    Ok(state) => {
                        show_state(output, &database, deployments, &state, "created ").await
                    }
                    Err(SequenceError::CounterExists(_)) if args.exist_ok => {
                        let state = sequence::state(&database, &name)
                            .await
                            .map_err(idmint::Error::from)?;
                        show_state(output, &database, deployments, &state, "existing ").await
                    }
                    Err(error) => Err(idmint::Error::from(error).into()),
                }
            }
            CounterCmd::Show(args) => {
                let name = CounterName::new(&args.name).map_err(idmint::Error::from)?;
                let (database, deployments) = args.connect.connect_all().await?;
                let mut state = sequence::state(&database, &name)
                    .await
                    .map_err(idmint::Error::from)?;
                // A change of stripes long stopped half way is finished
                // first, as a taker would (what it says if it cannot be:
                // the map below, still half way).
                let finished = match &state.striped {
                    Some(map) => {
                        striping::finish_if_stalled(&database, deployments.as_ref(), &name, map)
                            .await
                    }
                    None => Ok(false),
                };
                if let Ok(true) = finished {
                    state = sequence::state(&database, &name)
                        .await
                        .map_err(idmint::Error::from)?;
                }
                show_state(output, &database, deployments.as_ref(), &state, "").await
            }
            CounterCmd::Stripes(args) => {
                let name = CounterName::new(&args.name).map_err(idmint::Error::from)?;
                let (mut database, deployments) = args.connect.connect_all().await?;
                let deployments = deployments.as_ref();
                let verb = match (&args.forget, &args.set) {
                    (Some(forgotten), layout) => {
                        let Some(deployments) = deployments else {
                            return Err(idmint::Error::from(SequenceError::Striping {
                                name: name.clone(),
                                source: striping::StripingError::DeploymentNotGiven {
                                    deployment: forgotten.clone(),
                                    why: "--forget tries it first (a deployment that answers is not lost)",
                                },
                            })
                            .into());
                        };
                        striping::forget(deployments, &name, forgotten, layout.as_ref())
                            .await
                            .map_err(idmint::Error::from)?;
                        // Shown as a deployment it still spans holds it (the
                        // first --uri may be the one forgotten).
                        if let Some(surviving) = deployments
                            .list()
                            .iter()
                            .find(|deployment| deployment.name != *forgotten)
                        {
                            database = surviving.database.clone();
                        }
                        "forgot a deployment of "
                    }
                    (None, Some(layout)) => {
                        striping::set_layout_and_finish(
                            &database,
                            deployments,
                            &name,
                            layout,
                            striping::FINISH_PATIENCE,
                        )
                        .await
                        .map_err(idmint::Error::from)?;
                        ""
                    }
                    (None, None) => match striping::resume(&database, deployments, &name)
                        .await
                        .map_err(idmint::Error::from)?
                    {
                        Some(_) => "finished the change of stripes of ",
                        None => "no change of stripes under way: ",
                    },
                };
                let state = sequence::state(&database, &name)
                    .await
                    .map_err(idmint::Error::from)?;
                show_state(output, &database, deployments, &state, verb).await
            }
            CounterCmd::Prefix(PrefixCmd::Add(args)) => {
                let name = CounterName::new(&args.name).map_err(idmint::Error::from)?;
                let policy = if args.prefix.is_empty() {
                    None
                } else {
                    Some(args.policy.load()?)
                };
                let database = args.connect.connect().await?;
                if let Some(policy) = &policy {
                    let state = sequence::state(&database, &name)
                        .await
                        .map_err(idmint::Error::from)?;
                    check_policy_prefix(policy, &state, &args.prefix)?;
                }
                let state = sequence::prefixes::add(&database, &name, &args.prefix)
                    .await
                    .map_err(idmint::Error::from)?;
                print_state(output, &state, "", None)
            }
            CounterCmd::Prefix(PrefixCmd::Remove(args)) => {
                let name = CounterName::new(&args.name).map_err(idmint::Error::from)?;
                let database = args.connect.connect().await?;
                let state = sequence::prefixes::remove(&database, &name, &args.prefix)
                    .await
                    .map_err(idmint::Error::from)?;
                print_state(output, &state, "", None)
            }
        }
    }
}

/// Fails unless `policy` accepts `prefix` and reads it back alone out of
/// the IDs it formats for `state` (so that no other counter's prefix can
/// make the same IDs).
fn check_policy_prefix(
    policy: &idmint::policy::Policy,
    state: &CounterState,
    prefix: &str,
) -> anyhow::Result<()> {
    idmint::policy::check_prefix(policy, prefix, idmint::SystemClock.now_micros())
        .and_then(|()| idmint::policy::check_prefix_reads_back(policy, state, prefix))
        .map_err(idmint::Error::from)?;
    Ok(())
}

/// [`print_state`], with a striped counter's lanes read first.
async fn show_state(
    output: &Output,
    database: &mongodb::Database,
    deployments: Option<&Deployments>,
    state: &CounterState,
    verb: &str,
) -> anyhow::Result<Outcome> {
    let lanes = match &state.striped {
        Some(map) => Some(
            striping::lanes(database, deployments, &CounterName::new(&state.name)?, map)
                .await
                .map_err(idmint::Error::from)?,
        ),
        None => None,
    };
    print_state(output, state, verb, lanes.as_deref())
}

fn print_state(
    output: &Output,
    state: &CounterState,
    verb: &str,
    lanes: Option<&[LaneReport]>,
) -> anyhow::Result<Outcome> {
    let now_ms = idmint::SystemClock.now_micros() / 1000;
    let facts = state.facts(now_ms);
    let view = CounterView {
        state,
        facts: &facts,
        lanes,
        headroom: state.headroom(now_ms),
    };
    output.report(&view, || {
        let line = |text: &mut String, label: &str, value: &str| {
            let _ = writeln!(text, "  {:<7} {value}", format!("{label}:"));
        };
        let mut text = String::new();
        let _ = writeln!(text, "{verb}counter '{}'", state.name);
        line(&mut text, "kind", state.kind().as_str());
        for fact in facts.iter().filter(|fact| !fact.after_prefix) {
            line(&mut text, fact.label, &fact.text);
        }
        for lane in lanes.unwrap_or_default() {
            line(&mut text, &lane.label(), &lane.describe());
        }
        line(&mut text, "prefix", &prefix_text(state));
        for fact in facts.iter().filter(|fact| fact.after_prefix) {
            line(&mut text, fact.label, &fact.text);
        }
        // A counter that runs out of time says when among its facts; a
        // cyclic one, its pace and how far its timestamps are ahead.
        match &view.headroom {
            Some(headroom) if headroom.pace_per_second.is_some() => {
                line(&mut text, "pace", &headroom.summary());
            }
            Some(headroom) if headroom.runs_out_at_ms.is_none() => {
                let used = format!("{} ({:.1}% used)", headroom.left, headroom.used * 100.0);
                line(&mut text, "left", &used);
            }
            _ => {}
        }
        text
    })?;
    Ok(Outcome::Success)
}

pub use idmint::parts::rfc3339_micros;

/// The prefixes a counter owns, as `counter show` says them: the default,
/// then any others; `(none)` for the empty prefix; raw values only for a
/// counter that owns none.
fn prefix_text(state: &CounterState) -> String {
    let show = |prefix: &str| {
        if prefix.is_empty() {
            "(none)".to_string()
        } else {
            prefix.to_string()
        }
    };
    let Some((default, others)) = state.prefixes.split_first() else {
        if state.snowflake_layout().is_some() {
            return "(none: it owns no prefix and hands out raw values, or standard IDs keyed by \
                    its tag)"
                .to_string();
        }
        return "(none: it owns no prefix and hands out raw values only)".to_string();
    };
    let mut text = show(default);
    if !others.is_empty() {
        let others: Vec<String> = others.iter().map(|p| show(p)).collect();
        text.push_str(&format!(" (it also owns {})", others.join(", ")));
    }
    if !state.prefixes_declared {
        text.push_str(" (undeclared: `idmint status` reports a prefix two counters own)");
    }
    text
}

/// A `--stripes` or `--set` layout: N, or DEPLOYMENT:N,...
fn parse_layout(text: &str) -> Result<Layout, String> {
    text.parse()
}
