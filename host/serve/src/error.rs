//! [`ApiError`]: every way a request can fail, with its HTTP status and the
//! JSON body the client gets: `{"error": KIND, "message": TEXT}`, plus the
//! counter's name when one is concerned.
//!
//! A failure of the library is classified once, by the library
//! ([`ErrorClass`]); its status and kind are one table over the class,
//! [`class_status`] (the CLI's exit codes are the other table). Failures of
//! the request itself (a malformed parameter, no token, over a limit) are
//! the service's own variants.
//!
//! A 5xx answer carries no internal detail (policy file paths, wasm
//! backtraces, database hosts, role names): the cause is logged on the
//! server with the app that asked, and the client gets a message that says
//! what kind of failure it was and whether to retry.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use idmint::policy::{FitError, PolicyError};
use idmint::sequence::SequenceError;
use idmint::ErrorClass;

/// Why a request was refused or failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// The request is malformed: a parameter, the body, a counter name.
    #[error("{0}")]
    BadRequest(String),
    /// The request body is larger than the server's `--max-body`.
    #[error("{0}")]
    TooLarge(String),
    /// The request body did not arrive within `--body-timeout`.
    #[error("{0}")]
    SlowBody(String),
    /// No (valid) bearer token, when the server requires one.
    #[error("a valid bearer token is required (Authorization: Bearer TOKEN)")]
    Unauthenticated,
    /// The token's application may not use this counter.
    #[error("application '{app}' may not use counter '{counter}'")]
    Forbidden {
        /// The token's application.
        app: String,
        /// The counter asked for.
        counter: String,
    },
    /// The token's application may not take this lock.
    #[error("application '{app}' may not take lock '{lock}'")]
    ForbiddenLock {
        /// The token's application.
        app: String,
        /// The lock asked for.
        lock: String,
    },
    /// The token's application may not format IDs with this prefix.
    #[error("application '{app}' may not use prefix {prefix:?}")]
    ForbiddenPrefix {
        /// The token's application.
        app: String,
        /// The prefix asked for.
        prefix: String,
    },
    /// The token's application is limited to some prefixes, so it may take
    /// formatted IDs only, never raw values (which belong to no prefix).
    #[error("application '{app}' may use prefixes {prefixes:?} only, so it may take formatted IDs (ids) only, not raw values")]
    ForbiddenRawValues {
        /// The token's application.
        app: String,
        /// The prefixes it is limited to.
        prefixes: Vec<String>,
    },
    /// The counter exists but this route does not serve its kind (a Leaf
    /// route, `ranges`); nothing was opened or taken.
    #[error("{message}")]
    WrongRoute {
        /// The counter.
        counter: String,
        /// Why.
        message: String,
    },
    /// The library failed or refused; its class decides the status
    /// ([`class_status`]).
    #[error("{error}")]
    Library {
        /// What kind of failure it is.
        class: ErrorClass,
        /// The counter concerned, if any.
        counter: Option<String>,
        /// The library's error, logged (and shown to the client below 500).
        error: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A series route's refusal with a kind of its own: no such series
    /// (`unknown-series`, 404), no such reserved number (`unknown-number`,
    /// 404), a number settled otherwise already (`settled`, 409).
    #[error("{message}")]
    Series {
        /// The status.
        status: StatusCode,
        /// The stable kind.
        kind: &'static str,
        /// The series.
        series: String,
        /// What went wrong.
        message: String,
    },
    /// A lock route's refusal with a kind of its own: the lock is held
    /// (`lock-busy`, 409), the lease is no longer the caller's
    /// (`lease-lost`, 409).
    #[error("{message}")]
    Lock {
        /// The stable kind.
        kind: &'static str,
        /// What went wrong.
        message: String,
    },
    /// The server is at one of its limits (requests, policy slots), or the
    /// request ran past its time limit: retry with backoff.
    #[error("{0}")]
    Overloaded(String),
    /// The tokens could not be read for longer than the server trusts the
    /// ones it has: no request is let in until they are.
    #[error("{0}")]
    TokensStale(String),
    /// No route has this method and path.
    #[error("no route {0}; see /openapi.json on the admin listener")]
    NoRoute(String),
    /// The path is a route's, but not with this method (the answer's
    /// `Allow` header names those it has).
    #[error("no route {0}: the path is served with the methods its Allow header names")]
    MethodNotAllowed(String),
    /// A request body of a media type the route does not take.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// A refusal answered before to the same request and kept (a prefix or
    /// a policy that cannot serve the counter, see `minters.rs`): the same
    /// answer again, with no database read and no policy call.
    #[error("{0}")]
    Repeated(std::sync::Arc<ApiError>),
}

