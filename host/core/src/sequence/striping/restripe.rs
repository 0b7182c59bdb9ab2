//! Changing a striped counter's stripes: a new generation of lanes
//! (`docs/design/striped-counters.md`, "Changing the stripes"), and
//! creating a striped counter, which is making an unstriped one and
//! striping it.
//!
//! A change first **claims** the next generation: the map goes from
//! generation `g` to `g + 1` with no live lane, and of two changes at once
//! only one does so. It puts a sealed placeholder where each new lane goes
//! and none is, then seals every lane of the counter (one `findAndModify`
//! each, returning the last value it handed out, and marking the lane as
//! sealed for this claim), starts the new generation above the highest of
//! those values, writes each new lane in place of a lane sealed for its
//! claim (a later change that sealed it since wins: this one stops), and
//! then makes the map live, if it is still of its claim. So every lane a
//! change writes was sealed by it first, and a later change's seals see
//! every lane an earlier one wrote, or keep it from being written. An
//! unstriped counter is sealed by turning its document into the map, with
//! no live lane (generation 0) and its `seq` as the base. Every write is
//! durable (majority, journal).
//!
//! No value is handed out twice: a take and the seal of its lane are
//! updates of one document, so a take is either counted in the seal's
//! value or refused by the sealed lane, and its taker then reads the map
//! again. A change that stops half way leaves lanes sealed or the map
//! without live lanes: takers wait and then fail, and running the change
//! again finishes it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::future::try_join_all;
use mongodb::bson::{doc, Bson, Document};
use mongodb::options::{ReturnDocument, WriteConcern};
use mongodb::{Collection, Database};

use super::arithmetic::{lane_id, Generation, Lane};
use super::counting::CEILING_PERIOD;
use super::deployments::Deployments;
use super::error::StripingError;
use super::hooks::{self, Point};
use super::lane::{self, lanes_of, new_lane, placeholder, Mark};
use super::layout::Layout;
use super::map::read_map;
use super::map::{
    PendingChange, StripeMap, CEILINGS, CEILING_PERIODS, LONGEST_PATIENCE, RESUME_AFTER,
    STRIPED_KIND,
};
use crate::mongo::collections::COUNTERS;
use crate::mongo::{describe_error, durable_write_concern, is_duplicate_key};
use crate::sequence::claims::{self, Claimant};
use crate::sequence::clock::{Clock, SystemClock};
use crate::sequence::counter::fields::{database_of, read_kind, DEFAULT_KIND};
use crate::sequence::error::striping;
use crate::sequence::error::SequenceError;
use crate::sequence::identity::{self, Incarnation, INCARNATION_FIELD};
use crate::sequence::kinds;
use crate::sequence::lane_kind::LaneOf;
use crate::sequence::name::CounterName;

/// What a change of stripes did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restriped {
    /// The map after the change.
    pub map: StripeMap,
    /// Each lane sealed: its residue and how far it got (the last value
    /// it handed out, its generation's base if none; see [`Mark`]).
    pub sealed: Vec<(u64, Mark)>,
}

/// Gives counter `name` a new generation of `stripes` lanes in its own
/// deployment (see the module docs): an unstriped autoinc counter becomes
/// striped.
pub async fn set_stripes(
    database: &Database,
    name: &CounterName,
    stripes: u64,
) -> Result<Restriped, SequenceError> {
    set_layout(database, None, name, &Layout::count(stripes)).await
}

/// Gives counter `name`, read from `database` (the preferred of
/// `deployments`, if given), a new generation of lanes laid out as
/// `layout` says (see the module docs).
pub async fn set_layout(
    database: &Database,
    deployments: Option<&Deployments>,
    name: &CounterName,
    layout: &Layout,
) -> Result<Restriped, SequenceError> {
    change_layout(database, deployments, name, layout, None).await
}

/// A change of stripes a process found stalled and finishes, as it read
/// it: its claim's generation and its `since` (its last progress).
#[derive(Debug, Clone, Copy)]
struct Stalled {
    generation: u64,
    since_ms: u64,
}

