//! What idmint installs: each item with its kind, name, version and sha256.
//!
//! The sha256 of a function is that of its embedded source (`mongo-js/`); of a
//! role, that of its privileges in canonical form; of a collection, that of its
//! name (a collection has no content idmint manages); of an index, that of its
//! keys and options in canonical form. Nothing is hand-kept: change a file in
//! `mongo-js/` and its checksum changes with it.

use mongodb::bson::{doc, Bson, Document};
use serde::Serialize;

use super::functions::server_functions;
use super::roles::{role_specs, RoleSpec};
pub use crate::checksum::sha256_hex;
use crate::lock::LOCKS_COLLECTION;
use crate::mongo::collections::SERIES_NUMBERS;
use crate::policy::POLICIES_COLLECTION;
use crate::sequence::COUNTERS_COLLECTION;

/// The version recorded for everything this build installs.
pub const INSTALLER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The collection that records what idmint installed.
pub use crate::mongo::collections::MANIFEST as MANIFEST_COLLECTION;

/// The kinds of installed items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    /// A collection idmint uses.
    Collection,
    /// A stored JavaScript function in `system.js`.
    Function,
    /// A user-defined role (only with `--create-roles`).
    Role,
    /// An index on a collection: those on the counters' prefixes and on
    /// the series' records.
    Index,
}

impl ItemKind {
    /// The kind's name in manifest keys and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::Collection => "collection",
            ItemKind::Function => "function",
            ItemKind::Role => "role",
            ItemKind::Index => "index",
        }
    }
}

/// What an item is, beyond its name.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ItemSpec {
    Collection,
    Function {
        source: &'static str,
    },
    Role(RoleSpec),
    /// An index, named `<collection>.<index>` as an item.
    Index {
        collection: &'static str,
        model: InstalledIndex,
    },
}

/// The indexes idmint installs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InstalledIndex {
    /// The unique index on the counters' `prefixes`.
    Prefixes,
    /// The index that finds the counters owning a prefix undeclared.
    UndeclaredPrefixes,
    /// The unique index on the client keys of the series' records.
    SeriesClientKeys,
    /// The index of the series' open reservations.
    SeriesOpenReservations,
}

impl InstalledIndex {
    /// The index as created.
    pub(crate) fn model(self) -> mongodb::IndexModel {
        match self {
            InstalledIndex::Prefixes => crate::sequence::prefixes::index_model(),
            InstalledIndex::UndeclaredPrefixes => {
                crate::sequence::prefixes::undeclared_index_model()
            }
            InstalledIndex::SeriesClientKeys => crate::series::client_keys_model(),
            InstalledIndex::SeriesOpenReservations => crate::series::open_reservations_model(),
        }
    }
}

/// One thing idmint installs.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// Its kind.
    pub kind: ItemKind,
    /// Its name: a collection name, a system.js `_id`, a role name.
    pub name: String,
    /// The idmint version that ships it.
    pub version: &'static str,
    /// sha256 of its content (see the module docs), lowercase hex.
    pub sha256: String,
    pub(crate) spec: ItemSpec,
}

impl Item {
    /// The manifest `_id` of the item: `<kind>:<name>`.
    pub fn key(&self) -> String {
        format!("{}:{}", self.kind.as_str(), self.name)
    }
}

