//! The installer: deploys the server-side JavaScript of `mongo-js/` into
//! `<db>.system.js`, creates the `counters` collection, and reports what the
//! server offers.
//!
//! The stored functions are for DBAs working in mongosh (see the shell loader
//! in `mongo-js/shell/`). No supported MongoDB (4.4+) can run stored JavaScript
//! that writes, since `eval` is gone and `$where`/`$function` have no `db`, so
//! the host itself never calls them: its path is the aggregation-pipeline
//! update of [`crate::sequence::CyclicCounter`]. [`status`] says so.

mod error;
mod functions;
mod server;

use mongodb::bson::{doc, Bson, Document};
use mongodb::error::ErrorKind;
use mongodb::Database;
use serde::Serialize;

pub use error::InstallError;
pub use functions::{server_functions, shell_loader, ServerFunction};
pub use server::{JsSupport, ServerInfo, Topology};

use crate::config::durable_write_concern;
use crate::sequence::COUNTERS_COLLECTION;

/// The collection MongoDB reserves for stored JavaScript.
pub const SYSTEM_JS: &str = "system.js";

/// How the host hands out values, for reports.
pub const HOST_PATH: &str =
    "aggregation-pipeline update: one atomic findOneAndUpdate with a $cond pipeline per value";

/// What happened, or would happen, to one installed item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemAction {
    /// It did not exist and was created.
    Created,
    /// It existed with other content and was replaced.
    Updated,
    /// It existed as it should be; nothing was written.
    Unchanged,
}

/// One item of an install.
#[derive(Debug, Clone, Serialize)]
pub struct InstalledItem {
    /// `function` or `collection`.
    pub kind: &'static str,
    /// The function's `_id` or the collection's name.
    pub name: String,
    /// What was done.
    pub action: ItemAction,
}

/// The outcome of [`install`].
#[derive(Debug, Clone, Serialize)]
pub struct InstallReport {
    /// The database installed into.
    pub database: String,
    /// Each item and what was done to it.
    pub items: Vec<InstalledItem>,
}

impl InstallReport {
    /// True when the install wrote nothing (everything was already current).
    pub fn changed_nothing(&self) -> bool {
        self.items
            .iter()
            .all(|item| item.action == ItemAction::Unchanged)
    }
}

/// Installs every function of `mongo-js/` and the `counters` collection.
/// Re-running it on a current database writes nothing.
pub async fn install(database: &Database) -> Result<InstallReport, InstallError> {
    let mut items = vec![InstalledItem {
        kind: "collection",
        name: COUNTERS_COLLECTION.to_string(),
        action: ensure_collection(database, COUNTERS_COLLECTION).await?,
    }];
    let system_js = database.collection::<Document>(SYSTEM_JS);
    for function in server_functions() {
        let code = Bson::JavaScriptCode(function.source.to_string());
        let existing = system_js
            .find_one(doc! { "_id": function.name })
            .await
            .map_err(|source| InstallError::database("read system.js", source))?;
        let action = match existing.as_ref().and_then(|document| document.get("value")) {
            Some(value) if *value == code => ItemAction::Unchanged,
            Some(_) => ItemAction::Updated,
            None if existing.is_some() => ItemAction::Updated,
            None => ItemAction::Created,
        };
        if action != ItemAction::Unchanged {
            system_js
                .replace_one(
                    doc! { "_id": function.name },
                    doc! { "_id": function.name, "value": code },
                )
                .upsert(true)
                .write_concern(durable_write_concern())
                .await
                .map_err(|source| InstallError::database("write system.js", source))?;
        }
        items.push(InstalledItem {
            kind: "function",
            name: function.name.to_string(),
            action,
        });
    }
    Ok(InstallReport {
        database: database.name().to_string(),
        items,
    })
}

async fn ensure_collection(database: &Database, name: &str) -> Result<ItemAction, InstallError> {
    // Look first: some servers answer `create` on an existing collection with ok.
    if collection_exists(database, name).await? {
        return Ok(ItemAction::Unchanged);
    }
    match database
        .create_collection(name)
        .write_concern(durable_write_concern())
        .await
    {
        Ok(()) => Ok(ItemAction::Created),
        // NamespaceExists: someone (maybe a concurrent install) created it.
        Err(error) if matches!(error.kind.as_ref(), ErrorKind::Command(c) if c.code == 48) => {
            Ok(ItemAction::Unchanged)
        }
        Err(source) => Err(InstallError::database(
            "create the counters collection",
            source,
        )),
    }
}

async fn collection_exists(database: &Database, name: &str) -> Result<bool, InstallError> {
    let names = database
        .list_collection_names()
        .filter(doc! { "name": name })
        .await
        .map_err(|source| InstallError::database("list collections", source))?;
    Ok(!names.is_empty())
}

/// The state of one embedded function in the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FunctionState {
    /// Installed and identical to the embedded source.
    Current,
    /// Not installed.
    Missing,
    /// Installed with different content (another idmint version, or a hand edit).
    Differs,
}

/// One function in a [`StatusReport`].
#[derive(Debug, Clone, Serialize)]
pub struct FunctionStatus {
    /// The system.js `_id`.
    pub name: String,
    /// Its state.
    pub state: FunctionState,
    /// sha256 of the embedded source.
    pub sha256: String,
}

/// What `idmint status` reports.
#[derive(Debug, Clone, Serialize)]
pub struct StatusReport {
    /// The database inspected.
    pub database: String,
    /// The server and what it offers.
    pub server: ServerInfo,
    /// Whether the counters collection exists.
    pub counters_collection: bool,
    /// Each embedded function and its state in the database.
    pub functions: Vec<FunctionStatus>,
    /// How the host hands out values.
    pub host_path: &'static str,
}

impl StatusReport {
    /// True when everything idmint installs is present and current.
    pub fn is_current(&self) -> bool {
        self.counters_collection
            && self
                .functions
                .iter()
                .all(|f| f.state == FunctionState::Current)
    }
}

/// Inspects the server and the installed items. Writes nothing.
pub async fn status(database: &Database) -> Result<StatusReport, InstallError> {
    let server = ServerInfo::detect(database).await?;
    let counters_collection = collection_exists(database, COUNTERS_COLLECTION).await?;
    let system_js = database.collection::<Document>(SYSTEM_JS);
    let mut functions = Vec::new();
    for function in server_functions() {
        let stored = system_js
            .find_one(doc! { "_id": function.name })
            .await
            .map_err(|source| InstallError::database("read system.js", source))?;
        let state = match stored.as_ref().and_then(|document| document.get("value")) {
            None => FunctionState::Missing,
            Some(Bson::JavaScriptCode(code)) if code == function.source => FunctionState::Current,
            Some(_) => FunctionState::Differs,
        };
        functions.push(FunctionStatus {
            name: function.name.to_string(),
            state,
            sha256: function.sha256(),
        });
    }
    Ok(StatusReport {
        database: database.name().to_string(),
        server,
        counters_collection,
        functions,
        host_path: HOST_PATH,
    })
}
