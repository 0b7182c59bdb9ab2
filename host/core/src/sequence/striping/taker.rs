//! Taking from a striped counter: a handle that holds the counter's map and
//! takes each block from one of its lanes, in one `findAndModify` whose
//! filter holds only for a live lane ([`lane::take_command`]; once the
//! handle has taken from the lane, the short guard of [`KnownLane`]).
//!
//! In one deployment the lanes are taken in turn from a random first one
//! (so that processes spread over them). Across deployments
//! ([`Deployments`]) a take goes to a lane of the preferred deployment, else
//! of a healthy one chosen at random, else of the one set aside the
//! shortest; within a deployment, to its lanes in turn. A try that fails
//! (a database error) or does not answer within its share of the take's
//! deadline (what is left of it, shared among the deployments not tried
//! yet) sets its deployment aside and the take moves on to another; one
//! that has not answered after [`HEDGE_AFTER`] has a lane of another
//! deployment asked too, the first answer with values winning; past the
//! deadline the take fails with [`StripingError::Unreachable`]. A try
//! given up on may still be applied by its server: its values are then
//! lost (a gap), never handed out twice.
//!
//! A take that finds its lane sealed or gone (a change of stripes sealed
//! it) reads the map again and takes from a lane of the generation it
//! names; while the map has no live lane (a change under way), it reads it
//! again after a short pause, up to [`ATTEMPTS`] times, and then fails
//! with [`StripingError::Changing`], having taken nothing.

use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mongodb::bson::{doc, Document};
use mongodb::options::{ReturnDocument, WriteConcern};
use mongodb::Database;

use super::arithmetic::lane_id;
use super::buffer::{Buffer, Run};
use super::ceilings::{CeilingOf, Ceilings};
use super::counting;
use super::deadline::{within, SHORTEST_TRY};
use super::deployments::Deployments;
use super::error::StripingError;
use super::hooks::{self, Point};
use super::lane::{self, corrupt_lane, KnownLane, LaneDocument};
use super::leased::{Holder, Leased};
use super::map::{read_map, StripeMap};
use super::restripe::{latest_copy, resume_change};
use crate::mongo::collections::COUNTERS;
use crate::mongo::{describe_error, durable_write_concern};
use crate::parts::{Stamp, Stamps};
use crate::sequence::clock::{Clock, SystemClock};
use crate::sequence::error::striping;
use crate::sequence::error::SequenceError;
use crate::sequence::identity::Incarnation;
use crate::sequence::kind_trait::{ClientTime, GiveBack, MAX_VALUE};
use crate::sequence::lane_kind::{LaneOf, LiveLane, Takes};
use crate::sequence::name::CounterName;

/// How many lanes a take tries before it gives up.
pub const ATTEMPTS: u32 = 64;

/// The longest pause between two reads of a map that has no live lane.
const LONGEST_PAUSE: Duration = Duration::from_millis(100);

/// How long a take with no deadline (one deployment) waits for a change
/// of stripes half way before it fails: long enough for this handle to
/// finish it.
const CHANGE_PATIENCE: Duration = Duration::from_secs(15);

/// How long [`StripedCounter::close`] lets a try of its handle to finish a
/// change of stripes end before it returns.
pub const FINISH_ON_CLOSE: Duration = Duration::from_secs(30);

/// The shortest time between two tries of one handle to finish a change.
const RESUME_EVERY: Duration = Duration::from_millis(250);

/// How long [`StripedCounter::close`] waits for the give-back of a run
/// before it fails (the values are then a gap).
const GIVE_BACK_WITHIN: Duration = Duration::from_secs(10);

/// How long a try across deployments goes unanswered before a lane of
/// another deployment is asked too.
pub const HEDGE_AFTER: Duration = Duration::from_millis(250);

/// An opened striped counter (see the module docs). Cheap to clone: clones
/// share the map and the turn.
#[derive(Debug, Clone)]
pub struct StripedCounter {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The database its map was read from.
    home: Database,
    /// The deployments it may span (none: only `home`).
    deployments: Option<Deployments>,
    name: CounterName,
    map: Mutex<StripeMap>,
    /// Whether `map` spans deployments, kept with it ([`StripedCounter::keep_map`]):
    /// read by every take without the map's lock, which takers on every
    /// core would otherwise contend for.
    map_spans: AtomicBool,
    /// The counter's identity, read from the map when it was opened: a
    /// map or lane of another incarnation is another counter's.
    incarnation: Option<Incarnation>,
    /// What its lanes are made of, read from the map when it was opened
    /// (its kind's fields that say it do not change with the stripes).
    lanes_of: Arc<LaneOf>,
    turn: AtomicU64,
    write_concern: WriteConcern,
    /// How its takes are made: its lanes' kind says.
    taking: Taking,
    /// What its last take of each lane learnt (the short guard), by `_id`.
    known: Mutex<HashMap<String, KnownLane>>,
    /// What it saw of a change of stripes half way, to finish it.
    stall: Mutex<Option<Stall>>,
    /// Its try to finish such a change, under way in the background:
    /// [`StripedCounter::close`] lets it end (a process that exits
    /// mid-try would leave the change claimed further and still half way).
    finishing: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The lanes whose ceiling it is raising ahead of need, by `_id`.
    raising: Mutex<std::collections::HashSet<String>>,
}

/// A change of stripes a handle found half way: the generation it claimed,
/// since when the handle has seen it so, and when the handle last tried to
/// finish it (one try at a time).
#[derive(Debug)]
struct Stall {
    generation: u64,
    /// When the change last said it made progress (its claim's `since`):
    /// a change that does is not stalled.
    progress_ms: u64,
    seen_since: Instant,
    tried_at: Option<Instant>,
    trying: bool,
}

/// How a handle takes ([`Takes`]): what it holds for that.
#[derive(Debug)]
enum Taking {
    /// Each take from one lane.
    Values,
    /// A run of a lane's values, handed out from memory.
    Buffered(Box<Buffer>),
    /// From a lease held in one lane.
    Leased(Leased),
}

/// Where one try goes: a lane, and the deployment holding it.
#[derive(Clone)]
struct Target {
    residue: u64,
    /// The deployment's name (none: the map's own, which spans no other).
    deployment: Option<String>,
    database: Database,
}