/// The JSON body of an error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// A stable machine-readable kind: `bad-request`, `too-large`,
    /// `timeout`, `unauthenticated`, `forbidden`, `unknown-counter`,
    /// `unknown-series`, `unknown-number`, `settled`, `lock-busy`,
    /// `lease-lost`,
    /// `unservable`, `counter`, `unavailable`, `policy`, `internal`,
    /// `overloaded`, `no-route`, `method-not-allowed`,
    /// `unsupported-media-type`.
    pub error: &'static str,
    /// What went wrong, in words (for a 5xx, without internal detail).
    pub message: String,
    /// The counter (or series) concerned, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counter: Option<String>,
}

/// The one table: the HTTP status and error kind of each class of library
/// failure.
pub fn class_status(class: ErrorClass) -> (StatusCode, &'static str) {
    match class {
        ErrorClass::BadInput => (StatusCode::BAD_REQUEST, "bad-request"),
        ErrorClass::NotFound => (StatusCode::NOT_FOUND, "unknown-counter"),
        ErrorClass::Conflict | ErrorClass::Exhausted => (StatusCode::CONFLICT, "counter"),
        ErrorClass::Unfit => (StatusCode::CONFLICT, "unservable"),
        ErrorClass::Busy
        | ErrorClass::Lost
        | ErrorClass::Unavailable
        | ErrorClass::Unauthorized => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
        ErrorClass::Policy => (StatusCode::INTERNAL_SERVER_ERROR, "policy"),
        // Drift, and a class added later: idmint's own failure.
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
    }
}

/// What a client is told of a library failure answered 5xx: the kind of
/// failure and what to do, never its detail (which is logged).
fn generic_message(class: ErrorClass) -> &'static str {
    match class {
        ErrorClass::Unauthorized => {
            "the server's database user lacks a privilege this needs; the operator must grant it \
             (the server log names it)"
        }
        ErrorClass::Busy | ErrorClass::Lost | ErrorClass::Unavailable => {
            "the database cannot serve this now (unreachable, failing, or a lease not held); \
             retry with backoff"
        }
        ErrorClass::Policy => {
            "the policy failed to format or read these IDs (the server log has the cause); \
             the values taken for them are not issued twice"
        }
        _ => "the server failed (the server log has the cause)",
    }
}

impl ApiError {
    /// The error of a library failure, classified by the library.
    pub fn library(
        class: ErrorClass,
        counter: Option<String>,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Library {
            class,
            counter,
            error: Box::new(error),
        }
    }

