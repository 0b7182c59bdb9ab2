//! The history of prefixes: one document per prefix any counter ever owned,
//! in the `prefixes` collection, so that a prefix that has formatted IDs is
//! never handed to a new owner.
//!
//! Who owns a prefix *now* is in the counters' own documents (`prefixes`,
//! see `counter/fields.rs`), and that is what a take checks. Who owned it *ever*
//! is here: once counter `a` has formatted `INV-000000001`, a counter `b`
//! given `INV-` would format it again (both start at 1), and so would a new
//! counter named `a` after the first was deleted. A document here is keyed
//! by the prefix (`_id`, which every MongoDB keeps unique on its own, with
//! no index to maintain) and says which counter claimed it and where that
//! claim stands:
//!
//! - `owned`: the counter owns it, or is being created or given it;
//! - `released`: the counter gave it up (`counter prefix remove`); the
//!   prefix is retired and no counter, that one included, owns it again.
//!
//! A prefix is claimed (`owned`) before a counter's document names it and
//! released only after the document stops naming it, so whatever a crash
//! interrupts, the history never says less than the counters do. A claim
//! is taken back only where nothing can have been written under it; a
//! create interrupted after its claim leaves the prefix blocked for every
//! counter (the history cannot tell it from a counter deleted since), which
//! costs a prefix and never repeats an ID. Counters made before
//! this history existed are in it from their first `prefix add` or
//! `prefix remove`; until then their documents speak for them ([`claim`]
//! asks them first).

use mongodb::bson::{doc, DateTime, Document};
use mongodb::{Collection, Database};

use super::counter::prefixes::owners;
use super::identity::{Incarnation, INCARNATION_FIELD};
use super::{CounterName, SequenceError};
use crate::mongo::{self, durable_write_concern};

/// The collection of prefix claims, one document per prefix.
pub const PREFIXES_COLLECTION: &str = crate::mongo::collections::PREFIXES;

/// Where the claim of a prefix stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Owned,
    Released,
}

impl Stage {
    fn as_str(self) -> &'static str {
        match self {
            Stage::Owned => "owned",
            Stage::Released => "released",
        }
    }

    fn read(document: &Document) -> Option<Self> {
        match document.get_str("state").ok()? {
            "owned" => Some(Stage::Owned),
            "released" => Some(Stage::Released),
            _ => None,
        }
    }
}

/// Who claims: a counter being created, or one that exists, each with its
/// incarnation (`identity.rs`): a claim is a counter's own only where its
/// name and its incarnation are the claim's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claimant<'a> {
    /// `counter create`: no counter of this name exists (checked before),
    /// so a claim under its name is a deleted counter's, or another
    /// deployment's counter of the name.
    New(&'a Incarnation),
    /// A counter that exists: `counter prefix add`, or a change of stripes
    /// claiming its prefixes in another deployment.
    Existing {
        /// Its incarnation (none: a counter made before incarnations, whose
        /// claims are its own by name, as they always were).
        incarnation: Option<&'a Incarnation>,
        /// Whether a claim of its name that has no incarnation (written
        /// before incarnations) is its own: only where its own document or
        /// copy of its map was already there to write it.
        unmarked_are_its_own: bool,
    },
}

impl Claimant<'_> {
    fn incarnation(&self) -> Option<&Incarnation> {
        match *self {
            Claimant::New(incarnation) => Some(incarnation),
            Claimant::Existing { incarnation, .. } => incarnation,
        }
    }

    /// Whether a claim written under its name with `recorded` (none: no
    /// incarnation) is its own.
    fn owns(&self, recorded: Option<&Incarnation>) -> bool {
        match (*self, recorded) {
            (Claimant::New(_), _) => false,
            (Claimant::Existing { incarnation, .. }, Some(recorded)) => {
                incarnation == Some(recorded)
            }
            (
                Claimant::Existing {
                    incarnation,
                    unmarked_are_its_own,
                },
                None,
            ) => incarnation.is_none() || unmarked_are_its_own,
        }
    }
}

fn claims(database: &Database) -> Collection<Document> {
    database.collection(PREFIXES_COLLECTION)
}

fn database_error(
    name: &CounterName,
    action: &'static str,
    source: mongodb::error::Error,
) -> SequenceError {
    SequenceError::from_database(name, action, "prefixes", source)
}

/// Claims `prefixes` for counter `name`, or fails naming the first one that
/// is owned by another counter, or was ever owned by one (and so is
/// retired): then nothing stays claimed. Returns the prefixes this call
/// claimed anew, for [`abandon`] if what follows fails.
pub(crate) async fn claim(
    database: &Database,
    name: &CounterName,
    prefixes: &[String],
    claimant: Claimant<'_>,
) -> Result<Vec<String>, SequenceError> {
    let mut claimed = Vec::new();
    for prefix in prefixes {
        match claim_one(database, name, prefix, claimant, true).await {
            Ok(true) => claimed.push(prefix.clone()),
            Ok(false) => {}
            Err(error) => {
                abandon(database, name, &claimed).await;
                return Err(error);
            }
        }
    }
    Ok(claimed)
}

