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

use mongodb::bson::{doc, Document};
use mongodb::options::{ReturnDocument, WriteConcern};
use mongodb::{Collection, Database};

use super::arithmetic::{lane_id, Generation, Lane};
use super::error::StripingError;
use super::hooks::{self, Point};
use super::lane::{self, new_lane, placeholder};
use super::map::{StripeMap, STRIPED_KIND};
use super::taker::{read_map, striping, STRIPABLE};
use crate::mongo::collections::COUNTERS;
use crate::mongo::{durable_write_concern, is_duplicate_key};
use crate::sequence::counter::document::read;
use crate::sequence::counter::fields::{read_kind, well_formed, DEFAULT_KIND};
use crate::sequence::counter::spec::CounterSpec;
use crate::sequence::counters::create;
use crate::sequence::error::SequenceError;
use crate::sequence::kinds::autoinc::AutoincKind;
use crate::sequence::name::CounterName;

/// What a change of stripes did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restriped {
    /// The map after the change.
    pub map: StripeMap,
    /// Each lane sealed: its residue and the last value it handed out (its
    /// generation's base if none).
    pub sealed: Vec<(u64, u64)>,
}

/// Creates counter `name` as `spec` says with `stripes` lanes: an
/// unstriped counter for 1, else a counter striped at once (see the module
/// docs). Only the kinds that can be striped take more than one.
pub async fn create_striped(
    database: &Database,
    name: &CounterName,
    spec: &CounterSpec,
    stripes: u64,
) -> Result<crate::sequence::CounterState, SequenceError> {
    if stripes != 1 {
        check_stripable(name, spec.kind.as_str())?;
        Generation::new(0, stripes).map_err(|error| striping(name, error))?;
    }
    let created = create(database, name, spec).await?;
    if stripes == 1 {
        return Ok(created);
    }
    set_stripes(database, name, stripes).await?;
    crate::sequence::state(database, name).await
}

/// Gives counter `name` a new generation of `stripes` lanes (see the module
/// docs): an unstriped autoinc counter becomes striped.
pub async fn set_stripes(
    database: &Database,
    name: &CounterName,
    stripes: u64,
) -> Result<Restriped, SequenceError> {
    Generation::new(0, stripes).map_err(|error| striping(name, error))?;
    let collection: Collection<Document> = database.collection(COUNTERS);
    let write_concern = durable_write_concern();
    let map = current_map(&collection, name, &write_concern).await?;
    let change = Change {
        collection: &collection,
        name,
        write_concern: &write_concern,
        kind: &map.kind,
        claim: map.generation + 1,
    };
    change.claim(map.generation).await?;
    // Where the new lanes go, a lane sealed for this change: every lane
    // this change writes, it has sealed first.
    let placeholders = Generation::new(map.base, stripes).map_err(|error| striping(name, error))?;
    for lane in placeholders.lanes() {
        change.place(lane).await?;
    }
    let sealed = change.seal_all().await?;
    let base = sealed
        .iter()
        .map(|&(_, last)| last)
        .fold(map.base, u64::max);
    let next = Generation::new(base, stripes).map_err(|error| striping(name, error))?;
    hooks::pass(database.name(), name.as_str(), Point::BeforeLaneWrites).await;
    for lane in next.lanes() {
        change.write(lane).await?;
    }
    let new_map = StripeMap::live(&map.kind, change.claim, next);
    change.publish(&new_map).await?;
    Ok(Restriped {
        map: new_map,
        sealed,
    })
}

/// One change of a counter's stripes, which claimed generation `claim`.
struct Change<'a> {
    collection: &'a Collection<Document>,
    name: &'a CounterName,
    write_concern: &'a WriteConcern,
    kind: &'a str,
    claim: u64,
}

