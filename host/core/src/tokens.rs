//! Bearer tokens per application, each allowed a set of counters (Tinyid's
//! per-business tokens).
//!
//! The tokens file holds no token, only each token's SHA-256, so that it
//! can be read by whoever deploys the server without handing out access:
//!
//! ```json
//! {"apps": [
//!   {"name": "billing", "token_sha256": "5e88...", "counters": ["orders", "invoices"]},
//!   {"name": "ops", "token_sha256": "a3f1...", "counters": ["*"]}
//! ]}
//! ```
//!
//! (`printf %s "$TOKEN" | sha256sum` gives the hash.) The same entries can
//! live in the database instead, in the `tokens` collection
//! (`{_id: app, token_sha256, counters}`), written by [`add_app`] (`idmint
//! token add`), which makes the token and shows it once. Tokens are never
//! taken from the command line and never logged; a request names the app
//! it authenticated as, not the token.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Document};
use mongodb::Database;
use serde::{Deserialize, Serialize};

use crate::checksum::sha256_hex;

/// The collection of application tokens, `{_id: app, token_sha256, counters}`.
pub use crate::mongo::collections::TOKENS as TOKENS_COLLECTION;

/// Why a tokens file cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AccessError {
    /// The file cannot be read.
    #[error("cannot read the tokens file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file, or the tokens collection, is not what it should be.
    #[error("the tokens {source_name} is invalid: {reason}")]
    Invalid {
        /// `file PATH`, or `collection DB.tokens`.
        source_name: String,
        /// What is wrong.
        reason: String,
    },
    /// An app's name is not one (empty, or not printable ASCII).
    #[error("invalid app name {0:?}: use 1 to 64 letters, digits, _ - .")]
    InvalidName(String),
    /// `token remove` of an app that has no token.
    #[error("no app '{0}' in the tokens collection")]
    UnknownApp(String),
    /// An app of that name has a token already.
    #[error("app '{0}' has a token already: remove it first (idmint token remove {0})")]
    AppExists(String),
    /// Reading or writing the tokens collection failed.
    #[error("the tokens collection: {0}")]
    Database(#[from] mongodb::error::Error),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokensFile {
    apps: Vec<AppEntry>,
}

/// One application's entry, in the file or the collection.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AppEntry {
    /// The app's name (`_id` in the collection).
    #[serde(alias = "_id")]
    pub name: String,
    /// The SHA-256 of its token, lowercase hex.
    pub token_sha256: String,
    /// The counters it may use; `*` for all.
    pub counters: Vec<String>,
    /// The prefixes it may format IDs with (each one still owned by the
    /// counter asked); absent: any prefix of the counters it may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefixes: Option<Vec<String>>,
    /// The locks it may take through the service (`*` for all); absent:
    /// none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub locks: Vec<String>,
}

/// The applications allowed in, by the SHA-256 of their token.
#[derive(Debug, Clone)]
pub struct Access {
    apps: HashMap<String, App>,
}

/// One application: its name and the counters it may use.
#[derive(Debug, Clone)]
pub struct App {
    /// The application's name (logged in place of its token).
    pub name: String,
    /// The counters it may use; `*` allows every counter.
    counters: Vec<String>,
    /// The prefixes it may format IDs with; `None`: any its counters own.
    prefixes: Option<Vec<String>>,
    /// The locks it may take; `*` allows every lock.
    locks: Vec<String>,
}

impl App {
    /// Whether the app may use `counter`.
    pub fn may_use(&self, counter: &str) -> bool {
        self.counters.iter().any(|c| c == "*" || c == counter)
    }

    /// Whether the app may take lock `lock` (through the service).
    pub fn may_lock(&self, lock: &str) -> bool {
        self.locks.iter().any(|l| l == "*" || l == lock)
    }

    /// Whether the app may format IDs with `prefix` (which its counter must
    /// own too: that is the counter's rule, checked apart).
    pub fn may_use_prefix(&self, prefix: &str) -> bool {
        self.prefixes
            .as_ref()
            .is_none_or(|prefixes| prefixes.iter().any(|p| p == prefix))
    }

    /// The prefixes the app is limited to, if it is: such an app may take
    /// formatted IDs only, never raw values, which belong to no prefix.
    pub fn prefix_limit(&self) -> Option<&[String]> {
        self.prefixes.as_deref()
    }
}

