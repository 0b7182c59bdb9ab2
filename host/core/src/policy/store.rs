//! The policies collection: policy components stored in MongoDB, one of them
//! active, so that every host following it (`--policy-from-db`, see
//! `watch.rs`) serves the same format and a new one rolls out cluster-wide.
//!
//! The collection [`POLICIES_COLLECTION`] in idmint's database holds two
//! kinds of document:
//!
//! - a module: `{_id: <version: int64>, kind: "module", name, sha256, size,
//!   bytes: BinData, info: {name, version, sequence_capacity,
//!   max_prefix_len}, pushed_at: Date}`; versions count up from 1, and
//!   pushing bytes already stored returns the version they have;
//! - the pointer: `{_id: "active", kind: "active", version, sha256,
//!   activated_at: Date, history: [<earlier active versions>, ...]}`.
//!
//! Every policy is checked before it is stored or made active: the SHA-256
//! of the stored bytes must match the one recorded (drift is refused, not
//! compiled), and the policy must load and pass the activation check
//! (`activation.rs`). [`PolicyStore::rollback`] makes the previously active
//! version active again, popping it from `history`.

use std::fmt;

use chrono::{DateTime, Utc};
use mongodb::bson::{doc, spec::BinarySubtype, Binary, Bson, Document};
use mongodb::{Collection, Database};
use serde::Serialize;

use super::activation::{self, ActivationOptions, ActivationReport};
use super::error::PolicyError;
use super::runtime::{Policy, PolicyRuntime};
use super::types::PolicyInfo;
use crate::checksum::sha256_hex;
use crate::mongo::{self, durable_write_concern};

/// The collection, in idmint's database, that holds stored policies.
pub use crate::mongo::collections::POLICIES as POLICIES_COLLECTION;

/// How a stored version is named wherever it is the source of a policy (an
/// origin, a swap event): `policies version N`.
pub fn version_source(version: i64) -> String {
    format!("{POLICIES_COLLECTION} version {version}")
}

/// The `_id` of the document that names the active version.
const ACTIVE_ID: &str = "active";

/// The longest `--name` accepted, in bytes.
const MAX_NAME_LEN: usize = 100;

/// Why an operation on the policies collection failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyStoreError {
    /// The server refused or could not be reached.
    #[error("policies collection: {}", crate::mongo::describe_error(source))]
    Database {
        /// The driver's error.
        #[from]
        source: mongodb::error::Error,
    },
    /// No stored policy has this version.
    #[error("no stored policy has version {0}; `idmint policy list` shows the versions")]
    NoSuchVersion(i64),
    /// Rollback asked for, but no version was active before the current one.
    #[error("nothing to roll back to: no policy was active before the current one")]
    NothingToRollBack,

    /// Other writers kept changing the collection: `attempts` tries in a row
    /// found it changed between reading and writing.
    #[error("the policies collection is too contended: {attempts} attempts in a row raced with another writer")]
    Contended {
        /// How many attempts were made.
        attempts: u32,
    },
    /// The name given to a pushed policy is unusable.
    #[error("bad policy name {name:?}: {reason}")]
    BadName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A stored document is not shaped as idmint writes it.
    #[error("stored policy {id} is malformed: {reason}")]
    Corrupt {
        /// The document's `_id`.
        id: String,
        /// What is wrong.
        reason: String,
    },
    /// The stored bytes no longer hash to the SHA-256 recorded with them.
    #[error("stored policy version {version} was modified: recorded sha256 {expected}, bytes hash to {found}")]
    ChecksumMismatch {
        /// The version.
        version: i64,
        /// The SHA-256 recorded at push.
        expected: String,
        /// The SHA-256 of the bytes now stored.
        found: String,
    },
    /// The policy failed to load or failed its activation check.
    #[error("policy {what} refused: {source}")]
    Rejected {
        /// Which policy: a file or a stored version.
        what: String,
        /// Why.
        #[source]
        source: PolicyError,
    },
}

impl PolicyStoreError {
    /// Whether the database failed (rather than the input or the policy).
    pub fn is_database(&self) -> bool {
        matches!(self, PolicyStoreError::Database { .. })
    }

