//! The map of a striped counter: its document `_id: NAME`, whose `kind` is
//! `striped` (so that no path that does not know lanes takes from it) and
//! whose `striped` field says which generation of lanes hands out its
//! values:
//!
//! ```text
//! { _id: "orders", kind: "striped", prefixes: [...], seq: 1041,
//!   striped: { kind: "autoinc", generation: 2, base: 1041, modulus: 4,
//!              lanes: [{residue: 0}, {residue: 1}, {residue: 2}, {residue: 3}] } }
//! ```
//!
//! A counter whose lanes span deployments has a copy of its map in each
//! (`docs/design/striped-counters.md`): each lane names its deployment,
//! `spans` lists the deployments (its home, where it was created, first)
//! and `here` says which one the copy is in:
//!
//! ```text
//!   striped: { ..., lanes: [{residue: 0, deployment: "eu"}, {residue: 1, deployment: "us"}],
//!              spans: ["eu", "us"], here: "us" }
//! ```
//!
//! The lanes' kind's own fields (`seq` above) stay as they were at the
//! last change of stripes: every value up to `base` belongs to earlier
//! generations. `lanes` lists the live lanes of the generation, every
//! residue once, in order (their deployment goes there when lanes span
//! deployments); it is empty while a change of stripes is under way
//! (generation 0: the counter was unstriped and is being striped).

use std::time::Duration;

use mongodb::bson::{doc, Bson, Document};
use serde::Serialize;

use super::arithmetic::Mark;
use super::arithmetic::{Generation, Lane, MAX_LANES};
use super::deployments::check_deployment_name;
use super::error::StripingError;
use super::layout::Layout;
use crate::mongo::describe_value;
use crate::sequence::counter::fields::{read_array, read_document, read_integer, read_string};
use crate::sequence::error::striping;
use crate::sequence::error::SequenceError;
use crate::sequence::identity::Incarnation;
use crate::sequence::kind_trait::MAX_VALUE;
use crate::sequence::kinds;
use crate::sequence::lane_kind::{values_above, LaneOf};
use crate::sequence::name::CounterName;

/// The top-level field of a copy of a map across deployments that records,
/// for each deployment, the highest ceiling any of its lanes was ever given
/// (`{ ceilings: { "us": 40960 } }`), raised with `$max` in a copy in
/// another deployment before the lane's own: a change of stripes rewrites
/// `striped`, never this, so what it records survives every change, and
/// `--forget` starts above it (`restripe.rs`'s `forget`).
pub const CEILINGS: &str = "ceilings";

/// Beside [`CEILINGS`], for a periodic counter: for each deployment, the
/// latest period any of its lanes was ever let hand out in (a label,
/// raised with `$max`). With the highest value of [`CEILINGS`] (of any
/// period) it bounds every (period, value) the deployment's lanes handed
/// out, periods first.
pub const CEILING_PERIODS: &str = "ceiling_periods";

/// The `kind` of a striped counter's map.
pub const STRIPED_KIND: &str = "striped";

/// The `striped` field of a map, as read.
#[derive(Debug, Clone, Serialize)]
pub struct StripeMap {
    /// The lanes' kind (`autoinc`).
    pub kind: String,
    /// The generation: 0 while an unstriped counter is being striped, then
    /// 1, 2, ... one more at each change of stripes.
    pub generation: u64,
    /// Every value of the generation is above it (a periodic counter's:
    /// in `base_period`; in a later period they start again).
    pub base: u64,
    /// The period `base` counts in: a periodic counter's only, none
    /// before its first value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_period: Option<String>,
    /// How many lanes the generation has.
    pub modulus: u64,
    /// Whether the generation's lanes are live (false: a change of stripes
    /// is under way, no lane is to be taken from).
    pub live: bool,
    /// Each live lane's deployment, by residue (empty: every lane is in the
    /// deployment of the map, which spans no other).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub placement: Vec<String>,
    /// The deployments the counter spans, its home first (empty: one).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub spans: Vec<String>,
    /// The deployment this copy of the map is in (none: it spans one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub here: Option<String>,
    /// While a change of stripes is under way (not `live`): what it makes,
    /// so that any process can finish it (`restripe.rs`'s `resume`); none
    /// once live, or for a change claimed by a version that did not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<PendingChange>,
    /// Whether the generation's lanes were written with ceilings
    /// (`striped.bounded`: the lanes of a counter across deployments,
    /// written by an idmint that knows them): each hands out values (a
    /// cyclic lane: timestamps; a snowflake lane: time its holders reserve;
    /// a periodic lane: in periods up to its ceiling's) only up to a ceiling another deployment recorded first in
    /// its copy's [`CEILINGS`]. An idmint before ceilings rewrites
    /// `striped` whole at its changes, and so drops it with its lanes'.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub bounded: bool,
    /// The counter's identity (`sequence/identity.rs`), the document's own
    /// `incarnation` (none: a counter made before incarnations): every
    /// copy of its map and every lane it writes carries it.
    #[serde(skip)]
    pub incarnation: Option<Incarnation>,
    /// The map document's own fields, those of its lanes' kind among them
    /// (`lane.rs` reads what its lanes are made of from them).
    #[serde(skip)]
    pub(crate) fields: Document,
}