/// What a take that matched nothing found.
enum Unmatched {
    /// The lane is sealed, gone or changed: the map was read again.
    Moved,
    /// The lane was at its ceiling, which was raised.
    Raised,
    /// The lane is at its ceiling, and it could not be raised: why.
    NotRaised(String),
}

/// How one try ended.
enum Tried {
    /// The lane after the take.
    Taken(LaneDocument),
    /// The lane refused it (sealed, gone, changed).
    Refused,
    /// The deployment failed it or did not answer in time.
    Failed(String),
}

impl StripedCounter {
    /// Opens counter `name` whose map was read from `database` as `map`;
    /// a map whose lanes span deployments takes from those of
    /// `deployments` it names. Its lanes' kind says how its takes are made
    /// (`Takes`: a segment counter's ask a lane for its `step` values at
    /// least, handed out from memory; a snowflake counter's IDs come from
    /// a worker id leased in one of its lanes), with `options`, the kind's
    /// own open options (`OpenOptions`' field of the kind).
    pub fn open(
        database: &Database,
        name: CounterName,
        map: &StripeMap,
        deployments: Option<&Deployments>,
        options: &dyn Any,
    ) -> Result<Self, SequenceError> {
        let Some(of) = map.lanes_of() else {
            return Err(not_stripable(&name, map));
        };
        let taking = match of.takes(options, deployments) {
            Takes::Values => Taking::Values,
            Takes::Buffered(sizing) => Taking::Buffered(Box::new(Buffer::new(sizing))),
            Takes::Leased(leaser) => Taking::Leased(Leased::new(leaser)),
        };
        // A random first lane: processes that open the counter at once do
        // not all start on lane 0.
        let turn = getrandom::u64().unwrap_or(0) % map.modulus;
        Ok(Self {
            inner: Arc::new(Inner {
                home: database.clone(),
                deployments: deployments.cloned(),
                name,
                map: Mutex::new(map.clone()),
                map_spans: AtomicBool::new(map.spans_deployments()),
                incarnation: map.incarnation.clone(),
                lanes_of: Arc::new(of),
                turn: AtomicU64::new(turn),
                write_concern: durable_write_concern(),
                known: Mutex::new(HashMap::new()),
                taking,
                stall: Mutex::new(None),
                finishing: Mutex::new(None),
                raising: Mutex::new(std::collections::HashSet::new()),
            }),
        })
    }

    /// The counter's name.
    pub fn name(&self) -> &CounterName {
        &self.inner.name
    }

    /// Ends its use: its try to finish a change of stripes half way, if
    /// one is under way, is let end (for up to [`FINISH_ON_CLOSE`]); a
    /// lease it holds in a lane (a snowflake counter's worker id) is
    /// released; values it took and did not hand out (a segment
    /// counter's runs) are given back to their lanes where no take came
    /// since, and it hands out no more. Returns how many were given back.
    pub async fn close(&self) -> Result<GiveBack, SequenceError> {
        let finishing = self.inner.finishing.lock().unwrap().take();
        if let Some(finishing) = finishing {
            let _ = tokio::time::timeout(FINISH_ON_CLOSE, finishing).await;
        }
        match &self.inner.taking {
            Taking::Leased(leased) => leased.close().await.map(|()| GiveBack::default()),
            Taking::Values => Ok(GiveBack::default()),
            Taking::Buffered(buffer) => self.give_back(buffer).await,
        }
    }

    /// Closes `buffer` once no fetch is under way, and gives what it held
    /// back to its lanes ([`counting::give_back`]): each run while
    /// its lane took nothing since and is live.
    async fn give_back(&self, buffer: &Buffer) -> Result<GiveBack, SequenceError> {
        let runs = {
            let _fetching = buffer.fetching.lock().await;
            buffer.close()
        };
        let mut given = GiveBack::default();
        for run in runs {
            let id = lane_id(self.name(), run.lane.residue());
            let mut filter = lane::unsealed_in_place(&id, run.lane, run.generation);
            lane::of_counter(&mut filter, self.inner.incarnation.as_ref());
            let update = counting::give_back(&mut filter, run.lane, run.next, run.last);
            let lanes = run.database.collection::<Document>(COUNTERS);
            let write = lanes
                .update_one(filter, update)
                .write_concern(self.inner.write_concern.clone());
            let result = tokio::time::timeout(GIVE_BACK_WITHIN, write)
                .await
                .map_err(|_| SequenceError::Stalled {
                    name: self.name().clone(),
                    action: "give-back",
                    waited_ms: GIVE_BACK_WITHIN.as_millis() as u64,
                })?
                .map_err(|source| {
                    SequenceError::from_database(self.name(), "give back", "update", source)
                })?;
            if result.modified_count == 1 {
                given.values += run.left();
            }
        }
        Ok(given)
    }

    /// The database its map was read from.
    pub fn database(&self) -> Database {
        self.inner.home.clone()
    }

    /// The deployments it may span.
    pub fn deployments(&self) -> Option<&Deployments> {
        self.inner.deployments.as_ref()
    }

    /// The map as this handle last read it.
    pub fn map(&self) -> StripeMap {
        self.inner.map.lock().unwrap().clone()
    }

    /// Takes `count` values (1 to [`MAX_BLOCK`](crate::sequence::MAX_BLOCK))
    /// from one lane, in the order issued: an autoinc counter's each with
    /// `client_micros`, a cyclic counter's each with the timestamp its lane
    /// issued it with (never below `client_micros` nor below the lane's
    /// last).
    pub async fn take(&self, count: u64, client_micros: u64) -> Result<Vec<Stamp>, SequenceError> {
        match &self.inner.taking {
            Taking::Values => {
                let (after, _) = self.take_from_lane(count, client_micros).await?;
                Ok(after.taken(count, client_micros))
            }
            Taking::Buffered(buffer) => self.take_buffered(count, buffer, client_micros).await,
            Taking::Leased(leased) => self.take_leased(count, leased).await,
        }
    }

    /// `count` values from what this handle holds in memory, if it holds
    /// that many now (a buffered take's run), with no await; `None`
    /// otherwise, with nothing taken: [`StripedCounter::take`] then takes.
    pub fn take_held(&self, count: usize, client_micros: u64) -> Option<Stamps> {
        match &self.inner.taking {
            Taking::Buffered(buffer) => {
                let (stamps, prefetch) = buffer.take_held(count, client_micros);
                if let Some(size) = prefetch {
                    self.prefetch(buffer, size);
                }
                stamps
            }
            Taking::Values | Taking::Leased(_) => None,
        }
    }

