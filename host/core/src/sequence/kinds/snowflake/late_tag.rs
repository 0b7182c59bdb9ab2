//! The tag and salt of a snowflake counter made before idmint knew them
//! (`tag.rs`), given the first time they are needed: a draw (claimed under
//! the counter's name and incarnation, if it has one), then one conditional
//! write that keeps a tag already there, so that two processes racing keep
//! the first and the other's number is skipped, never shared.

use mongodb::bson::{doc, Document};
use mongodb::options::ReturnDocument;
use mongodb::Database;

use super::tag::{draw_tag, CounterTag, TAG_FIELD};
use super::SnowflakeKind;
use crate::mongo::collections::COUNTERS;
use crate::mongo::durable_write_concern;
use crate::sequence::counter::document::{corrupt, find, read};
use crate::sequence::error::SequenceError;
use crate::sequence::kind_trait::Kind;
use crate::sequence::name::CounterName;

/// Writes `drawn` into snowflake counter `name` unless it has a tag already,
/// and returns the tag it has now: `drawn`, or the one another process kept
/// first (`drawn`'s number is then skipped). A counter that is missing, not
/// a snowflake one or malformed is refused as reading it is.
pub async fn keep_tag(
    database: &Database,
    name: &CounterName,
    drawn: CounterTag,
) -> Result<CounterTag, SequenceError> {
    let untagged = doc! { "$eq": [{ "$type": format!("${TAG_FIELD}") }, "missing"] };
    let after = database
        .collection::<Document>(COUNTERS)
        .find_one_and_update(
            doc! { "_id": name.as_str(), "kind": SnowflakeKind::NAME },
            vec![doc! { "$replaceWith": { "$cond": [
                untagged,
                { "$mergeObjects": ["$$ROOT", { "$literal": drawn.fields() }] },
                "$$ROOT",
            ]}}],
        )
        .return_document(ReturnDocument::After)
        .write_concern(durable_write_concern())
        .await
        .map_err(|source| SequenceError::from_database(name, "tag", "update", source))?;
    let Some(after) = after else {
        // Missing or of another kind: refused as reading it is.
        find::<SnowflakeKind>(&database.collection(COUNTERS), name).await?;
        return Err(corrupt(
            name,
            format!("it changed while it was given a {TAG_FIELD}"),
        ));
    };
    read::<SnowflakeKind>(name, &after)?
        .kind
        .tag
        .ok_or_else(|| corrupt(name, format!("{TAG_FIELD} was not kept")))
}

/// The tag and salt of snowflake counter `name`, given it now if it has
/// none ([`draw_tag`], then [`keep_tag`]).
pub async fn ensure_tag(
    database: &Database,
    name: &CounterName,
) -> Result<CounterTag, SequenceError> {
    let counter = find::<SnowflakeKind>(&database.collection(COUNTERS), name).await?;
    match counter.kind.tag {
        Some(tag) => Ok(tag),
        None => {
            let drawn = draw_tag(database, name, counter.incarnation.as_ref()).await?;
            keep_tag(database, name, drawn).await
        }
    }
}