/// [`set_layout`]; when `finishing` a change found stalled, only if the
/// counter's latest map is still of its generation and the change made no
/// progress since it was read, up to the claim's own write (else
/// [`StripingError::Concurrent`], nothing written). A process that decided
/// on an older read must not claim over a change that another process
/// began, or went on with, meanwhile: on a loaded server, where reads take
/// seconds, processes that had each watched the same stalled change
/// claimed over one another's fresh claims, none of them finishing (the
/// soak's striped counter, generations 7 to 10 in a minute, each claim at
/// work; and, with the generation checked, 8 to 13 in 70 s, each new claim
/// made seconds after the one before had said it was at work).
async fn change_layout(
    database: &Database,
    deployments: Option<&Deployments>,
    name: &CounterName,
    layout: &Layout,
    finishing: Option<Stalled>,
) -> Result<Restriped, SequenceError> {
    let stripes = layout.modulus();
    // Refused before anything is written.
    check_layout(name, deployments, layout)?;
    let write_concern = durable_write_concern();
    let home_collection: Collection<Document> = database.collection(COUNTERS);
    let began = std::time::Instant::now();
    let home = home_collection
        .find_one(doc! { "_id": name.as_str() })
        .await
        .map_err(|source| SequenceError::from_database(name, "read", "find", source))?
        .ok_or_else(|| SequenceError::UnknownCounter(name.clone()))?;
    let home_read_ms = began.elapsed().as_millis().min(u64::MAX as u128) as u64;
    let (spans, kind) = match read_kind(&home) {
        Ok(Some(STRIPED_KIND)) => {
            let map = read_map(name, &home)?;
            (map.spans, map.kind)
        }
        Ok(kind) => (Vec::new(), kind.unwrap_or(DEFAULT_KIND).to_string()),
        Err(reason) => {
            return Err(SequenceError::CorruptCounter {
                name: name.clone(),
                reason,
            })
        }
    };
    check_stripable(name, &kind)?;
    let of = lanes_of(&kind, &home).map_err(|reason| SequenceError::CorruptCounter {
        name: name.clone(),
        reason,
    })?;
    check_lanes(name, &of, stripes)?;
    if read_kind(&home) != Ok(Some(STRIPED_KIND)) {
        // Refused at its start while what holds values outside the
        // counter's document is not bounded by it (a snowflake worker id
        // of an idmint before gates, live).
        of.lanes().unstriped_floor(database, name).await?;
    }
    let sites = Sites::of(database, deployments, name, &spans, layout)?;
    // Across deployments a counter is known by its identity, not its name:
    // one made before incarnations is given one before anything is claimed
    // in its name elsewhere.
    let incarnation = if sites.spanning() {
        let adopted = identity::adopt(&home_collection, name, &home).await?;
        // Its claims in its own deployment are its own: they say so now.
        let owned: Vec<String> = match home.get("prefixes") {
            Some(Bson::Array(prefixes)) => prefixes
                .iter()
                .filter_map(|prefix| prefix.as_str().map(str::to_string))
                .collect(),
            _ => Vec::new(),
        };
        claims::mark_own(database, name, &owned, &adopted).await?;
        Some(adopted)
    } else {
        Incarnation::read(&home).map_err(|reason| SequenceError::CorruptCounter {
            name: name.clone(),
            reason,
        })?
    };
    // Every copy is read, and the counter's prefixes claimed in every
    // deployment, before anything of the counter is changed: a deployment
    // that does not answer, holds another counter of the name, or where
    // another counter owns one of its prefixes, stops the change here, the
    // counter left as it was.
    let copies = sites.other_copies(name, incarnation.as_ref()).await?;
    let prefixes = home
        .get("prefixes")
        .cloned()
        .unwrap_or(Bson::Array(Vec::new()));
    let with_copies: Vec<&str> = copies.iter().map(|(site, _)| site.as_str()).collect();
    sites
        .claim_prefixes(name, incarnation.as_ref(), &prefixes, &with_copies)
        .await?;
    sites
        .claim_tag(name, incarnation.as_ref(), &with_copies, &of)
        .await?;
    let first = current_map(database, name, &of, &write_concern).await?;
    // Above what the lanes of a forgotten deployment (one no longer among
    // the sites) may have handed out: the ceilings the copies record.
    let site_names = sites.names();
    let forgotten_ceiling = copies
        .iter()
        .map(|(_, copy)| copy)
        .chain([&first])
        .map(|copy| ceilings_outside(copy, &site_names))
        .max()
        .unwrap_or_default();
    // Finishing a change: some copy must still be claimed by it, not live.
    // One finished meanwhile (by its claimant, a taker, `counter show`)
    // is not made again from a read taken before: that would stop every
    // taker of the counter for a change nobody asked for.
    let half_way = finishing.is_some_and(|stalled| {
        copies
            .iter()
            .map(|(_, copy)| copy)
            .chain([&first])
            .any(|copy| copy.generation == stalled.generation && !copy.live)
    });
    let copies = copies
        .into_iter()
        .map(|(_, copy)| copy)
        .max_by_key(|copy| copy.generation);
    let map = match copies {
        Some(copy) if copy.generation > first.generation => copy,
        _ => first,
    };
    let went_on = |stalled: Stalled| {
        map.change
            .as_ref()
            .is_some_and(|change| change.since_ms > stalled.since_ms)
    };
    if finishing.is_some_and(|stalled| {
        stalled.generation != map.generation || !half_way || went_on(stalled)
    }) {
        return Err(striping(name, StripingError::Concurrent));
    }
    let bounded = sites.list.len() >= 2 && has_ceilings(&of);
    // A periodic counter's lanes may hand out in the period of the home's
    // clock at once: its label, made by the home's server.
    let first_period = match of.ceiling_period() {
        Some(label) if bounded => Some(period_now(&home_collection, name, label).await?),
        _ => None,
    };
    let change = Change {
        sites: &sites,
        name,
        write_concern: &write_concern,
        of,
        claim: map.generation + 1,
        incarnation: incarnation.as_ref(),
        to: layout,
        home_claimed: std::sync::atomic::AtomicBool::new(false),
        bounded,
        clock_micros: SystemClock.now_micros(),
        first_period,
        first_estimate_ms: first_estimate(&map, home_read_ms),
        slowest_write_ms: AtomicU64::new(0),
        finishing_since_ms: finishing.map(|stalled| stalled.since_ms),
    };
    let made = async {
        change.claim(&map, &prefixes).await?;
        let placement = layout.placement();
        let site_of = |residue: u64| placement.get(residue as usize).map(String::as_str);
        // Where the new lanes go, a lane sealed for this change: every lane
        // this change writes, it has sealed first.
        let placeholders =
            Generation::new(map.base, stripes).map_err(|error| striping(name, error))?;
        // Each write of a step goes to a document of its own: they are sent
        // together (across deployments, one round trip for the step, not
        // one per lane), and the step ends once every one was written.
        try_join_all(
            placeholders
                .lanes()
                .map(|lane| change.place(site_of(lane.residue()), lane)),
        )
        .await?;
        change.progress().await?;
        let sealed = change.seal_all().await?;
        change.progress().await?;
        hooks::pass(database.name(), name.as_str(), Point::AfterSeals).await;
        let base = sealed
            .iter()
            .map(|(_, mark)| mark)
            .fold(map.mark(), |highest, mark| highest.max(mark.clone()))
            .max(forgotten_ceiling);
        let next = Generation::new(base.value, stripes).map_err(|error| striping(name, error))?;
        change
            .record_ceilings(&placement, next, base.period.as_deref())
            .await?;
        change.progress().await?;
        hooks::pass(database.name(), name.as_str(), Point::BeforeLaneWrites).await;
        try_join_all(
            next.lanes()
                .map(|lane| change.write(site_of(lane.residue()), lane, base.period.as_deref())),
        )
        .await?;
        change.progress().await?;
        let mut new_map = StripeMap::live(&change.of, change.claim, next);
        new_map.base_period = base.period;
        new_map.incarnation = incarnation.clone();
        new_map.bounded = change.bounded;
        if sites.spanning() {
            new_map.placement = placement.clone();
            new_map.spans = sites.names();
            new_map.here = Some(sites.home_name().to_string());
        }
        change.publish(&new_map).await?;
        Ok::<_, SequenceError>((new_map, sealed))
    };
    // While it works, the change says so every HEARTBEAT (once it claimed
    // the home): a slow step is not taken for a stall.
    let made = tokio::select! {
        made = made => made,
        never = change.heartbeat() => match never {},
    };
    let (new_map, sealed) = made.map_err(|error| change.stopped(error))?;
    Ok(Restriped {
        map: new_map,
        sealed,
    })
}

/// Finishes counter `name`'s change of stripes that stopped half way:
/// `map` is the latest copy of its map, claimed by that change (not live),
/// which recorded the layout it makes. The change is run again with that
/// layout (see the module docs: it claims further, seals every lane, and
/// writes and publishes the recorded layout's lanes), from `database` and
/// `deployments` as [`set_layout`] takes them, unless another change
/// claimed the counter since `map` was read. Two processes finishing it
/// at once: one claims, the other fails having changed nothing.
pub async fn resume_change(
    database: &Database,
    deployments: Option<&Deployments>,
    name: &CounterName,
    map: &StripeMap,
) -> Result<Restriped, SequenceError> {
    let Some(change) = map.change.as_ref().filter(|_| !map.live) else {
        return Err(striping(
            name,
            StripingError::NoRecordedChange {
                generation: map.generation,
            },
        ));
    };
    change_layout(
        database,
        deployments,
        name,
        &change.to,
        Some(Stalled {
            generation: map.generation,
            since_ms: change.since_ms,
        }),
    )
    .await
}

/// `idmint counter stripes NAME --resume`: finishes counter `name`'s change
/// of stripes if one stopped half way ([`resume_change`]), as read from
/// the latest copy of its map that `database` and `deployments` reach; none
/// when its map is live (nothing to finish).
pub async fn resume(
    database: &Database,
    deployments: Option<&Deployments>,
    name: &CounterName,
) -> Result<Option<Restriped>, SequenceError> {
    let map = latest_copy(database, deployments, name).await?;
    if map.live {
        return Ok(None);
    }
    resume_change(database, deployments, name, &map)
        .await
        .map(Some)
}

