//! What the handlers extract, with every rejection already the JSON error
//! body, so that a handler only serves (axum's `customize-extractor-error`
//! and `jwt` examples):
//!
//! - [`authenticate`] (middleware, outside the request limits): the bearer
//!   token, read from the headers before anything else, even before a
//!   request body is read; the app it names becomes the request's
//!   [`Caller`].
//! - [`read_body`] (middleware, outside the request slots): a request body,
//!   read within `--body-timeout` and `--max-body`, so that a slow body
//!   holds a connection, never one of the `--max-concurrent` slots.
//! - [`CounterPath`]: the counter of the path, which the caller must be
//!   allowed (403 first, whether the counter exists or not), with a valid
//!   name.
//! - [`RawCounterPath`]: a [`CounterPath`] of a route that hands out raw
//!   values, which a token limited to some prefixes may not take.
//! - [`ApiQuery`], [`ApiJson`]: the query string and the JSON body, a
//!   rejection being a 400 (or 413, or 415 for a body that is not JSON)
//!   naming what is wrong.

use std::sync::Arc;

use axum::body::{Body, HttpBody};
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use axum::Json;
use http_body_util::BodyExt;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use idmint::sequence::CounterName;
use idmint::tokens::App;

use super::error::ApiError;
use super::state::AppState;
use super::tokens::bearer;

/// Who is calling: the app its token names, or anyone when the server
/// requires no token.
#[derive(Debug, Clone)]
pub struct Caller(Option<App>);

/// The name of the app a request came from, in its response's extensions
/// for the request log.
#[derive(Debug, Clone)]
pub(crate) struct AppName(pub String);

impl Caller {
    /// The name of the app whose token it is (none: the server requires
    /// no token).
    pub fn app_name(&self) -> Option<&str> {
        self.0.as_ref().map(|app| app.name.as_str())
    }

    /// Fails unless the caller may use `counter`.
    pub fn may_use(&self, counter: &str) -> Result<(), ApiError> {
        match &self.0 {
            Some(app) if !app.may_use(counter) => Err(ApiError::Forbidden {
                app: app.name.clone(),
                counter: counter.to_string(),
            }),
            _ => Ok(()),
        }
    }

    /// Fails unless the caller may take lock `lock` (its token lists it,
    /// or `*`).
    pub fn may_lock(&self, lock: &str) -> Result<(), ApiError> {
        match &self.0 {
            Some(app) if !app.may_lock(lock) => Err(ApiError::ForbiddenLock {
                app: app.name.clone(),
                lock: lock.to_string(),
            }),
            _ => Ok(()),
        }
    }

    /// Fails unless the caller may format IDs with `prefix` (its token may
    /// be limited to some; the counter must own it too, checked apart).
    pub fn may_use_prefix(&self, prefix: &str) -> Result<(), ApiError> {
        match &self.0 {
            Some(app) if !app.may_use_prefix(prefix) => Err(ApiError::ForbiddenPrefix {
                app: app.name.clone(),
                prefix: prefix.to_string(),
            }),
            _ => Ok(()),
        }
    }
}