/// A change of stripes under way, as its claim recorded it in every copy
/// of the map: the layout it makes, and when it was claimed or last made
/// progress.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PendingChange {
    /// The layout of the generation it makes (`--set`).
    #[serde(serialize_with = "as_text")]
    pub to: Layout,
    /// When it was claimed, in milliseconds since 1970 by the clock of the
    /// process that claimed it; when that process last
    /// said it made progress (its claim, its lanes placed, sealed, their
    /// ceilings recorded, the new lanes written).
    pub since_ms: u64,
    /// How long its claimant asks others to see it make no progress before
    /// they take it for stalled, in milliseconds: four times its slowest
    /// write so far (a loaded server answering a write in 3 s makes gaps
    /// of as long between its heartbeats). None: [`RESUME_AFTER`] (a claim
    /// that said none, as an idmint before it wrote them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patience_ms: Option<u64>,
}

fn as_text<S: serde::Serializer>(layout: &Layout, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(layout)
}

/// How long a change of stripes may stay half way before a process that
/// finds it so finishes it, by the claim's own clock against this
/// process's (a process that watched it stay so uses its own watch:
/// `taker.rs`); at least twice the change's [`patience`](PendingChange::patience).
pub const STALLED_AFTER: Duration = Duration::from_secs(10);

/// How long a process watches a change of stripes make no progress (the
/// map claimed, no live lane, its claim's `since` unchanged) before it
/// finishes the change itself, unless the change asks for more
/// ([`PendingChange::patience`]).
pub const RESUME_AFTER: Duration = Duration::from_secs(5);

/// How long a process must see a change of stripes make no progress
/// before a claim that looks stalled by this process's clock
/// ([`STALLED_AFTER`]) is taken for one: a change at work says so every
/// second, and the claimant's clock may be behind this one's; at least
/// half the change's patience.
pub const SEEN_STILL: Duration = Duration::from_millis(2500);

/// The most a change of stripes may ask others to wait on it: a claimant
/// that died leaves the counter with no live lane for at most this long.
pub const LONGEST_PATIENCE: Duration = Duration::from_secs(60);

impl PendingChange {
    /// How long a process must see it make no progress before finishing
    /// it: [`RESUME_AFTER`], or what its claimant asked for, at most
    /// [`LONGEST_PATIENCE`].
    pub fn patience(&self) -> Duration {
        self.patience_ms
            .map(Duration::from_millis)
            .unwrap_or(RESUME_AFTER)
            .clamp(RESUME_AFTER, LONGEST_PATIENCE)
    }

    /// Whether it was claimed (or made progress) more than
    /// [`STALLED_AFTER`] (or twice its patience) before `now_ms`.
    pub fn stalled_at(&self, now_ms: u64) -> bool {
        let after = STALLED_AFTER.max(self.patience() * 2);
        now_ms.saturating_sub(self.since_ms) >= after.as_millis() as u64
    }

    /// How long a process that finds it stalled by its clock
    /// ([`PendingChange::stalled_at`]) must still see it make no progress:
    /// [`SEEN_STILL`], or half its patience.
    pub fn seen_still(&self) -> Duration {
        SEEN_STILL.max(self.patience() / 2)
    }

