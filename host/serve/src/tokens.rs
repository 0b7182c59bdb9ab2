//! [`Tokens`]: who may call the API, the tokens a server was given (a file, fixed) or
//! reads from the tokens collection (`--tokens-from-db`, read again every
//! [`ServeOptions::tokens_reload`](crate::ServeOptions) by
//! `AppState::reload_tokens`).
//!
//! A reload that fails keeps the tokens in force, but only for
//! [`ServeOptions::tokens_max_age`](crate::ServeOptions): past that age
//! the server fails closed (every request 503) until a read succeeds, so
//! that a token removed while the database was unreachable does not stay
//! valid forever. A document of the collection that is not a valid entry
//! is skipped with a warning, never the whole set.

use std::sync::{PoisonError, RwLock};
use std::time::{Duration, Instant};

use axum::http::{header, HeaderMap};
use mongodb::Database;

use idmint::tokens::{Access, App};

use super::error::ApiError;

/// The tokens a server checks requests against.
pub(crate) enum Tokens {
    /// From a file, read at start.
    Fixed(Access),
    /// From the tokens collection, read again periodically.
    Reloaded(RwLock<Reloaded>),
}

/// The last good read of the tokens collection.
pub(crate) struct Reloaded {
    access: Access,
    read_at: Instant,
    max_age: Duration,
}

impl Tokens {
    /// Reads the tokens collection of `database` (skipped documents are
    /// logged), to be reloaded by `AppState::reload_tokens`.
    pub(crate) async fn from_database(
        database: &Database,
        max_age: Duration,
    ) -> Result<Self, idmint::tokens::AccessError> {
        let access = read(database).await?;
        Ok(Self::Reloaded(RwLock::new(Reloaded {
            access,
            read_at: Instant::now(),
            max_age,
        })))
    }

    /// The app whose token `token` is, or why the request is refused.
    pub(crate) fn app_for_token(&self, token: &str) -> Result<App, ApiError> {
        match self {
            Tokens::Fixed(access) => access.app_for_token(token).cloned(),
            Tokens::Reloaded(reloaded) => {
                let reloaded = reloaded.read().unwrap_or_else(PoisonError::into_inner);
                let age = reloaded.read_at.elapsed();
                if age > reloaded.max_age {
                    return Err(ApiError::TokensStale(format!(
                        "the tokens could not be read for {} s (the server trusts them for {} s); \
                         no request is let in until they are: retry with backoff",
                        age.as_secs(),
                        reloaded.max_age.as_secs()
                    )));
                }
                reloaded.access.app_for_token(token).cloned()
            }
        }
        .ok_or(ApiError::Unauthenticated)
    }
}

impl Tokens {
    /// Reads the tokens collection again, if these come from it: a read
    /// that fails keeps the tokens in force (until their age runs out) and
    /// is logged. False for tokens from a file, which are never read again.
    pub(crate) async fn reload(&self, database: &Database) -> bool {
        let Tokens::Reloaded(current) = self else {
            return false;
        };
        match read(database).await {
            Ok(access) => {
                let mut current = current.write().unwrap_or_else(PoisonError::into_inner);
                current.access = access;
                current.read_at = Instant::now();
            }
            Err(error) => {
                let age = current
                    .read()
                    .unwrap_or_else(PoisonError::into_inner)
                    .read_at
                    .elapsed();
                tracing::warn!(
                    %error,
                    age_secs = age.as_secs(),
                    "cannot reload the tokens; keeping those in force until they are too old"
                )
            }
        }
        true
    }
}

/// Reads the tokens collection, warning about each document skipped.
async fn read(database: &Database) -> Result<Access, idmint::tokens::AccessError> {
    let loaded = Access::from_database(database).await?;
    for skipped in &loaded.skipped {
        tracing::warn!(
            skipped = %skipped,
            "a document of the tokens collection is not a valid entry; skipped (its app is not let in)"
        );
    }
    Ok(loaded.access)
}

/// The token of an `Authorization: Bearer TOKEN` header; the scheme is
/// matched case-insensitively (RFC 9110, 11.1).
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim_start().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_scheme_is_matched_whatever_its_case() {
        let headers = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::AUTHORIZATION, value.parse().unwrap());
            headers
        };
        for value in ["Bearer tok", "bearer tok", "BEARER  tok ", " bEaReR tok"] {
            assert_eq!(bearer(&headers(value)), Some("tok"), "{value:?}");
        }
        for value in ["Basic tok", "Bearer", "Bearer   ", "Bearertok"] {
            assert_eq!(bearer(&headers(value)), None, "{value:?}");
        }
        assert_eq!(bearer(&HeaderMap::new()), None);
    }
}