impl Access {
    /// Reads a tokens file (see the module docs).
    pub fn from_file(path: &Path) -> Result<Self, AccessError> {
        let text = std::fs::read_to_string(path).map_err(|source| AccessError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let source_name = format!("file {}", path.display());
        let file: TokensFile =
            serde_json::from_str(&text).map_err(|error| AccessError::Invalid {
                source_name: source_name.clone(),
                reason: error.to_string(),
            })?;
        Self::from_entries(file.apps, &source_name)
    }

    /// Reads the tokens collection of `database`. A document that is not a
    /// valid entry (a field missing or of the wrong type, a bad hash, no
    /// counters, a token another entry has) is skipped, not fatal: one bad
    /// document written by hand must not lock every app out. What was
    /// skipped, and why, is in [`LoadedAccess::skipped`], for the caller to
    /// warn about. Only a database failure is an error.
    pub async fn from_database(database: &Database) -> Result<LoadedAccess, AccessError> {
        let documents: Vec<Document> = database
            .collection::<Document>(TOKENS_COLLECTION)
            .find(doc! {})
            .sort(doc! { "_id": 1 })
            .await?
            .try_collect()
            .await?;
        let mut apps = HashMap::new();
        let mut skipped = Vec::new();
        for document in documents {
            let id = document
                .get("_id")
                .map_or_else(|| "(no _id)".to_string(), |id| id.to_string());
            let entry: AppEntry = match mongodb::bson::from_document(document) {
                Ok(entry) => entry,
                Err(error) => {
                    skipped.push(format!("document {id}: {error}"));
                    continue;
                }
            };
            if let Err(reason) = add_entry(&mut apps, entry) {
                skipped.push(format!("document {id}: {reason}"));
            }
        }
        Ok(LoadedAccess {
            access: Self { apps },
            skipped,
        })
    }

    fn from_entries(entries: Vec<AppEntry>, source_name: &str) -> Result<Self, AccessError> {
        let mut apps = HashMap::new();
        for entry in entries {
            add_entry(&mut apps, entry).map_err(|reason| AccessError::Invalid {
                source_name: source_name.to_string(),
                reason,
            })?;
        }
        Ok(Self { apps })
    }

    /// The app whose token is `token`, if any.
    pub fn app_for_token(&self, token: &str) -> Option<&App> {
        self.apps.get(&sha256_hex(token.as_bytes()))
    }
}

/// The tokens collection as read ([`Access::from_database`]): the apps
/// allowed in, and the documents skipped with why.
#[derive(Debug, Clone)]
pub struct LoadedAccess {
    /// The apps of the valid documents.
    pub access: Access,
    /// One line per document skipped: its `_id` and what is wrong with it.
    pub skipped: Vec<String>,
}

/// Checks `entry` and adds it to `apps`, or says what is wrong with it.
fn add_entry(apps: &mut HashMap<String, App>, entry: AppEntry) -> Result<(), String> {
    let hash = entry.token_sha256.to_ascii_lowercase();
    if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "app '{}': token_sha256 must be 64 hexadecimal digits (printf %s \"$TOKEN\" | sha256sum)",
            entry.name
        ));
    }
    if entry.counters.is_empty() {
        return Err(format!(
            "app '{}' lists no counters (use [\"*\"] for all)",
            entry.name
        ));
    }
    if let Some(previous) = apps.get(&hash) {
        return Err(format!(
            "app '{}' has the same token as app '{}'",
            entry.name, previous.name
        ));
    }
    apps.insert(
        hash,
        App {
            name: entry.name,
            counters: entry.counters,
            prefixes: entry.prefixes,
            locks: entry.locks,
        },
    );
    Ok(())
}

impl AccessError {
    /// What kind of failure this is.
    pub fn class(&self) -> crate::error_class::ErrorClass {
        use crate::error_class::ErrorClass;
        match self {
            AccessError::Read { .. }
            | AccessError::Invalid { .. }
            | AccessError::InvalidName(_) => ErrorClass::BadInput,
            AccessError::UnknownApp(_) => ErrorClass::NotFound,
            AccessError::AppExists(_) => ErrorClass::Conflict,
            AccessError::Database(source) => crate::error_class::database_class(source),
        }
    }
}