    /// What kind of failure this is: stored bytes that no longer match
    /// their checksum are drift, a module that fails its checks a policy
    /// failure.
    pub fn class(&self) -> crate::error_class::ErrorClass {
        use crate::error_class::ErrorClass;
        match self {
            PolicyStoreError::Database { source } => crate::error_class::database_class(source),
            PolicyStoreError::NoSuchVersion(_) => ErrorClass::NotFound,
            PolicyStoreError::NothingToRollBack => ErrorClass::Conflict,
            PolicyStoreError::Contended { .. } => ErrorClass::Unavailable,
            PolicyStoreError::BadName { .. } => ErrorClass::BadInput,
            PolicyStoreError::Corrupt { .. } | PolicyStoreError::ChecksumMismatch { .. } => {
                ErrorClass::Drift
            }
            PolicyStoreError::Rejected { source, .. } => match source.class() {
                ErrorClass::BadInput => ErrorClass::BadInput,
                ErrorClass::Unfit => ErrorClass::Unfit,
                _ => ErrorClass::Policy,
            },
        }
    }
}

/// A stored policy, as `policy list` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct StoredPolicy {
    /// The version in the collection (1, 2, ...).
    pub version: i64,
    /// The name given at push (default: the policy's own name).
    pub name: String,
    /// What the policy says about itself.
    pub info: PolicyInfo,
    /// The SHA-256 of its bytes.
    pub sha256: String,
    /// Its size in bytes.
    pub size: i64,
    /// When it was pushed, RFC 3339 in UTC.
    pub pushed_at: String,
    /// Whether it is the active version.
    pub active: bool,
}

/// The active version, as the pointer document names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ActiveRef {
    /// The active version.
    pub version: i64,
    /// Its SHA-256.
    pub sha256: String,
    /// Versions active before it, most recent last.
    pub history: Vec<i64>,
}

/// What [`PolicyStore::push`] did.
#[derive(Debug, Clone, Serialize)]
pub struct PushReport {
    /// The stored policy.
    pub stored: StoredPolicy,
    /// False when the same bytes were already stored (nothing was written).
    pub created: bool,
    /// The activation check it passed.
    pub check: ActivationReport,
}

/// What [`PolicyStore::activate`] and [`PolicyStore::rollback`] did.
#[derive(Debug, Clone, Serialize)]
pub struct ActivateReport {
    /// The version now active.
    pub version: i64,
    /// Its SHA-256.
    pub sha256: String,
    /// The version active before, if any.
    pub previous: Option<i64>,
    /// The activation check it passed.
    pub check: ActivationReport,
}

/// What [`PolicyStore::rollback`] did.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum RollbackReport {
    /// The version active before is active again.
    RolledBack(ActivateReport),
    /// The first activation was undone: no stored version is active, and
    /// following hosts serve their own policy again.
    Deactivated {
        /// The version that was active.
        previous: i64,
    },
}

/// How many times a write that raced with another writer is retried.
const MAX_ATTEMPTS: u32 = 100;

/// The policies collection of one database.
#[derive(Clone)]
pub struct PolicyStore {
    collection: Collection<Document>,
}

impl fmt::Debug for PolicyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolicyStore")
            .field("collection", &self.collection.namespace())
            .finish()
    }
}

impl PolicyStore {
    /// The [`POLICIES_COLLECTION`] of `database`. Nothing is read yet; the
    /// collection need not exist (the first push creates it).
    pub fn new(database: &Database) -> Self {
        PolicyStore {
            collection: database.collection(POLICIES_COLLECTION),
        }
    }

    /// The collection, for watching it.
    pub(crate) fn collection(&self) -> &Collection<Document> {
        &self.collection
    }