    /// `count` values from the lane lease this handle holds, if it can
    /// issue them now (`None` otherwise, with nothing taken:
    /// [`StripedCounter::take`] then takes). Its one await yields only when
    /// the task has spent its budget, as [`StripedCounter::take`] does, so
    /// that a task taking in a loop lets the tasks it woke run.
    pub async fn take_leased_now(&self, count: usize) -> Option<Stamps> {
        let Taking::Leased(leased) = &self.inner.taking else {
            return None;
        };
        tokio::task::consume_budget().await;
        leased.held().as_ref()?.lease.take_held(count as u64)
    }

    /// Takes the next run of `size` values for `buffer` in the background
    /// (its [`Buffer::take_held`] said one is due). A fetch that fails is
    /// left to the next taker that runs out, which reports its error.
    fn prefetch(&self, buffer: &Buffer, size: u64) {
        // The fetch lock taken now, not in the task: a taker that runs out
        // before the task runs waits for its run instead of fetching too.
        // Held already: a taker is fetching, which is enough.
        let (Ok(runtime), Ok(fetching)) = (
            tokio::runtime::Handle::try_current(),
            buffer.fetching.clone().try_lock_owned(),
        ) else {
            buffer.prefetch_failed();
            return;
        };
        let handle = self.clone();
        runtime.spawn(async move {
            let _fetching = fetching;
            let Taking::Buffered(buffer) = &handle.inner.taking else {
                return;
            };
            if buffer.needs_no_prefetch() {
                buffer.prefetch_failed();
                return;
            }
            match handle.take_run(size, SystemClock.now_micros()).await {
                Ok(run) => buffer.fill(run, true),
                Err(_) => buffer.prefetch_failed(),
            }
        });
    }

    /// Takes a run of `size` local values of one lane.
    async fn take_run(&self, size: u64, client_micros: u64) -> Result<Run, SequenceError> {
        let (after, database) = self.take_from_lane(size, client_micros).await?;
        Ok(Run::taken(
            after.lane,
            after.generation,
            size,
            after.local_value(),
            database,
        ))
    }

    /// A buffered take (a segment counter's): from the values this handle
    /// took and has not handed out yet, then, once they are used up and no
    /// run taken in the background has landed, from a new run of one lane
    /// (one taker fetches, the others wait for it). See `buffer.rs`.
    async fn take_buffered(
        &self,
        count: u64,
        buffer: &Buffer,
        client_micros: u64,
    ) -> Result<Vec<Stamp>, SequenceError> {
        let count = count as usize;
        let mut taken = Vec::with_capacity(count);
        loop {
            if let Some(size) = buffer.hand_out(count, client_micros, &mut taken, self.name())? {
                self.prefetch(buffer, size);
            }
            if taken.len() == count {
                return Ok(taken);
            }
            let _fetching = buffer.fetching.lock().await;
            if buffer.any_left() {
                // Another taker (or the background) fetched meanwhile.
                continue;
            }
            let size = buffer.ask_now((count - taken.len()) as u64);
            let run = self.take_run(size, client_micros).await?;
            buffer.fill(run, false);
        }
    }

    /// A leased take (a snowflake counter's): `count` values from the
    /// lease this handle holds in one lane, in the order issued. When that
    /// lane is sealed by a change of stripes, its deployment fails, or its
    /// lease is lost, the handle lets the lease go and leases in another
    /// lane (a deployment that failed is set aside, as for values), within
    /// the take's deadline.
    async fn take_leased(&self, count: u64, leased: &Leased) -> Result<Vec<Stamp>, SequenceError> {
        // Values come from memory, with no await that waits: without this,
        // a task taking in a loop would never yield, and a task it woke
        // (one waiting for the lease being taken) could wait on its
        // worker's queue until the lease stalls.
        tokio::task::consume_budget().await;
        let deadline = self.take_deadline();
        let past = || deadline.is_some_and(|deadline| Instant::now() >= deadline);
        let mut pause = Duration::from_millis(1);
        let mut tried: Vec<String> = Vec::new();
        let mut failures: Vec<String> = Vec::new();
        let mut attempts = 0;
        while attempts < ATTEMPTS {
            attempts += 1;
            let loaded = leased.held();
            let leased_now;
            let holder = match loaded.as_ref() {
                Some(holder) => Some(holder),
                None => {
                    let _leasing = leased.leasing.lock().await;
                    leased_now = match leased.held().as_ref() {
                        // Another taker leased meanwhile.
                        Some(holder) => Some(holder.clone()),
                        None => self
                            .lease_a_lane(leased, &mut tried, &mut failures, deadline)
                            .await?
                            .map(|holder| leased.hold(holder)),
                    };
                    leased_now.as_ref()
                }
            };
            let Some(holder) = holder else {
                if past() {
                    return Err(self.given_up(&failures, deadline));
                }
                let map = self.map();
                if !map.live && self.waits_for_change(&map) {
                    // Not a try: the change may yet be finished.
                    attempts -= 1;
                }
                if self.untried(&self.map(), &tried) == 0 {
                    tried.clear();
                }
                self.pause(&mut pause, deadline).await;
                continue;
            };
            match holder.lease.take(count).await {
                Ok(values) => return Ok(values),
                Err(error) => {
                    leased.let_go(holder);
                    let sealed = matches!(error, SequenceError::Striped { .. });
                    if sealed {
                        // A change of stripes sealed the lane: the map moved on.
                        self.reload(deadline).await?;
                    } else {
                        self.set_aside(holder.deployment.as_deref(), &error, &mut failures);
                        if self.spanning().is_none() {
                            return Err(error);
                        }
                    }
                    if past() {
                        return Err(self.given_up(&failures, deadline));
                    }
                }
            }
        }
        Err(self.given_up(&failures, deadline))
    }

    /// The error of a leased take that got no lease: no live lane (a
    /// change of stripes under way, or stopped half way), or no deployment
    /// that leased one.
    fn given_up(&self, failures: &[String], deadline: Option<Instant>) -> SequenceError {
        let map = self.map();
        if !map.live {
            return self.changing(&map);
        }
        if failures.is_empty() {
            return striping(self.name(), StripingError::Changing { attempts: ATTEMPTS });
        }
        self.unreachable(failures, deadline)
    }

