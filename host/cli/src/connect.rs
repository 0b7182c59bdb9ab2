//! The connection flags shared by every command that talks to MongoDB.

use std::sync::Mutex;
use std::time::Duration;

use clap::Args;
use idmint::config::{ConnectOptions, DEFAULT_DATABASE};
use idmint::redact::redact_uri;
use idmint::sequence::striping::{check_deployment_name, Deployment, Deployments};
use mongodb::{Client, Database};

use super::exit::UsageError;

/// Every client a command opened, shut down before the runtime ends.
static CLIENTS: Mutex<Vec<Client>> = Mutex::new(Vec::new());

/// Keeps `database`'s client for [`shutdown_clients`].
pub fn register(database: &Database) {
    CLIENTS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .push(database.client().clone());
}

/// Shuts down every client the command opened, so that the driver's
/// background tasks (connection pools, monitors) end before the runtime
/// does; tearing the runtime down under them made a task panic now and then
/// (`SendError` in the connection requester) as a command exited. Bounded:
/// a server that does not answer cannot hold the exit up.
pub async fn shutdown_clients() {
    let clients = std::mem::take(
        &mut *CLIENTS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()),
    );
    for client in clients {
        let _ =
            tokio::time::timeout(Duration::from_secs(2), client.shutdown().immediate(true)).await;
    }
}

/// Where the database is.
#[derive(Debug, Clone, Args)]
pub struct ConnectArgs {
    /// MongoDB connection string. Repeat it as NAME=URI for the deployments
    /// a striped counter spans, the preferred first.
    // Optional to clap, checked when a command connects: a required flag
    // reads as one to type in every usage line, even when MONGODB_URI gives it.
    #[arg(
        long,
        env = "MONGODB_URI",
        hide_env_values = true,
        value_name = "[NAME=]URI"
    )]
    pub uri: Vec<String>,
    /// Deployments as one list of NAME=URI separated by spaces or newlines
    /// (after those of --uri).
    #[arg(
        long,
        env = "MONGODB_URIS",
        hide_env_values = true,
        value_name = "LIST"
    )]
    pub uris: Option<String>,
    /// Database holding counters and system.js.
    #[arg(long, env = "IDMINT_DB", default_value = DEFAULT_DATABASE)]
    pub db: String,
    /// Seconds to wait for a usable server before failing (unless the URI sets
    /// serverSelectionTimeoutMS); across deployments, the deadline of a take.
    #[arg(long, env = "IDMINT_SERVER_TIMEOUT", default_value_t = 5.0, value_name = "SECS",
          value_parser = parse_seconds)]
    pub server_timeout: f64,
}

/// One connection string given, and the deployment's name if it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Given {
    name: Option<String>,
    uri: String,
}

impl Given {
    /// `NAME=URI` or `URI`.
    fn parse(text: &str) -> Self {
        if let Some((name, uri)) = text.split_once('=') {
            if check_deployment_name(name).is_ok() && uri.starts_with("mongodb") {
                return Self {
                    name: Some(name.to_string()),
                    uri: uri.to_string(),
                };
            }
        }
        Self {
            name: None,
            uri: text.to_string(),
        }
    }
}

impl ConnectArgs {
    /// Whether a connection string was given at all.
    pub fn is_given(&self) -> bool {
        !self.given().is_empty()
    }

    /// Every connection string given: `--uri` (or `MONGODB_URI`), then
    /// `MONGODB_URIS`.
    fn given(&self) -> Vec<Given> {
        self.uri
            .iter()
            .map(String::as_str)
            .chain(self.uris.iter().flat_map(|list| list.split_whitespace()))
            .filter(|text| !text.is_empty())
            .map(Given::parse)
            .collect()
    }

    /// The connection strings given, checked: one unnamed, or each named
    /// (distinct, well-formed names).
    fn checked(&self) -> anyhow::Result<Vec<Given>> {
        let given = self.given();
        if given.is_empty() {
            return Err(UsageError(
                "no MongoDB connection string: pass --uri or set MONGODB_URI".into(),
            )
            .into());
        }
        if given.len() > 1 {
            if let Some(unnamed) = given.iter().find(|given| given.name.is_none()) {
                return Err(UsageError(format!(
                    "several connection strings are given, and {} has no name: give each \
                     as NAME=URI (--uri eu=mongodb://...), the preferred first",
                    redact_uri(&unnamed.uri)
                ))
                .into());
            }
        }
        for (index, one) in given.iter().enumerate() {
            if let Some(name) = &one.name {
                if given[..index]
                    .iter()
                    .any(|seen| seen.name.as_ref() == Some(name))
                {
                    return Err(UsageError(format!("deployment {name:?} is given twice")).into());
                }
            }
        }
        Ok(given)
    }