    /// Loads `bytes` (named `origin` in errors), runs the activation check,
    /// and stores them as the next version, unless the same bytes are stored
    /// already. Does not activate it.
    pub async fn push(
        &self,
        runtime: &PolicyRuntime,
        bytes: &[u8],
        origin: &str,
        name: Option<&str>,
    ) -> Result<PushReport, PolicyStoreError> {
        if let Some(name) = name {
            check_name(name)?;
        }
        let rejected = |source| PolicyStoreError::Rejected {
            what: origin.to_string(),
            source,
        };
        let policy = runtime.load_bytes(bytes, origin).map_err(rejected)?;
        let check = activation::check(&policy, &ActivationOptions::default()).map_err(rejected)?;
        let sha256 = policy.sha256().to_string();
        let active = self.active().await?;

        if let Some(existing) = self
            .collection
            .find_one(doc! { "kind": "module", "sha256": &sha256 })
            .await?
        {
            let stored = stored_policy(&existing, active.as_ref())?;
            return Ok(PushReport {
                stored,
                created: false,
                check,
            });
        }

        let info = policy.info();
        let name = name.map_or_else(|| info.name.clone(), str::to_string);
        let size = i64::try_from(bytes.len()).unwrap_or(i64::MAX);
        let pushed_at: DateTime<Utc> = Utc::now();
        // Versions are the highest one plus one; two concurrent pushes race
        // for the same `_id` and the loser takes the next.
        for _ in 0..MAX_ATTEMPTS {
            let version = self.highest_version().await? + 1;
            let document = doc! {
                "_id": version,
                "kind": "module",
                "name": &name,
                "sha256": &sha256,
                "size": size,
                "bytes": Binary { subtype: BinarySubtype::Generic, bytes: bytes.to_vec() },
                "info": {
                    "name": &info.name,
                    "version": &info.version,
                    "sequence_capacity": i64::try_from(info.sequence_capacity).unwrap_or(i64::MAX),
                    "max_prefix_len": i64::from(info.max_prefix_len),
                },
                "pushed_at": bson::DateTime::from_chrono(pushed_at),
            };
            match self
                .collection
                .insert_one(document)
                .write_concern(durable_write_concern())
                .await
            {
                Ok(_) => {
                    return Ok(PushReport {
                        stored: StoredPolicy {
                            version,
                            name,
                            info: info.clone(),
                            sha256,
                            size,
                            pushed_at: rfc3339(pushed_at),
                            active: false,
                        },
                        created: true,
                        check,
                    })
                }
                Err(error) if mongo::is_duplicate_key(&error) => continue,
                Err(error) => return Err(error.into()),
            }
        }
        Err(PolicyStoreError::Contended {
            attempts: MAX_ATTEMPTS,
        })
    }

    /// Every stored policy, by version.
    pub async fn list(&self) -> Result<Vec<StoredPolicy>, PolicyStoreError> {
        use futures_util::TryStreamExt;
        let active = self.active().await?;
        let documents: Vec<Document> = self
            .collection
            .find(doc! { "kind": "module" })
            .projection(doc! { "bytes": 0 })
            .sort(doc! { "_id": 1 })
            .await?
            .try_collect()
            .await?;
        documents
            .iter()
            .map(|d| stored_policy(d, active.as_ref()))
            .collect()
    }

    /// The active version, or `None` when none was ever activated.
    pub async fn active(&self) -> Result<Option<ActiveRef>, PolicyStoreError> {
        let Some(document) = self.collection.find_one(doc! { "_id": ACTIVE_ID }).await? else {
            return Ok(None);
        };
        let corrupt = |reason: &str| PolicyStoreError::Corrupt {
            id: ACTIVE_ID.to_string(),
            reason: reason.to_string(),
        };
        let version = integer(&document, "version").ok_or_else(|| corrupt("no integer version"))?;
        let sha256 = document
            .get_str("sha256")
            .map_err(|_| corrupt("no sha256 string"))?
            .to_string();
        let history = match document.get_array("history") {
            Ok(items) => items
                .iter()
                .map(|b| b.as_i64().or_else(|| b.as_i32().map(i64::from)))
                .collect::<Option<Vec<i64>>>()
                .ok_or_else(|| corrupt("history holds a non-integer"))?,
            Err(_) => Vec::new(),
        };
        Ok(Some(ActiveRef {
            version,
            sha256,
            history,
        }))
    }