/// Everything this build installs into `database`, in install order:
/// collections, then functions, then (with `roles`) roles.
pub fn desired_items(database: &str, roles: bool) -> Vec<Item> {
    let mut items: Vec<Item> = [COUNTERS_COLLECTION, POLICIES_COLLECTION, LOCKS_COLLECTION]
        .into_iter()
        .map(|name| Item {
            kind: ItemKind::Collection,
            name: name.to_string(),
            version: INSTALLER_VERSION,
            sha256: sha256_hex(name.as_bytes()),
            spec: ItemSpec::Collection,
        })
        .collect();
    items.extend(
        [
            (COUNTERS_COLLECTION, "prefixes", InstalledIndex::Prefixes),
            (
                COUNTERS_COLLECTION,
                "undeclared-prefixes",
                InstalledIndex::UndeclaredPrefixes,
            ),
            (
                SERIES_NUMBERS,
                "client-keys",
                InstalledIndex::SeriesClientKeys,
            ),
            (
                SERIES_NUMBERS,
                "open-reservations",
                InstalledIndex::SeriesOpenReservations,
            ),
        ]
        .into_iter()
        .map(|(collection, name, index)| Item {
            kind: ItemKind::Index,
            name: format!("{collection}.{name}"),
            version: INSTALLER_VERSION,
            sha256: index_sha256(&index.model()),
            spec: ItemSpec::Index {
                collection,
                model: index,
            },
        }),
    );
    items.extend(server_functions().into_iter().map(|function| Item {
        kind: ItemKind::Function,
        name: function.name.to_string(),
        version: INSTALLER_VERSION,
        sha256: function.sha256(),
        spec: ItemSpec::Function {
            source: function.source,
        },
    }));
    if roles {
        items.extend(role_specs(database).into_iter().map(|role| Item {
            kind: ItemKind::Role,
            name: role.name.to_string(),
            version: INSTALLER_VERSION,
            sha256: privileges_sha256(&role.privileges),
            spec: ItemSpec::Role(role),
        }));
    }
    items
}

/// sha256 of a stored system.js value: the code itself when it is code, else
/// its extended-JSON text (a value someone stored by hand).
pub(crate) fn stored_value_sha256(value: &Bson) -> String {
    match value {
        Bson::JavaScriptCode(code) => sha256_hex(code.as_bytes()),
        other => sha256_hex(other.clone().into_relaxed_extjson().to_string().as_bytes()),
    }
}

/// sha256 of privileges in canonical form: resources sorted, actions sorted,
/// so the order the server lists them in does not matter.
pub(crate) fn privileges_sha256(privileges: &[Document]) -> String {
    let mut canonical: Vec<String> = privileges
        .iter()
        .map(|privilege| {
            let resource = privilege
                .get_document("resource")
                .cloned()
                .unwrap_or_default();
            let mut actions: Vec<String> = privilege
                .get_array("actions")
                .map(|actions| {
                    actions
                        .iter()
                        .filter_map(|a| a.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            actions.sort();
            format!(
                "{}.{}:{}",
                resource.get_str("db").unwrap_or(""),
                resource.get_str("collection").unwrap_or(""),
                actions.join(",")
            )
        })
        .collect();
    canonical.sort();
    sha256_hex(canonical.join("\n").as_bytes())
}

/// sha256 of an index in canonical form: its keys (numbers as 64-bit
/// integers, so the server's int32 or double reads the same), whether it is
/// unique, and its partial filter, as relaxed extended JSON.
pub(crate) fn index_sha256(model: &mongodb::IndexModel) -> String {
    let keys: Document = model
        .keys
        .iter()
        .map(|(key, value)| {
            let value = match value {
                Bson::Int32(n) => Bson::Int64(i64::from(*n)),
                Bson::Double(x) => Bson::Int64(*x as i64),
                other => other.clone(),
            };
            (key.clone(), value)
        })
        .collect();
    let options = model.options.as_ref();
    let canonical = doc! {
        "key": keys,
        "unique": options.and_then(|o| o.unique).unwrap_or(false),
        "partialFilterExpression": options
            .and_then(|o| o.partial_filter_expression.clone())
            .map_or(Bson::Null, Bson::Document),
    };
    sha256_hex(
        Bson::Document(canonical)
            .into_relaxed_extjson()
            .to_string()
            .as_bytes(),
    )
}

/// The manifest record of an item as installed now.
pub(crate) fn manifest_record(item: &Item) -> Document {
    doc! {
        "_id": item.key(),
        "kind": item.kind.as_str(),
        "name": &item.name,
        "version": item.version,
        "sha256": &item.sha256,
        "installed_at": mongodb::bson::DateTime::now(),
        "installed_by": format!("idmint {INSTALLER_VERSION}"),
    }
}