    /// Whether a process that has seen it make no progress for `still_for`
    /// may finish it, at `now_ms` by that process's clock: after its
    /// patience, or once it looks stalled by that clock and was seen still
    /// for [`PendingChange::seen_still`].
    pub fn stalled(&self, still_for: Duration, now_ms: u64) -> bool {
        still_for >= self.patience() || (self.stalled_at(now_ms) && still_for >= self.seen_still())
    }
}

/// Two maps are equal when their `striped` fields say the same: the
/// document's own fields are its kind's, whose reader compares them.
impl PartialEq for StripeMap {
    fn eq(&self, other: &Self) -> bool {
        self.to_document() == other.to_document()
            && self.live == other.live
            && self.incarnation == other.incarnation
    }
}

impl Eq for StripeMap {}

impl StripeMap {
    /// Whether its lanes span deployments.
    pub fn spans_deployments(&self) -> bool {
        !self.spans.is_empty()
    }

    /// The deployment of lane `residue` (none: the map's own).
    pub fn deployment_of(&self, residue: u64) -> Option<&str> {
        self.placement.get(residue as usize).map(String::as_str)
    }

    /// The generation's arithmetic.
    pub fn lanes_generation(&self) -> Generation {
        Generation {
            base: self.base,
            modulus: self.modulus,
        }
    }

    /// How far the generations before this one got: every (period,)
    /// value they handed out is at or below it.
    pub fn mark(&self) -> Mark {
        Mark {
            period: self.base_period.clone(),
            value: self.base,
        }
    }

    /// The live lanes, by residue (none while a change is under way).
    pub fn lanes(&self) -> Vec<Lane> {
        if self.live {
            self.lanes_generation().lanes().collect()
        } else {
            Vec::new()
        }
    }

    /// The generation in words, as `counter show` and the monitor say it.
    pub fn describe(&self) -> String {
        if !self.live {
            let to = match &self.change {
                Some(change) => format!(" to {}", change.to),
                None => String::new(),
            };
            return format!(
                "generation {}, a change of stripes{to} under way (no live lane; the next take \
                 finishes it, or `idmint counter stripes NAME --resume`)",
                self.generation
            );
        }
        let over = if self.spans_deployments() {
            let mut named: Vec<&str> = Vec::new();
            for deployment in &self.placement {
                if !named.contains(&deployment.as_str()) {
                    named.push(deployment);
                }
            }
            format!(" in {}", named.join(", "))
        } else {
            String::new()
        };
        let prefix = format!(
            "generation {}: {} lanes{over}",
            self.generation, self.modulus
        );
        let base_period = self.base_period.as_deref();
        let rest = match kinds::lanes(&self.kind) {
            Some(lanes) => lanes.describe_generation(self.base, base_period),
            None => values_above(self.base, base_period),
        };
        format!("{prefix}{rest}")
    }

    /// Reads the `striped` field of `document`, a map whose own fields
    /// say what its lanes are made of (a kind that can be striped: its
    /// reader's fields), or says what is wrong.
    pub fn read(document: &Document) -> Result<Self, String> {
        Self::read_with(document, |kind, document| match kinds::lanes(kind) {
            Some(lanes) => lanes.of(document).map(drop),
            None => Ok(()),
        })
    }

    /// The map of generation `generation` of lanes made of `of`, live.
    pub fn live(of: &LaneOf, generation: u64, lanes: Generation) -> Self {
        StripeMap {
            kind: of.kind().to_string(),
            generation,
            base: lanes.base,
            base_period: None,
            modulus: lanes.modulus,
            live: true,
            placement: Vec::new(),
            spans: Vec::new(),
            here: None,
            change: None,
            bounded: false,
            incarnation: None,
            fields: of.map_fields(&Mark::of(lanes.base)),
        }
    }

    /// What its lanes are made of, read from its own fields; none for a
    /// kind that cannot be striped or fields that say nothing of it.
    pub(crate) fn lanes_of(&self) -> Option<LaneOf> {
        kinds::lanes(&self.kind)?.of(&self.fields).ok()
    }