/// Claims one prefix; `Ok(true)` when this call wrote the claim, `Ok(false)`
/// when the counter's own claim was there already.
async fn claim_one(
    database: &Database,
    name: &CounterName,
    prefix: &str,
    claimant: Claimant<'_>,
    again: bool,
) -> Result<bool, SequenceError> {
    // A counter made before the history existed speaks through its document.
    if let Some(owner) = owners(database, prefix)
        .await?
        .into_iter()
        .find(|owner| owner != name.as_str())
    {
        return Err(SequenceError::PrefixTaken {
            prefix: prefix.to_string(),
            owner,
        });
    }
    let mut claim = doc! {
        "_id": prefix,
        "counter": name.as_str(),
        "state": Stage::Owned.as_str(),
        "since": DateTime::now(),
    };
    if let Some(incarnation) = claimant.incarnation() {
        claim.insert(INCARNATION_FIELD, incarnation);
    }
    let inserted = claims(database)
        .insert_one(claim)
        .write_concern(durable_write_concern())
        .await;
    match inserted {
        Ok(_) => return Ok(true),
        Err(error) if mongo::is_duplicate_key(&error) => {}
        Err(source) => return Err(database_error(name, "claim a prefix for", source)),
    }
    let existing = claims(database)
        .find_one(doc! { "_id": prefix })
        .await
        .map_err(|source| database_error(name, "read the prefix claims of", source))?;
    let Some(existing) = existing else {
        // Claims are never deleted but by `abandon`, of a create that failed
        // in between: try once more and let that answer stand.
        if again {
            return Box::pin(claim_one(database, name, prefix, claimant, false)).await;
        }
        return Err(SequenceError::Contended {
            name: name.clone(),
            attempts: 2,
        });
    };
    let counter = existing.get_str("counter").unwrap_or_default().to_string();
    let stage = Stage::read(&existing);
    // A claim whose incarnation is malformed is nobody's.
    let recorded = Incarnation::read(&existing);
    match (counter == name.as_str(), stage, recorded) {
        // A prefix this counter owns already.
        (true, Some(Stage::Owned), Ok(recorded)) if claimant.owns(recorded.as_ref()) => {
            if let (None, Some(incarnation)) = (&recorded, claimant.incarnation()) {
                mark(database, name, prefix, incarnation).await?;
            }
            Ok(false)
        }
        (false, Some(Stage::Owned), _) => Err(SequenceError::PrefixTaken {
            prefix: prefix.to_string(),
            owner: counter,
        }),
        // Released, a deleted counter's (or an interrupted create's: the
        // two look alike), another counter's of the same name (another
        // incarnation: made again since, or in another deployment), or a
        // claim idmint did not write: IDs may have been formatted with it,
        // so it is nobody's again.
        (_, stage, _) => Err(SequenceError::PrefixRetired {
            prefix: prefix.to_string(),
            counter,
            released: stage == Some(Stage::Released),
        }),
    }
}

/// Writes `incarnation` into the claims of `prefixes` that counter `name`
/// owns without one, in the deployment of its own document (where a claim
/// of its name is its own): a counter given its incarnation late
/// (`identity::adopt`).
pub(crate) async fn mark_own(
    database: &Database,
    name: &CounterName,
    prefixes: &[String],
    incarnation: &Incarnation,
) -> Result<(), SequenceError> {
    for prefix in prefixes {
        mark(database, name, prefix, incarnation).await?;
    }
    Ok(())
}

/// Writes `incarnation` into the claim of `prefix` that counter `name`
/// owns without one (written before incarnations): from now on it is
/// this counter's by identity, not by name.
async fn mark(
    database: &Database,
    name: &CounterName,
    prefix: &str,
    incarnation: &Incarnation,
) -> Result<(), SequenceError> {
    claims(database)
        .update_one(
            doc! {
                "_id": prefix,
                "counter": name.as_str(),
                INCARNATION_FIELD: { "$exists": false },
            },
            doc! { "$set": { INCARNATION_FIELD: incarnation } },
        )
        .write_concern(durable_write_concern())
        .await
        .map(drop)
        .map_err(|source| database_error(name, "record the identity of", source))
}

/// Takes back the claims `claimed` (as [`claim`] returned them) of a create
/// or add whose write certainly did not happen (refused before it, or by
/// the server's check). Never after a write whose outcome is unknown: it
/// may have been applied. Best effort: a claim left behind only blocks.
pub(crate) async fn abandon(database: &Database, name: &CounterName, claimed: &[String]) {
    if claimed.is_empty() {
        return;
    }
    let _ = claims(database)
        .delete_many(doc! {
            "_id": { "$in": claimed },
            "counter": name.as_str(),
            "state": Stage::Owned.as_str(),
        })
        .write_concern(durable_write_concern())
        .await;
}

/// Records that counter `name` owns `prefix` (before it gives it up: a
/// counter made before the history existed is not in it yet). A claim of
/// another counter is left as it is.
pub(crate) async fn record_owner(
    database: &Database,
    name: &CounterName,
    incarnation: Option<&Incarnation>,
    prefix: &str,
) -> Result<(), SequenceError> {
    let mut record = doc! {
        "counter": name.as_str(),
        "state": Stage::Owned.as_str(),
        "since": DateTime::now(),
    };
    if let Some(incarnation) = incarnation {
        record.insert(INCARNATION_FIELD, incarnation);
    }
    let result = claims(database)
        .update_one(doc! { "_id": prefix }, doc! { "$setOnInsert": record })
        .upsert(true)
        .write_concern(durable_write_concern())
        .await;
    match result {
        Ok(_) => Ok(()),
        // Another writer inserted it between the two halves of the upsert.
        Err(error) if mongo::is_duplicate_key(&error) => Ok(()),
        Err(source) => Err(database_error(name, "record the prefixes of", source)),
    }
}

/// Retires `prefix`, given up by counter `name`: no counter owns it again.
pub(crate) async fn release(
    database: &Database,
    name: &CounterName,
    prefix: &str,
) -> Result<(), SequenceError> {
    claims(database)
        .update_one(
            doc! { "_id": prefix, "counter": name.as_str() },
            doc! { "$set": { "state": Stage::Released.as_str(), "released": DateTime::now() } },
        )
        .write_concern(durable_write_concern())
        .await
        .map(drop)
        .map_err(|source| database_error(name, "release a prefix of", source))
}