impl Change<'_> {
    fn database_error(
        &self,
        action: &'static str,
    ) -> impl Fn(mongodb::error::Error) -> SequenceError + '_ {
        move |source| SequenceError::from_database(self.name, action, "update", source)
    }

    /// Claims the next generation: the map, of generation `from`, goes to
    /// `claim` with no live lane. Of two changes at once, one claims it;
    /// the other fails, having changed nothing.
    async fn claim(&self, from: u64) -> Result<(), SequenceError> {
        let claimed = self
            .collection
            .update_one(
                doc! { "_id": self.name.as_str(), "kind": STRIPED_KIND, "striped.generation": from as i64 },
                doc! { "$set": { "striped.generation": self.claim as i64, "striped.lanes": [] } },
            )
            .write_concern(self.write_concern.clone())
            .await
            .map_err(self.database_error("claim a change of"))?;
        if claimed.matched_count == 0 {
            return Err(striping(self.name, StripingError::Concurrent));
        }
        Ok(())
    }

    /// A sealed lane where `lane` goes, unless a lane is there.
    async fn place(&self, lane: Lane) -> Result<(), SequenceError> {
        let id = lane_id(self.name, lane.residue());
        match self
            .collection
            .insert_one(placeholder(&id, self.kind, self.claim, lane))
            .write_concern(self.write_concern.clone())
            .await
        {
            Err(error) if !is_duplicate_key(&error) => {
                Err(self.database_error("place a lane of")(error))
            }
            _ => Ok(()),
        }
    }

    /// Seals every lane of the counter, of whatever generation, for this
    /// change: each seal returns the last value its lane handed out.
    async fn seal_all(&self) -> Result<Vec<(u64, u64)>, SequenceError> {
        use futures_util::TryStreamExt;
        // The lanes' `_id`s are NAME#...: from "NAME#" up to "NAME$",
        // '$' being the character after '#'.
        let lanes = doc! { "_id": {
            "$gte": format!("{}#", self.name),
            "$lt": format!("{}$", self.name),
        }};
        let ids: Vec<Document> = self
            .collection
            .find(lanes)
            .projection(doc! { "_id": 1 })
            .await
            .map_err(|source| SequenceError::from_database(self.name, "read", "find", source))?
            .try_collect()
            .await
            .map_err(|source| SequenceError::from_database(self.name, "read", "find", source))?;
        let mut sealed = Vec::new();
        for id in ids.iter().filter_map(|id| id.get_str("_id").ok()) {
            let (filter, update) = lane::seal_command(id, self.claim);
            let after = self
                .collection
                .find_one_and_update(filter, update)
                .return_document(ReturnDocument::After)
                .write_concern(self.write_concern.clone())
                .await
                .map_err(|source| {
                    SequenceError::from_database(self.name, "seal", "find and update", source)
                })?;
            let Some(after) = after else { continue };
            let after = lane::read(&after).map_err(|reason| {
                striping(
                    self.name,
                    StripingError::CorruptLane {
                        lane: id.to_string(),
                        reason,
                    },
                )
            })?;
            sealed.push((after.lane.residue(), after.last));
        }
        Ok(sealed)
    }

    /// Writes `lane` of the new generation in place of the lane this
    /// change sealed there; a later change that sealed it since wins.
    async fn write(&self, lane: Lane) -> Result<(), SequenceError> {
        let id = lane_id(self.name, lane.residue());
        let written = self
            .collection
            .replace_one(
                lane::claimed(&id, self.claim),
                new_lane(&id, self.kind, self.claim, lane),
            )
            .write_concern(self.write_concern.clone())
            .await
            .map_err(self.database_error("write a lane of"))?;
        if written.matched_count == 0 {
            return Err(striping(self.name, StripingError::Concurrent));
        }
        Ok(())
    }

    /// Makes the map say `map`, if no later change claimed it since.
    async fn publish(&self, map: &StripeMap) -> Result<(), SequenceError> {
        let published = self
            .collection
            .update_one(
                doc! { "_id": self.name.as_str(), "kind": STRIPED_KIND, "striped.generation": self.claim as i64 },
                doc! { "$set": { "striped": map.to_document(), "seq": map.base as i64 } },
            )
            .write_concern(self.write_concern.clone())
            .await
            .map_err(self.database_error("update the map of"))?;
        if published.matched_count == 0 {
            return Err(striping(self.name, StripingError::Concurrent));
        }
        Ok(())
    }
}

/// The map of counter `name` as a change starts from it: a striped
/// counter's own, or an unstriped counter's, sealed by turning it into a
/// map without live lanes.
async fn current_map(
    collection: &Collection<Document>,
    name: &CounterName,
    write_concern: &WriteConcern,
) -> Result<StripeMap, SequenceError> {
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
    let sealed = collection
        .find_one_and_update(
            doc! { "_id": name.as_str(), "$expr": well_formed::<AutoincKind>() },
            vec![doc! { "$set": {
                "kind": STRIPED_KIND,
                "striped": {
                    "kind": kind,
                    "generation": 0_i64,
                    "base": { "$toLong": "$seq" },
                    "modulus": 1_i64,
                    "lanes": [],
                },
            }}],
        )
        .return_document(ReturnDocument::After)
        .write_concern(write_concern.clone())
        .await
        .map_err(|source| SequenceError::from_database(name, "seal", "find and update", source))?;
    match sealed {
        Some(map) => read_map(name, &map),
        None => {
            // Malformed (say what is wrong), or changed since it was read.
            read::<AutoincKind>(name, &document)?;
            Err(striping(name, StripingError::Concurrent))
        }
    }
}

fn check_stripable(name: &CounterName, kind: &str) -> Result<(), SequenceError> {
    if STRIPABLE.contains(&kind) {
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
