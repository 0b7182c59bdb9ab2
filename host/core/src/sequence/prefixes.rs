//! Who owns a prefix: the formatted ID space belongs to one counter.
//!
//! Two counters that format IDs with the same prefix can issue the same ID
//! (two fresh counters both hand out 1, and a frozen clock gives them the same
//! time), so each prefix, the empty one included, is owned by at most one
//! counter (`prefixes` in its document, see `counter/fields.rs`), and an ID may only
//! be formatted with a prefix its counter owns ([`check_use`]).
//!
//! - A unique index on `prefixes` ([`PREFIXES_INDEX`], partial: counters that
//!   own no prefix are not in it) makes the rule atomic: creating a counter,
//!   or adding a prefix to one, fails with a duplicate key when another counter
//!   owns it, and nothing is written. `idmint install` creates the index;
//!   creating a counter makes sure of it too.
//! - Documents without `prefixes` (made by an idmint before owners, or by hand
//!   as the seed's) own their `prefix`, or the empty prefix, undeclared: the
//!   index cannot see them, so [`check_use`] also asks whether another counter
//!   owns the prefix, and [`collisions`] lists every prefix owned twice, for
//!   `idmint status` and `install` to report with what to do. Nothing is ever
//!   changed without being asked: `idmint counter prefix add` declares.
//!
//! Asking who owns a prefix ([`owners`]) is two index lookups, whatever the
//! number of counters: the declared owners through [`PREFIXES_INDEX`] (the
//! query repeats the index's partial filter, which a server needs to use a
//! partial index), the undeclared ones through
//! [`UNDECLARED_PREFIXES_INDEX`] on `{prefix, prefixes}`, where a document
//! without `prefixes` has the key null and one that owns no prefix (an
//! empty array) another key. Both are created with the counters' first
//! prefix and by `idmint install`; without them the answer is the same,
//! read by a scan.

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Document};
use mongodb::{Collection, Database};
use serde::Serialize;

use super::claims::{self, Claimant};
use super::counter::fields::{database_of, read_prefixes, Owned};
use super::counter::prefixes::{check_prefixes, MAX_PREFIXES};
use super::registry::read_state;
use super::{CounterName, CounterState, SequenceError, COUNTERS_COLLECTION};
use crate::mongo::{self, durable_write_concern};

pub(crate) use super::counter::prefixes::ensure_index;
pub use super::counter::prefixes::{
    index_model, owners, undeclared_index_model, PREFIXES_INDEX, UNDECLARED_PREFIXES_INDEX,
};

/// Fails unless counter `state` may format IDs with `prefix`: it owns it, and
/// no other counter does (which only a document without declared prefixes
/// can bring about). Nothing is written either way.
pub async fn check_use(
    database: &Database,
    state: &CounterState,
    prefix: &str,
) -> Result<(), SequenceError> {
    check_owned(state, prefix)?;
    check_alone(database, state, prefix).await
}

/// The half of [`check_use`] that needs no database: fails unless counter
/// `state`, as read, owns `prefix`.
pub fn check_owned(state: &CounterState, prefix: &str) -> Result<(), SequenceError> {
    let name = CounterName::new(&state.name)?;
    if !state.owns(prefix) {
        return Err(SequenceError::PrefixNotOwned {
            name,
            prefix: prefix.to_string(),
            owned: state.prefixes.clone(),
        });
    }
    Ok(())
}

/// The other half of [`check_use`]: fails if a counter other than `state`
/// owns `prefix` (one lookup, by index).
pub async fn check_alone(
    database: &Database,
    state: &CounterState,
    prefix: &str,
) -> Result<(), SequenceError> {
    let owners = owners(database, prefix).await?;
    if owners.iter().any(|owner| *owner != state.name) {
        return Err(SequenceError::PrefixShared {
            prefix: prefix.to_string(),
            counters: owners,
        });
    }
    Ok(())
}

/// A prefix owned by more than one counter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Collision {
    /// The prefix.
    pub prefix: String,
    /// The counters that own it, by name.
    pub counters: Vec<String>,
    /// Of those, the ones whose documents declare it (`prefixes`): two of
    /// them keep the unique index from being built.
    pub declared_by: Vec<String>,
}

impl Collision {
    /// What to do about it, in words.
    pub fn advice(&self) -> String {
        format!(
            "prefix {:?} is owned by counters {}: their formatted IDs can collide; give all but \
             one a prefix of its own (idmint counter prefix add NAME NEW, then \
             idmint counter prefix remove NAME {:?})",
            self.prefix,
            self.counters.join(", "),
            self.prefix
        )
    }
}

