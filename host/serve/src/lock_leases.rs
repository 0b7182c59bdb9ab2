//! The routes by which an HTTP client holds a lock, in any of its shapes
//! (exclusive, a reader, a semaphore's permit, a leader, a scheduled job):
//!
//! - `POST /v1/locks/{name}/acquire` (`ttl_ms`, `wait_ms`, `shared`,
//!   `permits`, `label`, `at_least_ms`): takes it, waiting in the lock's
//!   fair line up to `wait_ms`, and answers the lease's ID, its fencing
//!   token and `lease_ms`;
//! - `POST /v1/locks/{name}/renew` (`lease`): extends it by its TTL;
//! - `POST /v1/locks/{name}/release` (`lease`): gives it up.
//!
//! The service keeps nothing of a lease: its ID ([`LeaseId`]) carries what
//! a renewal or release needs, so a client renews through any instance
//! behind a load balancer, and one restarted meanwhile. The ID holds the
//! owner token, a secret (whoever has it can release the lease): it is in
//! bodies only, never in a path, so no access log records it.
//!
//! A client trusts its lease for `lease_ms` counted from when it *sent*
//! the request that took or renewed it (the TTL less a tenth): the
//! service's write was sent later, so that count ends before the server can
//! end the lease and give the lock to someone else, whatever the network
//! did to the answer.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use idmint::lock::{
    Lease, LeaseId, Lock, LockError, LockName, WaitOptions, MAX_PERMITS, MAX_WAIT, READERS,
};

use super::error::{ApiError, ErrorBody};
use super::extract::{whole_number, ApiJson, Caller};
use super::state::AppState;

/// Body of `POST /v1/locks/{name}/acquire`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AcquireRequest {
    /// The lease's TTL in milliseconds (100 to 86,400,000): renew it
    /// before `lease_ms` has passed.
    #[serde(deserialize_with = "whole_number")]
    #[schema(value_type = u64, minimum = 100, maximum = 86_400_000)]
    pub ttl_ms: Option<u64>,
    /// How long to wait for the lock, in line, in milliseconds (default 0:
    /// one attempt). At most four fifths of the server's request timeout:
    /// a longer wait is cut to that, and answered `lock-busy` when it runs
    /// out (ask again).
    #[serde(default, deserialize_with = "whole_number")]
    #[schema(minimum = 0, maximum = 86_400_000)]
    pub wait_ms: Option<u64>,
    /// A reader of a read-write lock: shared with other readers, never
    /// beside an exclusive holder (with `permits`, one of those permits).
    #[serde(default)]
    pub shared: bool,
    /// One of a semaphore's N permits (1 to 1,000,000): shared with at most
    /// N-1 others.
    #[serde(default, deserialize_with = "whole_number")]
    #[schema(minimum = 1, maximum = 1_000_000)]
    pub permits: Option<u64>,
    /// Who the holder is, shown by `GET /v1/locks/{name}` and `idmint lock
    /// status` (who leads): 1 to 128 printable characters.
    #[serde(default)]
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = "^[^\\u0000-\\u001F\\u007F-\\u009F]*$"
    )]
    pub label: Option<String>,
    /// A scheduled job's lock: held at least this long from its
    /// acquisition, released or not, in milliseconds.
    #[serde(default, deserialize_with = "whole_number")]
    #[schema(minimum = 0, maximum = 86_400_000)]
    pub at_least_ms: Option<u64>,
}

/// Body of `POST /v1/locks/{name}/renew` and `.../release`. Its other
/// fields are ignored, so the acquire's (or the last renewal's) answer, as
/// it came, is one.
#[derive(Debug, Deserialize, ToSchema)]
pub struct LeaseRequest {
    /// The lease's ID, as the acquire answered it.
    #[schema(
        max_length = 300,
        pattern = "^l1\\.[xs]\\.[0-9]{1,18}\\.[0-9]{1,8}\\.[0-9]{1,8}\\.[^\\u0000-\\u001F\\u007F-\\u009F]{1,200}$"
    )]
    pub lease: String,
}

