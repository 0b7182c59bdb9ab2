//! Why a striped counter, its map or one of its lanes cannot be used or
//! changed.

use super::limits::MAX_LANES;
use crate::error_class::ErrorClass;

/// Why a striped counter, its map or a lane cannot be used or changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StripingError {
    /// A modulus out of 1..=[`MAX_LANES`].
    #[error("a striped counter has 1 to {MAX_LANES} lanes, not {0}")]
    Modulus(u64),
    /// A residue not below the modulus.
    #[error("lane {residue} does not exist in a generation of {modulus} lanes")]
    Residue {
        /// The residue asked for.
        residue: u64,
        /// The generation's modulus.
        modulus: u64,
    },
    /// A base that leaves a lane no value up to
    /// [`MAX_VALUE`](crate::sequence::MAX_VALUE).
    #[error(
        "a generation based at {base} with {modulus} lanes leaves a lane no value up to 2^53 - 1"
    )]
    Exhausted {
        /// The base.
        base: u64,
        /// The modulus.
        modulus: u64,
    },
    /// The counter's map (`striped`) is malformed.
    #[error("its stripe map is corrupt: {0}; it was left unchanged")]
    CorruptMap(String),
    /// A lane document is malformed.
    #[error("lane '{lane}' is corrupt: {reason}; it was left unchanged")]
    CorruptLane {
        /// The lane's `_id`.
        lane: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A lane the map names is missing, or of another generation than the
    /// map's (a change of stripes stopped half way).
    #[error(
        "lane '{lane}' of generation {generation} is missing or of another generation; \
         a change of stripes may have stopped half way: run `idmint counter stripes` again"
    )]
    LaneMissing {
        /// The lane's `_id`.
        lane: String,
        /// The generation the map names.
        generation: u64,
    },
    /// A lane was read as a counter: it is taken from through its
    /// counter only.
    #[error("it is a lane of a striped counter, taken from through that counter only; it was left unchanged")]
    Lane,
    /// The lanes' kind cannot be striped (yet).
    #[error(
        "{kind} counters cannot be striped (autoinc, segment, cyclic, periodic and snowflake \
         ones can)"
    )]
    NotStripable {
        /// The counter's kind.
        kind: String,
    },
    /// More lanes than a cyclic counter's cycle has values: a lane would
    /// have none.
    #[error(
        "a cyclic counter of maxval {maxval} has at most {most} lanes, one per value of its \
         cycle 0..={maxval}, not {lanes}"
    )]
    CycleTooShort {
        /// The counter's maxval.
        maxval: u64,
        /// The most lanes it can have.
        most: u64,
        /// The lanes asked for.
        lanes: u64,
    },
    /// A snowflake counter gets at most one lane per worker id.
    #[error(
        "a snowflake counter of {worker_bits} worker bits has at most {most} lanes, one per \
         worker id, not {lanes}"
    )]
    TooFewWorkers {
        /// The counter's worker bits.
        worker_bits: u32,
        /// The most lanes it can have.
        most: u64,
        /// The lanes asked for.
        lanes: u64,
    },
    /// Every lane a take tried was sealed or missing, and the map did not
    /// move on: a change of stripes is under way or stopped half way.
    #[error(
        "no live lane after {attempts} tries: a change of stripes is under way or stopped \
         half way (the next take finishes it once every deployment it needs answers; `idmint \
         counter stripes NAME --resume` does it by hand); nothing was taken"
    )]
    Changing {
        /// How many lanes were tried.
        attempts: u32,
    },
    /// The map has no live lane: a change of stripes claimed its
    /// generation and has not finished (or stopped half way).
    #[error(
        "generation {generation} has no live lane yet: a change of stripes is under way or \
         stopped half way (the next take finishes it once every deployment it needs answers; \
         `idmint counter stripes NAME --resume` does it by hand)"
    )]
    NoLiveLane {
        /// The generation the change claimed.
        generation: u64,
    },
    /// Its lanes span deployments and this process was given none of them
    /// by name.
    #[error(
        "its lanes span deployments {}: name them (--uri NAME=URI, or MONGODB_URIS) to take from it",
        spans.join(", ")
    )]
    DeploymentsNotGiven {
        /// The deployments it spans.
        spans: Vec<String>,
    },
    /// No deployment holding a live lane answered a take within its
    /// deadline.
    #[error(
        "no deployment answered within the deadline of {deadline_ms} ms ({}); deployments given \
         that hold its lanes: {}; no value was handed out",
        if failures.is_empty() { "none tried".to_string() } else { failures.join("; ") },
        if given.is_empty() { "none".to_string() } else { given.join(", ") }
    )]
    Unreachable {
        /// The deadline of the take.
        deadline_ms: u64,
        /// The deployments given that hold lanes.
        given: Vec<String>,
        /// Each try that failed: its deployment and why.
        failures: Vec<String>,
    },
    /// A change of stripes needs a deployment this process was not given.
    #[error(
        "a change of its stripes needs deployment {deployment:?} ({why}): give it with \
         --uri {deployment}=URI; nothing was changed"
    )]
    DeploymentNotGiven {
        /// The deployment.
        deployment: String,
        /// Why the change needs it.
        why: &'static str,
    },
    /// A change of stripes could not reach a deployment it needs.
    #[error(
        "deployment {deployment:?} did not answer ({reason}): a change of stripes needs every \
         deployment its lanes are in; nothing was changed: run it again once the deployment \
         is back"
    )]
    DeploymentUnreachable {
        /// The deployment.
        deployment: String,
        /// What failed.
        reason: String,
    },
    /// Another counter of its name is in a deployment it would span.
    #[error(
        "deployment {deployment:?} holds another counter of its name (kind {kind}); nothing was \
         changed there"
    )]
    NameTaken {
        /// The deployment.
        deployment: String,
        /// The kind of the counter there.
        kind: String,
    },
    /// A deployment holds a striped counter of the name that is not this
    /// counter: another incarnation (made on its own there, or made again
    /// since), or a copy that does not say it spans this counter's home.
    #[error(
        "deployment {deployment:?} holds another counter of its name ({why}); it is not a copy \
         of this counter's map, and nothing was changed"
    )]
    OtherCounter {
        /// The deployment.
        deployment: String,
        /// How it differs.
        why: String,
    },
    /// The counter this handle opened was deleted and made again under its
    /// name: the one there now is another counter.
    #[error(
        "the counter was made again since it was opened (incarnation {found}, not {opened}): \
         open it again"
    )]
    Replaced {
        /// The incarnation the handle opened, as said in messages.
        opened: String,
        /// The one there now.
        found: String,
    },
    /// A counter across deployments has a copy of its prefixes in each:
    /// they are not changed there yet.
    #[error(
        "its lanes span deployments {}: its prefixes cannot be changed yet (each deployment \
         keeps a copy, set when it was striped across them); nothing was changed",
        spans.join(", ")
    )]
    PrefixesAcrossDeployments {
        /// The deployments it spans.
        spans: Vec<String>,
    },
    /// A prefix of the counter is another counter's, or retired, in a
    /// deployment the counter would span.
    #[error(
        "in deployment {deployment:?}: {reason}; a counter across deployments owns its prefixes \
         in each, so nothing was changed"
    )]
    PrefixInDeployment {
        /// The deployment.
        deployment: String,
        /// What its history of prefixes says.
        reason: String,
    },
    /// Another counter of a deployment a snowflake counter would span has
    /// its tag: their standard IDs could meet.
    #[error(
        "in deployment {deployment:?}: counter '{owner}' has tag {tag}, this counter's: the \
         standard IDs of two counters with one tag could meet, so nothing was changed there"
    )]
    TagInDeployment {
        /// The deployment.
        deployment: String,
        /// The tag.
        tag: u32,
        /// The counter that has it there.
        owner: String,
    },
    /// A layout of stripes that cannot be read.
    #[error("{0}")]
    Layout(String),
    /// Another change of the stripes ran at the same time and won.
    #[error(
        "another change of its stripes ran at the same time; nothing more was changed, try again"
    )]
    Concurrent,
    /// A change of stripes failed after it had claimed the counter: it is
    /// half way, and the counter has no live lane until it is finished.
    #[error(
        "the change of stripes to {to} stopped half way: {reason}; until it is finished the \
         counter has no live lane: the next take finishes it once every deployment it needs \
         answers, or `idmint counter stripes NAME --resume`"
    )]
    StoppedHalfWay {
        /// The layout it makes.
        to: String,
        /// The generation it claimed.
        generation: u64,
        /// What stopped it.
        reason: String,
    },
    /// A lane is at its ceiling and no other deployment of the counter
    /// recorded a higher one (a counter in one deployment whose lane has
    /// one: nothing raises it).
    #[error(
        "lane {lane} is at its ceiling {ceiling}: it is raised only once another deployment of \
         the counter has recorded a higher one; nothing was taken"
    )]
    AtCeiling {
        /// The lane's `_id`.
        lane: String,
        /// Its ceiling.
        ceiling: u64,
    },
    /// A lane is at its ceiling and it could not be raised (no other
    /// deployment recorded a higher one).
    #[error("lane {lane} is at its ceiling {ceiling}, not raised: {why}; nothing was taken")]
    CeilingNotRaised {
        /// The lane's `_id`.
        lane: String,
        /// Its ceiling.
        ceiling: u64,
        /// Why it was not raised.
        why: String,
    },
    /// `--forget DEPLOYMENT` of a deployment that answers: it is not lost.
    #[error(
        "deployment {deployment:?} answers: a deployment that answers is not lost, and its lanes \
         may still hand out values; retire it with `--set` (a layout without it) instead; \
         nothing was changed"
    )]
    NotLost {
        /// The deployment.
        deployment: String,
    },
    /// `--forget DEPLOYMENT` of a counter whose lanes there hand out values
    /// no ceiling bounds.
    #[error("cannot forget deployment {deployment:?}: {why}; nothing was changed")]
    Unbounded {
        /// The deployment.
        deployment: String,
        /// Why nothing bounds what its lanes handed out.
        why: String,
    },
    /// A snowflake counter's worker id is held by a process that does not
    /// record its reservations in the counter (an idmint before gates):
    /// nothing bounds the time it may issue, so no lane may start above it.
    #[error(
        "worker id {worker} is leased by {host} (pid {pid}) until {expires}, an idmint that \
         does not record its time in the counter (before gates): stop it, or wait until its \
         lease has lapsed, then change the stripes; nothing was changed"
    )]
    UngatedHolder {
        /// The worker id.
        worker: u64,
        /// Its holder's host.
        host: String,
        /// Its holder's process id.
        pid: u64,
        /// When its lease lapses, RFC 3339.
        expires: String,
    },
    /// `--resume` of a change claimed by an idmint that did not record
    /// what it makes.
    #[error(
        "generation {generation} has no live lane, and the change that claimed it did not record \
         its layout (an earlier idmint): run `idmint counter stripes NAME --set LAYOUT` again"
    )]
    NoRecordedChange {
        /// The generation the change claimed.
        generation: u64,
    },
}