    /// The HTTP status answered, and the stable kind of
    /// [`ErrorBody::error`].
    pub fn status(&self) -> (StatusCode, &'static str) {
        match self {
            Self::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad-request"),
            Self::TooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "too-large"),
            Self::SlowBody(_) => (StatusCode::REQUEST_TIMEOUT, "timeout"),
            Self::Unauthenticated => (StatusCode::UNAUTHORIZED, "unauthenticated"),
            Self::Forbidden { .. }
            | Self::ForbiddenPrefix { .. }
            | Self::ForbiddenLock { .. }
            | Self::ForbiddenRawValues { .. } => (StatusCode::FORBIDDEN, "forbidden"),
            Self::WrongRoute { .. } => (StatusCode::CONFLICT, "unservable"),
            Self::Library { class, .. } => class_status(*class),
            Self::Series { status, kind, .. } => (*status, kind),
            Self::Lock { kind, .. } => (StatusCode::CONFLICT, kind),
            Self::Overloaded(_) => (StatusCode::SERVICE_UNAVAILABLE, "overloaded"),
            Self::TokensStale(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            Self::NoRoute(_) => (StatusCode::NOT_FOUND, "no-route"),
            Self::MethodNotAllowed(_) => (StatusCode::METHOD_NOT_ALLOWED, "method-not-allowed"),
            Self::UnsupportedMediaType(_) => {
                (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported-media-type")
            }
            Self::Repeated(first) => first.status(),
        }
    }

    /// Whether asking again the same way is refused the same way until the
    /// counter or the policy changes: a malformed or conflicting request, or
    /// a policy that cannot serve the counter. Never a failure of the
    /// database or the server, which the next attempt may not meet.
    pub fn is_lasting_refusal(&self) -> bool {
        match self {
            Self::BadRequest(_) | Self::Repeated(_) => true,
            Self::Series { status, .. } => *status == StatusCode::CONFLICT,
            Self::Library { class, .. } => matches!(
                class,
                ErrorClass::BadInput | ErrorClass::Conflict | ErrorClass::Unfit
            ),
            _ => false,
        }
    }

    /// The counter concerned, if any.
    pub fn counter(&self) -> Option<&str> {
        match self {
            Self::Forbidden { counter, .. } | Self::WrongRoute { counter, .. } => Some(counter),
            Self::Library { counter, .. } => counter.as_deref(),
            Self::Series { series, .. } => Some(series),
            Self::Repeated(first) => first.counter(),
            _ => None,
        }
    }

    /// Whether the answer is the server's failure (5xx), whose detail is
    /// logged rather than answered.
    pub fn is_server_failure(&self) -> bool {
        self.status().0.is_server_error()
    }

    /// The message the client gets.
    pub fn public_message(&self) -> String {
        match self {
            Self::Library { class, .. } if self.is_server_failure() => {
                generic_message(*class).to_string()
            }
            Self::Repeated(first) => first.public_message(),
            other => other.to_string(),
        }
    }

    /// The error of a route that does not serve `counter`'s kind.
    pub fn wrong_route(counter: &str, message: impl Into<String>) -> Self {
        Self::WrongRoute {
            counter: counter.to_string(),
            message: message.into(),
        }
    }
}

impl From<SequenceError> for ApiError {
    fn from(error: SequenceError) -> Self {
        let counter = match &error {
            SequenceError::UnknownCounter(name) => Some(name.to_string()),
            _ => None,
        };
        Self::library(error.class(), counter, error)
    }
}

impl From<idmint::sequence::InvalidCounterName> for ApiError {
    fn from(error: idmint::sequence::InvalidCounterName) -> Self {
        idmint::sequence::SequenceError::from(error).into()
    }
}

impl From<PolicyError> for ApiError {
    fn from(error: PolicyError) -> Self {
        match error {
            PolicyError::Fit(fit) => (*fit).into(),
            other => Self::library(other.class(), None, other),
        }
    }
}

impl From<FitError> for ApiError {
    fn from(error: FitError) -> Self {
        let counter = error.counter().to_string();
        Self::library(ErrorClass::Unfit, Some(counter), error)
    }
}

impl From<idmint::Error> for ApiError {
    fn from(error: idmint::Error) -> Self {
        match error {
            idmint::Error::Sequence(error) => error.into(),
            idmint::Error::Policy(error) => error.into(),
            other => Self::library(other.class(), None, other),
        }
    }
}

/// The app a failed request came from, put in the response's extensions
/// for the request log (`routes::track`), which logs 5xx causes with it.
#[derive(Debug, Clone)]
pub(crate) struct FailureCause {
    /// What failed, in full.
    pub cause: String,
    /// The counter concerned, if any.
    pub counter: Option<String>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, kind) = self.status();
        let body = ErrorBody {
            error: kind,
            message: self.public_message(),
            counter: self.counter().map(str::to_string),
        };
        let mut response = (status, Json(body)).into_response();
        if status.is_server_error() {
            // The full cause (with its chain) for the log, never the client.
            let mut cause = self.to_string();
            let mut source = std::error::Error::source(&self);
            while let Some(next) = source {
                let text = next.to_string();
                if !cause.contains(&text) {
                    cause.push_str(": ");
                    cause.push_str(&text);
                }
                source = next.source();
            }
            response.extensions_mut().insert(FailureCause {
                cause,
                counter: self.counter().map(str::to_string),
            });
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_has_a_status_and_server_failures_say_no_detail() {
        let classes = [
            ErrorClass::BadInput,
            ErrorClass::NotFound,
            ErrorClass::Conflict,
            ErrorClass::Exhausted,
            ErrorClass::Unfit,
            ErrorClass::Busy,
            ErrorClass::Lost,
            ErrorClass::Drift,
            ErrorClass::Unavailable,
            ErrorClass::Unauthorized,
            ErrorClass::Policy,
        ];
        for class in classes {
            let secret = std::io::Error::other("/etc/idmint/policy.wasm role idmintApp");
            let error = ApiError::library(class, None, secret);
            let (status, kind) = error.status();
            assert!(!kind.is_empty());
            if status.is_server_error() {
                assert!(
                    !error.public_message().contains("idmintApp"),
                    "{class:?}: {}",
                    error.public_message()
                );
            } else {
                assert!(error.public_message().contains("idmintApp"));
            }
        }
        assert_eq!(
            class_status(ErrorClass::NotFound),
            (StatusCode::NOT_FOUND, "unknown-counter")
        );
        assert_eq!(class_status(ErrorClass::Policy).0, 500);
        assert_eq!(class_status(ErrorClass::Unavailable).0, 503);
    }
}
