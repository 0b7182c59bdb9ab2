//! [`ApiError`]: every way a request can fail, with its HTTP status and the
//! JSON body the client gets: `{"error": KIND, "message": TEXT}`, plus the
//! counter's name when one is concerned.

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
    /// The token's application may not format IDs with this prefix.
    #[error("application '{app}' may not use prefix {prefix:?}")]
    ForbiddenPrefix {
        /// The token's application.
        app: String,
        /// The prefix asked for.
        prefix: String,
    },
    /// The counter does not exist.
    #[error("counter '{0}' does not exist")]
    UnknownCounter(String),
    /// The counter exists but cannot serve this route (a Leaf alias of
    /// another kind), or the policy cannot format its values.
    #[error("{message}")]
    Unservable {
        /// The counter.
        counter: String,
        /// Why.
        message: String,
    },
    /// Taking values failed for a reason of the counter's (exhausted,
    /// corrupt, clock behind): retrying as is will not help.
    #[error(transparent)]
    Counter(SequenceError),
    /// The database could not be reached or failed, or the worker lease
    /// is not held: retry later.
    #[error(transparent)]
    Unavailable(SequenceError),
    /// The policy failed (trapped, ran past its limits, wrote bad output).
    #[error("the policy failed: {0}")]
    Policy(PolicyError),
    /// The server is at its concurrency limit, or the request ran past
    /// its time limit.
    #[error("{0}")]
    Overloaded(String),
    /// No route has this method and path.
    #[error("no route {0}; see /openapi.json")]
    NoRoute(String),
}

/// The JSON body of an error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// A stable machine-readable kind: `bad-request`, `too-large`, `unauthenticated`,
    /// `forbidden`, `unknown-counter`, `unservable`, `counter`,
    /// `unavailable`, `policy`, `overloaded`, `no-route`.
    pub error: &'static str,
    /// What went wrong, in words.
    pub message: String,
    /// The counter concerned, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counter: Option<String>,
}

impl ApiError {
    /// The HTTP status answered.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Unauthenticated => StatusCode::UNAUTHORIZED,
            Self::Forbidden { .. } | Self::ForbiddenPrefix { .. } => StatusCode::FORBIDDEN,
            Self::UnknownCounter(_) => StatusCode::NOT_FOUND,
            Self::Unservable { .. } | Self::Counter(_) => StatusCode::CONFLICT,
            Self::Unavailable(_) | Self::Overloaded(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Policy(_) => StatusCode::INTERNAL_SERVER_ERROR,
            Self::NoRoute(_) => StatusCode::NOT_FOUND,
        }
    }

    /// The stable kind of [`ErrorBody::error`].
    pub fn kind(&self) -> &'static str {
        match self {
            Self::BadRequest(_) => "bad-request",
            Self::TooLarge(_) => "too-large",
            Self::Unauthenticated => "unauthenticated",
            Self::Forbidden { .. } | Self::ForbiddenPrefix { .. } => "forbidden",
            Self::UnknownCounter(_) => "unknown-counter",
            Self::Unservable { .. } => "unservable",
            Self::Counter(_) => "counter",
            Self::Unavailable(_) => "unavailable",
            Self::Policy(_) => "policy",
            Self::Overloaded(_) => "overloaded",
            Self::NoRoute(_) => "no-route",
        }
    }

    fn counter(&self) -> Option<String> {
        match self {
            Self::Forbidden { counter, .. } | Self::Unservable { counter, .. } => {
                Some(counter.clone())
            }
            Self::UnknownCounter(counter) => Some(counter.clone()),
            _ => None,
        }
    }

    /// The error a policy that cannot serve `counter` makes.
    pub fn unfit(counter: &str, error: impl std::fmt::Display) -> Self {
        Self::Unservable {
            counter: counter.to_string(),
            message: error.to_string(),
        }
    }
}

impl From<SequenceError> for ApiError {
    fn from(error: SequenceError) -> Self {
        match error {
            SequenceError::UnknownCounter(name) => Self::UnknownCounter(name.to_string()),
            SequenceError::InvalidCounterName { .. } => Self::BadRequest(error.to_string()),
            error
                if matches!(
                    error.class(),
                    ErrorClass::Unavailable | ErrorClass::Unauthorized
                ) =>
            {
                Self::Unavailable(error)
            }
            error => Self::Counter(error),
        }
    }
}

impl From<PolicyError> for ApiError {
    fn from(error: PolicyError) -> Self {
        Self::Policy(error)
    }
}

impl From<idmint::Error> for ApiError {
    fn from(error: idmint::Error) -> Self {
        match error {
            idmint::Error::Sequence(error) => error.into(),
            idmint::Error::Policy(error) => error.into(),
            idmint::Error::Fit(error) => Self::from(error),
            other => Self::BadRequest(other.to_string()),
        }
    }
}

impl From<FitError> for ApiError {
    fn from(error: FitError) -> Self {
        let counter = error.counter().to_string();
        Self::unfit(&counter, error)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: self.kind(),
            message: self.to_string(),
            counter: self.counter(),
        };
        (self.status(), Json(body)).into_response()
    }
}