    /// Reads the `striped` field of `document`, or says what is wrong;
    /// `lanes` checks, given the lanes' kind, that the document's own
    /// fields say what they are made of ([`StripeMap::read`]).
    pub(crate) fn read_with(
        document: &Document,
        lanes: impl FnOnce(&str, &Document) -> Result<(), String>,
    ) -> Result<Self, String> {
        let striped = read_document(document, "striped")?;
        let incarnation = Incarnation::read(document)?;
        let within = |reason: String| format!("striped.{reason}");
        let kind = read_string(striped, "kind").map_err(within)?.to_string();
        let generation = read_integer(striped, "generation", 0, MAX_VALUE).map_err(within)?;
        let base = read_integer(striped, "base", 0, MAX_VALUE).map_err(within)?;
        lanes(&kind, document)?;
        let base_period = match striped.get("base_period") {
            None => None,
            Some(Bson::String(label)) if label.is_empty() => None,
            Some(Bson::String(label)) => Some(label.clone()),
            Some(other) => {
                return Err(format!(
                    "striped.base_period is {}, not a string",
                    describe_value(other)
                ))
            }
        };
        let modulus = read_integer(striped, "modulus", 1, MAX_LANES).map_err(within)?;
        Generation::new(base, modulus).map_err(|error| format!("striped: {error}"))?;
        let lanes = read_array(striped, "lanes").map_err(within)?;
        let live = !lanes.is_empty();
        let mut placement = Vec::new();
        if live && generation == 0 {
            return Err("striped.lanes lists lanes of generation 0, which has none".to_string());
        }
        if live && lanes.len() as u64 != modulus {
            return Err(format!(
                "striped.lanes lists {} lanes, not the {modulus} of its modulus",
                lanes.len()
            ));
        }
        for (index, lane) in lanes.iter().enumerate() {
            let Bson::Document(lane) = lane else {
                return Err(format!(
                    "striped.lanes holds {}, not only documents",
                    describe_value(lane)
                ));
            };
            let residue = read_integer(lane, "residue", 0, MAX_LANES)
                .map_err(|reason| format!("striped.lanes.{index}.{reason}"))?;
            if residue != index as u64 {
                return Err(format!(
                    "striped.lanes.{index}.residue is {residue}, not {index}"
                ));
            }
            match lane.get("deployment") {
                None => {}
                Some(Bson::String(name)) => {
                    check_deployment_name(name)
                        .map_err(|reason| format!("striped.lanes.{index}.deployment: {reason}"))?;
                    placement.push(name.clone());
                }
                Some(other) => {
                    return Err(format!(
                        "striped.lanes.{index}.deployment is {}, not a string",
                        describe_value(other)
                    ))
                }
            }
        }
        let spans = read_names(striped, "spans")?;
        let here = match striped.get("here") {
            None => None,
            Some(Bson::String(name)) => Some(name.clone()),
            Some(other) => {
                return Err(format!(
                    "striped.here is {}, not a string",
                    describe_value(other)
                ))
            }
        };
        if !placement.is_empty() && placement.len() != lanes.len() {
            return Err("striped.lanes names the deployment of some lanes only".to_string());
        }
        if let Some(stray) = placement
            .iter()
            .chain(&here)
            .find(|name| !spans.contains(name))
        {
            return Err(format!(
                "striped names deployment {stray:?}, which striped.spans does not list"
            ));
        }
        if spans.is_empty() != here.is_none() {
            return Err("striped.spans and striped.here go together".to_string());
        }
        let change = read_change(striped)?.filter(|_| !live);
        let bounded = match striped.get("bounded") {
            None => false,
            Some(Bson::Boolean(bounded)) => *bounded,
            Some(other) => {
                return Err(format!(
                    "striped.bounded is {}, not a boolean",
                    describe_value(other)
                ))
            }
        };
        Ok(StripeMap {
            kind,
            generation,
            base,
            base_period,
            modulus,
            live,
            placement,
            spans,
            here,
            change,
            bounded,
            incarnation,
            fields: document.clone(),
        })
    }

