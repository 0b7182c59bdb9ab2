//! Changing a striped counter's stripes: a new generation of lanes
//! (`docs/design/striped-counters.md`, "Changing the stripes"), and
//! creating a striped counter, which is making an unstriped one and
//! striping it.
//!
//! A change seals every live lane of the current generation (one
//! `findAndModify` each, returning the last value it handed out), starts
//! the next generation above the highest of those values, writes its lanes
//! (in place of the sealed ones, whose values are all below the new base)
//! and then the map. An unstriped counter is sealed by turning its document
//! into the map, with no live lane (generation 0) and its `seq` as the
//! base. Every write is durable (majority, journal).
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

use super::arithmetic::{lane_id, Generation};
use super::error::StripingError;
use super::lane::{self, new_lane};
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
    let mut sealed = Vec::new();
    for lane in map.lanes() {
        let id = lane_id(name, lane.residue());
        let (filter, update) = lane::seal_command(&id, map.generation);
        let after = collection
            .find_one_and_update(filter, update)
            .return_document(ReturnDocument::After)
            .write_concern(write_concern.clone())
            .await
            .map_err(|source| {
                SequenceError::from_database(name, "seal", "find and update", source)
            })?
            .ok_or_else(|| {
                striping(
                    name,
                    StripingError::LaneMissing {
                        lane: id.clone(),
                        generation: map.generation,
                    },
                )
            })?;
        let after = lane::read(&after)
            .map_err(|reason| striping(name, StripingError::CorruptLane { lane: id, reason }))?;
        sealed.push((lane.residue(), after.last));
    }
    let base = sealed
        .iter()
        .map(|&(_, last)| last)
        .fold(map.base, u64::max);
    let next = Generation::new(base, stripes).map_err(|error| striping(name, error))?;
    let generation = map.generation + 1;
    for lane in next.lanes() {
        let id = lane_id(name, lane.residue());
        // In place of a sealed lane only: a live one means another change
        // wrote it.
        collection
            .replace_one(
                doc! { "_id": &id, "sealed": { "$ne": null } },
                new_lane(&id, &map.kind, generation, lane),
            )
            .upsert(true)
            .write_concern(write_concern.clone())
            .await
            .map_err(|source| {
                if is_duplicate_key(&source) {
                    striping(name, StripingError::Concurrent)
                } else {
                    SequenceError::from_database(name, "write a lane", "update", source)
                }
            })?;
    }
    let new_map = StripeMap::live(&map.kind, generation, next);
    let updated = collection
        .update_one(
            doc! { "_id": name.as_str(), "kind": STRIPED_KIND, "striped.generation": map.generation as i64 },
            doc! { "$set": { "striped": new_map.to_document(), "seq": base as i64 } },
        )
        .write_concern(write_concern.clone())
        .await
        .map_err(|source| SequenceError::from_database(name, "update the map", "update", source))?;
    if updated.matched_count == 0 {
        return Err(striping(name, StripingError::Concurrent));
    }
    Ok(Restriped {
        map: new_map,
        sealed,
    })
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