fn check_app_name(name: &str) -> Result<(), AccessError> {
    let valid = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if valid {
        Ok(())
    } else {
        Err(AccessError::InvalidName(name.to_string()))
    }
}

/// Makes a token for app `name`, allowed `counters` (and, if given, only
/// `prefixes` in the IDs it asks for) and `locks` (through the service),
/// and stores its SHA-256
/// in the tokens collection (write concern majority with journal). Returns
/// the token: it is stored nowhere, so this is the only time it is seen.
pub async fn add_app(
    database: &Database,
    name: &str,
    counters: &[String],
    prefixes: Option<&[String]>,
    locks: &[String],
) -> Result<String, AccessError> {
    check_app_name(name)?;
    if counters.is_empty() {
        return Err(AccessError::Invalid {
            source_name: "request".to_string(),
            reason: format!("app '{name}' must be allowed at least one counter (or *)"),
        });
    }
    let token = crate::random::random_token();
    let mut entry = doc! {
        "_id": name,
        "token_sha256": sha256_hex(token.as_bytes()),
        "counters": counters,
    };
    if let Some(prefixes) = prefixes {
        entry.insert("prefixes", prefixes);
    }
    if !locks.is_empty() {
        entry.insert("locks", locks);
    }
    let inserted = database
        .collection::<Document>(TOKENS_COLLECTION)
        .insert_one(entry)
        .with_options(
            mongodb::options::InsertOneOptions::builder()
                .write_concern(crate::mongo::durable_write_concern())
                .build(),
        )
        .await;
    match inserted {
        Ok(_) => Ok(token),
        Err(error) if crate::mongo::is_duplicate_key(&error) => {
            Err(AccessError::AppExists(name.to_string()))
        }
        Err(error) => Err(error.into()),
    }
}

/// Removes app `name`'s token from the tokens collection.
pub async fn remove_app(database: &Database, name: &str) -> Result<(), AccessError> {
    let deleted = database
        .collection::<Document>(TOKENS_COLLECTION)
        .delete_one(doc! { "_id": name })
        .with_options(
            mongodb::options::DeleteOptions::builder()
                .write_concern(crate::mongo::durable_write_concern())
                .build(),
        )
        .await?;
    if deleted.deleted_count == 0 {
        return Err(AccessError::UnknownApp(name.to_string()));
    }
    Ok(())
}

/// The apps of the tokens collection (their names and counters; the
/// hashes too, which give no access).
pub async fn list_apps(database: &Database) -> Result<Vec<AppEntry>, AccessError> {
    let documents: Vec<Document> = database
        .collection::<Document>(TOKENS_COLLECTION)
        .find(doc! {})
        .sort(doc! { "_id": 1 })
        .await?
        .try_collect()
        .await?;
    documents
        .into_iter()
        .map(|document| {
            mongodb::bson::from_document(document).map_err(|error| AccessError::Invalid {
                source_name: format!("collection {}.{TOKENS_COLLECTION}", database.name()),
                reason: error.to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(json: &str) -> Result<Access, AccessError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        std::fs::write(&path, json).unwrap();
        Access::from_file(&path)
    }

    #[test]
    fn a_token_opens_its_apps_counters_only() {
        let hash = sha256_hex(b"s3cret");
        let access = access(&format!(
            r#"{{"apps": [{{"name": "billing", "token_sha256": "{hash}", "counters": ["orders"]}}]}}"#
        ))
        .unwrap();
        let app = access.app_for_token("s3cret").unwrap();
        assert_eq!(app.name, "billing");
        assert!(app.may_use("orders") && !app.may_use("invoices"));
        for wrong in ["nope", "", "S3CRET"] {
            assert!(access.app_for_token(wrong).is_none());
        }
    }

    #[test]
    fn a_bad_tokens_file_is_named() {
        let error =
            access(r#"{"apps": [{"name": "x", "token_sha256": "abc", "counters": ["*"]}]}"#)
                .unwrap_err();
        assert!(
            error.to_string().contains("64 hexadecimal digits"),
            "{error}"
        );
        let error = access(r#"{"apps": [], "extra": 1}"#).unwrap_err();
        assert!(error.to_string().contains("unknown field"), "{error}");
    }
}