    /// The `striped` field that says this map.
    pub(crate) fn to_document(&self) -> Document {
        let lanes: Vec<Bson> = self
            .lanes()
            .iter()
            .map(|lane| {
                let mut entry = doc! { "residue": lane.residue() as i64 };
                if let Some(deployment) = self.deployment_of(lane.residue()) {
                    entry.insert("deployment", deployment);
                }
                Bson::Document(entry)
            })
            .collect();
        let mut document = doc! {
            "kind": &self.kind,
            "generation": self.generation as i64,
            "base": self.base as i64,
            "modulus": self.modulus as i64,
            "lanes": lanes,
        };
        if let Some(period) = &self.base_period {
            document.insert("base_period", period);
        }
        if let Some(here) = &self.here {
            document.insert("spans", &self.spans);
            document.insert("here", here);
        }
        if self.bounded {
            document.insert("bounded", true);
        }
        if let Some(change) = self.change.as_ref().filter(|_| !self.live) {
            document.insert("to", change.to.to_string());
            document.insert(
                "since",
                mongodb::bson::DateTime::from_millis(change.since_ms as i64),
            );
            if let Some(patience_ms) = change.patience_ms {
                document.insert("patience_ms", patience_ms as i64);
            }
        }
        document
    }

    /// The highest ceiling this copy records for the lanes of deployment
    /// `deployment` ([`CEILINGS`]; none: none recorded, or not a number).
    pub fn recorded_ceiling(&self, deployment: &str) -> Option<u64> {
        let ceilings = self.fields.get_document(CEILINGS).ok()?;
        match ceilings.get(deployment)? {
            Bson::Int64(value) => u64::try_from(*value).ok(),
            Bson::Int32(value) => u64::try_from(*value).ok(),
            _ => None,
        }
    }

    /// The latest period this copy records for the lanes of deployment
    /// `deployment` ([`CEILING_PERIODS`]; none: none recorded, or empty).
    pub fn recorded_ceiling_period(&self, deployment: &str) -> Option<String> {
        let periods = self.fields.get_document(CEILING_PERIODS).ok()?;
        periods
            .get_str(deployment)
            .ok()
            .filter(|label| !label.is_empty())
            .map(str::to_string)
    }

    /// The same map as the copy in deployment `here` holds it.
    pub(crate) fn copy_in(&self, here: &str) -> Self {
        StripeMap {
            here: Some(here.to_string()),
            ..self.clone()
        }
    }
}

/// Reads the map of striped counter `name` from its document.
pub(crate) fn read_map(
    name: &CounterName,
    document: &Document,
) -> Result<StripeMap, SequenceError> {
    match document.get("kind") {
        Some(mongodb::bson::Bson::String(kind)) if kind == STRIPED_KIND => {}
        other => {
            let found = other.map_or_else(|| "missing".to_string(), describe_value);
            return Err(striping(
                name,
                StripingError::CorruptMap(format!("kind is {found}, no longer {STRIPED_KIND:?}")),
            ));
        }
    }
    StripeMap::read(document).map_err(|reason| striping(name, StripingError::CorruptMap(reason)))
}

/// Reads the change under way a claimed map records (`to`, `since`), if
/// it records one.
fn read_change(striped: &Document) -> Result<Option<PendingChange>, String> {
    let to = match striped.get("to") {
        None => return Ok(None),
        Some(Bson::String(text)) => text
            .parse::<Layout>()
            .map_err(|reason| format!("striped.to {text:?}: {reason}"))?,
        Some(other) => {
            return Err(format!(
                "striped.to is {}, not a string",
                describe_value(other)
            ))
        }
    };
    let since_ms = match striped.get("since") {
        Some(Bson::DateTime(at)) => at.timestamp_millis().max(0) as u64,
        Some(other) => {
            return Err(format!(
                "striped.since is {}, not a date",
                describe_value(other)
            ))
        }
        None => return Err("striped.to is set but striped.since is missing".to_string()),
    };
    let patience_ms = match striped.get("patience_ms") {
        None => None,
        Some(Bson::Int64(ms)) if *ms >= 0 => Some(*ms as u64),
        Some(Bson::Int32(ms)) if *ms >= 0 => Some(*ms as u64),
        Some(other) => {
            return Err(format!(
                "striped.patience_ms is {}, not a count of milliseconds",
                describe_value(other)
            ))
        }
    };
    Ok(Some(PendingChange {
        to,
        since_ms,
        patience_ms,
    }))
}