    /// Leases in a lane of the map as it is now, in a deployment not
    /// `tried` yet; none when this try failed (and was recorded) and the
    /// next one is to be made.
    async fn lease_a_lane(
        &self,
        leased: &Leased,
        tried: &mut Vec<String>,
        failures: &mut Vec<String>,
        deadline: Option<Instant>,
    ) -> Result<Option<Holder>, SequenceError> {
        let map = self.map();
        if !map.live {
            // The caller pauses, and says so when its time is up.
            self.finish_if_stalled(&map);
            self.reload(deadline).await?;
            return Ok(None);
        }
        let Some(Target {
            residue,
            deployment,
            database,
        }) = self.pick(&map, tried)?
        else {
            return Err(self.unreachable(failures, deadline));
        };
        // Live, and of the generation this map says: a holder under a map
        // read before a change issues above no floor but its own
        // generation's.
        let mut live = lane::live_lane(
            &lane_id(self.name(), residue),
            self.inner.lanes_of.lanes(),
            map.generation,
            map.base,
        );
        lane::of_counter(&mut live, map.incarnation.as_ref());
        // Across deployments, a lane written with a ceiling: the kind's
        // holder raises it, recording it elsewhere first.
        let ceiling = match (&deployment, self.ceilings()) {
            (Some(deployment), Some(ceilings)) if map.bounded => Some(ceilings.of_lane(
                map.spans.clone(),
                CeilingOf {
                    id: lane_id(self.name(), residue),
                    generation: map.generation,
                    deployment: deployment.clone(),
                    database: database.clone(),
                },
            )),
            _ => None,
        };
        let lane = LiveLane {
            live,
            residue,
            modulus: map.modulus,
            floor: map.base,
            ceiling,
        };
        let start = leased.leaser.lease(&database, self.name(), lane);
        let started = match deadline {
            None => start.await,
            Some(deadline) => match tokio::time::timeout_at(deadline.into(), start).await {
                Ok(started) => started,
                Err(_) => {
                    failures.push(format!(
                        "{}: no lease within the deadline",
                        deployment.as_deref().unwrap_or_default()
                    ));
                    return Ok(None);
                }
            },
        };
        match started {
            Ok(lease) => Ok(Some(Holder { lease, deployment })),
            // Sealed or of another generation: the map moved on.
            Err(SequenceError::Striped { .. }) => {
                self.reload(deadline).await?;
                Ok(None)
            }
            Err(error) if self.spanning().is_some() => {
                self.set_aside(deployment.as_deref(), &error, failures);
                Ok(None)
            }
            Err(error) => Err(error),
        }
    }

    /// Records that `deployment` failed with `error`, and sets it aside.
    fn set_aside(
        &self,
        deployment: Option<&str>,
        error: &SequenceError,
        failures: &mut Vec<String>,
    ) {
        let deployment = deployment.unwrap_or_default();
        let why = match error {
            SequenceError::Database { source, .. } => describe_error(source),
            other => other.to_string(),
        };
        failures.push(format!("{deployment}: {why}"));
        if let Some(deployments) = self.spanning() {
            deployments.failed(deployment, Instant::now());
        }
    }

    /// Takes `count` local values from one lane (see the module docs): the
    /// lane after the take, and the database of the deployment it is in.
    async fn take_from_lane(
        &self,
        count: u64,
        client_micros: u64,
    ) -> Result<(LaneDocument, Database), SequenceError> {
        let name = self.name();
        let deadline = self.take_deadline();
        let past = || deadline.is_some_and(|deadline| Instant::now() >= deadline);
        let mut pause = Duration::from_millis(1);
        let mut tried: Vec<String> = Vec::new();
        let mut failures: Vec<String> = Vec::new();
        let mut attempts = 0;
        while attempts < ATTEMPTS {
            attempts += 1;
            let map = self.map();
            if !map.live {
                self.finish_if_stalled(&map);
                if past() {
                    return Err(self.changing(&map));
                }
                if self.waits_for_change(&map) {
                    // Not a try: the change may yet be finished, by its
                    // own process or by this handle.
                    attempts -= 1;
                }
                self.pause(&mut pause, deadline).await;
                self.reload(deadline).await?;
                continue;
            }
            let Some(target) = self.pick(&map, &mut tried)? else {
                return Err(self.unreachable(&failures, deadline));
            };
            let outcomes = self
                .try_hedged(target, &map, count, client_micros, deadline, &mut tried)
                .await?;
            let mut refused = None;
            let mut taken = None;
            for (target, outcome) in outcomes {
                match outcome {
                    Tried::Taken(values) => taken = Some((values, target.database.clone())),
                    Tried::Failed(why) => {
                        let deployment = target.deployment.clone().unwrap_or_default();
                        failures.push(format!("{deployment}: {why}"));
                        if let Some(deployments) = &self.inner.deployments {
                            deployments.failed(&deployment, Instant::now());
                        }
                    }
                    Tried::Refused => refused = Some(target),
                }
            }
            if let Some(after) = taken {
                return Ok(after);
            }
            if let Some(target) = refused {
                // Its deployment answered: it may be tried again, on the
                // lanes of the map as it is now.
                tried.retain(|name| Some(name) != target.deployment.as_ref());
                match self
                    .unmatched(&target, &map, count, client_micros, deadline)
                    .await?
                {
                    // At its ceiling, raised: again at once.
                    Unmatched::Raised => continue,
                    // At its ceiling, and no other deployment recorded a
                    // higher one: the take moves on to another deployment.
                    Unmatched::NotRaised(why) => {
                        let deployment = target.deployment.clone().unwrap_or_default();
                        failures.push(format!("{deployment}: {why}"));
                        tried.push(deployment);
                        continue;
                    }
                    Unmatched::Moved => {}
                }
                if self.map().generation == map.generation {
                    // Sealed and the map not moved on yet: the change is
                    // under way.
                    if past() {
                        return Err(self.changing(&map));
                    }
                    self.pause(&mut pause, deadline).await;
                }
                continue;
            }
            let Some(deadline) = deadline else {
                return Err(self.unreachable(&failures, None));
            };
            if past() {
                return Err(self.unreachable(&failures, Some(deadline)));
            }
            if self.untried(&map, &tried) == 0 {
                // Every deployment failed once: again, after a pause,
                // while the deadline allows.
                tried.clear();
                self.pause(&mut pause, Some(deadline)).await;
            }
        }
        Err(striping(
            name,
            StripingError::Changing { attempts: ATTEMPTS },
        ))
    }

