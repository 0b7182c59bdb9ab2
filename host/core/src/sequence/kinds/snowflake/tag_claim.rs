//! The claims of tags (`tag.rs`): one document per tag in the `tags`
//! collection, `{_id: TAG, counter: NAME, incarnation: "<32 hex>", since}`,
//! so that taking a tag in a database is one write that either wins or
//! names the counter that holds it, as the claim of a prefix is
//! (`sequence/claims.rs`).
//!
//! The tags document (`_idmint.tags`, in `counters`) says which number a
//! draw hands out next; it cannot say that a number is free: a snowflake
//! counter striped across deployments brings its tag, drawn in another
//! database, into each one it spans, and a create there may have drawn that
//! number just before it was raised past. The claim settles it: whichever
//! of the two inserts the claim first has the tag; the other draws again
//! (a create) or is refused naming the holder (a spread).
//!
//! A claim is written durably (majority, journal) before anything is
//! written under the tag, and never taken back: a tag claimed and then not
//! kept (a create refused or failed after its draw, a lost race of late
//! tags) is skipped, as a number drawn and not kept always was.

use mongodb::bson::{doc, DateTime, Document};
use mongodb::{Collection, Database};

use crate::mongo::collections::TAGS;
use crate::mongo::{self, durable_write_concern};
use crate::sequence::error::SequenceError;
use crate::sequence::identity::{Incarnation, INCARNATION_FIELD};
use crate::sequence::name::CounterName;

/// The field of a claim that names the counter holding the tag.
const COUNTER_FIELD: &str = "counter";

/// Who claims a tag: a counter, by its identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TagClaimant<'a> {
    /// Its incarnation (none: a counter made before incarnations, whose
    /// claims are its own by name).
    pub incarnation: Option<&'a Incarnation>,
    /// Whether a claim of its name without incarnation (written for it
    /// before it had one) is its own: only in a deployment that holds its
    /// document or a copy of its map, which no other counter of the name
    /// can share.
    pub unmarked_are_its_own: bool,
}

impl<'a> TagClaimant<'a> {
    /// A counter drawing a tag in its own database: a new one (its
    /// incarnation drawn already) or one made before tags.
    pub(crate) fn drawing(incarnation: Option<&'a Incarnation>) -> Self {
        TagClaimant {
            incarnation,
            unmarked_are_its_own: false,
        }
    }

    /// Whether `claim`, a claim found under counter `name`'s tag, is this
    /// counter's: its name and incarnation are the claim's. A claim without
    /// incarnation is its own by name where it has none either, or where
    /// [`TagClaimant::unmarked_are_its_own`]; a claim whose incarnation is
    /// malformed is nobody's.
    pub(crate) fn owns(&self, name: &CounterName, claim: &Document) -> bool {
        if claim.get_str(COUNTER_FIELD).ok() != Some(name.as_str()) {
            return false;
        }
        match (Incarnation::read(claim), self.incarnation) {
            (Ok(Some(recorded)), Some(ours)) => &recorded == ours,
            (Ok(Some(_)), None) => false,
            (Ok(None), None) => true,
            (Ok(None), Some(_)) => self.unmarked_are_its_own,
            (Err(_), _) => false,
        }
    }
}

/// What a claim of a tag came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Claimed {
    /// The tag is the claimant's: claimed now, or by it before.
    Its,
    /// Another counter holds it: its name.
    Held(String),
}

fn claims(database: &Database) -> Collection<Document> {
    database.collection(TAGS)
}

fn database_error(
    name: &CounterName,
    action: &'static str,
    privilege: &'static str,
    source: mongodb::error::Error,
) -> SequenceError {
    SequenceError::from_database_on(name, action, privilege, TAGS, source)
}

/// The claim document of `tag` for counter `name` of `incarnation`.
pub(crate) fn claim_document(
    name: &CounterName,
    incarnation: Option<&Incarnation>,
    tag: u32,
) -> Document {
    let mut claim = doc! {
        "_id": i64::from(tag),
        COUNTER_FIELD: name.as_str(),
        "since": DateTime::now(),
    };
    if let Some(incarnation) = incarnation {
        claim.insert(INCARNATION_FIELD, incarnation);
    }
    claim
}