/// Reads the optional list of deployment names `key` of `striped`.
fn read_names(striped: &Document, key: &str) -> Result<Vec<String>, String> {
    match striped.get(key) {
        None => Ok(Vec::new()),
        Some(Bson::Array(names)) => names
            .iter()
            .enumerate()
            .map(|(index, name)| match name {
                Bson::String(name) => check_deployment_name(name)
                    .map(|()| name.clone())
                    .map_err(|reason| format!("striped.{key}.{index}: {reason}")),
                other => Err(format!(
                    "striped.{key}.{index} is {}, not a string",
                    describe_value(other)
                )),
            })
            .collect(),
        Some(other) => Err(format!(
            "striped.{key} is {}, not an array",
            describe_value(other)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sequence::striping::lane::lanes_of;

    fn map_document(striped: Document) -> Document {
        doc! { "_id": "orders", "kind": STRIPED_KIND, "seq": 5, "striped": striped }
    }

    #[test]
    fn reads_back_what_it_writes() {
        let map = StripeMap::live(
            &lanes_of("autoinc", &doc! {}).unwrap(),
            3,
            Generation::new(41, 4).unwrap(),
        );
        let read = StripeMap::read(&map_document(map.to_document())).unwrap();
        assert_eq!(read, map);
        assert_eq!(read.lanes().len(), 4);
        let changing = StripeMap {
            live: false,
            ..map.clone()
        };
        let read = StripeMap::read(&map_document(changing.to_document())).unwrap();
        assert!(!read.live && read.lanes().is_empty());
    }

    fn change(since_ms: u64, patience_ms: Option<u64>) -> PendingChange {
        PendingChange {
            to: "3".parse().unwrap(),
            since_ms,
            patience_ms,
        }
    }

    #[test]
    fn a_claimed_map_reads_back_its_change_and_patience() {
        let map = StripeMap::live(
            &lanes_of("autoinc", &doc! {}).unwrap(),
            3,
            Generation::new(41, 4).unwrap(),
        );
        for patience_ms in [None, Some(12_000)] {
            let claimed = StripeMap {
                live: false,
                change: Some(change(1_000, patience_ms)),
                ..map.clone()
            };
            let read = StripeMap::read(&map_document(claimed.to_document())).unwrap();
            assert_eq!(read.change, claimed.change);
        }
        let mut document = map_document(
            StripeMap {
                live: false,
                change: Some(change(1_000, None)),
                ..map
            }
            .to_document(),
        );
        document
            .get_document_mut("striped")
            .unwrap()
            .insert("patience_ms", "soon");
        let refused = StripeMap::read(&document).unwrap_err();
        assert!(refused.contains("striped.patience_ms is"), "{refused}");
    }

    #[test]
    fn a_change_that_asks_for_patience_is_given_it_within_bounds() {
        let s = Duration::from_secs;
        // Quick writes (or none said): RESUME_AFTER, 10 s by the clock.
        let quick = change(0, None);
        assert_eq!(quick.patience(), RESUME_AFTER);
        assert!(!quick.stalled(s(4), 0) && quick.stalled(s(5), 0));
        assert!(!quick.stalled(s(3), 9_999) && quick.stalled(s(3), 10_000));
        assert!(!quick.stalled(Duration::from_millis(2_400), 60_000));
        // Slow writes: 12 s, 24 s by the clock, seen still for 6 s.
        let slow = change(0, Some(12_000));
        assert_eq!(slow.patience(), s(12));
        assert!(!slow.stalled(s(11), 0) && slow.stalled(s(12), 0));
        assert!(!slow.stalled(s(7), 23_999) && slow.stalled(s(6), 24_000));
        assert!(!slow.stalled(s(5), 60_000));
        // Bounded both ways.
        assert_eq!(change(0, Some(1)).patience(), RESUME_AFTER);
        assert_eq!(change(0, Some(3_600_000)).patience(), LONGEST_PATIENCE);
    }

    #[test]
    fn the_registry_reads_a_map_as_its_lanes_kind_and_says_its_generation() {
        let map = StripeMap::live(
            &lanes_of("autoinc", &doc! {}).unwrap(),
            2,
            Generation::new(41, 4).unwrap(),
        );
        let mut document = map_document(map.to_document());
        document.insert("prefixes", Vec::<String>::new());
        let name = crate::sequence::CounterName::new("orders").unwrap();
        let state = crate::sequence::CounterState::from_document(&name, &document).unwrap();
        assert_eq!(state.kind(), crate::sequence::CounterKind::Autoinc);
        assert_eq!(state.striped, Some(map));
        let facts = state.facts(0);
        assert_eq!(facts.len(), 1);
        assert_eq!(
            (facts[0].label, facts[0].text.as_str()),
            (
                "striped",
                "generation 2: 4 lanes, values above 41 (unique, not increasing)"
            )
        );
        // Its own `seq` is as at its last change: no headroom from it.
        assert_eq!(state.headroom(0), None);
        // A kind's own reader refuses it.
        let refused = crate::sequence::counter::document::read::<
            crate::sequence::kinds::autoinc::AutoincKind,
        >(&name, &document)
        .unwrap_err();
        assert!(
            matches!(refused, crate::sequence::SequenceError::Striped { .. }),
            "{refused}"
        );
    }

    #[test]
    fn a_copy_of_a_map_across_deployments_reads_back_and_says_where_its_lanes_are() {
        let mut map = StripeMap::live(
            &lanes_of("autoinc", &doc! {}).unwrap(),
            2,
            Generation::new(7, 3).unwrap(),
        );
        map.placement = vec!["eu".into(), "eu".into(), "us".into()];
        map.spans = vec!["eu".into(), "us".into()];
        let copy = map.copy_in("us");
        let read = StripeMap::read(&map_document(copy.to_document())).unwrap();
        assert_eq!(read, copy);
        assert_eq!(read.deployment_of(2), Some("us"));
        assert!(
            read.describe().contains("3 lanes in eu, us"),
            "{}",
            read.describe()
        );
        // A copy claimed by a change keeps where the counter spans.
        let claimed = StripeMap {
            live: false,
            ..copy.clone()
        };
        let read = StripeMap::read(&map_document(claimed.to_document())).unwrap();
        assert_eq!((read.spans.len(), read.placement.len()), (2, 0));
        let mut stray = copy.to_document();
        stray.insert("spans", vec!["eu"]);
        let error = StripeMap::read(&map_document(stray)).unwrap_err();
        assert!(
            error.contains("which striped.spans does not list"),
            "{error}"
        );
    }

    #[test]
    fn names_what_is_wrong() {
        let good = || {
            StripeMap::live(
                &lanes_of("autoinc", &doc! {}).unwrap(),
                1,
                Generation::new(0, 2).unwrap(),
            )
            .to_document()
        };
        let with = |key: &str, value: Bson| {
            let mut striped = good();
            striped.insert(key, value);
            map_document(striped)
        };
        for (document, needle) in [
            (
                doc! { "kind": STRIPED_KIND },
                "striped is missing".to_string(),
            ),
            (
                with("modulus", Bson::Int64(0)),
                "striped.modulus is 0".into(),
            ),
            (
                with("modulus", Bson::Int64(3)),
                "lists 2 lanes, not the 3".into(),
            ),
            (with("kind", Bson::Int32(1)), "striped.kind is".into()),
            (
                with(
                    "lanes",
                    Bson::Array(vec![
                        Bson::Document(doc! {"residue": 1}),
                        Bson::Document(doc! {"residue": 0}),
                    ]),
                ),
                "striped.lanes.0.residue is 1, not 0".into(),
            ),
            (
                with("generation", Bson::Int64(0)),
                "generation 0, which has none".into(),
            ),
            (
                with("base", Bson::Int64(MAX_VALUE as i64)),
                "leaves a lane no value".into(),
            ),
        ] {
            let error = StripeMap::read(&document).unwrap_err();
            assert!(error.contains(&needle), "{document}: {error}");
        }
    }
}