    /// Finishes, in the background, the change of stripes that claimed
    /// `map` (not live) once this handle has seen it half way for
    /// its patience, or its claim looks stalled by this process's clock and
    /// it has seen it still for a while ([`PendingChange::stalled`](super::PendingChange::stalled));
    /// one try at a time, at most every [`RESUME_EVERY`]. A try that finds
    /// a deployment the change needs unreachable fails and is made again;
    /// two processes finishing it at once: one wins, the other changes
    /// nothing (see `restripe.rs`). The take goes on reading the map.
    fn finish_if_stalled(&self, map: &StripeMap) {
        let Some(change) = map.change.as_ref() else {
            return;
        };
        let now = Instant::now();
        {
            let mut stall = self.inner.stall.lock().unwrap();
            // A try of this handle's own, under way, stays its one try
            // whatever the change claims or says meanwhile.
            let (tried_at, trying) = stall
                .as_ref()
                .map_or((None, false), |watch| (watch.tried_at, watch.trying));
            let watch = match stall.as_mut() {
                // Nothing newer than the watch saw (a copy may be behind
                // the latest: a claim or a progress that reached the home
                // first): no progress.
                Some(watch)
                    if (map.generation, change.since_ms)
                        <= (watch.generation, watch.progress_ms) =>
                {
                    watch
                }
                _ => stall.insert(Stall {
                    generation: map.generation,
                    progress_ms: change.since_ms,
                    seen_since: now,
                    tried_at,
                    trying,
                }),
            };
            let now_ms = SystemClock.now_micros() / 1000;
            let still_for = now.saturating_duration_since(watch.seen_since);
            let stalled = change.stalled(still_for, now_ms);
            let rested = watch
                .tried_at
                .is_none_or(|at| now.saturating_duration_since(at) >= RESUME_EVERY);
            if !stalled || !rested || watch.trying {
                return;
            }
            watch.tried_at = Some(now);
            watch.trying = true;
        }
        let handle = self.clone();
        let finishing = tokio::spawn(async move {
            // Failed (a deployment still unreachable, another process
            // finishing it first): the next take that finds it half way
            // tries again.
            let _ = handle.finish_if_still().await;
            if let Some(watch) = handle.inner.stall.lock().unwrap().as_mut() {
                watch.trying = false;
            }
        });
        *self.inner.finishing.lock().unwrap() = Some(finishing);
    }

    /// Finishes the change of stripes this handle's watch found stalled if
    /// the counter's latest copy of its map says nothing newer than the
    /// watch saw; else the watch moves on to that copy (the change made
    /// progress, or another claimed the counter since) and nothing is
    /// claimed. On a loaded server reads take seconds: a decision made on
    /// an older read claimed over a change at work.
    async fn finish_if_still(&self) -> Result<(), SequenceError> {
        let inner = &self.inner;
        let latest = latest_copy(&inner.home, inner.deployments.as_ref(), &inner.name).await?;
        let Some(change) = latest.change.as_ref().filter(|_| !latest.live) else {
            return Ok(());
        };
        {
            let mut stall = inner.stall.lock().unwrap();
            let Some(watch) = stall.as_mut() else {
                return Ok(());
            };
            if (latest.generation, change.since_ms) > (watch.generation, watch.progress_ms) {
                watch.generation = latest.generation;
                watch.progress_ms = change.since_ms;
                watch.seen_since = Instant::now();
                return Ok(());
            }
        }
        resume_change(
            &inner.home,
            inner.deployments.as_ref(),
            &inner.name,
            &latest,
        )
        .await
        .map(|_| ())
    }

    /// Whether a take with no deadline still waits for the change of
    /// stripes that claimed `map` (not live): for [`CHANGE_PATIENCE`] from
    /// when this handle first saw it so, and while this handle is
    /// finishing it.
    fn waits_for_change(&self, map: &StripeMap) -> bool {
        if self.take_deadline().is_some() {
            return false;
        }
        let stall = self.inner.stall.lock().unwrap();
        stall.as_ref().is_some_and(|watch| {
            watch.generation == map.generation
                && (watch.trying || watch.seen_since.elapsed() < CHANGE_PATIENCE)
        })
    }

    /// The error of a take whose deadline passed while a change of stripes
    /// left no lane to take from.
    fn changing(&self, map: &StripeMap) -> SequenceError {
        striping(
            self.name(),
            StripingError::NoLiveLane {
                generation: map.generation,
            },
        )
    }

    /// Tries `target`'s lane; across deployments, when it has not answered
    /// after [`HEDGE_AFTER`] and another deployment is left, a lane of that
    /// one too (`tried` takes it), the first answer with values winning:
    /// a deployment that is down or partitioned costs a take that delay,
    /// not its share of the deadline. The outcomes, failures first; a try
    /// that lost the race is dropped (if its server applies it after all,
    /// its values are a gap) and its deployment set aside as late.
    async fn try_hedged(
        &self,
        target: Target,
        map: &StripeMap,
        count: u64,
        client_micros: u64,
        deadline: Option<Instant>,
        tried: &mut Vec<String>,
    ) -> Result<Vec<(Target, Tried)>, SequenceError> {
        let share = |tried: &[String]| {
            deadline.map(|deadline| {
                // This try's deployment, and those not tried yet.
                let untried = self.untried(map, tried) as u32 + 1;
                (deadline.saturating_duration_since(Instant::now()) / untried).max(SHORTEST_TRY)
            })
        };
        let first_share = share(tried);
        self.before_take(&target).await;
        let first = self.try_lane(target.clone(), count, client_micros, first_share);
        let (Some(first_share), true) = (first_share, self.untried(map, tried) > 0) else {
            let outcome = first.await?;
            self.after_take(&target, &outcome).await;
            return Ok(vec![(target, outcome)]);
        };
        tokio::pin!(first);
        tokio::select! {
            outcome = &mut first => {
                let outcome = outcome?;
                self.after_take(&target, &outcome).await;
                return Ok(vec![(target, outcome)]);
            }
            () = tokio::time::sleep(HEDGE_AFTER.min(first_share)) => {}
        }
        // Late: another deployment is asked too.
        let Some(other) = self.pick(map, tried)? else {
            let outcome = first.await?;
            self.after_take(&target, &outcome).await;
            return Ok(vec![(target, outcome)]);
        };
        let other_share = share(tried);
        self.before_take(&other).await;
        let second = self.try_lane(other.clone(), count, client_micros, other_share);
        tokio::pin!(second);
        tokio::select! {
            outcome = &mut first => self.settle(target, outcome?, other, second).await,
            outcome = &mut second => self.settle(other, outcome?, target, first).await,
        }
    }

