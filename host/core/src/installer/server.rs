//! What the server is and offers: version, topology, server-side JavaScript.

use mongodb::bson::{doc, Document};
use mongodb::Database;
use serde::Serialize;

use super::{InstallError, SYSTEM_JS};

/// How the deployment is laid out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Topology {
    /// A single `mongod` that is not part of a replica set.
    Standalone,
    /// A replica set member.
    ReplicaSet {
        /// The set's name.
        name: String,
        /// How many members `hello` lists.
        members: usize,
    },
    /// A `mongos` router of a sharded cluster.
    Sharded,
}

/// Whether stored JavaScript can run on the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum JsSupport {
    /// `$where` evaluates JavaScript, but it cannot write (no `db` object).
    QueriesOnly,
    /// The server refused JavaScript; `reason` is its message.
    Unavailable {
        /// What the server said.
        reason: String,
    },
}

/// Facts about the server.
#[derive(Debug, Clone, Serialize)]
pub struct ServerInfo {
    /// `buildInfo.version`.
    pub version: String,
    /// Replica set, sharded or standalone.
    pub topology: Topology,
    /// Whether stored JavaScript runs.
    pub server_js: JsSupport,
    /// Whether the server runs stored JavaScript that writes: never, on 4.2+.
    pub server_js_can_write: bool,
}

impl ServerInfo {
    /// Asks the server (`buildInfo`, `hello`, and a `$where` probe).
    pub async fn detect(database: &Database) -> Result<Self, InstallError> {
        let admin = database.client().database("admin");
        let build_info = admin
            .run_command(doc! { "buildInfo": 1 })
            .await
            .map_err(|source| InstallError::database("run buildInfo", "admin", source))?;
        let hello = admin
            .run_command(doc! { "hello": 1 })
            .await
            .map_err(|source| InstallError::database("run hello", "admin", source))?;
        let probe = database
            .run_command(
                doc! { "find": SYSTEM_JS, "filter": { "$where": "return false" }, "limit": 1 },
            )
            .await;
        let server_js = match probe {
            Ok(_) => JsSupport::QueriesOnly,
            Err(error) => JsSupport::Unavailable {
                reason: match error.kind.as_ref() {
                    mongodb::error::ErrorKind::Command(command) => {
                        format!("{} (code {})", command.message, command.code)
                    }
                    _ => error.to_string(),
                },
            },
        };
        Ok(Self {
            version: build_info
                .get_str("version")
                .unwrap_or("unknown")
                .to_string(),
            topology: topology(&hello),
            server_js,
            server_js_can_write: false,
        })
    }
}

fn topology(hello: &Document) -> Topology {
    if hello.get_str("msg") == Ok("isdbgrid") {
        return Topology::Sharded;
    }
    match hello.get_str("setName") {
        Ok(name) => Topology::ReplicaSet {
            name: name.to_string(),
            members: hello.get_array("hosts").map(Vec::len).unwrap_or(1),
        },
        Err(_) => Topology::Standalone,
    }
}
