//! Who may call the API: the tokens a server was given (a file, fixed) or
//! reads from the tokens collection (`--tokens-from-db`, read again every
//! [`ServeOptions::tokens_reload`](crate::ServeOptions)).
//!
//! A reload that fails keeps the tokens in force, but only for
//! [`ServeOptions::tokens_max_age`](crate::ServeOptions): past that age
//! the server fails closed (every request 503) until a read succeeds, so
//! that a token removed while the database was unreachable does not stay
//! valid forever. A document of the collection that is not a valid entry
//! is skipped with a warning, never the whole set.

use std::sync::{PoisonError, RwLock, Weak};
use std::time::{Duration, Instant};

use mongodb::Database;

use idmint::tokens::{Access, App};

use super::error::ApiError;
use super::AppState;

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
    /// logged), to be reloaded by [`reload`].
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

/// Reads the tokens collection every `every` while the server lives. A read
/// that fails keeps the tokens in force (until their age runs out) and is
/// logged.
pub(crate) async fn reload(state: Weak<AppState>, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        let Some(state) = state.upgrade() else {
            return;
        };
        let Some(Tokens::Reloaded(current)) = &state.tokens else {
            return;
        };
        match read(&state.database).await {
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
    }
}
