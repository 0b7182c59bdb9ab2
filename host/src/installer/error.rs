//! Errors of the installer.

/// Why installing or inspecting failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InstallError {
    /// A server command failed; `action` says what idmint was doing.
    #[error("could not {action}: {source}")]
    Database {
        /// What idmint was doing, e.g. "write system.js".
        action: &'static str,
        /// The driver's error.
        #[source]
        source: mongodb::error::Error,
    },
}

impl InstallError {
    pub(crate) fn database(action: &'static str, source: mongodb::error::Error) -> Self {
        Self::Database { action, source }
    }
}