/// Answer of an acquire or a renewal.
#[derive(Debug, Serialize, ToSchema)]
pub struct LeaseResponse {
    /// The lock.
    pub lock: String,
    /// The lease's ID: keep it secret (it can release the lease), send it
    /// to renew and to release.
    pub lease: String,
    /// The fencing token: pass it to whatever the lock protects; each new
    /// holder's is larger.
    pub token: i64,
    /// Whether the holding is shared (a reader, a permit).
    pub shared: bool,
    /// The TTL each renewal asks for, in milliseconds.
    pub ttl_ms: u64,
    /// How long the lease is proved held, in milliseconds, counted from
    /// when the client sent this request: stop before it passes unless a
    /// renewal answered. The TTL less a tenth, and the whole seconds the
    /// service can prove beyond that (an acquire's wait in line, a
    /// scheduled job's first lease of its at-least).
    pub lease_ms: u64,
}

/// Answer of a release.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReleasedResponse {
    /// The lock.
    pub lock: String,
    /// The fencing token of the lease released.
    pub token: i64,
    /// Always true: the lease is given up (a scheduled job's lock stays
    /// held, by no one, until its `at_least_ms` has passed).
    pub released: bool,
}

/// The lock named by a path, which the caller may take.
fn lock_name(
    caller: &Caller,
    path: Result<Path<String>, PathRejection>,
) -> Result<LockName, ApiError> {
    let Path(name) = path.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    // The token's rights first: no one learns which locks exist without.
    caller.may_lock(&name)?;
    LockName::new(&name).map_err(|error| ApiError::BadRequest(error.to_string()))
}

/// The lock of the path and the lease a renew or release names, resumed
/// here (see [`Locks::resume`](idmint::lock::Locks::resume)).
fn resumed(
    state: &AppState,
    caller: &Caller,
    path: Result<Path<String>, PathRejection>,
    request: &LeaseRequest,
) -> Result<(LockName, Lease), ApiError> {
    let name = lock_name(caller, path)?;
    let id: LeaseId = request.lease.parse().map_err(failed)?;
    let lease = state.locks.resume(name.clone(), &id).map_err(failed)?;
    Ok((name, lease))
}

/// A lock failure: a busy lock and a lost lease have kinds of their own,
/// the rest their class's.
fn failed(error: LockError) -> ApiError {
    let kind = match &error {
        LockError::Busy { .. } => "lock-busy",
        LockError::Lost { .. } => "lease-lost",
        _ => return ApiError::library(error.class(), None, error),
    };
    ApiError::Lock {
        kind,
        message: error.to_string(),
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The answer of a lease `id` proved held for `beyond` more than its
/// TTL's share (see [`proved_beyond_ttl`]).
fn lease_response(name: &LockName, id: &LeaseId, beyond: Duration) -> LeaseResponse {
    LeaseResponse {
        lock: name.to_string(),
        lease: id.to_string(),
        token: id.token(),
        shared: id.is_shared(),
        ttl_ms: millis(id.ttl()),
        lease_ms: millis(id.proved_for() + beyond),
    }
}

/// How much longer than the TTL's share, counted from `began` (when the
/// acquire began handling its request), the service can prove `lease`
/// held, in whole seconds rounded down: the time the acquire waited in
/// line before the write that took the lock (the client sent its request
/// before `began`), and for a scheduled job's first lease, which lasts its
/// at-least, the rest of that. The client may add it to the TTL's share,
/// counted from when it sent the request, and still stop before the server
/// can end the lease: a wait in line does not shorten the lease it ends
/// with.
fn proved_beyond_ttl(began: Instant, lease: &Lease) -> Duration {
    let sent = lease
        .deadline()
        .and_then(|deadline| deadline.checked_sub(LeaseId::proved_for_ttl(lease.ttl())));
    let waited = sent.map_or(Duration::ZERO, |sent| sent.saturating_duration_since(began));
    Duration::from_secs(waited.as_secs())
}

/// Takes a lock: exclusive, shared, a permit; waiting in line up to
/// `wait_ms`.
#[utoipa::path(
    post,
    path = "/v1/locks/{name}/acquire",
    params(("name" = String, Path, description = "The lock")),
    request_body = AcquireRequest,
    responses(
        (status = 200, description = "Held: the lease's ID, fencing token and how long it is proved held", body = LeaseResponse),
        (status = 400, description = "Bad name, TTL, wait, permits, label, or a combination that is none", body = ErrorBody),
        (status = 403, description = "The token's app may not take the lock", body = ErrorBody),
        (status = 409, description = "`lock-busy`: held by others until the wait ran out", body = ErrorBody),
        (status = 415, description = "A body that is not `application/json`", body = ErrorBody),
        (status = 503, description = "Database unreachable, or overloaded", body = ErrorBody),
    )
)]
pub(super) async fn acquire(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
    ApiJson(request): ApiJson<AcquireRequest>,
) -> Result<Json<LeaseResponse>, ApiError> {
    let began = Instant::now();
    let name = lock_name(&caller, path)?;
    let ttl = Duration::from_millis(
        request
            .ttl_ms
            .ok_or_else(|| ApiError::BadRequest("ttl_ms is required".into()))?,
    );
    let wait = Duration::from_millis(request.wait_ms.unwrap_or(0));
    if wait > MAX_WAIT {
        return Err(ApiError::BadRequest(format!(
            "wait_ms {} is out of range 0..={}",
            wait.as_millis(),
            MAX_WAIT.as_millis()
        )));
    }
    let permits = match request.permits {
        Some(permits) => Some(
            u32::try_from(permits)
                .ok()
                .filter(|p| *p <= MAX_PERMITS)
                .ok_or_else(|| {
                    ApiError::BadRequest(format!(
                        "permits {permits} is out of range 1..={MAX_PERMITS}"
                    ))
                })?,
        ),
        None => None,
    };
    // A permit is shared; a reader is one of unlimited permits.
    let permits = permits.or(request.shared.then_some(READERS));
    let at_least = Duration::from_millis(request.at_least_ms.unwrap_or(0));
    let most = state.limits.request_timeout.mul_f64(0.8);
    let wait = wait.min(most);
    let lock: Lock = match &request.label {
        Some(label) => state
            .locks
            .lock_labelled(name.clone(), label)
            .map_err(failed)?,
        None => state.locks.lock(name.clone()),
    };
    let options = WaitOptions::new(wait);
    let lease = match permits {
        Some(permits) => {
            lock.acquire_shared_at_least(ttl, at_least, permits, &options)
                .await
        }
        None => lock.acquire_at_least(ttl, at_least, &options).await,
    }
    .map_err(failed)?;
    let beyond = proved_beyond_ttl(began, &lease);
    Ok(Json(lease_response(&name, &lease.into_id(), beyond)))
}