/// The latest copy of counter `name`'s map (of its incarnation) that
/// `database` and, if its map spans them, `deployments` hold; a copy
/// claimed by a change counts as later than a live one of its generation
/// only when its generation is higher.
pub(super) async fn latest_copy(
    database: &Database,
    deployments: Option<&Deployments>,
    name: &CounterName,
) -> Result<StripeMap, SequenceError> {
    let read = |database: &Database| {
        let collection = database.collection::<Document>(COUNTERS);
        async move { collection.find_one(doc! { "_id": name.as_str() }).await }
    };
    let home = read(database)
        .await
        .map_err(|source| SequenceError::from_database(name, "read", "find", source))?
        .ok_or_else(|| SequenceError::UnknownCounter(name.clone()))?;
    let mut latest = read_map(name, &home)?;
    let Some(deployments) = deployments.filter(|_| latest.spans_deployments()) else {
        return Ok(latest);
    };
    for site in latest.spans.clone() {
        let Some(deployment) = deployments.get(&site) else {
            continue;
        };
        let found = tokio::time::timeout(deployments.take_deadline(), read(&deployment.database));
        let Ok(Ok(Some(document))) = found.await else {
            continue;
        };
        let copy = read_map(name, &document)?;
        if copy.incarnation == latest.incarnation && copy.generation > latest.generation {
            latest = copy;
        }
    }
    Ok(latest)
}

/// Fails unless `layout` makes a generation and every deployment it names
/// is given.
pub(super) fn check_layout(
    name: &CounterName,
    deployments: Option<&Deployments>,
    layout: &Layout,
) -> Result<(), SequenceError> {
    Generation::new(0, layout.modulus()).map_err(|error| striping(name, error))?;
    check_given(
        name,
        deployments,
        &layout.deployments(),
        "the layout names it",
    )
}

/// Fails unless every deployment of `needed` is given.
fn check_given(
    name: &CounterName,
    deployments: Option<&Deployments>,
    needed: &[String],
    why: &'static str,
) -> Result<(), SequenceError> {
    match needed
        .iter()
        .find(|needed| deployments.is_none_or(|given| given.get(needed).is_none()))
    {
        Some(missing) => Err(striping(
            name,
            StripingError::DeploymentNotGiven {
                deployment: missing.clone(),
                why,
            },
        )),
        None => Ok(()),
    }
}

/// The deployments a change writes in: the counter's home (where its map
/// was read), then every other it spans or will span. One unnamed site
/// when it spans none and will span none.
pub(super) struct Sites {
    /// Each site's name (empty: the one unnamed) and counters collection.
    list: Vec<(String, Collection<Document>)>,
    /// How long a step in one site may take.
    deadline: Option<Duration>,
}

impl Sites {
    pub(super) fn of(
        database: &Database,
        deployments: Option<&Deployments>,
        name: &CounterName,
        spans: &[String],
        layout: &Layout,
    ) -> Result<Self, SequenceError> {
        let home_collection = database.collection(COUNTERS);
        if spans.is_empty() && !layout.is_named() {
            return Ok(Self {
                list: vec![(String::new(), home_collection)],
                deadline: None,
            });
        }
        if !spans.is_empty() && !layout.is_named() {
            return Err(striping(
                name,
                StripingError::Layout(format!(
                    "its lanes span deployments {}: name the deployments of the new lanes \
                     (as in {}:{})",
                    spans.join(", "),
                    spans[0],
                    layout.modulus()
                )),
            ));
        }
        let Some(given) = deployments else {
            let (needed, why) = if !spans.is_empty() {
                (spans[0].clone(), "the counter spans it")
            } else {
                (layout.deployments()[0].clone(), "the layout names it")
            };
            return Err(striping(
                name,
                StripingError::DeploymentNotGiven {
                    deployment: needed,
                    why,
                },
            ));
        };
        // The home: the first deployment the map spans, else the one it
        // was read from (the preferred).
        let home = spans
            .first()
            .cloned()
            .unwrap_or_else(|| given.preferred().name.clone());
        let mut names = vec![home];
        for other in spans.iter().chain(&layout.deployments()) {
            if !names.contains(other) {
                names.push(other.clone());
            }
        }
        check_given(name, Some(given), spans, "the counter spans it")?;
        check_given(
            name,
            Some(given),
            &layout.deployments(),
            "the layout names it",
        )?;
        let list = names
            .into_iter()
            .map(|site| {
                let collection = given
                    .get(&site)
                    .expect("checked as given")
                    .database
                    .collection(COUNTERS);
                (site, collection)
            })
            .collect();
        Ok(Self {
            list,
            deadline: Some(given.take_deadline().max(CHANGE_STEP_DEADLINE)),
        })
    }

    fn spanning(&self) -> bool {
        self.deadline.is_some()
    }

    fn names(&self) -> Vec<String> {
        self.list.iter().map(|(name, _)| name.clone()).collect()
    }

    fn home_name(&self) -> &str {
        &self.list[0].0
    }

    /// Site `site`'s collection (none: the home).
    fn collection(&self, site: Option<&str>) -> &Collection<Document> {
        let site = site.unwrap_or(self.home_name());
        &self
            .list
            .iter()
            .find(|(name, _)| name == site)
            .expect("lanes are placed in sites")
            .1
    }

    /// Runs `step` at site `site`, within the deadline when spanning; a
    /// database error or no answer names the site.
    async fn at<T>(
        &self,
        name: &CounterName,
        site: &str,
        action: &'static str,
        step: impl std::future::IntoFuture<Output = mongodb::error::Result<T>>,
    ) -> Result<T, SequenceError> {
        let spanning = self.spanning();
        match self.within_deadline(name, site, step.into_future()).await? {
            Ok(done) => Ok(done),
            Err(source) if spanning && !is_duplicate_key(&source) => Err(striping(
                name,
                StripingError::DeploymentUnreachable {
                    deployment: site.to_string(),
                    reason: describe_error(&source),
                },
            )),
            Err(source) => Err(SequenceError::from_database(name, action, "update", source)),
        }
    }

    /// The copies of the map in the sites other than the home, each with
    /// its site (none: none has one yet). Each must be a copy of this
    /// counter's map: of its incarnation `incarnation` (none: a counter made
    /// before incarnations, being created), saying it is in the site it was
    /// read from. A copy written before incarnations is this counter's only
    /// where it says it spans this counter's home, as its copies always
    /// did; a document of the name that is not a copy of its map is another
    /// counter, and the change stops, naming it.
    pub(super) async fn other_copies(
        &self,
        name: &CounterName,
        incarnation: Option<&Incarnation>,
    ) -> Result<Vec<(String, StripeMap)>, SequenceError> {
        let mut copies = Vec::new();
        for (site, collection) in self.list.iter().skip(1) {
            let found = self
                .at(
                    name,
                    site,
                    "read",
                    collection.find_one(doc! { "_id": name.as_str() }),
                )
                .await?;
            let Some(document) = found else { continue };
            if read_kind(&document).ok().flatten() != Some(STRIPED_KIND) {
                let kind = read_kind(&document)
                    .ok()
                    .flatten()
                    .unwrap_or(DEFAULT_KIND)
                    .to_string();
                return Err(striping(
                    name,
                    StripingError::NameTaken {
                        deployment: site.clone(),
                        kind,
                    },
                ));
            }
            let copy = read_map(name, &document)?;
            if let Some(why) = self.not_a_copy(&copy, incarnation) {
                return Err(striping(
                    name,
                    StripingError::OtherCounter {
                        deployment: site.clone(),
                        why,
                    },
                ));
            }
            if let Some(here) = copy.here.as_deref().filter(|here| here != site) {
                return Err(striping(
                    name,
                    StripingError::CorruptMap(format!(
                        "the copy in the deployment given as {site:?} says it is in {here:?}: \
                         are the connection strings given the names the counter was created with?"
                    )),
                ));
            }
            copies.push((site.clone(), copy));
        }
        Ok(copies)
    }

