//! What `counter show` says of a striped counter: its lanes as they are.

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Document};
use mongodb::Database;

use super::arithmetic::lane_id;
use super::error::StripingError;
use super::lane::{self, LaneDocument};
use super::map::StripeMap;
use super::taker::striping;
use crate::mongo::collections::COUNTERS;
use crate::sequence::error::SequenceError;
use crate::sequence::name::CounterName;

/// The live lanes of striped counter `name` whose map is `map`, by
/// residue, as they are now.
pub async fn lanes(
    database: &Database,
    name: &CounterName,
    map: &StripeMap,
) -> Result<Vec<LaneDocument>, SequenceError> {
    let ids: Vec<String> = map
        .lanes()
        .iter()
        .map(|lane| lane_id(name, lane.residue()))
        .collect();
    let found: Vec<Document> = database
        .collection::<Document>(COUNTERS)
        .find(doc! { "_id": { "$in": &ids } })
        .await
        .map_err(|source| SequenceError::from_database(name, "read", "find", source))?
        .try_collect()
        .await
        .map_err(|source| SequenceError::from_database(name, "read", "find", source))?;
    ids.into_iter()
        .map(|id| {
            let document = found
                .iter()
                .find(|document| document.get_str("_id") == Ok(id.as_str()))
                .ok_or_else(|| {
                    striping(
                        name,
                        StripingError::LaneMissing {
                            lane: id.clone(),
                            generation: map.generation,
                        },
                    )
                })?;
            lane::read(document)
                .map_err(|reason| striping(name, StripingError::CorruptLane { lane: id, reason }))
        })
        .collect()
}
