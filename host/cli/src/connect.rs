//! The connection flags shared by every command that talks to MongoDB.

use std::sync::Mutex;
use std::time::Duration;

use clap::Args;
use idmint::config::{ConnectOptions, DEFAULT_DATABASE};
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
    /// MongoDB connection string.
    // Optional to clap, checked when a command connects: a required flag
    // reads as one to type in every usage line, even when MONGODB_URI gives it.
    #[arg(long, env = "MONGODB_URI", hide_env_values = true)]
    pub uri: Option<String>,
    /// Database holding counters and system.js.
    #[arg(long, env = "IDMINT_DB", default_value = DEFAULT_DATABASE)]
    pub db: String,
    /// Seconds to wait for a usable server before failing (unless the URI sets
    /// serverSelectionTimeoutMS).
    #[arg(long, env = "IDMINT_SERVER_TIMEOUT", default_value_t = 5.0, value_name = "SECS",
          value_parser = parse_seconds)]
    pub server_timeout: f64,
}

impl ConnectArgs {
    /// The library's connection options, or a usage error without a URI.
    pub fn options(&self) -> anyhow::Result<ConnectOptions> {
        let uri = self.uri.as_deref().ok_or_else(|| {
            UsageError("no MongoDB connection string: pass --uri or set MONGODB_URI".into())
        })?;
        Ok(ConnectOptions::new(uri)
            .database(&self.db)
            .server_selection_timeout(Duration::from_secs_f64(self.server_timeout)))
    }

    /// Opens the database handle (its client is shut down when the command ends).
    pub async fn connect(&self) -> anyhow::Result<Database> {
        let database = self
            .options()?
            .connect()
            .await
            .map_err(idmint::Error::from)?;
        register(&database);
        Ok(database)
    }

    /// The URI with its password hidden.
    pub fn redacted_uri(&self) -> String {
        self.uri
            .as_deref()
            .map_or_else(String::new, idmint::redact::redact_uri)
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
