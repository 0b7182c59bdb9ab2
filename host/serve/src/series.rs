//! The routes of gap-free series' reservations (`idmint::series`), for apps
//! that cannot hold a transaction on the database around their business
//! write:
//!
//! - `POST /v1/series/{name}/reservations` (`ttl_s`, `client_key`): the
//!   next number, reserved until its deadline;
//! - `POST /v1/series/{name}/reservations/{number}/confirm` (`reference`);
//! - `POST /v1/series/{name}/reservations/{number}/void` (`reason`);
//!
//! and the sweep that voids the reservations of every series past their
//! deadline, once a second ([`sweep`]). A token's list of counters names
//! the series it may use too. Each record says which app took or settled
//! its number (`by`: `app:NAME`, or the server's `host:pid` when it
//! requires no token).

use std::sync::{Arc, Weak};
use std::time::Duration;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use idmint::sequence::CounterName;
use idmint::series::{summaries, void_expired, Series, SeriesError};

use super::error::{ApiError, ErrorBody};
use super::extract::{whole_number, ApiJson, Caller};
use super::state::AppState;

/// Body of `POST /v1/series/{name}/reservations`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReserveRequest {
    /// Seconds until the reservation expires (1 to 604800; default 300):
    /// voided "expired" then, never handed to anyone else.
    #[serde(default, deserialize_with = "whole_number")]
    #[schema(minimum = 1, maximum = 604_800)]
    pub ttl_s: Option<u64>,
    /// A key of the caller's (1 to 128 characters, none a control
    /// character): a reserve retried with the same key answers the number
    /// reserved the first time, and takes none.
    #[serde(default)]
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = "^[^\\u0000-\\u001F\\u007F-\\u009F]*$"
    )]
    pub client_key: Option<String>,
}

/// Answer of `POST /v1/series/{name}/reservations`: 201 for a number
/// reserved now, 200 for one an earlier call with the same client key
/// reserved.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReservationResponse {
    /// The series.
    pub series: String,
    /// The label of the number's period (a series numbered per period:
    /// `2026`), which its confirm and void name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<String>,
    /// The number.
    pub number: u64,
    /// `reserved`; or, for a client key's earlier reservation, what it is
    /// now (`confirmed`, `voided`).
    pub state: String,
    /// Until when it may be confirmed (server time, RFC 3339).
    pub deadline: String,
    /// Whether an earlier call with the same client key reserved it.
    pub reused: bool,
}

/// Body of `POST /v1/series/{name}/reservations/{number}/confirm`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfirmRequest {
    /// The business reference (the invoice's id): 1 to 512 characters,
    /// none a control character.
    #[schema(
        min_length = 1,
        max_length = 512,
        pattern = "^[^\\u0000-\\u001F\\u007F-\\u009F]*$"
    )]
    pub reference: String,
    /// The number's period, as its reservation answered it (a series
    /// numbered per period).
    #[serde(default)]
    #[schema(max_length = 16)]
    pub period: Option<String>,
}

/// Body of `POST /v1/series/{name}/reservations/{number}/void`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VoidRequest {
    /// Why the number is not used: 1 to 512 characters, none a control
    /// character.
    #[schema(
        min_length = 1,
        max_length = 512,
        pattern = "^[^\\u0000-\\u001F\\u007F-\\u009F]*$"
    )]
    pub reason: String,
    /// The number's period, as its reservation answered it (a series
    /// numbered per period).
    #[serde(default)]
    #[schema(max_length = 16)]
    pub period: Option<String>,
}

/// Answer of a confirm or a void.
#[derive(Debug, Serialize, ToSchema)]
pub struct SettledResponse {
    /// The series.
    pub series: String,
    /// The label of the number's period (a series numbered per period).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<String>,
    /// The number.
    pub number: u64,
    /// `confirmed` or `voided`.
    pub state: String,
    /// The reference it is confirmed with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// Why it is voided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Whether it was so already (a retried call): nothing was written.
    pub already: bool,
}

/// The default time to live of a reservation, in seconds.
const DEFAULT_TTL_S: u64 = 300;