    /// The outcomes of a hedged race that `winner` answered first with
    /// `winning`: with values, `loser`'s try is dropped and its deployment
    /// set aside as late; otherwise `loser`'s try (`rest`) is awaited too.
    async fn settle<F>(
        &self,
        winner: Target,
        winning: Tried,
        loser: Target,
        rest: std::pin::Pin<&mut F>,
    ) -> Result<Vec<(Target, Tried)>, SequenceError>
    where
        F: std::future::Future<Output = Result<Tried, SequenceError>>,
    {
        self.after_take(&winner, &winning).await;
        if matches!(winning, Tried::Taken(_)) {
            let late = Tried::Failed(format!(
                "no answer within {} ms, when another deployment answered",
                HEDGE_AFTER.as_millis()
            ));
            return Ok(vec![(loser, late), (winner, winning)]);
        }
        let outcome = rest.await?;
        self.after_take(&loser, &outcome).await;
        let mut outcomes = vec![(winner, winning), (loser, outcome)];
        outcomes.sort_by_key(|(_, outcome)| !matches!(outcome, Tried::Failed(_)));
        Ok(outcomes)
    }

    async fn before_take(&self, target: &Target) {
        hooks::pass(
            target.database.name(),
            self.name().as_str(),
            Point::BeforeTake,
        )
        .await;
    }

    /// Where a test holds a take its server answered.
    async fn after_take(&self, target: &Target, outcome: &Tried) {
        if !matches!(outcome, Tried::Failed(_)) {
            hooks::pass(
                target.database.name(),
                self.name().as_str(),
                Point::AfterTake,
            )
            .await;
        }
    }

    /// When a take that starts now is given up: across deployments, after
    /// their deadline; none in one deployment.
    fn take_deadline(&self) -> Option<Instant> {
        self.spanning()
            .map(|deployments| Instant::now() + deployments.take_deadline())
    }

    /// The deployments, if its lanes span several.
    fn spanning(&self) -> Option<&Deployments> {
        let deployments = self.inner.deployments.as_ref()?;
        self.inner
            .map_spans
            .load(Ordering::Acquire)
            .then_some(deployments)
    }

    /// Holds `map` as the map it last read.
    fn keep_map(&self, map: StripeMap) {
        let mut kept = self.inner.map.lock().unwrap();
        self.inner
            .map_spans
            .store(map.spans_deployments(), Ordering::Release);
        *kept = map;
    }

    /// Waits `pause` (doubled for next time, at most [`LONGEST_PAUSE`]),
    /// never past `deadline`.
    async fn pause(&self, pause: &mut Duration, deadline: Option<Instant>) {
        let mut wait = *pause;
        if let Some(deadline) = deadline {
            wait = wait.min(deadline.saturating_duration_since(Instant::now()));
        }
        tokio::time::sleep(wait).await;
        *pause = (*pause * 2).min(LONGEST_PAUSE);
    }

    /// The lane the next try goes to, or none when no lane of `map` is in
    /// a deployment this process reaches. Across deployments: one not
    /// `tried` yet in this take (it is added), preferring the preferred,
    /// then healthy ones at random, then the one set aside the shortest.
    fn pick(
        &self,
        map: &StripeMap,
        tried: &mut Vec<String>,
    ) -> Result<Option<Target>, SequenceError> {
        let turn = self.inner.turn.fetch_add(1, Ordering::Relaxed);
        let Some(deployments) = self.spanning() else {
            if map.spans_deployments() {
                return Err(striping(
                    self.name(),
                    StripingError::DeploymentsNotGiven {
                        spans: map.spans.clone(),
                    },
                ));
            }
            return Ok(Some(Target {
                residue: turn % map.modulus,
                deployment: None,
                database: self.inner.home.clone(),
            }));
        };
        let now = Instant::now();
        let mut candidates: Vec<&str> = map
            .spans
            .iter()
            .map(String::as_str)
            .filter(|name| deployments.get(name).is_some())
            .filter(|name| !tried.iter().any(|seen| seen == name))
            .filter(|name| map.placement.iter().any(|lane| lane == name))
            .collect();
        if candidates.is_empty() {
            return Ok(None);
        }
        let preferred = deployments.preferred().name.as_str();
        let random = getrandom::u64().unwrap_or(turn);
        candidates.sort_by_key(|name| {
            let healthy = deployments.is_healthy(name, now);
            let aside = deployments
                .aside_until(name)
                .map_or(Duration::ZERO, |until| until.saturating_duration_since(now));
            let order = if *name == preferred {
                0
            } else {
                // Healthy ones in an order of their own for each take.
                1 + (random ^ fnv1a(name)) % 1024
            };
            (!healthy, aside, order)
        });
        let chosen = candidates[0].to_string();
        let lanes: Vec<u64> = (0..map.modulus)
            .filter(|residue| map.deployment_of(*residue) == Some(chosen.as_str()))
            .collect();
        let residue = lanes[(turn % lanes.len() as u64) as usize];
        tried.push(chosen.clone());
        let database = deployments
            .get(&chosen)
            .expect("candidates are deployments given")
            .database
            .clone();
        Ok(Some(Target {
            residue,
            deployment: Some(chosen),
            database,
        }))
    }

    /// How many deployments holding lanes of `map` this process reaches
    /// and has not tried in this take.
    fn untried(&self, map: &StripeMap, tried: &[String]) -> usize {
        let Some(deployments) = self.spanning() else {
            return 1;
        };
        map.spans
            .iter()
            .filter(|name| deployments.get(name).is_some())
            .filter(|name| map.placement.contains(name))
            .filter(|name| !tried.contains(name))
            .count()
    }