/// Extends a lease by its TTL, from the server's now.
#[utoipa::path(
    post,
    path = "/v1/locks/{name}/renew",
    params(("name" = String, Path, description = "The lock")),
    request_body = LeaseRequest,
    responses(
        (status = 200, description = "Renewed: proved held for `lease_ms` from when this request was sent", body = LeaseResponse),
        (status = 400, description = "Bad name or lease ID", body = ErrorBody),
        (status = 403, description = "The token's app may not take the lock", body = ErrorBody),
        (status = 409, description = "`lease-lost`: the lease ended or changed hands; stop", body = ErrorBody),
        (status = 415, description = "A body that is not `application/json`", body = ErrorBody),
        (status = 503, description = "Database unreachable, or overloaded: the lease is not proved renewed", body = ErrorBody),
    )
)]
pub(super) async fn renew(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
    ApiJson(request): ApiJson<LeaseRequest>,
) -> Result<Json<LeaseResponse>, ApiError> {
    let (name, lease) = resumed(&state, &caller, path, &request)?;
    let renewed = lease.renew().await;
    // Still the client's, renewed or not: nothing here holds it.
    let id = lease.into_id();
    renewed.map_err(failed)?;
    Ok(Json(lease_response(&name, &id, Duration::ZERO)))
}

/// Gives a lease up: the lock goes to the first in its line, or is free.
#[utoipa::path(
    post,
    path = "/v1/locks/{name}/release",
    params(("name" = String, Path, description = "The lock")),
    request_body = LeaseRequest,
    responses(
        (status = 200, description = "Released", body = ReleasedResponse),
        (status = 400, description = "Bad name or lease ID", body = ErrorBody),
        (status = 403, description = "The token's app may not take the lock", body = ErrorBody),
        (status = 409, description = "`lease-lost`: the lease had ended or changed hands already", body = ErrorBody),
        (status = 415, description = "A body that is not `application/json`", body = ErrorBody),
        (status = 503, description = "Database unreachable, or overloaded", body = ErrorBody),
    )
)]
pub(super) async fn release(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
    ApiJson(request): ApiJson<LeaseRequest>,
) -> Result<Json<ReleasedResponse>, ApiError> {
    let (name, lease) = resumed(&state, &caller, path, &request)?;
    let token = lease.token();
    lease.release().await.map_err(failed)?;
    Ok(Json(ReleasedResponse {
        lock: name.to_string(),
        token,
        released: true,
    }))
}
