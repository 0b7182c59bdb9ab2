//! The two roles `idmint install --create-roles` creates in the database.
//!
//! - `idmintApp`, for applications: read and advance counters (`next`, `seq`,
//!   `counter show`), lease snowflake worker ids (`workers`), take locks, and
//!   read policies (including their change stream), take numbers of gap-free
//!   series with their records. It can write nothing
//!   else: not system.js, not the manifest, not policies, and it cannot
//!   create counters (so not `seq --upsert` either: that takes `insert` on
//!   counters, which idmintAdmin has).
//! - `idmintAdmin`, for DBAs: everything `install`, `uninstall`, `status`,
//!   `counter create` and `policy push/activate` need, and managing roles.

use mongodb::bson::{doc, Document};

use crate::lock::LOCKS_COLLECTION;
use crate::mongo::collections::MANIFEST as MANIFEST_COLLECTION;
use crate::mongo::collections::TAGS as TAGS_COLLECTION;
use crate::mongo::collections::{SERIES, SERIES_NUMBERS};
use crate::policy::POLICIES_COLLECTION;
use crate::sequence::WORKERS_COLLECTION;
use crate::sequence::{COUNTERS_COLLECTION, PREFIXES_COLLECTION};
use crate::tokens::TOKENS_COLLECTION;

/// The application role's name.
pub const APP_ROLE: &str = "idmintApp";
/// The administration role's name.
pub const ADMIN_ROLE: &str = "idmintAdmin";

/// A role and its privileges.
#[derive(Debug, Clone, PartialEq)]
pub struct RoleSpec {
    /// The role's name.
    pub name: &'static str,
    /// Its privileges, as `createRole` takes them.
    pub privileges: Vec<Document>,
}

fn privilege(database: &str, collection: &str, actions: &[&str]) -> Document {
    doc! { "resource": { "db": database, "collection": collection }, "actions": actions }
}

/// The roles for `database`.
pub fn role_specs(database: &str) -> Vec<RoleSpec> {
    vec![
        RoleSpec {
            name: APP_ROLE,
            privileges: vec![
                privilege(database, COUNTERS_COLLECTION, &["find", "update"]),
                privilege(database, POLICIES_COLLECTION, &["find", "changeStream"]),
                // Take, renew, release and wait for locks (upsert = insert + update).
                privilege(
                    database,
                    LOCKS_COLLECTION,
                    &["find", "insert", "update", "changeStream"],
                ),
                // Lease, renew and release snowflake worker ids.
                privilege(database, WORKERS_COLLECTION, &["find", "insert", "update"]),
                // Claim the tag a snowflake counter made before tags gets
                // the first time a standard ID needs it (next, serve).
                privilege(database, TAGS_COLLECTION, &["find", "insert", "update"]),
                // idmint serve --tokens-from-db reads the app tokens.
                privilege(database, TOKENS_COLLECTION, &["find"]),
                // Take a number of a gap-free series and write its record,
                // in the app's transaction; reserve, confirm and void one,
                // void the expired reservations (serve); audit them. Never
                // remove.
                privilege(database, SERIES, &["find", "update"]),
                privilege(database, SERIES_NUMBERS, &["find", "insert", "update"]),
            ],
        },
        RoleSpec {
            name: ADMIN_ROLE,
            privileges: vec![
                privilege(
                    database,
                    COUNTERS_COLLECTION,
                    &[
                        "find",
                        "insert",
                        "update",
                        "remove",
                        "createCollection",
                        "dropCollection",
                        // The unique index on the prefixes counters own:
                        // made by install and counter create, listed by
                        // status, dropped by uninstall.
                        "createIndex",
                        "listIndexes",
                        "dropIndex",
                    ],
                ),
                // The history of prefixes: claimed by counter create and
                // prefix add, retired by prefix remove, a failed create's
                // claim taken back.
                privilege(
                    database,
                    PREFIXES_COLLECTION,
                    &["find", "insert", "update", "remove"],
                ),
                // The claims of tags: by counter create (snowflake) and a
                // change of stripes bringing a tag into a deployment, an
                // older claim given the counter's incarnation. Never removed.
                privilege(database, TAGS_COLLECTION, &["find", "insert", "update"]),
                // Gap-free series: made by series create, numbered, audited.
                // Never removed: their numbers are an accounting record.
                // The records' indexes (client keys, open reservations):
                // made by install and series create, listed by status,
                // dropped by uninstall (the records stay).
                privilege(database, SERIES, &["find", "insert", "update"]),
                privilege(
                    database,
                    SERIES_NUMBERS,
                    &[
                        "find",
                        "insert",
                        "update",
                        "createCollection",
                        "createIndex",
                        "listIndexes",
                        "dropIndex",
                    ],
                ),
                privilege(
                    database,
                    LOCKS_COLLECTION,
                    &[
                        "find",
                        "insert",
                        "update",
                        "remove",
                        "createCollection",
                        "dropCollection",
                        "createIndex",
                        "changeStream",
                    ],
                ),
                privilege(
                    database,
                    "system.js",
                    &["find", "insert", "update", "remove"],
                ),
                privilege(
                    database,
                    MANIFEST_COLLECTION,
                    &[
                        "find",
                        "insert",
                        "update",
                        "remove",
                        "createCollection",
                        "dropCollection",
                    ],
                ),
                privilege(
                    database,
                    POLICIES_COLLECTION,
                    &[
                        "find",
                        "insert",
                        "update",
                        "remove",
                        "createCollection",
                        "dropCollection",
                        "createIndex",
                        "changeStream",
                    ],
                ),
                privilege(
                    database,
                    WORKERS_COLLECTION,
                    &["find", "insert", "update", "remove", "dropCollection"],
                ),
                // idmint token add, list, remove.
                privilege(
                    database,
                    TOKENS_COLLECTION,
                    &["find", "insert", "remove", "dropCollection"],
                ),
                privilege(
                    database,
                    "",
                    &[
                        "listCollections",
                        "createRole",
                        "dropRole",
                        "viewRole",
                        "grantRole",
                        "revokeRole",
                    ],
                ),
            ],
        },
    ]
}