    /// One try: takes `count` values of `target`'s lane, within `share`.
    async fn try_lane(
        &self,
        target: Target,
        count: u64,
        client_micros: u64,
        share: Option<Duration>,
    ) -> Result<Tried, SequenceError> {
        let target = &target;
        let name = self.name();
        let id = lane_id(name, target.residue);
        let client = ClientTime::Micros(client_micros).expression();
        let (mut full, update) = lane::take_command(&id, &self.inner.lanes_of, count, client);
        lane::of_counter(&mut full, self.inner.incarnation.as_ref());
        let known = self.inner.known.lock().unwrap().get(&id).cloned();
        let short = known.and_then(|known| known.filter(&id, count, client_micros));
        let collection = target.database.collection::<Document>(COUNTERS);
        let until = share.map(|share| tokio::time::Instant::now() + share);
        // The short filter first, if the lane is known; if it matches
        // nothing, the full guard at once: a live lane the handle no longer
        // knows (edited, or in a later period) takes, a sealed one refuses.
        let mut answer = Ok(None);
        for filter in short.into_iter().chain([full]) {
            let take = collection
                .find_one_and_update(filter, update.clone())
                .return_document(ReturnDocument::After)
                .write_concern(self.inner.write_concern.clone());
            answer = match until {
                None => take.await,
                Some(until) => match tokio::time::timeout_at(until, take).await {
                    Ok(answer) => answer,
                    Err(_) => {
                        return Ok(Tried::Failed(format!(
                            "no answer within {} ms",
                            share.unwrap_or_default().as_millis()
                        )))
                    }
                },
            };
            if !matches!(answer, Ok(None)) {
                break;
            }
            self.inner.known.lock().unwrap().remove(&id);
        }
        let after = match answer {
            Ok(after) => after,
            Err(source) if target.deployment.is_some() => {
                return Ok(Tried::Failed(describe_error(&source)))
            }
            Err(source) => {
                return Err(SequenceError::from_database(
                    name,
                    "take",
                    "find and update",
                    source,
                ))
            }
        };
        if let (Some(deployment), Some(deployments)) = (&target.deployment, &self.inner.deployments)
        {
            deployments.succeeded(deployment);
        }
        match after {
            Some(after) => {
                let read = self.read_lane(&id, &after)?;
                self.raise_ahead(target, &id, &read, count, client_micros);
                let mut known = self.inner.known.lock().unwrap();
                match KnownLane::of(&after, &read) {
                    Some(lane) => known.insert(id, lane),
                    None => known.remove(&id),
                };
                Ok(Tried::Taken(read))
            }
            None => Ok(Tried::Refused),
        }
    }

    /// The error of a take no deployment answered.
    fn unreachable(&self, failures: &[String], deadline: Option<Instant>) -> SequenceError {
        let spans = self.map().spans;
        let given: Vec<String> = spans
            .iter()
            .filter(|name| {
                self.inner
                    .deployments
                    .as_ref()
                    .is_some_and(|deployments| deployments.get(name).is_some())
            })
            .cloned()
            .collect();
        striping(
            self.name(),
            StripingError::Unreachable {
                deadline_ms: deadline.and(self.spanning()).map_or(0, |deployments| {
                    deployments.take_deadline().as_millis() as u64
                }),
                given,
                failures: failures.to_vec(),
            },
        )
    }

    /// After a take of `count` at `client_micros` that matched nothing on
    /// `target`'s lane: an error if the lane is malformed or exhausted; at
    /// its ceiling, the ceiling raised (or why not); otherwise (sealed,
    /// gone, or changed meanwhile) the map is read again for the next try.
    async fn unmatched(
        &self,
        target: &Target,
        map: &StripeMap,
        count: u64,
        client_micros: u64,
        deadline: Option<Instant>,
    ) -> Result<Unmatched, SequenceError> {
        let name = self.name();
        let id = lane_id(name, target.residue);
        let collection = target.database.collection::<Document>(COUNTERS);
        let read = collection.find_one(doc! { "_id": &id });
        let found = match within(deadline, read).await {
            Some(Ok(found)) => found,
            // A deployment that fails now is the next try's business.
            Some(Err(_)) | None if target.deployment.is_some() => None,
            Some(Err(source)) => {
                return Err(SequenceError::from_database(name, "read", "find", source))
            }
            None => None,
        };
        if let Some(document) = found {
            let lane = self.read_lane(&id, &document)?;
            let live = !lane.sealed && lane.generation == map.generation;
            if lane.kind != map.kind {
                return Err(corrupt_lane(
                    &id,
                    format!("it is a lane of {} counter, not of {}", lane.kind, map.kind),
                    name,
                ));
            }
            if live && lane.room().is_some_and(|room| room < count) {
                return Err(SequenceError::Exhausted {
                    name: name.clone(),
                    requested: count,
                    limit: MAX_VALUE,
                });
            }
            let reach = lane
                .local
                .ceiling_reach(lane.lane, lane.last, count, client_micros);
            // A periodic lane's period may be past its ceiling's too, which
            // only its server's clock says: a live one with room that refused
            // is taken to be at its ceiling.
            let periods = self.inner.lanes_of.ceiling_period().is_some();
            if let Some(ceiling) = lane
                .ceiling
                .filter(|ceiling| live && (periods || reach.after > *ceiling))
            {
                let Some(deployment) = target.deployment.as_deref() else {
                    return Err(striping(
                        name,
                        StripingError::AtCeiling { lane: id, ceiling },
                    ));
                };
                let chunk = lane::ceiling_chunk(&self.inner.lanes_of, count, map.modulus);
                let raised = reach
                    .now
                    .saturating_add(chunk)
                    .max(reach.after)
                    .min(MAX_VALUE);
                return Ok(
                    match self
                        .raise_ceiling(map, deployment, target, &id, lane.generation, raised)
                        .await
                    {
                        Ok(()) => Unmatched::Raised,
                        Err(why) => Unmatched::NotRaised(format!(
                            "lane {id} is at its ceiling {ceiling}, not raised: {why}"
                        )),
                    },
                );
            }
        }
        self.reload(deadline).await?;
        Ok(Unmatched::Moved)
    }

