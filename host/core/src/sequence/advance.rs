//! The one loop both `$inc`-like kinds take values with (auto-increment and
//! segment counters): one `findOneAndUpdate` whose filter matches only a
//! well-formed counter with room for what is asked, returning the document
//! after the update; when nothing matched, the counter is read to say why
//! (exhausted, another kind, missing), or, if it was replaced between the
//! update and the read, the update is tried again, a bounded number of times.

use mongodb::bson::Document;
use mongodb::options::{ReturnDocument, WriteConcern};
use mongodb::Collection;

use super::counter::document::{find, Registered};
use super::error::SequenceError;
use super::name::CounterName;

/// How many times an update that matched nothing is tried again before the
/// counter is reported [`SequenceError::Contended`].
pub(crate) const RETRIES: u32 = 100;

/// What to do when the update matched nothing, given the counter as read.
pub(crate) enum Unmatched {
    /// The counter changed between the update and the read: try again.
    Retry,
    /// The update cannot succeed, for this reason.
    Fail(SequenceError),
}

/// Runs `update` on counter `name` of kind `K` under `filter` (see the
/// module docs) and returns the counter as it is after the update;
/// `unmatched` says what to do with the kind's fields as read when nothing
/// matched (a counter of another kind is refused by the read).
pub(crate) async fn advance<K: Registered>(
    collection: &Collection<Document>,
    name: &CounterName,
    write_concern: &WriteConcern,
    filter: Document,
    update: Vec<Document>,
    unmatched: impl Fn(&K::State) -> Unmatched,
) -> Result<Document, SequenceError> {
    for _ in 0..RETRIES {
        let after = collection
            .find_one_and_update(filter.clone(), update.clone())
            .return_document(ReturnDocument::After)
            .write_concern(write_concern.clone())
            .await
            .map_err(|source| {
                SequenceError::from_database(name, "advance", "find and update", source)
            })?;
        match after {
            Some(after) => return Ok(after),
            None => match unmatched(&find::<K>(collection, name).await?.kind) {
                Unmatched::Retry => continue,
                Unmatched::Fail(error) => return Err(error),
            },
        }
    }
    Err(SequenceError::Contended {
        name: name.clone(),
        attempts: RETRIES,
    })
}
