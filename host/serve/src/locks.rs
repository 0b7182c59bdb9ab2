//! `GET /v1/locks/{name}`: who holds a lock now, for apps that ask "who
//! leads?" of `idmint lock elect`: the holder's label, the fencing token
//! (which grows with each new holder, so a watcher that polls sees each
//! succession), the time left by the server's clock. The owner token is
//! never shown: it would let its reader release the lock.

use std::sync::Arc;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use idmint::lock::{LockName, LockState};

use super::error::{ApiError, ErrorBody};
use super::extract::Caller;
use super::state::AppState;

/// Answer of `GET /v1/locks/{name}`.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct LockResponse {
    /// The lock.
    name: String,
    /// Whether someone holds it now, by the server's clock.
    held: bool,
    /// The holder's label (`lock elect --id`), when it is held by a
    /// labelled holder: who leads.
    #[serde(skip_serializing_if = "Option::is_none")]
    label: Option<String>,
    /// The fencing token of the latest holding (0: never taken); each new
    /// holder's is larger.
    token: i64,
    /// Milliseconds left on the lease by the server's clock, when held.
    #[serde(skip_serializing_if = "Option::is_none")]
    expires_in_ms: Option<i64>,
    /// Shared holders now (a semaphore's permits, a read-write lock's
    /// readers).
    shared: usize,
}

impl LockResponse {
    fn of(name: &LockName, state: Option<LockState>) -> Self {
        let Some(state) = state else {
            return Self {
                name: name.to_string(),
                held: false,
                label: None,
                token: 0,
                expires_in_ms: None,
                shared: 0,
            };
        };
        let held = state.is_held();
        let shared = state.live_shared().count();
        Self {
            name: state.name,
            held,
            label: state.label.filter(|_| held),
            token: state.token,
            expires_in_ms: state.expires_in_ms.filter(|_| held),
            shared,
        }
    }
}

/// Who holds a lock now (who leads an election).
#[utoipa::path(
    get,
    path = "/v1/locks/{name}",
    params(("name" = String, Path, description = "The lock")),
    responses(
        (status = 200, description = "The lock now: its holder's label and fencing token, or free", body = LockResponse),
        (status = 400, description = "Bad name", body = ErrorBody),
        (status = 503, description = "Database unreachable, or overloaded", body = ErrorBody),
    )
)]
pub(super) async fn lock(
    State(state): State<Arc<AppState>>,
    _caller: Caller,
    path: Result<Path<String>, PathRejection>,
) -> Result<Json<LockResponse>, ApiError> {
    let Path(name) = path.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    let name = LockName::new(&name).map_err(|error| ApiError::BadRequest(error.to_string()))?;
    let found = state
        .locks
        .lock(name.clone())
        .status()
        .await
        .map_err(|error| ApiError::library(error.class(), None, error))?;
    Ok(Json(LockResponse::of(&name, found)))
}
