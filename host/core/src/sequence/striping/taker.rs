//! Taking from a striped counter: a handle that holds the counter's map and
//! takes each block from one of its lanes, in turn from a random first one
//! (so that processes spread over the lanes), in one `findAndModify` whose
//! filter holds only for a live lane ([`lane::take_command`]).
//!
//! A take that finds its lane sealed or gone (a change of stripes sealed
//! it) reads the map again and takes from a lane of the generation it
//! names; while the map has no live lane (a change under way), it reads it
//! again after a short pause, up to [`ATTEMPTS`] times, and then fails
//! with [`StripingError::Changing`], having taken nothing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mongodb::bson::{doc, Document};
use mongodb::options::{ReturnDocument, WriteConcern};
use mongodb::{Collection, Database};

use super::arithmetic::lane_id;
use super::error::StripingError;
use super::hooks::{self, Point};
use super::lane::{self, LaneDocument};
use super::map::{StripeMap, STRIPED_KIND};
use crate::mongo::collections::COUNTERS;
use crate::mongo::{describe_value, durable_write_concern};
use crate::sequence::counter::fields::database_of;
use crate::sequence::error::SequenceError;
use crate::sequence::kind_trait::MAX_VALUE;
use crate::sequence::name::CounterName;

/// How many lanes a take tries before it gives up.
pub const ATTEMPTS: u32 = 64;

/// The longest pause between two reads of a map that has no live lane.
const LONGEST_PAUSE: Duration = Duration::from_millis(100);

/// The lanes' kinds that can be striped, so far.
pub const STRIPABLE: &[&str] = &["autoinc"];

/// An opened striped counter (see the module docs). Cheap to clone: clones
/// share the map and the turn.
#[derive(Debug, Clone)]
pub struct StripedCounter {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    collection: Collection<Document>,
    name: CounterName,
    map: Mutex<StripeMap>,
    turn: AtomicU64,
    write_concern: WriteConcern,
}

/// The error of counter `name`'s striping.
pub(crate) fn striping(name: &CounterName, source: StripingError) -> SequenceError {
    SequenceError::Striping {
        name: name.clone(),
        source,
    }
}

impl StripedCounter {
    /// Opens counter `name` of `database`, whose map was read as `map`.
    pub fn open(
        database: &Database,
        name: CounterName,
        map: &StripeMap,
    ) -> Result<Self, SequenceError> {
        if !STRIPABLE.contains(&map.kind.as_str()) {
            return Err(striping(
                &name,
                StripingError::NotStripable {
                    kind: map.kind.clone(),
                },
            ));
        }
        // A random first lane: processes that open the counter at once do
        // not all start on lane 0.
        let turn = getrandom::u64().unwrap_or(0) % map.modulus;
        Ok(Self {
            inner: Arc::new(Inner {
                collection: database.collection(COUNTERS),
                name,
                map: Mutex::new(map.clone()),
                turn: AtomicU64::new(turn),
                write_concern: durable_write_concern(),
            }),
        })
    }

    /// The counter's name.
    pub fn name(&self) -> &CounterName {
        &self.inner.name
    }

    /// The database the counter is in.
    pub fn database(&self) -> Database {
        database_of(&self.inner.collection)
    }

    /// The map as this handle last read it.
    pub fn map(&self) -> StripeMap {
        self.inner.map.lock().unwrap().clone()
    }

    /// Takes `count` values (1 to [`MAX_BLOCK`](crate::sequence::MAX_BLOCK))
    /// from one lane, in the order issued.
    pub async fn take(&self, count: u64) -> Result<Vec<u64>, SequenceError> {
        let name = self.name();
        let database = self.inner.collection.namespace().db;
        let mut pause = Duration::from_millis(1);
        for _ in 0..ATTEMPTS {
            let map = self.map();
            if !map.live {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(LONGEST_PAUSE);
                self.reload().await?;
                continue;
            }
            let residue = self.inner.turn.fetch_add(1, Ordering::Relaxed) % map.modulus;
            let id = lane_id(name, residue);
            hooks::pass(&database, name.as_str(), Point::BeforeTake).await;
            let (filter, update) = lane::take_command(&id, &map.kind, count);
            let after = self
                .inner
                .collection
                .find_one_and_update(filter, update)
                .return_document(ReturnDocument::After)
                .write_concern(self.inner.write_concern.clone())
                .await
                .map_err(|source| {
                    SequenceError::from_database(name, "take", "find and update", source)
                })?;
            hooks::pass(&database, name.as_str(), Point::AfterTake).await;
            if let Some(after) = after {
                return Ok(self.read_lane(&id, &after)?.taken(count));
            }
            self.unmatched(&id, &map, count).await?;
            if self.map().generation == map.generation {
                // Sealed and the map not moved on yet: the change is
                // under way.
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(LONGEST_PAUSE);
            }
        }
        Err(striping(
            name,
            StripingError::Changing { attempts: ATTEMPTS },
        ))
    }

    /// After a take that matched nothing on lane `id`: an error if the lane
    /// is malformed or exhausted; otherwise (sealed, gone, or changed
    /// meanwhile) the map is read again for the next try.
    async fn unmatched(&self, id: &str, map: &StripeMap, count: u64) -> Result<(), SequenceError> {
        let name = self.name();
        let found = self
            .inner
            .collection
            .find_one(doc! { "_id": id })
            .await
            .map_err(|source| SequenceError::from_database(name, "read", "find", source))?;
        if let Some(document) = found {
            let lane = self.read_lane(id, &document)?;
            let live = !lane.sealed && lane.generation == map.generation;
            if lane.kind != map.kind {
                return Err(corrupt_lane(
                    id,
                    format!("it is a lane of {} counter, not of {}", lane.kind, map.kind),
                    name,
                ));
            }
            let room = MAX_VALUE.saturating_sub(lane.last) / lane.lane.generation().modulus;
            if live && room < count {
                return Err(SequenceError::Exhausted {
                    name: name.clone(),
                    requested: count,
                    limit: MAX_VALUE,
                });
            }
        }
        self.reload().await
    }

    /// Reads the map again.
    async fn reload(&self) -> Result<(), SequenceError> {
        let name = self.name();
        let document = self
            .inner
            .collection
            .find_one(doc! { "_id": name.as_str() })
            .await
            .map_err(|source| SequenceError::from_database(name, "read", "find", source))?
            .ok_or_else(|| SequenceError::UnknownCounter(name.clone()))?;
        let map = read_map(name, &document)?;
        *self.inner.map.lock().unwrap() = map;
        Ok(())
    }

    fn read_lane(&self, id: &str, document: &Document) -> Result<LaneDocument, SequenceError> {
        lane::read(document).map_err(|reason| corrupt_lane(id, reason, self.name()))
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

fn corrupt_lane(id: &str, reason: String, name: &CounterName) -> SequenceError {
    striping(
        name,
        StripingError::CorruptLane {
            lane: id.to_string(),
            reason,
        },
    )
}