    /// The bytes of `version`, after checking they still hash to the
    /// recorded SHA-256. Returns the bytes and that hash.
    pub async fn fetch(&self, version: i64) -> Result<(Vec<u8>, String), PolicyStoreError> {
        let document = self
            .collection
            .find_one(doc! { "_id": version, "kind": "module" })
            .await?
            .ok_or(PolicyStoreError::NoSuchVersion(version))?;
        let corrupt = |reason: &str| PolicyStoreError::Corrupt {
            id: version.to_string(),
            reason: reason.to_string(),
        };
        let expected = document
            .get_str("sha256")
            .map_err(|_| corrupt("no sha256 string"))?
            .to_string();
        let bytes = match document.get("bytes") {
            Some(Bson::Binary(binary)) => binary.bytes.clone(),
            _ => return Err(corrupt("no binary bytes")),
        };
        let found = sha256_hex(&bytes);
        if found != expected {
            return Err(PolicyStoreError::ChecksumMismatch {
                version,
                expected,
                found,
            });
        }
        Ok((bytes, expected))
    }

    /// Fetches, loads and checks `version` against `options`, as a host
    /// does before serving with it.
    pub async fn load(
        &self,
        runtime: &PolicyRuntime,
        version: i64,
    ) -> Result<Policy, PolicyStoreError> {
        let (bytes, _) = self.fetch(version).await?;
        let origin = version_source(version);
        runtime
            .load_bytes(&bytes, &origin)
            .map_err(|source| PolicyStoreError::Rejected {
                what: origin,
                source,
            })
    }

    /// Makes `version` the active one, after loading it and running the
    /// activation check. The version active before goes on the history, for
    /// [`PolicyStore::rollback`]. Atomic: the pointer is written only if it
    /// is still what was read, so two activations at once both land in the
    /// history, one after the other (a lost race is retried, a bounded number
    /// of times).
    pub async fn activate(
        &self,
        runtime: &PolicyRuntime,
        version: i64,
    ) -> Result<ActivateReport, PolicyStoreError> {
        for _ in 0..MAX_ATTEMPTS {
            let previous = self.active().await?;
            let mut history = previous
                .as_ref()
                .map(|a| a.history.clone())
                .unwrap_or_default();
            if let Some(previous) = &previous {
                if previous.version != version {
                    history.push(previous.version);
                }
            }
            if let Some(report) = self
                .set_active(runtime, version, previous.as_ref(), history)
                .await?
            {
                return Ok(report);
            }
        }
        Err(PolicyStoreError::Contended {
            attempts: MAX_ATTEMPTS,
        })
    }

    /// Makes the previously active version active again and removes it from
    /// the history; atomic like [`PolicyStore::activate`]. Rolling back the
    /// first activation (an empty history) removes the active pointer, so
    /// that following hosts return to their own `--policy` or the default.
    pub async fn rollback(
        &self,
        runtime: &PolicyRuntime,
    ) -> Result<RollbackReport, PolicyStoreError> {
        for _ in 0..MAX_ATTEMPTS {
            let active = self
                .active()
                .await?
                .ok_or(PolicyStoreError::NothingToRollBack)?;
            let mut history = active.history.clone();
            let Some(version) = history.pop() else {
                let removed = self
                    .collection
                    .delete_one(doc! { "_id": ACTIVE_ID, "version": active.version, "history": [] })
                    .write_concern(durable_write_concern())
                    .await?;
                if removed.deleted_count == 1 {
                    return Ok(RollbackReport::Deactivated {
                        previous: active.version,
                    });
                }
                continue;
            };
            if let Some(report) = self
                .set_active(runtime, version, Some(&active), history)
                .await?
            {
                return Ok(RollbackReport::RolledBack(report));
            }
        }
        Err(PolicyStoreError::Contended {
            attempts: MAX_ATTEMPTS,
        })
    }