    /// Why `copy`, a striped counter's map found in `site`, is not a copy
    /// of the map of this counter, of incarnation `incarnation` (none: it
    /// is one).
    fn not_a_copy(&self, copy: &StripeMap, incarnation: Option<&Incarnation>) -> Option<String> {
        match (&copy.incarnation, incarnation) {
            (Some(found), Some(ours)) if found == ours => None,
            (Some(found), _) => Some(format!(
                "incarnation {}, not this counter's {}: made on its own there, or made again \
                 since",
                identity::describe(Some(found)),
                identity::describe(incarnation)
            )),
            // Written before incarnations: this counter's if it says it
            // spans from this counter's home.
            (None, _) if copy.here.is_none() => Some(
                "striped in that deployment alone, never across deployments with this one"
                    .to_string(),
            ),
            (None, _) if copy.spans.first().map(String::as_str) != Some(self.home_name()) => {
                Some(format!(
                    "it spans {} from {}, not from {}",
                    copy.spans.join(", "),
                    copy.spans.first().map_or("", String::as_str),
                    self.home_name()
                ))
            }
            (None, None) => Some("this counter is being made, and that one exists".to_string()),
            (None, Some(_)) => None,
        }
    }

    /// Claims the counter's `prefixes` (its home's) in every other site's
    /// history of prefixes, so that no counter of that deployment formats
    /// IDs with them: fails, naming the deployment, where another counter
    /// owns one or ever did. A claim is this counter's where it has its
    /// incarnation, or (written before incarnations) where its name is in a
    /// site of `with_copies`, which hold a copy of its map. Returns, per
    /// site, the prefixes claimed anew; a failure takes back what this call
    /// claimed before it.
    pub(super) async fn claim_prefixes(
        &self,
        name: &CounterName,
        incarnation: Option<&Incarnation>,
        prefixes: &Bson,
        with_copies: &[&str],
    ) -> Result<Vec<(String, Vec<String>)>, SequenceError> {
        let owned: Vec<String> = match prefixes {
            Bson::Array(prefixes) => prefixes
                .iter()
                .filter_map(|prefix| prefix.as_str().map(str::to_string))
                .collect(),
            _ => Vec::new(),
        };
        let mut claimed_anew = Vec::new();
        for (site, collection) in self.list.iter().skip(1) {
            let database = database_of(collection);
            let claimant = Claimant::Existing {
                incarnation,
                unmarked_are_its_own: with_copies.contains(&site.as_str()),
            };
            let claimed = claims::claim(&database, name, &owned, claimant);
            let outcome = match self.within_deadline(name, site, claimed).await {
                Ok(Ok(claimed)) => {
                    claimed_anew.push((site.clone(), claimed));
                    continue;
                }
                Ok(Err(
                    error @ (SequenceError::PrefixTaken { .. }
                    | SequenceError::PrefixRetired { .. }),
                )) => striping(
                    name,
                    StripingError::PrefixInDeployment {
                        deployment: site.clone(),
                        reason: error.to_string(),
                    },
                ),
                Ok(Err(error)) | Err(error) => error,
            };
            self.abandon_prefixes(name, &claimed_anew).await;
            return Err(outcome);
        }
        Ok(claimed_anew)
    }

    /// Takes back the prefix claims `claimed` (as [`Sites::claim_prefixes`]
    /// returned them), of a change refused before anything was written
    /// under them. Best effort: a claim left behind only blocks.
    pub(super) async fn abandon_prefixes(
        &self,
        name: &CounterName,
        claimed: &[(String, Vec<String>)],
    ) {
        for (site, prefixes) in claimed {
            let collection = self.collection(Some(site));
            let database = database_of(collection);
            let _ = self
                .within_deadline(name, site, claims::abandon(&database, name, prefixes))
                .await;
        }
    }

    /// Keeps what tells the counter's IDs apart (lanes `of`: a snowflake
    /// counter's tag) from every other counter of each other deployment,
    /// claiming it there under the counter's `incarnation`, or fails
    /// naming one that has it ([`LaneOf::keep_tag`]); most kinds have no
    /// tag. A claim of its name without incarnation is its own in a site of
    /// `with_copies`, which hold a copy of its map (as for its prefixes).
    async fn claim_tag(
        &self,
        name: &CounterName,
        incarnation: Option<&Incarnation>,
        with_copies: &[&str],
        of: &LaneOf,
    ) -> Result<(), SequenceError> {
        for (site, collection) in self.list.iter().skip(1) {
            let database = database_of(collection);
            let unmarked_are_its_own = with_copies.contains(&site.as_str());
            let kept = of.keep_tag(&database, name, incarnation, unmarked_are_its_own);
            if let Some((tag, owner)) = self.within_deadline(name, site, kept).await?? {
                return Err(striping(
                    name,
                    StripingError::TagInDeployment {
                        deployment: site.clone(),
                        tag,
                        owner,
                    },
                ));
            }
        }
        Ok(())
    }

    /// `step`'s outcome at site `site`, unless it does not answer within
    /// the deadline (when spanning).
    async fn within_deadline<T>(
        &self,
        name: &CounterName,
        site: &str,
        step: impl std::future::Future<Output = T>,
    ) -> Result<T, SequenceError> {
        let Some(deadline) = self.deadline else {
            return Ok(step.await);
        };
        tokio::time::timeout(deadline, step).await.map_err(|_| {
            striping(
                name,
                StripingError::DeploymentUnreachable {
                    deployment: site.to_string(),
                    reason: format!("no answer within {} ms", deadline.as_millis()),
                },
            )
        })
    }
}

/// The least time one step of a change of stripes across deployments (a
/// read or a write in one of them) is given before the deployment is taken
/// for unreachable and the change stops: a take's deadline (seconds) is
/// for takes; a loaded server that answers a change's durable write in 4 s
/// is slow, not down, and a change stopped for it is one more to finish.
const CHANGE_STEP_DEADLINE: Duration = Duration::from_secs(15);

/// How often a change of stripes at work says so in every copy of the
/// map (its claim's `since`), besides after each of its steps.
const HEARTBEAT: Duration = Duration::from_secs(1);

/// A change's patience, in its slowest writes: a heartbeat lands a write's
/// time plus [`HEARTBEAT`] after the one before, and a write that took 3 s
/// may be followed by one slower still.
const PATIENCE_PER_WRITE: u64 = 4;

/// What a change takes its writes to cost before it made one, for the
/// patience its claim asks for: the read of the map it began with
/// (`read_ms`), and, when it finishes a change half way (`map` not live),
/// that change's own estimate: a claim that landed seconds after a quick
/// read, with the patience of a quick one, was taken for stalled before
/// its first heartbeat came (the soak's loaded server).
fn first_estimate(map: &StripeMap, read_ms: u64) -> u64 {
    let inherited = map
        .change
        .as_ref()
        .filter(|_| !map.live)
        .and_then(|change| change.patience_ms)
        .map_or(0, |patience| patience / PATIENCE_PER_WRITE);
    read_ms.max(inherited)
}

