//! The handlers. Each one checks everything that can be checked before a
//! value is consumed (token, counter name, parameters, the policy's fit),
//! then takes values through the sequence seam and answers.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{MatchedPath, Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use mongodb::bson::doc;
use utoipa::OpenApi;

use super::api::{
    Checked, CounterResponse, IdsQuery, IdsResponse, LeaseReadiness, RangesQuery, RangesResponse,
    Readiness, ValidateRequest, ValidateResponse, ValuesQuery, ValuesResponse,
};
use super::error::{ApiError, ErrorBody};
use super::pool::Served;
use super::AppState;
use idmint::sequence::{self, Clock, CounterKind, CounterName, SystemClock};

/// The state every handler shares.
pub(super) type Shared = Arc<AppState>;

/// The OpenAPI document, generated from the handlers and their types.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "idmint",
        description = "Unique, time-correlated, formatted IDs coordinated through MongoDB."
    ),
    paths(
        ids,
        values,
        counter,
        validate,
        leaf_segment,
        leaf_snowflake,
        healthz,
        readyz,
        metrics
    ),
    components(schemas(
        IdsResponse,
        ValuesResponse,
        ValidateRequest,
        ValidateResponse,
        Checked,
        CounterResponse,
        Readiness,
        LeaseReadiness,
        ErrorBody
    ))
)]
pub struct ApiDoc;

impl AppState {
    /// Checks the token (when the server requires tokens) and that its app
    /// may use `counter` (any counter when `None`).
    fn authorize(&self, headers: &HeaderMap, counter: Option<&str>) -> Result<(), ApiError> {
        let Some(access) = &self.access else {
            return Ok(());
        };
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|token| !token.is_empty())
            .ok_or(ApiError::Unauthenticated)?;
        let access = access
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let app = access
            .app_for_token(token)
            .ok_or(ApiError::Unauthenticated)?;
        match counter {
            Some(counter) if !app.may_use(counter) => Err(ApiError::Forbidden {
                app: app.name.clone(),
                counter: counter.to_string(),
            }),
            _ => Ok(()),
        }
    }

    /// Checks that the request's app (if the server requires tokens) may
    /// format IDs with `prefix` (its token may be limited to some).
    fn authorize_prefix(&self, headers: &HeaderMap, prefix: &str) -> Result<(), ApiError> {
        let Some(access) = &self.access else {
            return Ok(());
        };
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .map(str::trim)
            .unwrap_or_default();
        let access = access
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match access.app_for_token(token) {
            Some(app) if !app.may_use_prefix(prefix) => Err(ApiError::ForbiddenPrefix {
                app: app.name.clone(),
                prefix: prefix.to_string(),
            }),
            Some(_) => Ok(()),
            None => Err(ApiError::Unauthenticated),
        }
    }

    /// The counter of a request: the token first (so that no one learns
    /// which counters exist without one), then the name, then the counter,
    /// opened on its first request.
    async fn counter(&self, headers: &HeaderMap, name: &str) -> Result<Arc<Served>, ApiError> {
        self.authorize(headers, Some(name))?;
        let name = CounterName::new(name)?;
        Ok(self.pool.get(&name).await?)
    }

    /// `count`, or 1, checked against the limit.
    fn count(&self, count: Option<usize>) -> Result<usize, ApiError> {
        let count = count.unwrap_or(1);
        if count == 0 || count > self.limits.max_count {
            return Err(ApiError::BadRequest(format!(
                "count must be 1 to {}, not {count}",
                self.limits.max_count
            )));
        }
        Ok(count)
    }
}

fn query<T>(query: Result<Query<T>, QueryRejection>) -> Result<T, ApiError> {
    query
        .map(|Query(query)| query)
        .map_err(|rejection| ApiError::BadRequest(rejection.body_text()))
}

/// Whether the client asked for `text/plain` rather than JSON.
fn wants_text(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|accept| accept.contains("text/plain") && !accept.contains("json"))
}

fn text(body: String) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        )],
        body,
    )
        .into_response()
}