/// Claims `tag` in `database` for counter `name` (`claimant`): one durable
/// insert keyed by the tag, which either wins or finds the claim that did.
pub(crate) async fn claim(
    database: &Database,
    name: &CounterName,
    tag: u32,
    claimant: TagClaimant<'_>,
) -> Result<Claimed, SequenceError> {
    // Claims are never deleted: a claim that the insert collides with and
    // the read then misses was removed by hand; one more try settles it.
    for _ in 0..2 {
        let inserted = claims(database)
            .insert_one(claim_document(name, claimant.incarnation, tag))
            .write_concern(durable_write_concern())
            .await;
        match inserted {
            Ok(_) => return Ok(Claimed::Its),
            Err(error) if mongo::is_duplicate_key(&error) => {}
            Err(source) => return Err(database_error(name, "claim a tag for", "insert", source)),
        }
        let existing = claims(database)
            .find_one(doc! { "_id": i64::from(tag) })
            .await
            .map_err(|source| database_error(name, "read the tag claims of", "find", source))?;
        let Some(existing) = existing else { continue };
        if !claimant.owns(name, &existing) {
            let holder = existing.get_str(COUNTER_FIELD).unwrap_or("?").to_string();
            return Ok(Claimed::Held(holder));
        }
        if let (Ok(None), Some(incarnation)) = (Incarnation::read(&existing), claimant.incarnation)
        {
            mark(database, name, tag, incarnation).await?;
        }
        return Ok(Claimed::Its);
    }
    Err(SequenceError::Contended {
        name: name.clone(),
        attempts: 2,
    })
}

/// Writes `incarnation` into counter `name`'s claim of `tag` that has none
/// (written before it had one): from now on it is its own by identity.
async fn mark(
    database: &Database,
    name: &CounterName,
    tag: u32,
    incarnation: &Incarnation,
) -> Result<(), SequenceError> {
    claims(database)
        .update_one(
            doc! {
                "_id": i64::from(tag),
                COUNTER_FIELD: name.as_str(),
                INCARNATION_FIELD: { "$exists": false },
            },
            doc! { "$set": { INCARNATION_FIELD: incarnation } },
        )
        .write_concern(durable_write_concern())
        .await
        .map(drop)
        .map_err(|source| database_error(name, "record the identity of", "update", source))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(text: &str) -> CounterName {
        CounterName::new(text).unwrap()
    }

    #[test]
    fn a_claim_is_its_own_by_name_and_incarnation() {
        let (ours, theirs) = (Incarnation::new(), Incarnation::new());
        let ids = name("ids");
        let claim = claim_document(&ids, Some(&ours), 7);
        assert_eq!(claim.get_i64("_id"), Ok(7));
        let with = |incarnation, unmarked_are_its_own| TagClaimant {
            incarnation,
            unmarked_are_its_own,
        };
        assert!(with(Some(&ours), false).owns(&ids, &claim));
        // Another counter of the name (made again, or in another
        // deployment), another name, or one made before incarnations.
        assert!(!with(Some(&theirs), true).owns(&ids, &claim));
        assert!(!with(Some(&ours), true).owns(&name("other"), &claim));
        assert!(!with(None, true).owns(&ids, &claim));
    }

    #[test]
    fn a_claim_without_incarnation_is_its_own_only_by_name_where_it_may_be() {
        let ids = name("ids");
        let ours = Incarnation::new();
        let unmarked = claim_document(&ids, None, 7);
        assert!(unmarked.get(INCARNATION_FIELD).is_none());
        assert!(TagClaimant::drawing(None).owns(&ids, &unmarked));
        assert!(!TagClaimant::drawing(None).owns(&name("other"), &unmarked));
        assert!(!TagClaimant::drawing(Some(&ours)).owns(&ids, &unmarked));
        let with_copy = TagClaimant {
            incarnation: Some(&ours),
            unmarked_are_its_own: true,
        };
        assert!(with_copy.owns(&ids, &unmarked));
        // A malformed incarnation is nobody's.
        let mut malformed = unmarked.clone();
        malformed.insert(INCARNATION_FIELD, "xyz");
        assert!(!TagClaimant::drawing(None).owns(&ids, &malformed));
        assert!(!with_copy.owns(&ids, &malformed));
    }
}