    /// The library's connection options for `uri`.
    fn options_for(&self, uri: &str) -> ConnectOptions {
        ConnectOptions::new(uri)
            .database(&self.db)
            .server_selection_timeout(Duration::from_secs_f64(self.server_timeout))
    }

    /// The library's connection options of the preferred (first)
    /// deployment, or a usage error without a URI.
    pub fn options(&self) -> anyhow::Result<ConnectOptions> {
        let given = self.checked()?;
        Ok(self.options_for(&given[0].uri))
    }

    /// Opens the database handle of the preferred (first) deployment (its
    /// client is shut down when the command ends).
    pub async fn connect(&self) -> anyhow::Result<Database> {
        Ok(self.connect_all().await?.0)
    }

    /// Opens the preferred deployment's database and, when the connection
    /// strings are named, every deployment's (the preferred first): what a
    /// striped counter spanning them is taken from.
    pub async fn connect_all(&self) -> anyhow::Result<(Database, Option<Deployments>)> {
        self.connect_all_pooled(None).await
    }

    /// [`ConnectArgs::connect_all`], each client's pool holding at most
    /// `pool` connections (unless the URI says).
    pub async fn connect_all_pooled(
        &self,
        pool: Option<u32>,
    ) -> anyhow::Result<(Database, Option<Deployments>)> {
        let given = self.checked()?;
        let mut list = Vec::new();
        for one in &given {
            let mut options = self.options_for(&one.uri);
            if let Some(pool) = pool {
                options = options.max_pool_size(pool);
            }
            let database = options.connect().await.map_err(idmint::Error::from)?;
            register(&database);
            list.push((one.name.clone(), database));
        }
        let preferred = list[0].1.clone();
        if list[0].0.is_none() {
            return Ok((preferred, None));
        }
        let deployments = Deployments::new(
            list.into_iter()
                .map(|(name, database)| Deployment {
                    name: name.expect("checked: all named"),
                    database,
                })
                .collect(),
        )
        .map_err(UsageError)?
        .deadline(Duration::from_secs_f64(self.server_timeout));
        Ok((preferred, Some(deployments)))
    }

    /// The URIs with their passwords hidden (`NAME=URI`, space-separated).
    pub fn redacted_uri(&self) -> String {
        self.given()
            .iter()
            .map(|one| match &one.name {
                Some(name) => format!("{name}={}", redact_uri(&one.uri)),
                None => redact_uri(&one.uri),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn parse_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(secs) if secs > 0.0 && secs <= 3600.0 => Ok(secs),
        _ => Err(format!(
            "{text:?} is not a number of seconds between 0 and 3600"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(uri: &[&str], uris: Option<&str>) -> ConnectArgs {
        ConnectArgs {
            uri: uri.iter().map(ToString::to_string).collect(),
            uris: uris.map(ToString::to_string),
            db: DEFAULT_DATABASE.to_string(),
            server_timeout: 5.0,
        }
    }

    #[test]
    fn reads_named_and_unnamed_connection_strings() {
        assert_eq!(
            Given::parse("eu=mongodb://a:27017/?w=1"),
            Given {
                name: Some("eu".into()),
                uri: "mongodb://a:27017/?w=1".into()
            }
        );
        // An '=' in the URI's options is not a name.
        assert_eq!(Given::parse("mongodb://a/?w=1").name, None);
        let both = args(
            &["eu=mongodb://a"],
            Some("us=mongodb://b\n  ap=mongodb://c"),
        );
        let names: Vec<_> = both
            .checked()
            .unwrap()
            .into_iter()
            .map(|g| g.name)
            .collect();
        assert_eq!(
            names,
            [Some("eu".into()), Some("us".into()), Some("ap".into())]
        );
    }

    #[test]
    fn several_connection_strings_must_each_be_named_once() {
        let unnamed = args(&["mongodb://u:secret@a"], Some("us=mongodb://b"));
        let error = unnamed.checked().unwrap_err().to_string();
        assert!(error.contains("mongodb://u:***@a has no name"), "{error}");
        assert!(!error.contains("secret"));
        let twice = args(&["eu=mongodb://a", "eu=mongodb://b"], None);
        assert!(twice
            .checked()
            .unwrap_err()
            .to_string()
            .contains("\"eu\" is given twice"));
        assert_eq!(
            args(&["eu=mongodb://u:pw@a"], Some("us=mongodb://b")).redacted_uri(),
            "eu=mongodb://u:***@a us=mongodb://b"
        );
    }
}