/// Formatted IDs through the policy in service.
#[utoipa::path(
    get,
    path = "/v1/counters/{name}/ids",
    params(("name" = String, Path, description = "The counter"), IdsQuery),
    responses(
        (status = 200, description = "The IDs, as JSON, or one per line with `Accept: text/plain`", body = IdsResponse),
        (status = 400, description = "Bad name, count, prefix or parameter", body = ErrorBody),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 403, description = "The token's app may not use the counter", body = ErrorBody),
        (status = 404, description = "No such counter", body = ErrorBody),
        (status = 409, description = "The policy cannot serve the counter, or the counter is exhausted", body = ErrorBody),
        (status = 503, description = "Database unreachable, lease not held, or overloaded", body = ErrorBody),
    )
)]
pub(super) async fn ids(
    State(state): State<Shared>,
    Path(name): Path<String>,
    params: Result<Query<IdsQuery>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let params = query(params)?;
    let count = state.count(params.count)?;
    let served = state.counter(&headers, &name).await?;
    let prefix = params
        .prefix
        .clone()
        .unwrap_or_else(|| served.state.default_prefix().to_string());
    state.authorize_prefix(&headers, &prefix)?;
    let minter = state
        .minters
        .get(
            &served,
            state.policy_for(served.sequence.kind()),
            params.prefix.as_deref(),
        )
        .await?;
    let stamps = minter.next_stamps(count).await?;
    state.metrics.values(&name, count);
    // A policy call may take up to its deadline: never on an executor thread.
    let formatter = minter.clone();
    let packed = tokio::task::spawn_blocking(move || {
        formatter
            .policy()
            .format_batch_packed(formatter.prefix(), &stamps)
    })
    .await
    .map_err(|panic| ApiError::Overloaded(format!("the policy call was abandoned: {panic}")))??;
    if wants_text(&headers) {
        return Ok(text(packed));
    }
    let info = minter.policy().info();
    Ok(Json(IdsResponse {
        counter: name,
        policy: format!("{} {}", info.name, info.version),
        ids: packed.lines().map(str::to_string).collect(),
    })
    .into_response())
}

/// Raw sequence values.
#[utoipa::path(
    get,
    path = "/v1/counters/{name}/values",
    params(("name" = String, Path, description = "The counter"), ValuesQuery),
    responses(
        (status = 200, description = "The values", body = ValuesResponse),
        (status = 400, description = "Bad name, count or parameter", body = ErrorBody),
        (status = 404, description = "No such counter", body = ErrorBody),
        (status = 503, description = "Database unreachable, lease not held, or overloaded", body = ErrorBody),
    )
)]
pub(super) async fn values(
    State(state): State<Shared>,
    Path(name): Path<String>,
    params: Result<Query<ValuesQuery>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let params = query(params)?;
    let count = state.count(params.count)?;
    let served = state.counter(&headers, &name).await?;
    let issued = served
        .sequence
        .take(count, SystemClock.now_micros())
        .await?;
    state.metrics.values(&name, count);
    if wants_text(&headers) {
        let mut lines = String::with_capacity(issued.len() * 12);
        for stamp in &issued {
            lines.push_str(&stamp.sequence.to_string());
            lines.push('\n');
        }
        return Ok(text(lines));
    }
    let kind = served.sequence.kind();
    // The timestamps are part of the value only where the server decided them.
    let timestamps = served
        .state
        .shape()
        .server_timestamp
        .then(|| issued.iter().map(|stamp| stamp.timestamp_micros).collect());
    Ok(Json(ValuesResponse {
        counter: name,
        kind: kind.to_string(),
        values: issued.iter().map(|stamp| stamp.sequence).collect(),
        timestamps_micros: timestamps,
    })
    .into_response())
}

/// Runs of consecutive values of an auto-increment or segment counter, for
/// a client that hands them out in-process (Tinyid's client-side
/// segments): any `count` up to `--max-range` costs a few numbers.
#[utoipa::path(
    get,
    path = "/v1/counters/{name}/ranges",
    params(("name" = String, Path, description = "An autoinc or segment counter"), RangesQuery),
    responses(
        (status = 200, description = "The runs, as JSON, or `FIRST LAST` per line with `Accept: text/plain`", body = RangesResponse),
        (status = 400, description = "Bad name, count or parameter", body = ErrorBody),
        (status = 404, description = "No such counter", body = ErrorBody),
        (status = 409, description = "A cyclic or snowflake counter: its values are not runs", body = ErrorBody),
        (status = 503, description = "Database unreachable, or overloaded", body = ErrorBody),
    )
)]
pub(super) async fn ranges(
    State(state): State<Shared>,
    Path(name): Path<String>,
    params: Result<Query<RangesQuery>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let params = query(params)?;
    if params.count == 0 || params.count > state.limits.max_range {
        return Err(ApiError::BadRequest(format!(
            "count must be 1 to {}, not {}",
            state.limits.max_range, params.count
        )));
    }
    let served = state.counter(&headers, &name).await?;
    let kind = served.sequence.kind();
    if !kind.hands_out_runs() {
        return Err(ApiError::unfit(
            &name,
            format!("counter '{name}' is a {kind} counter; ranges are served for autoinc and segment counters only"),
        ));
    }
    let runs = served.sequence.take_ranges(params.count).await?;
    state.metrics.values(&name, params.count as usize);
    if wants_text(&headers) {
        let lines: String = runs
            .iter()
            .map(|run| format!("{} {}\n", run.start, run.end - 1))
            .collect();
        return Ok(text(lines));
    }
    Ok(Json(RangesResponse {
        counter: name,
        kind: kind.to_string(),
        ranges: runs.iter().map(|run| [run.start, run.end - 1]).collect(),
    })
    .into_response())
}

