//! How idmint reaches its database: the connection string, the database name,
//! how long to wait for a server, and the write concern that hands out IDs.
//!
//! Environment variables are read in one place only, the CLI's argument parser
//! (`MONGODB_URI` for the connection, `IDMINT_*` for the rest); the library takes
//! these plain structs. Precedence is flag > environment > default.

use std::time::Duration;

use mongodb::options::ClientOptions;
use mongodb::{Client, Database};

use crate::redact::redact_uri;

/// The database used when none is named.
pub const DEFAULT_DATABASE: &str = "idmint";

/// How long to look for a usable server before giving up, unless the
/// connection string sets `serverSelectionTimeoutMS` itself.
pub const DEFAULT_SERVER_SELECTION_TIMEOUT: Duration = Duration::from_secs(5);

/// Where and how to connect.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConnectOptions {
    /// A MongoDB connection string (`mongodb://` or `mongodb+srv://`).
    pub uri: String,
    /// The database holding `counters` and `system.js`.
    pub database: String,
    /// Maps to the driver's `serverSelectionTimeoutMS` when the URI does not set it:
    /// how long an operation waits for a usable server. Default: 5 s.
    pub server_selection_timeout: Duration,
    /// Maps to the driver's `maxPoolSize` when the URI does not set it. Default: the
    /// driver's (10).
    pub max_pool_size: Option<u32>,
}

impl ConnectOptions {
    /// Options for `uri` and the default database and timeout.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            database: DEFAULT_DATABASE.to_string(),
            server_selection_timeout: DEFAULT_SERVER_SELECTION_TIMEOUT,
            max_pool_size: None,
        }
    }

    /// Sets the database name.
    pub fn database(mut self, database: impl Into<String>) -> Self {
        self.database = database.into();
        self
    }

    /// Sets the server-selection timeout (used only when the URI has none).
    pub fn server_selection_timeout(mut self, timeout: Duration) -> Self {
        self.server_selection_timeout = timeout;
        self
    }

    /// Sets the connection pool size (used only when the URI has none).
    pub fn max_pool_size(mut self, size: u32) -> Self {
        self.max_pool_size = Some(size);
        self
    }

    /// The connection string with its password hidden, for messages.
    pub fn redacted_uri(&self) -> String {
        redact_uri(&self.uri)
    }

    /// Parses the URI and opens a client (lazily: nothing is sent yet).
    pub async fn connect(&self) -> Result<Database, ConnectError> {
        if self.database.is_empty()
            || self
                .database
                .contains(['/', '\\', '.', ' ', '"', '$', '\0'])
        {
            return Err(ConnectError::BadDatabaseName(self.database.clone()));
        }
        let mut options =
            ClientOptions::parse(&self.uri)
                .await
                .map_err(|source| ConnectError::BadUri {
                    uri: self.redacted_uri(),
                    reason: source.to_string(),
                })?;
        if options.server_selection_timeout.is_none() {
            options.server_selection_timeout = Some(self.server_selection_timeout);
        }
        if options.connect_timeout.is_none() {
            options.connect_timeout = Some(self.server_selection_timeout);
        }
        if options.max_pool_size.is_none() {
            options.max_pool_size = self.max_pool_size;
        }
        if options.app_name.is_none() {
            options.app_name = Some("idmint".to_string());
        }
        // Counting round trips, for the spans of debug log lines, costs each
        // command a copy of itself and of its reply as documents (7-12% of a
        // one-client take's rate): only when debug lines can be logged.
        if tracing::level_filters::LevelFilter::current() >= tracing::Level::DEBUG {
            options.command_event_handler = Some(crate::mongo::round_trips::handler());
        }
        let client = Client::with_options(options).map_err(|source| ConnectError::BadUri {
            uri: self.redacted_uri(),
            reason: source.to_string(),
        })?;
        Ok(client.database(&self.database))
    }
}

/// The connection could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The connection string does not parse (it is shown redacted).
    #[error("invalid connection string {uri}: {reason}")]
    BadUri {
        /// The URI, password hidden.
        uri: String,
        /// What the driver said.
        reason: String,
    },
    /// The database name is empty or has a character MongoDB forbids.
    #[error("invalid database name {0:?}: it must be non-empty and contain none of / \\ . space \" $ or NUL")]
    BadDatabaseName(String),
}
