//! Reads what is in the database now: for each item, whether it is there and
//! the sha256 of what is there; and the manifest records.

use std::collections::HashMap;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use mongodb::Database;

use super::items::{privileges_sha256, stored_value_sha256, Item, ItemSpec, MANIFEST_COLLECTION};
use super::{InstallError, SYSTEM_JS};

/// What the database holds for one item.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Observed {
    /// Nothing by that name.
    Absent,
    /// Something by that name; `sha256` of its content, and for functions the
    /// stored value (for conditional writes).
    Present { sha256: String, value: Option<Bson> },
}

/// The manifest record of an item, as stored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Recorded {
    pub version: String,
    pub sha256: String,
}

/// Reads every manifest record, keyed by `<kind>:<name>`.
pub(crate) async fn manifest(
    database: &Database,
) -> Result<HashMap<String, Recorded>, InstallError> {
    let records: Vec<Document> = database
        .collection::<Document>(MANIFEST_COLLECTION)
        .find(doc! {})
        .await
        .map_err(|source| InstallError::database("read the manifest", MANIFEST_COLLECTION, source))?
        .try_collect()
        .await
        .map_err(|source| {
            InstallError::database("read the manifest", MANIFEST_COLLECTION, source)
        })?;
    Ok(records
        .into_iter()
        .filter_map(|record| {
            let key = record.get_str("_id").ok()?.to_string();
            let recorded = Recorded {
                version: record.get_str("version").unwrap_or("unknown").to_string(),
                sha256: record.get_str("sha256").unwrap_or_default().to_string(),
            };
            Some((key, recorded))
        })
        .collect())
}

/// Reads what the database holds for `item`.
pub(crate) async fn observe(database: &Database, item: &Item) -> Result<Observed, InstallError> {
    match &item.spec {
        ItemSpec::Collection => {
            let names = database
                .list_collection_names()
                .filter(doc! { "name": &item.name })
                .await
                .map_err(|source| InstallError::database("list collections", &item.name, source))?;
            Ok(if names.is_empty() {
                Observed::Absent
            } else {
                Observed::Present {
                    sha256: item.sha256.clone(),
                    value: None,
                }
            })
        }
        ItemSpec::Function { .. } => {
            let stored = database
                .collection::<Document>(SYSTEM_JS)
                .find_one(doc! { "_id": &item.name })
                .await
                .map_err(|source| InstallError::database("read system.js", SYSTEM_JS, source))?;
            Ok(match stored {
                None => Observed::Absent,
                Some(document) => {
                    let value = document.get("value").cloned().unwrap_or(Bson::Null);
                    Observed::Present {
                        sha256: stored_value_sha256(&value),
                        value: Some(value),
                    }
                }
            })
        }
        ItemSpec::Index { collection, model } => {
            let model = model.model();
            let name = model
                .options
                .as_ref()
                .and_then(|options| options.name.clone())
                .unwrap_or_default();
            let indexes: Vec<mongodb::IndexModel> = match database
                .collection::<Document>(collection)
                .list_indexes()
                .await
            {
                Ok(cursor) => cursor
                    .try_collect()
                    .await
                    .map_err(|source| InstallError::database("list indexes", collection, source))?,
                // No collection yet: no index either.
                Err(error)
                    if crate::mongo::error_code(&error)
                        == Some(crate::mongo::NAMESPACE_NOT_FOUND) =>
                {
                    Vec::new()
                }
                Err(source) => {
                    return Err(InstallError::database("list indexes", collection, source))
                }
            };
            Ok(
                match indexes.iter().find(|index| {
                    index.options.as_ref().and_then(|o| o.name.as_deref()) == Some(name.as_str())
                }) {
                    None => Observed::Absent,
                    Some(index) => Observed::Present {
                        sha256: super::items::index_sha256(index),
                        value: None,
                    },
                },
            )
        }
        ItemSpec::Role(_) => {
            let reply = database
                .run_command(doc! { "rolesInfo": &item.name, "showPrivileges": true })
                .await
                .map_err(|source| {
                    InstallError::database("read roles (rolesInfo)", &item.name, source)
                })?;
            let role = reply
                .get_array("roles")
                .ok()
                .and_then(|roles| roles.first())
                .and_then(Bson::as_document);
            Ok(match role {
                None => Observed::Absent,
                Some(role) => {
                    let privileges: Vec<Document> = role
                        .get_array("privileges")
                        .map(|list| list.iter().filter_map(Bson::as_document).cloned().collect())
                        .unwrap_or_default();
                    Observed::Present {
                        sha256: privileges_sha256(&privileges),
                        value: None,
                    }
                }
            })
        }
    }
}