/// One change of a counter's stripes, which claimed generation `claim`.
struct Change<'a> {
    sites: &'a Sites,
    name: &'a CounterName,
    write_concern: &'a WriteConcern,
    of: LaneOf,
    claim: u64,
    /// The counter's identity, which every copy and lane it writes carries.
    incarnation: Option<&'a Incarnation>,
    /// The layout it makes, recorded in its claim so that any process can
    /// finish it.
    to: &'a Layout,
    /// Whether it claimed the home's copy of the map: from then on a
    /// failure leaves the change half way.
    home_claimed: std::sync::atomic::AtomicBool,
    /// Whether the lanes it writes have ceilings (the lanes of a counter in
    /// two deployments or more): each
    /// starts with its first ceiling a chunk above its base (a cyclic or
    /// snowflake lane's, above the later of its base and `clock_micros`).
    bounded: bool,
    /// This process's clock when the change began, in microseconds: what
    /// a cyclic lane's first ceiling is above, the same for every lane it
    /// writes and every ceiling it records.
    clock_micros: u64,
    /// The label of the period of the home's clock when it began (periodic
    /// lanes with ceilings): the earliest a new lane's ceiling period is.
    first_period: Option<String>,
    /// What its writes are taken to cost until it made one, in
    /// milliseconds ([`first_estimate`]): what its claim's patience is made
    /// of.
    first_estimate_ms: u64,
    /// Its slowest write to the map so far (its claim, its progress), in
    /// milliseconds (0: none yet): what its patience is made of from then
    /// on ([`Change::patience_ms`]).
    slowest_write_ms: AtomicU64,
    /// When it finishes a stalled change: that change's last progress as
    /// read. The home's claim applies only while it is still the last.
    finishing_since_ms: Option<u64>,
}