/// The counter as it is now, and what this server holds of it.
#[utoipa::path(
    get,
    path = "/v1/counters/{name}",
    params(("name" = String, Path, description = "The counter")),
    responses(
        (status = 200, description = "The counter", body = CounterResponse),
        (status = 404, description = "No such counter", body = ErrorBody),
    )
)]
pub(super) async fn counter(
    State(state): State<Shared>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Json<CounterResponse>, ApiError> {
    state.authorize(&headers, Some(&name))?;
    let name = CounterName::new(name)?;
    let current = sequence::state(&state.database, &name).await?;
    let served = state
        .pool
        .peek(&name)
        .map(|served| served.sequence.held())
        .filter(|held| held.buffers.is_some() || held.lease.is_some())
        .and_then(|held| serde_json::to_value(held).ok());
    Ok(Json(CounterResponse {
        state: serde_json::to_value(current).unwrap_or_default(),
        served,
    }))
}

/// Checks IDs against the policy in service.
#[utoipa::path(
    post,
    path = "/v1/validate",
    request_body = ValidateRequest,
    responses(
        (status = 200, description = "One verdict per ID", body = ValidateResponse),
        (status = 400, description = "Malformed body, or too many IDs", body = ErrorBody),
        (status = 413, description = "A body over `--max-body`", body = ErrorBody),
    )
)]
pub(super) async fn validate(
    State(state): State<Shared>,
    headers: HeaderMap,
    body: Result<Json<ValidateRequest>, JsonRejection>,
) -> Result<Json<ValidateResponse>, ApiError> {
    let Json(request) = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::TooLarge(format!(
                "the body is larger than the server's limit of {} bytes (--max-body)",
                state.limits.max_body_bytes
            ))
        } else {
            ApiError::BadRequest(rejection.body_text())
        }
    })?;
    state.authorize(&headers, request.counter.as_deref())?;
    if request.ids.is_empty() || request.ids.len() > state.limits.max_count {
        return Err(ApiError::BadRequest(format!(
            "ids must hold 1 to {} IDs, not {}",
            state.limits.max_count,
            request.ids.len()
        )));
    }
    let layout = match &request.counter {
        None => None,
        Some(counter) => {
            let name = CounterName::new(counter)?;
            // A counter this server serves is known already (its layout
            // never changes); another is read.
            let current = match state.pool.peek(&name) {
                Some(served) => served.state.clone(),
                None => sequence::state(&state.database, &name).await?,
            };
            let layout = current.snowflake_layout().copied().ok_or_else(|| {
                ApiError::unfit(
                    counter,
                    format!("counter '{counter}' is {}, not a snowflake counter: IDs are read with a snowflake counter's layout only", current.kind()),
                )
            })?;
            Some(layout)
        }
    };
    // A snowflake counter's IDs are read by the policy that writes them.
    let policy = match layout {
        Some(_) => state.policy_for(CounterKind::Snowflake),
        None => state.live.current(),
    };
    let ValidateRequest { ids, prefix, .. } = request;
    let (ids, verdicts) = tokio::task::spawn_blocking(move || {
        let verdicts = policy.validate_many(&ids, prefix.as_deref(), layout.as_ref());
        (ids, verdicts)
    })
    .await
    .map_err(|panic| ApiError::Overloaded(format!("the policy call was abandoned: {panic}")))?;
    let results: Vec<Checked> = ids
        .into_iter()
        .zip(verdicts?)
        .map(|(id, verdict)| match verdict {
            Ok(parts) => Checked {
                id,
                valid: true,
                parts: Some(parts),
                error: None,
            },
            Err(invalid) => Checked {
                id,
                valid: false,
                parts: None,
                error: Some(invalid.to_string()),
            },
        })
        .collect();
    Ok(Json(ValidateResponse {
        valid: results.iter().all(|checked| checked.valid),
        results,
    }))
}

/// One value of a counter of `kind`, as bare decimal text (Leaf's answer).
async fn leaf(
    state: Shared,
    headers: HeaderMap,
    key: String,
    kind: CounterKind,
) -> Result<Response, ApiError> {
    let served = state.counter(&headers, &key).await?;
    let found = served.sequence.kind();
    if found != kind {
        let article = if found == CounterKind::Autoinc {
            "an"
        } else {
            "a"
        };
        return Err(ApiError::unfit(
            &key,
            format!(
                "counter '{key}' is {article} {found} counter; this route serves {kind} counters"
            ),
        ));
    }
    let issued = served.sequence.take(1, SystemClock.now_micros()).await?;
    state.metrics.values(&key, 1);
    Ok(text(issued[0].sequence.to_string()))
}