    /// Writes the active pointer if it is still `previous` (absent: if there
    /// is none). `None`: another writer changed it first.
    async fn set_active(
        &self,
        runtime: &PolicyRuntime,
        version: i64,
        previous: Option<&ActiveRef>,
        history: Vec<i64>,
    ) -> Result<Option<ActivateReport>, PolicyStoreError> {
        let policy = self.load(runtime, version).await?;
        let check =
            activation::check(&policy, &ActivationOptions::default()).map_err(|source| {
                PolicyStoreError::Rejected {
                    what: policy.origin().to_string(),
                    source,
                }
            })?;
        let sha256 = policy.sha256().to_string();
        let pointer = doc! {
            "_id": ACTIVE_ID,
            "kind": "active",
            "version": version,
            "sha256": &sha256,
            "history": history,
            "activated_at": bson::DateTime::now(),
        };
        let written = match previous {
            Some(previous) => {
                self.collection
                    .replace_one(
                        doc! {
                            "_id": ACTIVE_ID,
                            "version": previous.version,
                            "history": previous.history.clone(),
                        },
                        pointer,
                    )
                    .write_concern(durable_write_concern())
                    .await?
                    .matched_count
                    == 1
            }
            None => match self
                .collection
                .insert_one(pointer)
                .write_concern(durable_write_concern())
                .await
            {
                Ok(_) => true,
                Err(error) if mongo::is_duplicate_key(&error) => false,
                Err(error) => return Err(error.into()),
            },
        };
        Ok(written.then(|| ActivateReport {
            version,
            sha256,
            previous: previous.map(|p| p.version),
            check,
        }))
    }

    async fn highest_version(&self) -> Result<i64, PolicyStoreError> {
        let highest = self
            .collection
            .find_one(doc! { "kind": "module" })
            .projection(doc! { "_id": 1 })
            .sort(doc! { "_id": -1 })
            .await?;
        Ok(highest
            .as_ref()
            .and_then(|d| integer(d, "_id"))
            .unwrap_or(0))
    }
}

/// Checks a `--name`: 1 to 100 printable characters.
fn check_name(name: &str) -> Result<(), PolicyStoreError> {
    let bad = |reason: &str| PolicyStoreError::BadName {
        name: name.to_string(),
        reason: reason.to_string(),
    };
    if name.is_empty() {
        return Err(bad("it is empty"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(bad("it is longer than 100 bytes"));
    }
    if name.chars().any(char::is_control) {
        return Err(bad("it contains a control character"));
    }
    Ok(())
}

/// An integer field, whatever its BSON width.
fn integer(document: &Document, key: &str) -> Option<i64> {
    match document.get(key)? {
        Bson::Int64(n) => Some(*n),
        Bson::Int32(n) => Some(i64::from(*n)),
        _ => None,
    }
}

/// Reads a module document (without its bytes).
fn stored_policy(
    document: &Document,
    active: Option<&ActiveRef>,
) -> Result<StoredPolicy, PolicyStoreError> {
    let id = document
        .get("_id")
        .map_or_else(|| "?".to_string(), ToString::to_string);
    let corrupt = |reason: &str| PolicyStoreError::Corrupt {
        id: id.clone(),
        reason: reason.to_string(),
    };
    let version = integer(document, "_id").ok_or_else(|| corrupt("_id is not an integer"))?;
    let text = |d: &Document, key: &str| {
        d.get_str(key)
            .map(str::to_string)
            .map_err(|_| corrupt(&format!("no string {key}")))
    };
    let info = document
        .get_document("info")
        .map_err(|_| corrupt("no info"))?;
    Ok(StoredPolicy {
        version,
        name: text(document, "name")?,
        info: PolicyInfo {
            name: text(info, "name")?,
            version: text(info, "version")?,
            sequence_capacity: integer(info, "sequence_capacity")
                .and_then(|n| u64::try_from(n).ok())
                .ok_or_else(|| corrupt("no sequence_capacity"))?,
            max_prefix_len: integer(info, "max_prefix_len")
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| corrupt("no max_prefix_len"))?,
        },
        sha256: text(document, "sha256")?,
        size: integer(document, "size").unwrap_or(0),
        pushed_at: document
            .get_datetime("pushed_at")
            .map(|d| rfc3339(d.to_chrono()))
            .map_err(|_| corrupt("no pushed_at date"))?,
        active: active.is_some_and(|a| a.version == version),
    })
}

/// A time as RFC 3339 in UTC, to the millisecond (BSON's precision).
fn rfc3339(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
