//! The rules of the prefixes one counter owns (which characters a prefix
//! may hold is each policy's to say), the indexes that keep two counters
//! from owning one, and who owns a prefix (see `sequence/prefixes.rs`, the
//! public face, for the model).

use mongodb::bson::{doc, Bson, Document};
use mongodb::options::IndexOptions;
use mongodb::{Collection, Database, IndexModel};

use super::document::find_counters;
use crate::sequence::error::SequenceError;
use crate::sequence::name::CounterName;

/// The most prefixes one counter owns.
pub const MAX_PREFIXES: usize = 32;

/// The longest prefix a counter owns, in bytes (each policy has its own,
/// usually shorter, limit).
pub const MAX_PREFIX_BYTES: usize = 128;

/// Fails unless `prefixes` can be owned by one counter: distinct, at most
/// [`MAX_PREFIXES`], each at most [`MAX_PREFIX_BYTES`] and without control
/// characters.
pub(crate) fn check_prefixes(prefixes: &[String]) -> Result<(), SequenceError> {
    let bad = |reason: String| Err(SequenceError::InvalidSpec(reason));
    if prefixes.len() > MAX_PREFIXES {
        return bad(format!(
            "{} prefixes: a counter owns at most {MAX_PREFIXES}",
            prefixes.len()
        ));
    }
    for (at, prefix) in prefixes.iter().enumerate() {
        if prefixes[..at].contains(prefix) {
            return bad(format!("prefix {prefix:?} is given twice"));
        }
        if prefix.len() > MAX_PREFIX_BYTES {
            return bad(format!(
                "prefix {prefix:?} is {} bytes long, the limit is {MAX_PREFIX_BYTES}",
                prefix.len()
            ));
        }
        if prefix.chars().any(char::is_control) {
            return bad(format!("prefix {prefix:?} holds a control character"));
        }
    }
    Ok(())
}

/// The name of the unique index on the counters' `prefixes`.
pub const PREFIXES_INDEX: &str = "idmint_prefixes";

/// The name of the index that finds the counters owning a prefix
/// undeclared (documents without `prefixes`).
pub const UNDECLARED_PREFIXES_INDEX: &str = "idmint_undeclared_prefixes";

/// The unique index that keeps two counters from owning one prefix.
pub fn index_model() -> IndexModel {
    IndexModel::builder()
        .keys(doc! { "prefixes": 1 })
        .options(
            IndexOptions::builder()
                .name(PREFIXES_INDEX.to_string())
                .unique(true)
                // A counter that owns no prefix (raw values only) has an
                // empty array, which a unique index would see as one value
                // shared by all of them.
                .partial_filter_expression(doc! { "prefixes.0": { "$exists": true } })
                .build(),
        )
        .build()
}

/// The index that finds the counters owning a prefix undeclared: by their
/// default prefix, and among those the ones without `prefixes` (the key
/// null) apart from the ones that own no prefix (an empty array).
pub fn undeclared_index_model() -> IndexModel {
    IndexModel::builder()
        .keys(doc! { "prefix": 1, "prefixes": 1 })
        .options(
            IndexOptions::builder()
                .name(UNDECLARED_PREFIXES_INDEX.to_string())
                .build(),
        )
        .build()
}

/// Creates the indexes if they are missing (idempotent), in one command.
pub(crate) async fn ensure_index(
    collection: &Collection<Document>,
    name: &CounterName,
) -> Result<(), SequenceError> {
    collection
        .create_indexes([index_model(), undeclared_index_model()])
        .await
        .map(drop)
        .map_err(|source| {
            SequenceError::from_database(name, "index the prefixes of", "createIndex", source)
        })
}

/// The filter of the counters that own `prefix`, declared or not: each
/// clause one an index serves (see the module docs).
fn owning(prefix: &str) -> Document {
    // The undeclared owner of the empty prefix has `prefix` "" or none.
    let default: Bson = if prefix.is_empty() {
        doc! { "$in": ["", null] }.into()
    } else {
        prefix.into()
    };
    doc! { "$or": [
        { "prefixes": prefix, "prefixes.0": { "$exists": true } },
        { "prefix": default, "prefixes": { "$exists": false } },
    ]}
}

/// The names of the counters that own `prefix`, by name.
pub async fn owners(database: &Database, prefix: &str) -> Result<Vec<String>, SequenceError> {
    let documents = find_counters(database, owning(prefix), doc! { "_id": 1 }).await?;
    Ok(documents
        .iter()
        .filter_map(|document| document.get_str("_id").ok().map(str::to_string))
        .collect())
}