/// Every prefix owned by more than one counter of `database` (only
/// documents without declared prefixes can make one: see the module docs).
pub async fn collisions(database: &Database) -> Result<Vec<Collision>, SequenceError> {
    let documents: Vec<Document> = database
        .collection::<Document>(COUNTERS_COLLECTION)
        .find(doc! {})
        .projection(doc! { "_id": 1, "prefix": 1, "prefixes": 1 })
        .sort(doc! { "_id": 1 })
        .await
        .map_err(|source| SequenceError::ListCounters { source })?
        .try_collect()
        .await
        .map_err(|source| SequenceError::ListCounters { source })?;
    let owned: Vec<(&str, Owned)> = documents
        .iter()
        .filter_map(|document| {
            // A corrupt document is reported by whatever reads it.
            Some((document.get_str("_id").ok()?, read_prefixes(document).ok()?))
        })
        .collect();
    Ok(owned_twice(owned.iter().map(|(name, owned)| {
        (*name, owned.prefixes.as_slice(), owned.declared)
    })))
}

/// Every prefix owned by more than one of `counters`, already read (by
/// name, as [`super::list`] gives them): what [`collisions`] finds, without
/// reading again, except for documents corrupt in their kind's fields but
/// not in their prefixes, which [`collisions`] counts and a
/// [`CounterState`] cannot be read from.
pub fn collisions_among<'a>(
    counters: impl IntoIterator<Item = &'a CounterState>,
) -> Vec<Collision> {
    owned_twice(counters.into_iter().map(|counter| {
        (
            counter.name.as_str(),
            counter.prefixes.as_slice(),
            counter.prefixes_declared,
        )
    }))
}

/// The prefixes owned twice among `owners`: each a counter's name, the
/// prefixes it owns and whether its document declares them, by name.
fn owned_twice<'a>(owners: impl Iterator<Item = (&'a str, &'a [String], bool)>) -> Vec<Collision> {
    let mut by_prefix: std::collections::BTreeMap<&str, Collision> = Default::default();
    for (name, prefixes, declared) in owners {
        for prefix in prefixes {
            let collision = by_prefix.entry(prefix).or_insert_with(|| Collision {
                prefix: prefix.clone(),
                counters: Vec::new(),
                declared_by: Vec::new(),
            });
            if !collision.counters.iter().any(|counter| counter == name) {
                collision.counters.push(name.to_string());
                if declared {
                    collision.declared_by.push(name.to_string());
                }
            }
        }
    }
    by_prefix
        .into_values()
        .filter(|collision| collision.counters.len() > 1)
        .collect()
}

/// The error a duplicate key on creating counter `name` owning `prefixes`
/// means: the counter exists, or another one owns one of the prefixes.
pub(crate) async fn explain_duplicate(
    collection: &Collection<Document>,
    name: &CounterName,
    prefixes: &[String],
) -> SequenceError {
    match read_state(collection, name).await {
        Err(SequenceError::UnknownCounter(_)) => {}
        _ => return SequenceError::CounterExists(name.clone()),
    }
    prefix_taken(database_of(collection), name, prefixes).await
}

/// The [`SequenceError::PrefixTaken`] for the first of `prefixes` another
/// counter than `name` owns.
async fn prefix_taken(
    database: Database,
    name: &CounterName,
    prefixes: &[String],
) -> SequenceError {
    for prefix in prefixes {
        match owners(&database, prefix).await {
            Ok(owners) => {
                if let Some(owner) = owners.into_iter().find(|owner| owner != name.as_str()) {
                    return SequenceError::PrefixTaken {
                        prefix: prefix.clone(),
                        owner,
                    };
                }
            }
            Err(error) => return error,
        }
    }
    // No counter owns any of them, yet the index refused one: it holds an
    // entry that no document has (a server that keeps the entry of a
    // document that left the index's partial filter). Never contention:
    // trying again would meet the same entry.
    SequenceError::PrefixIndexStale {
        name: name.clone(),
        prefixes: prefixes.to_vec(),
    }
}

/// Makes counter `name` own `prefix` too (declaring its prefixes if the
/// document did not), with one conditional update under the unique index:
/// a prefix another counter owns is refused and nothing changes. Returns
/// Fails for a counter whose lanes span deployments: each holds a copy of
/// its prefixes, which a change in one would leave behind.
fn refuse_across_deployments(
    name: &CounterName,
    state: &CounterState,
) -> Result<(), SequenceError> {
    match &state.striped {
        Some(map) if map.spans_deployments() => Err(SequenceError::Striping {
            name: name.clone(),
            source: crate::sequence::striping::StripingError::PrefixesAcrossDeployments {
                spans: map.spans.clone(),
            },
        }),
        _ => Ok(()),
    }
}