/// The series named by a path, which the caller may use, opened with the
/// caller's name for its records.
fn series_for(
    state: &AppState,
    caller: &Caller,
    name: String,
) -> Result<(Series, CounterName), ApiError> {
    // The token's rights first, as for counters: no one learns which
    // series exist without one.
    caller.may_use(&name)?;
    let name = CounterName::new(name)?;
    let series = Series::new(&state.database, name.clone());
    let series = match caller.app_name() {
        Some(app) => series.by(format!("app:{app}")),
        None => series,
    };
    Ok((series, name))
}

/// A library failure of series `name`: the refusals of series with kinds
/// of their own, the rest by their class.
fn failed(name: &CounterName, error: SeriesError) -> ApiError {
    let (status, kind) = match &error {
        SeriesError::UnknownSeries(_) => (StatusCode::NOT_FOUND, "unknown-series"),
        SeriesError::NotReserved { .. } => (StatusCode::NOT_FOUND, "unknown-number"),
        SeriesError::Settled { .. } => (StatusCode::CONFLICT, "settled"),
        _ => return ApiError::library(error.class(), Some(name.to_string()), error),
    };
    ApiError::Series {
        status,
        kind,
        series: name.to_string(),
        message: error.to_string(),
    }
}

fn bad_path(rejection: PathRejection) -> ApiError {
    ApiError::BadRequest(rejection.body_text())
}

/// Reserves the next number of a series.
#[utoipa::path(
    post,
    path = "/v1/series/{name}/reservations",
    params(("name" = String, Path, description = "The series")),
    request_body = ReserveRequest,
    responses(
        (status = 201, description = "The number, reserved until its deadline", body = ReservationResponse),
        (status = 200, description = "The number an earlier call with the same client key reserved (nothing was taken)", body = ReservationResponse),
        (status = 400, description = "Bad name, time to live or client key", body = ErrorBody),
        (status = 403, description = "The token's app may not use the series", body = ErrorBody),
        (status = 404, description = "No such series", body = ErrorBody),
        (status = 409, description = "The series is corrupt or has no number left", body = ErrorBody),
        (status = 415, description = "A body that is not `application/json`", body = ErrorBody),
        (status = 503, description = "Database unreachable, the series held by transactions, or overloaded", body = ErrorBody),
    )
)]
pub(super) async fn reserve(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
    ApiJson(request): ApiJson<ReserveRequest>,
) -> Result<Response, ApiError> {
    let Path(name) = path.map_err(bad_path)?;
    let (series, name) = series_for(&state, &caller, name)?;
    let ttl = Duration::from_secs(request.ttl_s.unwrap_or(DEFAULT_TTL_S));
    let reservation =
        to_the_end(async move { series.reserve(ttl, request.client_key.as_deref()).await })
            .await
            .map_err(|error| failed(&name, error))?;
    let status = if reservation.reused {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let deadline = reservation.deadline_rfc3339();
    Ok((
        status,
        Json(ReservationResponse {
            period: Some(reservation.period.clone()).filter(|period| !period.is_empty()),
            series: reservation.series,
            number: reservation.number,
            state: reservation.state.as_str().to_string(),
            deadline,
            reused: reservation.reused,
        }),
    )
        .into_response())
}

/// Confirms a reserved number with the business reference.
#[utoipa::path(
    post,
    path = "/v1/series/{name}/reservations/{number}/confirm",
    params(
        ("name" = String, Path, description = "The series"),
        ("number" = u64, Path, description = "The reserved number"),
    ),
    request_body = ConfirmRequest,
    responses(
        (status = 200, description = "Confirmed (`already`: it was, with this reference)", body = SettledResponse),
        (status = 400, description = "Bad name, number or reference", body = ErrorBody),
        (status = 403, description = "The token's app may not use the series", body = ErrorBody),
        (status = 404, description = "No such series, or the number was never reserved", body = ErrorBody),
        (status = 409, description = "The number is confirmed with another reference, voided, or its deadline passed (it is voided \"expired\")", body = ErrorBody),
        (status = 415, description = "A body that is not `application/json`", body = ErrorBody),
        (status = 503, description = "Database unreachable, or overloaded", body = ErrorBody),
    )
)]
pub(super) async fn confirm(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    path: Result<Path<(String, u64)>, PathRejection>,
    ApiJson(request): ApiJson<ConfirmRequest>,
) -> Result<Json<SettledResponse>, ApiError> {
    let Path((name, number)) = path.map_err(bad_path)?;
    let (series, name) = series_for(&state, &caller, name)?;
    let series = series.in_period(request.period.unwrap_or_default());
    let settled = to_the_end(async move { series.confirm(number, &request.reference).await })
        .await
        .map_err(|error| failed(&name, error))?;
    Ok(Json(settled_response(settled)))
}