impl Caller {
    /// Fails unless the caller may take raw values (`values`, `ranges`,
    /// Leaf's routes): a token limited to some prefixes may not, since a
    /// raw value is confined to no prefix (it is the same value another app
    /// formats with any prefix of the counter).
    pub fn may_take_raw_values(&self) -> Result<(), ApiError> {
        match &self.0 {
            Some(app) => match app.prefix_limit() {
                Some(prefixes) => Err(ApiError::ForbiddenRawValues {
                    app: app.name.clone(),
                    prefixes: prefixes.to_vec(),
                }),
                None => Ok(()),
            },
            None => Ok(()),
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        // Set by `authenticate`, which every API route is behind; a route
        // without it has no caller to check, which must not pass as anyone.
        parts
            .extensions
            .get::<Caller>()
            .cloned()
            .ok_or(ApiError::Unauthenticated)
    }
}

/// Middleware: the request's [`Caller`], from its headers alone (401 when
/// the server requires a token and this one is none or unknown; 503 when
/// the server's tokens are too old to trust).
pub(crate) async fn authenticate(
    State(state): State<Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let caller = match &state.tokens {
        None => Caller(None),
        Some(tokens) => {
            let token = bearer(request.headers()).ok_or(ApiError::Unauthenticated)?;
            Caller(Some(tokens.app_for_token(token)?))
        }
    };
    let app = caller.0.as_ref().map(|app| AppName(app.name.clone()));
    request.extensions_mut().insert(caller);
    let mut response = next.run(request).await;
    if let Some(app) = app {
        response.extensions_mut().insert(app);
    }
    Ok(response)
}

/// Middleware: reads a request's body (if it has one) within the server's
/// `body_timeout` and `max_body_bytes`, before the request takes a slot.
pub(crate) async fn read_body(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    if HttpBody::size_hint(&body).exact() == Some(0) {
        return Ok(next.run(Request::from_parts(parts, body)).await);
    }
    let limits = &state.limits;
    let too_large = || {
        ApiError::TooLarge(format!(
            "the body is larger than the server's limit of {} bytes (--max-body)",
            limits.max_body_bytes
        ))
    };
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limits.max_body_bytes as u64) {
        return Err(too_large());
    }
    let _reading = state.metrics.body_started();
    let limited = http_body_util::Limited::new(body, limits.max_body_bytes);
    let collected = tokio::time::timeout(limits.body_timeout, limited.collect())
        .await
        .map_err(|_| {
            ApiError::SlowBody(format!(
                "the body did not arrive within the server's {} ms (--body-timeout)",
                limits.body_timeout.as_millis()
            ))
        })?;
    let bytes = match collected {
        Ok(collected) => collected.to_bytes(),
        Err(error) if error.is::<http_body_util::LengthLimitError>() => return Err(too_large()),
        Err(error) => {
            return Err(ApiError::BadRequest(format!(
                "cannot read the body: {error}"
            )))
        }
    };
    Ok(next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await)
}

/// The counter a request names in its path, which its caller may use.
#[derive(Debug, Clone)]
pub struct CounterPath {
    /// The counter.
    pub name: CounterName,
    /// Who asks.
    pub caller: Caller,
}

impl FromRequestParts<Arc<AppState>> for CounterPath {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, ApiError> {
        let caller = Caller::from_request_parts(parts, state).await?;
        let Path(name) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
        // The token's rights first, so that no one learns which counters
        // exist without one; then the name.
        caller.may_use(&name)?;
        let name = CounterName::new(name)?;
        Ok(Self { name, caller })
    }
}

/// The counter of a route that hands out raw values (`values`, `ranges`,
/// Leaf's routes): a [`CounterPath`] whose caller may also take raw values
/// ([`Caller::may_take_raw_values`]), checked before anything is opened.
#[derive(Debug, Clone)]
pub struct RawCounterPath(pub CounterPath);

impl FromRequestParts<Arc<AppState>> for RawCounterPath {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, ApiError> {
        let counter = CounterPath::from_request_parts(parts, state).await?;
        counter.caller.may_take_raw_values()?;
        Ok(Self(counter))
    }
}

/// A query string, a rejection being a 400 naming what is wrong.
#[derive(Debug, Clone)]
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(query)| Self(query))
            .map_err(|rejection| ApiError::BadRequest(rejection.body_text()))
    }
}

/// A JSON body, a rejection being a 400 naming what is wrong.
#[derive(Debug, Clone)]
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        Json::<T>::from_request(request, state)
            .await
            .map(|Json(body)| Self(body))
            .map_err(|rejection| match rejection.status() {
                StatusCode::PAYLOAD_TOO_LARGE => ApiError::TooLarge(rejection.body_text()),
                StatusCode::UNSUPPORTED_MEDIA_TYPE => {
                    ApiError::UnsupportedMediaType(rejection.body_text())
                }
                _ => ApiError::BadRequest(rejection.body_text()),
            })
    }
}

/// A whole number, as JSON Schema's `integer` has it: `300` or `300.0`
/// (not `300.5`, not negative).
pub(crate) fn whole_number<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<u64>, D::Error> {
    let Some(number) = Option::<serde_json::Number>::deserialize(deserializer)? else {
        return Ok(None);
    };
    number
        .as_u64()
        .or_else(|| {
            number
                .as_f64()
                .filter(|x| x.fract() == 0.0 && (0.0..=u64::MAX as f64).contains(x))
                .map(|x| x as u64)
        })
        .map(Some)
        .ok_or_else(|| serde::de::Error::custom(format!("{number} is not a whole number")))
}