impl Change<'_> {
    /// `error`, which stopped this change, as the caller is told it: after
    /// the home's claim, a deployment that did not answer (or failed) left
    /// the change half way, which the next take finishes.
    fn stopped(&self, error: SequenceError) -> SequenceError {
        if !self.home_claimed.load(Ordering::SeqCst) {
            return error;
        }
        let reason = match &error {
            SequenceError::Striping {
                source: source @ StripingError::DeploymentUnreachable { .. },
                ..
            } => source.to_string(),
            SequenceError::Database { .. } => error.to_string(),
            _ => return error,
        };
        striping(
            self.name,
            StripingError::StoppedHalfWay {
                to: self.to.to_string(),
                generation: self.claim,
                reason,
            },
        )
    }

    /// Claims the next generation on every copy of the map, the home
    /// first: each goes to `claim` with no live lane (a site without a
    /// copy gets one, with the home's `prefixes`). Of two changes at once,
    /// one claims the home; the other fails, having changed nothing.
    async fn claim(&self, map: &StripeMap, prefixes: &Bson) -> Result<(), SequenceError> {
        let mut claimed_map = StripeMap {
            generation: self.claim,
            live: false,
            change: Some(PendingChange {
                to: self.to.clone(),
                since_ms: SystemClock.now_micros() / 1000,
                patience_ms: Some(self.patience_ms()),
            }),
            ..map.clone()
        };
        if self.sites.spanning() {
            claimed_map.spans = self.sites.names();
        }
        for (index, (site, collection)) in self.sites.list.iter().enumerate() {
            let striped = if self.sites.spanning() {
                claimed_map.copy_in(site).to_document()
            } else {
                claimed_map.to_document()
            };
            let mut filter = doc! {
                "_id": self.name.as_str(),
                "kind": STRIPED_KIND,
                "striped.generation": { "$lt": self.claim as i64 },
                INCARNATION_FIELD: identity::its_own_or_unmarked(self.incarnation),
            };
            // Finishing a stalled change: not over it if it said it was at
            // work since it was read (its progress goes to the home first,
            // and `since` only ever rises).
            if let (0, Some(since_ms)) = (index, self.finishing_since_ms) {
                filter.insert(
                    "striped.since",
                    doc! { "$lte": mongodb::bson::DateTime::from_millis(since_ms as i64) },
                );
            }
            let mut update = doc! { "striped": striped };
            if let Some(incarnation) = self.incarnation {
                update.insert(INCARNATION_FIELD, incarnation);
            }
            if index > 0 {
                update.insert("prefixes", prefixes.clone());
                update.extend(self.of.map_fields(&map.mark()));
            }
            let began = std::time::Instant::now();
            let claimed = self
                .sites
                .at(
                    self.name,
                    site,
                    "claim a change of",
                    collection
                        .update_one(filter, doc! { "$set": update })
                        // Only another site's copy is made where none is.
                        .upsert(index > 0)
                        .write_concern(self.write_concern.clone()),
                )
                .await;
            match claimed {
                Ok(claimed) if claimed.matched_count > 0 || claimed.upserted_id.is_some() => {
                    self.wrote(began);
                    self.home_claimed.store(true, Ordering::SeqCst);
                }
                // Not matched, or (upserting) another document of the name
                // is there: a later change's copy, or another counter.
                Ok(_) | Err(SequenceError::Database { .. }) => {
                    return Err(self.refused_claim(site, collection).await)
                }
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    /// Why a claim at `site` matched nothing: another counter of the name
    /// is there, or another change claimed it.
    async fn refused_claim(&self, site: &str, collection: &Collection<Document>) -> SequenceError {
        let found = self
            .sites
            .at(
                self.name,
                site,
                "read",
                collection.find_one(doc! { "_id": self.name.as_str() }),
            )
            .await;
        match found {
            Ok(Some(document)) if read_kind(&document).ok().flatten() != Some(STRIPED_KIND) => {
                striping(
                    self.name,
                    StripingError::NameTaken {
                        deployment: site.to_string(),
                        kind: read_kind(&document)
                            .ok()
                            .flatten()
                            .unwrap_or(DEFAULT_KIND)
                            .to_string(),
                    },
                )
            }
            Err(error) => error,
            _ => striping(self.name, StripingError::Concurrent),
        }
    }

    /// Says, every [`HEARTBEAT`] once it claimed the home, that this change
    /// is at work ([`Change::progress`]); runs until dropped (the change
    /// done or failed). A write that fails is left: the next one may pass.
    async fn heartbeat(&self) -> std::convert::Infallible {
        loop {
            tokio::time::sleep(HEARTBEAT).await;
            if self.home_claimed.load(Ordering::SeqCst) {
                let _ = self.say_progress(Some(Point::AfterHeartbeat)).await;
            }
        }
    }

    /// Says, in every copy of the map, that this change is making
    /// progress: its claim's `since` becomes now, and its patience four
    /// times its slowest write so far. Others finish a change only after
    /// it made none for its patience
    /// ([`PendingChange::patience`], at least
    /// [`RESUME_AFTER`]): a change that is slow (each
    /// write majority and journal, on a loaded server) is not overtaken
    /// while it works, even when its own heartbeats are seconds apart, and
    /// is overtaken once it stops.
    async fn progress(&self) -> Result<(), SequenceError> {
        self.say_progress(None).await
    }

    /// [`Change::progress`], held at `point` once written in test builds (a
    /// write slow to answer).
    async fn say_progress(&self, point: Option<Point>) -> Result<(), SequenceError> {
        let began = std::time::Instant::now();
        let filter = doc! {
            "_id": self.name.as_str(),
            "striped.generation": self.claim as i64,
            "striped.to": { "$exists": true },
        };
        // `$max`: of two writes applied out of order, the later `since`
        // stays.
        let update = doc! {
            "$max": { "striped.since": mongodb::bson::DateTime::from_millis(
                (SystemClock.now_micros() / 1000) as i64,
            ) },
            "$set": { "striped.patience_ms": self.patience_ms() as i64 },
        };
        // In every copy: a taker reads the copy of the deployment it
        // prefers.
        for (site, collection) in &self.sites.list {
            self.sites
                .at(
                    self.name,
                    site,
                    "mark the progress of the change of",
                    collection
                        .update_one(filter.clone(), update.clone())
                        .write_concern(self.write_concern.clone()),
                )
                .await?;
        }
        if let Some(point) = point {
            let home = self.sites.collection(None).namespace();
            hooks::pass(&home.db, self.name.as_str(), point).await;
        }
        self.wrote(began);
        Ok(())
    }

    /// Notes a write to the map that began at `began`, for the patience.
    fn wrote(&self, began: std::time::Instant) {
        let took = began.elapsed().as_millis().clamp(1, u64::MAX as u128) as u64;
        self.slowest_write_ms.fetch_max(took, Ordering::SeqCst);
    }

    /// How long this change asks others to see it make no progress before
    /// they finish it: four times its slowest write to the map so far (its
    /// first estimate before it wrote), within
    /// [`RESUME_AFTER`] and [`LONGEST_PATIENCE`]. Its
    /// own writes replace the estimate, so that a patience inherited from
    /// a slow moment does not outlive it.
    fn patience_ms(&self) -> u64 {
        let slowest = match self.slowest_write_ms.load(Ordering::SeqCst) {
            0 => self.first_estimate_ms,
            measured => measured,
        };
        slowest.saturating_mul(PATIENCE_PER_WRITE).clamp(
            RESUME_AFTER.as_millis() as u64,
            LONGEST_PATIENCE.as_millis() as u64,
        )
    }

    /// A sealed lane where `lane` goes (in `site`; none: the home), unless
    /// a lane is there.
    async fn place(&self, site: Option<&str>, lane: Lane) -> Result<(), SequenceError> {
        let id = lane_id(self.name, lane.residue());
        let placed = self
            .sites
            .at(
                self.name,
                site.unwrap_or(self.sites.home_name()),
                "place a lane of",
                self.sites
                    .collection(site)
                    .insert_one(lane::owned_by(
                        placeholder(&id, &self.of, self.claim, lane),
                        self.incarnation,
                    ))
                    .write_concern(self.write_concern.clone()),
            )
            .await;
        match placed {
            Err(SequenceError::Database { source, .. }) if is_duplicate_key(&source) => Ok(()),
            Err(error) => Err(error),
            Ok(_) => Ok(()),
        }
    }

    /// Seals every lane of the counter in every site, of whatever
    /// generation, for this change: each seal returns how far its lane
    /// got.
    async fn seal_all(&self) -> Result<Vec<(u64, Mark)>, SequenceError> {
        // Every site at once, and in each every lane at once: each seal is
        // a document of its own.
        let sites = try_join_all(
            self.sites
                .list
                .iter()
                .map(|(site, collection)| self.seal_site(site, collection)),
        )
        .await?;
        Ok(sites.into_iter().flatten().collect())
    }

    /// [`Change::seal_all`] in `site`: its lanes read, then sealed together.
    async fn seal_site(
        &self,
        site: &str,
        collection: &Collection<Document>,
    ) -> Result<Vec<(u64, Mark)>, SequenceError> {
        use futures_util::TryStreamExt;
        // The lanes' `_id`s are NAME#...: from "NAME#" up to "NAME$",
        // '$' being the character after '#'.
        let lanes = doc! { "_id": {
            "$gte": format!("{}#", self.name),
            "$lt": format!("{}$", self.name),
        }};
        let find = async {
            collection
                .find(lanes)
                .projection(doc! { "_id": 1 })
                .await?
                .try_collect::<Vec<Document>>()
                .await
        };
        let ids = self.sites.at(self.name, site, "read", find).await?;
        let seals = ids
            .iter()
            .filter_map(|id| id.get_str("_id").ok())
            .map(|id| async move {
                let (filter, update) = lane::seal_command(id, self.claim);
                let after = self
                    .sites
                    .at(
                        self.name,
                        site,
                        "seal",
                        collection
                            .find_one_and_update(filter, update)
                            .return_document(ReturnDocument::After)
                            .write_concern(self.write_concern.clone()),
                    )
                    .await?;
                let Some(after) = after else {
                    return Ok(None);
                };
                let after = lane::read(&after).map_err(|reason| {
                    striping(
                        self.name,
                        StripingError::CorruptLane {
                            lane: id.to_string(),
                            reason,
                        },
                    )
                })?;
                Ok::<_, SequenceError>(Some((after.lane.residue(), after.high_water())))
            });
        Ok(try_join_all(seals).await?.into_iter().flatten().collect())
    }

    /// Writes `lane` of the new generation (in `site`; none: the home),
    /// whose base counts in `base_period` (periodic lanes), in place of
    /// the lane this change sealed there; a later change that sealed it
    /// since wins.
    async fn write(
        &self,
        site: Option<&str>,
        lane: Lane,
        base_period: Option<&str>,
    ) -> Result<(), SequenceError> {
        let id = lane_id(self.name, lane.residue());
        let written = self
            .sites
            .at(
                self.name,
                site.unwrap_or(self.sites.home_name()),
                "write a lane of",
                self.sites
                    .collection(site)
                    .replace_one(
                        lane::claimed(&id, self.claim),
                        lane::owned_by(
                            self.bounded_lane(new_lane(
                                &id,
                                &self.of,
                                self.claim,
                                lane,
                                base_period,
                            )),
                            self.incarnation,
                        ),
                    )
                    .write_concern(self.write_concern.clone()),
            )
            .await?;
        if written.matched_count == 0 {
            return Err(striping(self.name, StripingError::Concurrent));
        }
        Ok(())
    }

    /// `document`, a new lane, with its first ceiling if this change's
    /// lanes have ceilings ([`Change::record_ceilings`] recorded it).
    fn bounded_lane(&self, mut document: Document) -> Document {
        if self.bounded {
            let place = document.get_document("lane").ok();
            let number = |key: &str| {
                place
                    .and_then(|place| place.get_i64(key).ok())
                    .unwrap_or(0)
                    .max(0) as u64
            };
            let ceiling = self.first_ceiling(number("b"), number("m").max(1));
            // Its base period, or the home's when the change began if
            // later: a take in a later one raises it.
            let base_period = place
                .and_then(|place| place.get_str("base_period").ok())
                .unwrap_or_default();
            let base_period = self.ceiling_period_of(base_period);
            document.insert(lane::CEILING, ceiling as i64);
            if self.of.ceiling_period().is_some() {
                document.insert(CEILING_PERIOD, base_period);
            }
        }
        document
    }

    /// The first ceiling period of a new lane whose base period is
    /// `base_period` (`""`: none): the later of it and the home's period
    /// when the change began.
    fn ceiling_period_of(&self, base_period: &str) -> String {
        match &self.first_period {
            Some(first) if first.as_str() > base_period => first.clone(),
            _ => base_period.to_string(),
        }
    }

    /// The first ceiling of a new lane of a generation above `base` of
    /// `modulus` lanes: a chunk above its base (see the kind's
    /// `Stripable::first_ceiling`).
    fn first_ceiling(&self, base: u64, modulus: u64) -> u64 {
        self.of.first_ceiling(base, modulus, self.clock_micros)
    }

    /// Records, before any new lane is written with its first ceiling, that
    /// ceiling for each deployment of `placement` in the copy of the map
    /// of every other site (`$max` of `ceilings.<deployment>`, durable): so
    /// every value a new lane hands out is at or below a ceiling another
    /// deployment recorded, and a deployment that goes down leaves the
    /// others' lanes a chunk each to hand out.
    async fn record_ceilings(
        &self,
        placement: &[String],
        next: Generation,
        base_period: Option<&str>,
    ) -> Result<(), SequenceError> {
        if !self.bounded {
            return Ok(());
        }
        let ceiling = self.first_ceiling(next.base, next.modulus);
        let periods = self.of.ceiling_period().is_some();
        for (site, collection) in &self.sites.list {
            let mut raised = Document::new();
            for deployment in placement.iter().filter(|deployment| *deployment != site) {
                raised.insert(format!("{CEILINGS}.{deployment}"), ceiling as i64);
                if periods {
                    raised.insert(
                        format!("{CEILING_PERIODS}.{deployment}"),
                        self.ceiling_period_of(base_period.unwrap_or_default()),
                    );
                }
            }
            if raised.is_empty() {
                continue;
            }
            self.sites
                .at(
                    self.name,
                    site,
                    "record the ceilings of",
                    collection
                        .update_one(self.claimed_copy(), doc! { "$max": raised })
                        .write_concern(self.write_concern.clone()),
                )
                .await?;
        }
        Ok(())
    }

    /// The filter of a copy of the map that this change claimed and no
    /// later change claimed since, of this counter's incarnation.
    fn claimed_copy(&self) -> Document {
        doc! {
            "_id": self.name.as_str(),
            "kind": STRIPED_KIND,
            "striped.generation": self.claim as i64,
            INCARNATION_FIELD: identity::filter_value(self.incarnation),
        }
    }

    /// Makes every copy of the map say `map`, if no later change claimed
    /// it since.
    async fn publish(&self, map: &StripeMap) -> Result<(), SequenceError> {
        for (site, collection) in &self.sites.list {
            let copy = if self.sites.spanning() {
                map.copy_in(site)
            } else {
                map.clone()
            };
            let mut set = self.of.map_fields(&map.mark());
            set.insert("striped", copy.to_document());
            let published = self
                .sites
                .at(
                    self.name,
                    site,
                    "update the map of",
                    collection
                        .update_one(self.claimed_copy(), doc! { "$set": set })
                        .write_concern(self.write_concern.clone()),
                )
                .await?;
            if published.matched_count == 0 {
                return Err(striping(self.name, StripingError::Concurrent));
            }
        }
        Ok(())
    }
}

/// The label `label` (an expression of the server's clock) of the server
/// of `counters`, which holds counter `name`'s document.
async fn period_now(
    counters: &Collection<Document>,
    name: &CounterName,
    label: Document,
) -> Result<String, SequenceError> {
    let read =
        |source| SequenceError::from_database(name, "read the period of", "aggregate", source);
    let mut cursor = counters
        .aggregate(vec![
            doc! { "$match": { "_id": name.as_str() } },
            doc! { "$limit": 1 },
            doc! { "$project": { "_id": 0, "label": label } },
        ])
        .await
        .map_err(read)?;
    let found = futures_util::TryStreamExt::try_next(&mut cursor)
        .await
        .map_err(read)?;
    Ok(found
        .and_then(|found| found.get_str("label").ok().map(str::to_string))
        .unwrap_or_default())
}

/// Whether lanes made of `of` have ceilings when their counter spans
/// deployments (their kind says: counting lanes have).
pub(super) fn has_ceilings(of: &LaneOf) -> bool {
    of.lanes().has_ceilings()
}

/// The highest ceiling `copy` records for a deployment not among `sites`
/// (0: none): one forgotten (`--forget`), whose lanes may have handed out
/// values up to it; a periodic counter's in the latest period recorded
/// for one ([`CEILING_PERIODS`]): (latest period, highest value) is at or
/// above every (period, value) such lanes handed out, periods first.
fn ceilings_outside(copy: &StripeMap, sites: &[String]) -> Mark {
    let Ok(ceilings) = copy.fields.get_document(CEILINGS) else {
        return Mark::default();
    };
    let forgotten = || {
        ceilings
            .keys()
            .filter(|deployment| !sites.contains(deployment))
    };
    Mark {
        period: forgotten()
            .filter_map(|deployment| copy.recorded_ceiling_period(deployment))
            .max(),
        value: forgotten()
            .filter_map(|deployment| copy.recorded_ceiling(deployment))
            .max()
            .unwrap_or(0),
    }
}

/// `idmint counter stripes NAME --forget DEPLOYMENT`: starts a new
/// generation of counter `name` without `forgotten`, a deployment lost
/// for good, above every value its lanes may have handed out (the highest
/// ceiling any surviving copy of the map records for it, [`CEILINGS`]) and
/// every value the surviving lanes handed out (their seals, as any
/// change). Its lanes are laid out as `layout` says (surviving deployments
/// the counter spans only), else as many in each surviving deployment as
/// the current generation has there.
///
/// Refused, nothing written: while `forgotten` answers within the take
/// deadline (it is not lost); when it is not given (`--uri`: it is tried);
/// when the counter's lanes are of a kind without ceilings (none is, now); when lanes of `forgotten` were
/// written without ceilings (by an idmint before them), which nothing
/// bounds. It first claims every surviving copy with `forgotten` left out
/// of where the counter spans, recording the layout it makes, and then runs
/// that change as [`set_layout`] does (so a taker or `--resume` finishes
/// it if it stops half way: every change starts above the ceilings
/// recorded for a deployment it no longer spans).
pub async fn forget(
    deployments: &Deployments,
    name: &CounterName,
    forgotten: &str,
    layout: Option<&Layout>,
) -> Result<Restriped, SequenceError> {
    let deadline = deployments.take_deadline();
    let Some(lost) = deployments.get(forgotten) else {
        return Err(striping(
            name,
            StripingError::DeploymentNotGiven {
                deployment: forgotten.to_string(),
                why: "--forget tries it first (a deployment that answers is not lost)",
            },
        ));
    };
    let ping = lost.database.run_command(doc! { "ping": 1 });
    if let Ok(Ok(_)) = tokio::time::timeout(deadline, ping).await {
        return Err(striping(
            name,
            StripingError::NotLost {
                deployment: forgotten.to_string(),
            },
        ));
    }
    // The latest copy of its map among the other deployments given.
    let mut latest: Option<(String, StripeMap)> = None;
    for deployment in deployments.list() {
        if deployment.name == forgotten {
            continue;
        }
        let collection = deployment.database.collection::<Document>(COUNTERS);
        let read = collection.find_one(doc! { "_id": name.as_str() });
        let Ok(Ok(Some(document))) = tokio::time::timeout(deadline, read).await else {
            continue;
        };
        if read_kind(&document).ok().flatten() != Some(STRIPED_KIND) {
            continue;
        }
        let copy = read_map(name, &document)?;
        let later = latest.as_ref().is_none_or(|(_, latest)| {
            (copy.generation, copy.live) > (latest.generation, latest.live)
        });
        if later {
            latest = Some((deployment.name.clone(), copy));
        }
    }
    let Some((_, map)) = latest else {
        return Err(SequenceError::UnknownCounter(name.clone()));
    };
    let unbounded = |why: String| {
        striping(
            name,
            StripingError::Unbounded {
                deployment: forgotten.to_string(),
                why,
            },
        )
    };
    if !map.spans.iter().any(|span| span == forgotten) {
        return Err(unbounded(format!(
            "the counter does not span it (it spans {})",
            map.spans.join(", ")
        )));
    }
    let Some(of) = map.lanes_of() else {
        return Err(striping(
            name,
            StripingError::NotStripable {
                kind: map.kind.clone(),
            },
        ));
    };
    if !has_ceilings(&of) {
        return Err(unbounded(format!(
            "its lanes are {} lanes, whose ceilings are not built yet: nothing bounds what its \
             lanes there handed out",
            of.kind()
        )));
    }
    // Lanes of it that may be live: of the current generation, or of any
    // while a change is under way.
    let holds_lanes = !map.live || map.placement.iter().any(|lane| lane == forgotten);
    if holds_lanes && !map.bounded {
        return Err(unbounded(
            "its lanes there were written without ceilings (by an idmint before them), so no \
             other deployment recorded how far they may hand out"
                .to_string(),
        ));
    }
    let surviving: Vec<String> = map
        .spans
        .iter()
        .filter(|span| *span != forgotten)
        .cloned()
        .collect();
    let layout = match layout {
        Some(layout) => layout.clone(),
        None => {
            let placement = match (&map.change, map.live) {
                (_, true) => map.placement.clone(),
                (Some(change), false) => change.to.placement(),
                (None, false) => Vec::new(),
            };
            let text: Vec<String> = surviving
                .iter()
                .map(|site| {
                    let lanes = placement.iter().filter(|lane| *lane == site).count();
                    (site, lanes)
                })
                .filter(|(_, lanes)| *lanes > 0)
                .map(|(site, lanes)| format!("{site}:{lanes}"))
                .collect();
            if text.is_empty() {
                return Err(striping(
                    name,
                    StripingError::Layout(format!(
                        "no lane is left outside {forgotten:?}: name the new lanes' layout with \
                         --set, in {}",
                        surviving.join(", ")
                    )),
                ));
            }
            text.join(",")
                .parse::<Layout>()
                .map_err(|reason| striping(name, StripingError::Layout(reason)))?
        }
    };
    check_layout(name, Some(deployments), &layout)?;
    if let Some(stray) = layout
        .deployments()
        .into_iter()
        .find(|site| !surviving.contains(site))
    {
        return Err(striping(
            name,
            StripingError::Layout(format!(
                "--forget lays the new lanes out in the deployments it keeps ({}), not in \
                 {stray:?}",
                surviving.join(", ")
            )),
        ));
    }
    check_given(name, Some(deployments), &surviving, "the counter spans it")?;
    let sites = Sites {
        list: surviving
            .iter()
            .map(|site| {
                let collection = deployments
                    .get(site)
                    .expect("checked as given")
                    .database
                    .collection(COUNTERS);
                (site.clone(), collection)
            })
            .collect(),
        deadline: Some(deadline),
    };
    let prefixes = map
        .fields
        .get("prefixes")
        .cloned()
        .unwrap_or(Bson::Array(Vec::new()));
    let write_concern = durable_write_concern();
    let change = Change {
        sites: &sites,
        name,
        write_concern: &write_concern,
        of,
        claim: map.generation + 1,
        incarnation: map.incarnation.as_ref(),
        to: &layout,
        home_claimed: std::sync::atomic::AtomicBool::new(false),
        bounded: false,
        clock_micros: SystemClock.now_micros(),
        first_period: None,
        first_estimate_ms: first_estimate(&map, 0),
        slowest_write_ms: AtomicU64::new(0),
        finishing_since_ms: None,
    };
    // Every surviving copy claimed, `forgotten` left out of where it spans:
    // from here on, the change is theirs alone.
    change
        .claim(&map, &prefixes)
        .await
        .map_err(|error| change.stopped(error))?;
    let home = &deployments
        .get(sites.home_name())
        .expect("checked as given")
        .database;
    set_layout(home, Some(deployments), name, &layout)
        .await
        .map_err(|error| change.stopped(error))
}

/// The map of counter `name` as a change starts from it: a striped
/// counter's own, or an unstriped counter's, sealed by turning it into a
/// map without live lanes.
async fn current_map(
    database: &Database,
    name: &CounterName,
    of: &LaneOf,
    write_concern: &WriteConcern,
) -> Result<StripeMap, SequenceError> {
    let collection: Collection<Document> = database.collection(COUNTERS);
    let document = collection
        .find_one(doc! { "_id": name.as_str() })
        .await
        .map_err(|source| SequenceError::from_database(name, "read", "find", source))?
        .ok_or_else(|| SequenceError::UnknownCounter(name.clone()))?;
    let kind = read_kind(&document)
        .map_err(|reason| SequenceError::CorruptCounter {
            name: name.clone(),
            reason,
        })?
        .unwrap_or(DEFAULT_KIND);
    if kind == STRIPED_KIND {
        return read_map(name, &document);
    }
    check_stripable(name, kind)?;
    let lanes = of.lanes();
    let mut base = lanes.base_of_unstriped();
    if let Some(floor) = lanes.unstriped_floor(database, name).await? {
        // Above what holds values outside its document reached (a
        // snowflake counter's holders, those of an idmint before gates
        // too; refused while one is live: nothing bounds it).
        base = Bson::Document(doc! { "$toLong": { "$max": [base, floor] } });
    }
    let mut striped = doc! {
        "kind": kind,
        "generation": 0_i64,
        "base": base,
        "modulus": 1_i64,
        "lanes": [],
    };
    if let Some(period) = lanes.base_period_of_unstriped() {
        striped.insert("base_period", period);
    }
    let sealed = collection
        .find_one_and_update(
            doc! { "_id": name.as_str(), "$expr": lanes.unstriped_guard() },
            vec![doc! { "$set": { "kind": STRIPED_KIND, "striped": striped } }],
        )
        .return_document(ReturnDocument::After)
        .write_concern(write_concern.clone())
        .await
        .map_err(|source| SequenceError::from_database(name, "seal", "find and update", source))?;
    match sealed {
        Some(map) => read_map(name, &map),
        None => {
            // Malformed (say what is wrong), or changed since it was read.
            lanes.read_unstriped(name, &document)?;
            Err(striping(name, StripingError::Concurrent))
        }
    }
}

/// Fails unless a generation of `lanes` lanes of a counter whose lanes are
/// `of` gives each lane a value.
pub(super) fn check_lanes(
    name: &CounterName,
    of: &LaneOf,
    lanes: u64,
) -> Result<(), SequenceError> {
    of.check_lanes(lanes).map_err(|error| striping(name, error))
}

pub(super) fn check_stripable(name: &CounterName, kind: &str) -> Result<(), SequenceError> {
    if kinds::lanes(kind).is_some() {
        Ok(())
    } else {
        Err(striping(
            name,
            StripingError::NotStripable {
                kind: kind.to_string(),
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sequence::striping::lane::lanes_of;

    #[test]
    fn a_change_that_finishes_another_starts_from_its_estimate_of_the_writes() {
        let live = StripeMap::live(
            &lanes_of("autoinc", &doc! {}).unwrap(),
            3,
            Generation::new(41, 4).unwrap(),
        );
        assert_eq!(first_estimate(&live, 40), 40);
        let half_way = |patience_ms| StripeMap {
            live: false,
            change: Some(PendingChange {
                to: "4".parse().unwrap(),
                since_ms: 0,
                patience_ms,
            }),
            ..live.clone()
        };
        assert_eq!(first_estimate(&half_way(Some(12_000)), 40), 3_000);
        assert_eq!(first_estimate(&half_way(Some(12_000)), 4_000), 4_000);
        assert_eq!(first_estimate(&half_way(None), 40), 40);
    }
}