/// the counter after.
pub async fn add(
    database: &Database,
    name: &CounterName,
    prefix: &str,
) -> Result<CounterState, SequenceError> {
    let collection = database.collection::<Document>(COUNTERS_COLLECTION);
    ensure_index(&collection, name).await?;
    let state = read_state(&collection, name).await?;
    refuse_across_deployments(name, &state)?;
    if state.prefixes_declared && state.owns(prefix) {
        return Ok(state);
    }
    let mut prefixes = state.prefixes.clone();
    if !prefixes.iter().any(|owned| owned == prefix) {
        prefixes.push(prefix.to_string());
    }
    if prefixes.len() > MAX_PREFIXES {
        return Err(SequenceError::InvalidSpec(format!(
            "counter '{name}' owns {MAX_PREFIXES} prefixes already, the most one counter owns"
        )));
    }
    check_prefixes(&prefixes)?;
    // An older document's undeclared prefixes are its already: declaring
    // them records them (another counter may own one undeclared too, which
    // `status` reports); the new prefix is claimed.
    if !state.prefixes_declared {
        for owned in &state.prefixes {
            claims::record_owner(database, name, state.incarnation.as_ref(), owned).await?;
        }
    }
    let new: Vec<String> = Some(prefix.to_string())
        .filter(|prefix| !state.owns(prefix))
        .into_iter()
        .collect();
    claims::claim(
        database,
        name,
        &new,
        Claimant::Existing {
            incarnation: state.incarnation.as_ref(),
            unmarked_are_its_own: false,
        },
    )
    .await?;
    // A claim stands whatever the rewrite's outcome: a write whose answer
    // was lost may have been applied, and the claim is this counter's.
    rewrite(&collection, name, &state, prefixes).await
}

/// Makes counter `name` give up `prefix` (declaring its prefixes if the
/// document did not). Its default becomes the next one it owns; without
/// any, it hands out raw values only. Returns the counter after.
pub async fn remove(
    database: &Database,
    name: &CounterName,
    prefix: &str,
) -> Result<CounterState, SequenceError> {
    let collection = database.collection::<Document>(COUNTERS_COLLECTION);
    let state = read_state(&collection, name).await?;
    refuse_across_deployments(name, &state)?;
    if !state.owns(prefix) {
        return Err(SequenceError::PrefixNotOwned {
            name: name.clone(),
            prefix: prefix.to_string(),
            owned: state.prefixes.clone(),
        });
    }
    let prefixes = state
        .prefixes
        .iter()
        .filter(|owned| *owned != prefix)
        .cloned()
        .collect();
    // The history names the owner before the document stops naming it, and
    // retires the prefix only after: whatever a crash interrupts, no other
    // counter can claim it in between.
    claims::record_owner(database, name, state.incarnation.as_ref(), prefix).await?;
    let after = rewrite(&collection, name, &state, prefixes).await?;
    claims::release(database, name, prefix).await?;
    Ok(after)
}

/// Replaces the prefixes of counter `name`, read as `before`, with `prefixes`
/// (the default first), if the document still has the ones read.
async fn rewrite(
    collection: &Collection<Document>,
    name: &CounterName,
    before: &CounterState,
    prefixes: Vec<String>,
) -> Result<CounterState, SequenceError> {
    let mut filter = doc! { "_id": name.as_str() };
    if before.prefixes_declared {
        filter.insert("prefixes", &before.prefixes);
    } else {
        filter.insert("prefixes", doc! { "$exists": false });
    }
    let mut set = doc! { "prefixes": &prefixes };
    let update = match prefixes.first().filter(|p| !p.is_empty()) {
        Some(default) => {
            set.insert("prefix", default.as_str());
            doc! { "$set": set }
        }
        None => doc! { "$set": set, "$unset": { "prefix": "" } },
    };
    let result = collection
        .find_one_and_update(filter, update)
        .return_document(mongodb::options::ReturnDocument::After)
        .write_concern(durable_write_concern())
        .await;
    match result {
        Ok(Some(document)) => CounterState::from_document(name, &document),
        Ok(None) => Err(SequenceError::Contended {
            name: name.clone(),
            attempts: 1,
        }),
        Err(error) if mongo::is_duplicate_key(&error) => {
            let database = database_of(collection);
            let new: Vec<String> = prefixes
                .into_iter()
                .filter(|prefix| !before.owns(prefix) || !before.prefixes_declared)
                .collect();
            Err(prefix_taken(database, name, &new).await)
        }
        Err(source) => Err(SequenceError::from_database(
            name,
            "change the prefixes of",
            "update",
            source,
        )),
    }
}
