//! The stored JavaScript twins held equal to the host: counters seeded
//! alike in several databases, a script run by mongosh after the functions'
//! loader, and what each side left behind, compared BSON type for type.

use std::process::Command;

use mongodb::bson::{doc, Bson, Document};
use mongodb::Database;
use serde_json::Value;

use super::database::{database_name, documents};
use super::{mongosh, server};

/// A client clock the twins and the host read alike (microseconds): the
/// host takes with it, the twin calls `getNextUniqueStamp(NAME, CLIENT)`.
pub const CLIENT: u64 = 1_764_000_000_000_500;

/// Which stored function a twin calls, each the twin of a host reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Twin {
    /// `getNextSequence(NAME)`: an autoinc counter, or autoinc lanes.
    Sequence,
    /// `getNextUniqueStamp(NAME, clientMicros)`: a cyclic counter, or
    /// cyclic lanes.
    Stamp,
    /// `getNextPeriodic(NAME, count)`: a periodic counter, or periodic
    /// lanes.
    Periodic,
}

impl Twin {
    /// The stored function's name.
    pub fn function(self) -> &'static str {
        match self {
            Self::Sequence => "getNextSequence",
            Self::Stamp => "getNextUniqueStamp",
            Self::Periodic => "getNextPeriodic",
        }
    }
}

/// Inserts each `(id, fields)` into `database`'s counters: the document
/// `{_id: id}` with `fields` after it.
pub async fn seed_counters(
    database: &Database,
    counters: impl IntoIterator<Item = (String, Document)>,
) {
    let collection = database.collection::<Document>("counters");
    for (id, fields) in counters {
        let mut document = doc! { "_id": id };
        document.extend(fields);
        collection.insert_one(document).await.unwrap();
    }
}

/// Every document of `collection`, by `_id`, each as canonical extended
/// JSON (BSON types kept: an int32 left where the other twin wrote an
/// int64 differs).
pub async fn canonical_documents(database: &Database, collection: &str) -> Vec<Value> {
    documents(database, collection)
        .await
        .into_iter()
        .map(|document| Bson::Document(document).into_canonical_extjson())
        .collect()
}

/// The JSON lines `script` prints, run by mongosh in `test`'s database
/// (after the functions' loader) in a blocking task, with `idmint` and
/// its database in its environment for scripts that run it.
pub async fn twin(test: &str, script: String) -> Vec<Value> {
    let mut command: Command = mongosh::shell(test, &script);
    command
        .env("IDMINT_BIN", env!("CARGO_BIN_EXE_idmint"))
        .env("MONGODB_URI", server::uri())
        .env("IDMINT_DB", database_name(test));
    tokio::task::spawn_blocking(move || mongosh::json_lines(&mut command))
        .await
        .unwrap()
}

/// Fails unless each counter of `refused` (every call of it refused) left
/// its documents (its own, `NAME`, and its lanes', `NAME#r`) in `after` as
/// they are in `pristine` (documents as [`canonical_documents`] reads
/// them); how many of them had documents to leave.
#[track_caller]
pub fn assert_refused_left_unchanged<'a>(
    refused: impl IntoIterator<Item = &'a str>,
    after: &[Value],
    pristine: &[Value],
) -> usize {
    let mut unchanged = 0;
    for name in refused {
        let of_counter = |documents: &[Value]| -> Vec<Value> {
            documents
                .iter()
                .filter(|document| {
                    let id = document["_id"].as_str().unwrap();
                    id == name || id.starts_with(&format!("{name}#"))
                })
                .cloned()
                .collect()
        };
        let before = of_counter(pristine);
        assert_eq!(
            of_counter(after),
            before,
            "{name}: every call was refused, yet its documents changed"
        );
        if !before.is_empty() {
            unchanged += 1;
        }
    }
    unchanged
}