/// Voids a reserved number with a reason.
#[utoipa::path(
    post,
    path = "/v1/series/{name}/reservations/{number}/void",
    params(
        ("name" = String, Path, description = "The series"),
        ("number" = u64, Path, description = "The reserved number"),
    ),
    request_body = VoidRequest,
    responses(
        (status = 200, description = "Voided (`already`: it was, for the reason given)", body = SettledResponse),
        (status = 400, description = "Bad name, number or reason", body = ErrorBody),
        (status = 403, description = "The token's app may not use the series", body = ErrorBody),
        (status = 404, description = "No such series, or the number was never reserved", body = ErrorBody),
        (status = 409, description = "The number is confirmed", body = ErrorBody),
        (status = 415, description = "A body that is not `application/json`", body = ErrorBody),
        (status = 503, description = "Database unreachable, or overloaded", body = ErrorBody),
    )
)]
pub(super) async fn void(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    path: Result<Path<(String, u64)>, PathRejection>,
    ApiJson(request): ApiJson<VoidRequest>,
) -> Result<Json<SettledResponse>, ApiError> {
    let Path((name, number)) = path.map_err(bad_path)?;
    let (series, name) = series_for(&state, &caller, name)?;
    let series = series.in_period(request.period.unwrap_or_default());
    let settled = to_the_end(async move { series.void(number, &request.reason).await })
        .await
        .map_err(|error| failed(&name, error))?;
    Ok(Json(settled_response(settled)))
}

/// Runs `work` to its end even if the client goes away meanwhile (axum
/// drops a handler whose connection closed): a reserve is never left
/// between its take and its commit by a client's disconnect, so a retry
/// with the client key finds it done or not begun.
async fn to_the_end<T: Send + 'static>(
    work: impl std::future::Future<Output = Result<T, SeriesError>> + Send + 'static,
) -> Result<T, SeriesError> {
    match tokio::spawn(work).await {
        Ok(done) => done,
        Err(panicked) => std::panic::resume_unwind(panicked.into_panic()),
    }
}

fn settled_response(settled: idmint::series::Settled) -> SettledResponse {
    SettledResponse {
        period: Some(settled.period.clone()).filter(|period| !period.is_empty()),
        series: settled.series,
        number: settled.number,
        state: settled.state.as_str().to_string(),
        reference: settled.reference,
        reason: settled.reason,
        already: settled.already,
    }
}

/// How many sweeps apart the series are counted for the metrics.
const COUNT_EVERY: u64 = 10;

/// Voids the reservations of every series past their deadline, every
/// `every`, while the server lives, and counts every series' holes and
/// reservations for the metrics every [`COUNT_EVERY`] sweeps. A failure is
/// logged when the sweep starts failing, not every second after.
pub(crate) async fn sweep(state: Weak<AppState>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    for sweeps in 0_u64.. {
        tick.tick().await;
        let Some(state) = state.upgrade() else {
            return;
        };
        if sweeps % COUNT_EVERY == 0 {
            match summaries(&state.database).await {
                Ok(summaries) => state.metrics.series(&summaries),
                Err(error) => tracing::debug!("{error}"),
            }
        }
        match void_expired(&state.database, None).await {
            Ok(voided) => {
                failing = false;
                if voided > 0 {
                    tracing::info!(voided, "voided {voided} expired reservation(s)");
                }
            }
            Err(error) if !failing => {
                failing = true;
                tracing::warn!("{error} (retried every second; logged once)");
            }
            Err(_) => {}
        }
    }
}