    /// Raises, in the background, the ceiling of `lane` (`id`, in
    /// `target`'s deployment) when a take of `count` at `client_micros`
    /// left it less than half a chunk below it: so a lane has half a chunk
    /// at least to hand out when every other deployment goes down. One
    /// raise of a lane at a time; one that fails is tried again after the
    /// next take.
    fn raise_ahead(
        &self,
        target: &Target,
        id: &str,
        lane: &LaneDocument,
        count: u64,
        client_micros: u64,
    ) {
        let (Some(ceiling), Some(deployment)) = (lane.ceiling, target.deployment.clone()) else {
            return;
        };
        let chunk =
            lane::ceiling_chunk(&self.inner.lanes_of, count, lane.lane.generation().modulus);
        let now = lane
            .local
            .ceiling_reach(lane.lane, lane.last, count, client_micros)
            .now;
        if lane.sealed || ceiling.saturating_sub(now) >= chunk / 2 {
            return;
        }
        if !self.inner.raising.lock().unwrap().insert(id.to_string()) {
            return;
        }
        let handle = self.clone();
        let target = target.clone();
        let id = id.to_string();
        let generation = lane.generation;
        let raised = now.saturating_add(chunk).min(MAX_VALUE);
        tokio::spawn(async move {
            let map = handle.map();
            let _ = handle
                .raise_ceiling(&map, &deployment, &target, &id, generation, raised)
                .await;
            handle.inner.raising.lock().unwrap().remove(&id);
        });
    }

    /// What raises its lanes' ceilings (none: in one deployment).
    fn ceilings(&self) -> Option<Ceilings> {
        Some(Ceilings {
            deployments: self.spanning()?.clone(),
            name: self.name().clone(),
            incarnation: self.inner.incarnation.clone(),
            write_concern: self.inner.write_concern.clone(),
        })
    }

    /// Raises the ceiling of lane `id` (of generation `generation`, in
    /// `deployment`, `target`'s) to `ceiling` ([`Ceilings::raise`]).
    async fn raise_ceiling(
        &self,
        map: &StripeMap,
        deployment: &str,
        target: &Target,
        id: &str,
        generation: u64,
        ceiling: u64,
    ) -> Result<(), String> {
        let (Some(ceilings), Some(deadline)) = (self.ceilings(), self.take_deadline()) else {
            return Err("the counter spans one deployment".to_string());
        };
        let lane = CeilingOf {
            id: id.to_string(),
            generation,
            deployment: deployment.to_string(),
            database: target.database.clone(),
        };
        let period = self.inner.lanes_of.ceiling_period();
        ceilings
            .raise(&map.spans, &lane, ceiling, period, deadline)
            .await
    }

    /// Reads the map again: from the database it was opened from, or,
    /// across deployments, from every copy this process reaches (those
    /// set aside last), keeping the latest generation.
    async fn reload(&self, deadline: Option<Instant>) -> Result<(), SequenceError> {
        let name = self.name();
        let Some(deployments) = self.spanning() else {
            let document = self
                .inner
                .home
                .collection::<Document>(COUNTERS)
                .find_one(doc! { "_id": name.as_str() })
                .await
                .map_err(|source| SequenceError::from_database(name, "read", "find", source))?
                .ok_or_else(|| SequenceError::UnknownCounter(name.clone()))?;
            let map = read_map(name, &document)?;
            self.check_same_counter(&map)?;
            self.keep_map(map);
            return Ok(());
        };
        let now = Instant::now();
        let spans = self.map().spans;
        let mut copies: Vec<&str> = spans
            .iter()
            .map(String::as_str)
            .filter(|name| deployments.get(name).is_some())
            .collect();
        if copies.iter().any(|name| deployments.is_healthy(name, now)) {
            copies.retain(|name| deployments.is_healthy(name, now));
        }
        let reads = copies.iter().map(|deployment| {
            let collection = deployments
                .get(deployment)
                .expect("copies are deployments given")
                .database
                .collection::<Document>(COUNTERS);
            async move {
                within(deadline, collection.find_one(doc! { "_id": name.as_str() }))
                    .await
                    .and_then(Result::ok)
                    .flatten()
            }
        });
        let mut latest: Option<StripeMap> = None;
        for document in futures_util::future::join_all(reads)
            .await
            .into_iter()
            .flatten()
        {
            let map = read_map(name, &document)?;
            if !self.is_same_counter(&map) {
                // Another counter of the name (made again since, or one
                // that never was this one): not a copy of this map.
                continue;
            }
            let later = latest
                .as_ref()
                .is_none_or(|latest| (map.generation, map.live) > (latest.generation, latest.live));
            if later {
                latest = Some(map);
            }
        }
        if let Some(map) = latest {
            self.keep_map(map);
        }
        Ok(())
    }

    /// Whether `map` is a copy of this handle's counter's map: of its
    /// incarnation (a handle of a counter made before incarnations takes
    /// the one its counter was given since).
    fn is_same_counter(&self, map: &StripeMap) -> bool {
        self.inner.incarnation.is_none() || map.incarnation == self.inner.incarnation
    }

    /// Fails unless `map`, read again where the handle opened its counter,
    /// is its counter's: a counter deleted and made again under its name
    /// is another counter, whose values this handle must not format.
    fn check_same_counter(&self, map: &StripeMap) -> Result<(), SequenceError> {
        if self.is_same_counter(map) {
            return Ok(());
        }
        Err(striping(
            self.name(),
            StripingError::Replaced {
                opened: crate::sequence::identity::describe(self.inner.incarnation.as_ref()),
                found: crate::sequence::identity::describe(map.incarnation.as_ref()),
            },
        ))
    }

    fn read_lane(&self, id: &str, document: &Document) -> Result<LaneDocument, SequenceError> {
        lane::read(document).map_err(|reason| corrupt_lane(id, reason, self.name()))
    }
}

/// The FNV-1a hash of a deployment's name, to shuffle the healthy ones.
fn fnv1a(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The error of a map whose lanes' kind cannot be striped.
fn not_stripable(name: &CounterName, map: &StripeMap) -> SequenceError {
    striping(
        name,
        StripingError::NotStripable {
            kind: map.kind.clone(),
        },
    )
}