impl StripingError {
    /// The class of the failure.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::Modulus(_)
            | Self::Residue { .. }
            | Self::NotStripable { .. }
            | Self::CycleTooShort { .. }
            | Self::TooFewWorkers { .. }
            | Self::DeploymentsNotGiven { .. }
            | Self::DeploymentNotGiven { .. }
            | Self::Layout(_) => ErrorClass::BadInput,
            Self::Unreachable { .. }
            | Self::DeploymentUnreachable { .. }
            | Self::StoppedHalfWay { .. } => ErrorClass::Unavailable,
            Self::NameTaken { .. }
            | Self::OtherCounter { .. }
            | Self::Replaced { .. }
            | Self::PrefixesAcrossDeployments { .. }
            | Self::PrefixInDeployment { .. }
            | Self::TagInDeployment { .. } => ErrorClass::Conflict,
            Self::Exhausted { .. } => ErrorClass::Exhausted,
            Self::Changing { .. } | Self::NoLiveLane { .. } => ErrorClass::Unavailable,
            Self::CorruptMap(_)
            | Self::CorruptLane { .. }
            | Self::LaneMissing { .. }
            | Self::Lane
            | Self::Concurrent
            | Self::UngatedHolder { .. }
            | Self::NoRecordedChange { .. }
            | Self::NotLost { .. }
            | Self::Unbounded { .. } => ErrorClass::Conflict,
            Self::AtCeiling { .. } | Self::CeilingNotRaised { .. } => ErrorClass::Unavailable,
        }
    }
}