/// Leaf's segment route: one value of segment counter `key`, bare decimal.
#[utoipa::path(
    get,
    path = "/api/segment/get/{key}",
    params(("key" = String, Path, description = "The segment counter")),
    responses((status = 200, description = "One value, bare decimal", body = String, content_type = "text/plain"))
)]
pub(super) async fn leaf_segment(
    State(state): State<Shared>,
    Path(key): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    leaf(state, headers, key, CounterKind::Segment).await
}

/// Leaf's snowflake route: one ID of snowflake counter `key`, bare decimal.
#[utoipa::path(
    get,
    path = "/api/snowflake/get/{key}",
    params(("key" = String, Path, description = "The snowflake counter")),
    responses((status = 200, description = "One ID, bare decimal", body = String, content_type = "text/plain"))
)]
pub(super) async fn leaf_snowflake(
    State(state): State<Shared>,
    Path(key): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    leaf(state, headers, key, CounterKind::Snowflake).await
}

/// The process is alive.
#[utoipa::path(get, path = "/healthz", responses((status = 200, description = "Alive", body = String)))]
pub(super) async fn healthz() -> &'static str {
    "ok\n"
}

/// The server can serve: the database answers, a policy is loaded, every
/// worker lease is held.
#[utoipa::path(
    get,
    path = "/readyz",
    responses(
        (status = 200, description = "Ready", body = Readiness),
        (status = 503, description = "Not ready, and why", body = Readiness),
    )
)]
pub(super) async fn readyz(State(state): State<Shared>) -> (StatusCode, Json<Readiness>) {
    let ping = tokio::time::timeout(
        state.limits.readiness_timeout,
        state.database.run_command(doc! { "ping": 1 }),
    )
    .await;
    let database = match ping {
        Ok(Ok(_)) => "ok".to_string(),
        Ok(Err(error)) => idmint::mongo::describe_error(&error),
        Err(_) => format!(
            "no answer within {} ms",
            state.limits.readiness_timeout.as_millis()
        ),
    };
    let leases: Vec<LeaseReadiness> = state
        .pool
        .opened()
        .iter()
        .filter_map(|served| {
            let lease = served.sequence.held().lease?;
            Some(LeaseReadiness {
                counter: served.state.name.clone(),
                worker: lease.worker,
                holding: lease.holding,
            })
        })
        .collect();
    let policy = state.live.current();
    let ready = database == "ok" && leases.iter().all(|lease| lease.holding);
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        Json(Readiness {
            ready,
            database,
            policy: format!(
                "{} {} (sha256 {})",
                policy.info().name,
                policy.info().version,
                policy.sha256()
            ),
            leases,
        }),
    )
}

/// Prometheus metrics.
#[utoipa::path(get, path = "/metrics", responses((status = 200, description = "OpenMetrics text", body = String)))]
pub(super) async fn metrics(State(state): State<Shared>) -> Response {
    let body = state
        .metrics
        .render(&state.pool.opened(), &state.policies());
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
        )],
        body,
    )
        .into_response()
}

/// The OpenAPI document.
pub(super) async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

/// Any other path.
pub(super) async fn no_route(request: Request) -> ApiError {
    ApiError::NoRoute(format!("{} {}", request.method(), request.uri().path()))
}

/// An error of the limit layers: over the concurrency limit, or past the
/// request's time limit.
pub(super) async fn overloaded(error: tower::BoxError) -> ApiError {
    if error.is::<tower::timeout::error::Elapsed>() {
        ApiError::Overloaded("the request ran past the server's time limit".to_string())
    } else if error.is::<tower::load_shed::error::Overloaded>() {
        ApiError::Overloaded(
            "the server is at its concurrency limit; retry with backoff".to_string(),
        )
    } else {
        ApiError::Overloaded(format!("the request could not be served: {error}"))
    }
}

/// Counts and logs every request, by route pattern and status. Tokens are
/// never logged: only the method, route, status and time.
pub(super) async fn track(
    State(state): State<Shared>,
    matched: Option<MatchedPath>,
    request: Request,
    next: Next,
) -> Response {
    let route = matched.map_or("unmatched".to_string(), |path| path.as_str().to_string());
    let method = request.method().clone();
    let started = Instant::now();
    let _in_flight = state.metrics.request_started();
    let response = next.run(request).await;
    let seconds = started.elapsed().as_secs_f64();
    let status = response.status().as_u16();
    state.metrics.request(&route, status, seconds);
    if status >= 500 {
        tracing::warn!(%method, route, status, seconds, "request failed");
    } else {
        tracing::debug!(%method, route, status, seconds, "request");
    }
    response
}
