//! Bearer tokens per application, each allowed a set of counters (Tinyid's
//! per-business tokens).
//!
//! The tokens file holds no token, only each token's SHA-256, so that it
//! can be read by whoever deploys the server without handing out access:
//!
//! ```json
//! {"apps": [
//!   {"name": "billing", "token_sha256": "5e88...", "counters": ["orders", "invoices"]},
//!   {"name": "ops", "token_sha256": "a3f1...", "counters": ["*"]}
//! ]}
//! ```
//!
//! (`printf %s "$TOKEN" | sha256sum` gives the hash.) Tokens are never
//! taken from the command line and never logged; a request names the app
//! it authenticated as, not the token.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::error::ApiError;
use crate::checksum::sha256_hex;

/// Why a tokens file cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AccessError {
    /// The file cannot be read.
    #[error("cannot read the tokens file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not what it should be.
    #[error("the tokens file {path} is invalid: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokensFile {
    apps: Vec<AppEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AppEntry {
    name: String,
    token_sha256: String,
    counters: Vec<String>,
}

/// The applications allowed in, by the SHA-256 of their token.
#[derive(Debug, Clone)]
pub struct Access {
    apps: HashMap<String, App>,
}

/// One application: its name and the counters it may use.
#[derive(Debug, Clone)]
pub struct App {
    /// The application's name (logged in place of its token).
    pub name: String,
    /// The counters it may use; `*` allows every counter.
    counters: Vec<String>,
}

impl App {
    /// Whether the app may use `counter`.
    pub fn may_use(&self, counter: &str) -> bool {
        self.counters.iter().any(|c| c == "*" || c == counter)
    }
}

impl Access {
    /// Reads a tokens file (see the module docs).
    pub fn from_file(path: &Path) -> Result<Self, AccessError> {
        let text = std::fs::read_to_string(path).map_err(|source| AccessError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let invalid = |reason: String| AccessError::Invalid {
            path: path.to_path_buf(),
            reason,
        };
        let file: TokensFile =
            serde_json::from_str(&text).map_err(|error| invalid(error.to_string()))?;
        let mut apps = HashMap::new();
        for entry in file.apps {
            let hash = entry.token_sha256.to_ascii_lowercase();
            if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(invalid(format!(
                    "app '{}': token_sha256 must be 64 hexadecimal digits (printf %s \"$TOKEN\" | sha256sum)",
                    entry.name
                )));
            }
            if entry.counters.is_empty() {
                return Err(invalid(format!(
                    "app '{}' lists no counters (use [\"*\"] for all)",
                    entry.name
                )));
            }
            let app = App {
                name: entry.name,
                counters: entry.counters,
            };
            if let Some(previous) = apps.insert(hash, app) {
                return Err(invalid(format!(
                    "app '{}' has the same token as another app",
                    previous.name
                )));
            }
        }
        Ok(Self { apps })
    }

    /// The app of the request's `Authorization` header value, if valid.
    pub fn authenticate(&self, authorization: Option<&str>) -> Result<&App, ApiError> {
        let token = authorization
            .and_then(|value| value.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|token| !token.is_empty())
            .ok_or(ApiError::Unauthenticated)?;
        self.apps
            .get(&sha256_hex(token.as_bytes()))
            .ok_or(ApiError::Unauthenticated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(json: &str) -> Result<Access, AccessError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        std::fs::write(&path, json).unwrap();
        Access::from_file(&path)
    }

    #[test]
    fn a_token_opens_its_apps_counters_only() {
        let hash = sha256_hex(b"s3cret");
        let access = access(&format!(
            r#"{{"apps": [{{"name": "billing", "token_sha256": "{hash}", "counters": ["orders"]}}]}}"#
        ))
        .unwrap();
        let app = access.authenticate(Some("Bearer s3cret")).unwrap();
        assert_eq!(app.name, "billing");
        assert!(app.may_use("orders") && !app.may_use("invoices"));
        for wrong in [None, Some("Bearer nope"), Some("s3cret"), Some("Bearer ")] {
            assert!(matches!(
                access.authenticate(wrong),
                Err(ApiError::Unauthenticated)
            ));
        }
    }

    #[test]
    fn a_bad_tokens_file_is_named() {
        let error =
            access(r#"{"apps": [{"name": "x", "token_sha256": "abc", "counters": ["*"]}]}"#)
                .unwrap_err();
        assert!(
            error.to_string().contains("64 hexadecimal digits"),
            "{error}"
        );
        let error = access(r#"{"apps": [], "extra": 1}"#).unwrap_err();
        assert!(error.to_string().contains("unknown field"), "{error}");
    }
}
