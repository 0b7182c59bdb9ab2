//! Errors of the installer.

use super::roles::ADMIN_ROLE;

/// Why installing, inspecting or uninstalling failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InstallError {
    /// A server command failed; `action` says what idmint was doing.
    #[error(
        "could not {action} ({namespace}): {}",
        crate::mongo::describe_error(source)
    )]
    Database {
        /// What idmint was doing, e.g. "write system.js".
        action: &'static str,
        /// The collection, function or role concerned.
        namespace: String,
        /// The driver's error.
        #[source]
        source: mongodb::error::Error,
    },
    /// The user lacks a privilege the step needs.
    #[error(
        "not authorized to {action} ({namespace}): the user lacks that privilege; \
         it needs role {role} (see `idmint install --create-roles`). Server said: {server_message}"
    )]
    Unauthorized {
        /// What idmint was doing.
        action: &'static str,
        /// The collection, function or role concerned.
        namespace: String,
        /// The idmint role that grants it.
        role: &'static str,
        /// The server's message.
        server_message: String,
    },
    /// Items were changed by hand or are not idmint's; nothing was written.
    #[error("nothing was written: {}", reasons.join("; "))]
    Refused {
        /// One reason per refused item.
        reasons: Vec<String>,
    },
    /// A concurrent writer changed an item in a way this install cannot accept.
    #[error("{item}: {detail}")]
    Conflict {
        /// The item's manifest key.
        item: String,
        /// What happened.
        detail: String,
    },
}

impl InstallError {
    /// Wraps a driver error; an authorization failure (code 13) becomes
    /// [`InstallError::Unauthorized`].
    pub(crate) fn database(
        action: &'static str,
        namespace: &str,
        source: mongodb::error::Error,
    ) -> Self {
        if crate::mongo::is_unauthorized(&source) {
            let server_message = match source.kind.as_ref() {
                mongodb::error::ErrorKind::Command(command) => command.message.clone(),
                _ => source.to_string(),
            };
            return Self::Unauthorized {
                action,
                namespace: namespace.to_string(),
                role: ADMIN_ROLE,
                server_message,
            };
        }
        Self::Database {
            action,
            namespace: namespace.to_string(),
            source,
        }
    }

    /// What kind of failure this is: drift (hand edits, foreign items, a
    /// concurrent change), or the database's refusal or failure.
    pub fn class(&self) -> crate::error_class::ErrorClass {
        match self {
            Self::Refused { .. } | Self::Conflict { .. } => crate::error_class::ErrorClass::Drift,
            Self::Unauthorized { .. } => crate::error_class::ErrorClass::Unauthorized,
            Self::Database { source, .. } => crate::error_class::database_class(source),
        }
    }
}
