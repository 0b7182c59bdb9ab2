//! The API's handlers. The extractors (`extract.rs`) have checked the token,
//! the counter's name and the parameters by the time a handler runs; each
//! handler then checks what only it can before a value is consumed (the
//! counter's kind, the prefix, the policy's fit, a policy slot), takes
//! values through the sequence seam and answers.
//!
//! Each handler is registered with its OpenAPI documentation in one call
//! (`utoipa_axum::routes!`, in `lib.rs`), so the document cannot drift from
//! the routes.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::api::{
    Checked, CounterResponse, IdsQuery, IdsResponse, RangesQuery, RangesResponse, ValidateRequest,
    ValidateResponse, ValuesQuery, ValuesResponse,
};
use super::error::{ApiError, ErrorBody, FailureCause};
use super::extract::{ApiJson, ApiQuery, AppName, Caller, CounterPath, RawCounterPath};
use super::minters::Taken;
use super::pool::Served;
use super::slots::run_blocking;
use super::state::AppState;
use idmint::mongo::round_trips;
use idmint::policy::{check_ids, PolicyError};
use idmint::sequence::{self, Clock, CounterKind, CounterName, Repeats, Setting, SystemClock};
use tracing::Instrument;

/// The state every handler shares.
pub(super) type Shared = Arc<AppState>;

impl AppState {
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

    /// The counter `name` if its kind is one this route serves (checked
    /// before it is opened), else the route's refusal.
    async fn counter_of_kind(
        &self,
        name: &CounterName,
        serves: impl Fn(CounterKind) -> bool,
        refusal: impl FnOnce(CounterKind) -> String,
    ) -> Result<Arc<Served>, ApiError> {
        self.pool
            .get_kind(name, serves)
            .await?
            .map_err(|kind| ApiError::wrong_route(name.as_str(), refusal(kind)))
    }
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
        (status = 200, description = "The IDs, as JSON, or one per line with `Accept: text/plain`", content(
            (IdsResponse = "application/json"),
            (String = "text/plain"),
        )),
        (status = 400, description = "Bad name, count, prefix or parameter", body = ErrorBody),
        (status = 403, description = "The token's app may not use the counter, or the prefix", body = ErrorBody),
        (status = 404, description = "No such counter", body = ErrorBody),
        (status = 409, description = "A prefix the counter does not own; the policy cannot serve the counter; the counter is exhausted", body = ErrorBody),
        (status = 500, description = "The policy failed (the cause is logged)", body = ErrorBody),
        (status = 503, description = "Database unreachable, lease not held, no policy slot, or overloaded", body = ErrorBody),
    )
)]
pub(super) async fn ids(
    State(state): State<Shared>,
    counter: CounterPath,
    ApiQuery(params): ApiQuery<IdsQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let count = state.count(params.count)?;
    // A prefix asked for is checked before anything is prepared for it; the
    // counter's default is known only from the minter, below.
    if let Some(prefix) = &params.prefix {
        counter.caller.may_use_prefix(prefix)?;
    }
    let served = state.pool.get(&counter.name).await?;
    // The prefix these IDs get, checked against the caller's rights before
    // any value is taken: the counter's default as it is now (not as it
    // was when the counter was opened).
    let Taken {
        prepared,
        stamps,
        slot,
    } = state
        .minters
        .take(
            &served,
            state.policy_for(served.sequence.kind()),
            params.prefix.as_deref(),
            &state.slots,
            count,
            |minter| counter.caller.may_use_prefix(minter.prefix()),
        )
        .await?;
    state.metrics.values(counter.name.as_str(), count);
    let packed = prepared.batcher.format(slot, stamps).await?;
    if wants_text(&headers) {
        return Ok(text(packed));
    }
    let info = prepared.minter.policy().info();
    Ok(Json(IdsResponse {
        counter: counter.name.to_string(),
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
        (status = 200, description = "The values, as JSON, or one per line with `Accept: text/plain`: `PERIOD VALUE` for a counter whose values restart each period and `TIMESTAMP_MICROS VALUE` for one whose values wrap (what makes the value unique first, as `idmint seq` prints it), the bare value for a counter whose values never repeat", content(
            (ValuesResponse = "application/json"),
            (String = "text/plain"),
        )),
        (status = 400, description = "Bad name, count or parameter", body = ErrorBody),
        (status = 403, description = "The token's app may not use the counter, or is limited to some prefixes (so may take no raw values)", body = ErrorBody),
        (status = 404, description = "No such counter", body = ErrorBody),
        (status = 503, description = "Database unreachable, lease not held, or overloaded", body = ErrorBody),
    )
)]
pub(super) async fn values(
    State(state): State<Shared>,
    RawCounterPath(counter): RawCounterPath,
    ApiQuery(params): ApiQuery<ValuesQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let count = state.count(params.count)?;
    let served = state.pool.get(&counter.name).await?;
    let issued = served
        .sequence
        .take(count, SystemClock.now_micros())
        .await?;
    state.metrics.values(counter.name.as_str(), count);
    let repeats = served.state.shape().repeats;
    if wants_text(&headers) {
        let mut lines = String::with_capacity(issued.len() * 12);
        for stamp in &issued {
            if let Some(qualifier) = repeats.qualifier(stamp) {
                lines.push_str(&qualifier);
                lines.push(' ');
            }
            lines.push_str(&stamp.sequence.to_string());
            lines.push('\n');
        }
        return Ok(text(lines));
    }
    // What makes a value unique besides itself, where its kind's values repeat.
    let timestamps = (repeats == Repeats::AfterWrap)
        .then(|| issued.iter().map(|stamp| stamp.timestamp_micros).collect());
    let periods = (repeats == Repeats::EachPeriod).then(|| {
        issued
            .iter()
            .filter_map(|stamp| stamp.period.map(|period| period.to_string()))
            .collect()
    });
    Ok(Json(ValuesResponse {
        counter: counter.name.to_string(),
        kind: served.sequence.kind().to_string(),
        values: issued.iter().map(|stamp| stamp.sequence).collect(),
        timestamps_micros: timestamps,
        periods,
    })
    .into_response())
}

/// Runs of consecutive values of a counter whose kind hands out runs, for
/// a client that hands them out in-process (Tinyid's client-side
/// segments): any `count` up to `--max-range` costs a few numbers.
#[utoipa::path(
    get,
    path = "/v1/counters/{name}/ranges",
    params(("name" = String, Path, description = "A counter whose kind hands out runs"), RangesQuery),
    responses(
        (status = 200, description = "The runs, as JSON, or `FIRST LAST` per line with `Accept: text/plain`", content(
            (RangesResponse = "application/json"),
            (String = "text/plain"),
        )),
        (status = 400, description = "Bad name, count or parameter", body = ErrorBody),
        (status = 403, description = "The token's app may not use the counter, or is limited to some prefixes (so may take no raw values)", body = ErrorBody),
        (status = 404, description = "No such counter", body = ErrorBody),
        (status = 409, description = "A counter of another kind: its values are not runs (nothing was opened)", body = ErrorBody),
        (status = 503, description = "Database unreachable, or overloaded (what was taken is given back where it can be)", body = ErrorBody),
    )
)]
pub(super) async fn ranges(
    State(state): State<Shared>,
    RawCounterPath(counter): RawCounterPath,
    ApiQuery(params): ApiQuery<RangesQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    if params.count == 0 || params.count > state.limits.max_range {
        return Err(ApiError::BadRequest(format!(
            "count must be 1 to {}, not {}",
            state.limits.max_range, params.count
        )));
    }
    let name = &counter.name;
    let served = state
        .counter_of_kind(name, CounterKind::hands_out_runs, |kind| {
            format!(
                "counter '{name}' is {} {kind} counter; ranges are served for {} counters only",
                article(kind),
                CounterKind::names_where(CounterKind::hands_out_runs)
            )
        })
        .await?;
    // Taken in a task of its own: a request abandoned meanwhile (its time
    // limit, a client gone) cannot drop runs already taken; they are then
    // given back where that is still possible.
    let (answer, answered) = tokio::sync::oneshot::channel();
    let taker = served.clone();
    let count = params.count;
    tokio::spawn(async move {
        let taken = taker.sequence.take_ranges(count).await;
        if let Err(Ok(runs)) = answer.send(taken) {
            match taker.sequence.give_back(&runs).await {
                Ok(given) => tracing::info!(
                    counter = %taker.state.name,
                    given,
                    "a ranges request was abandoned after taking its values; gave back what could be"
                ),
                Err(error) => tracing::warn!(
                    counter = %taker.state.name,
                    %error,
                    "a ranges request was abandoned; its values could not be given back (a gap)"
                ),
            }
        }
    });
    let runs = answered
        .await
        .map_err(|closed| ApiError::library(idmint::ErrorClass::Unavailable, None, closed))??;
    state.metrics.values(name.as_str(), params.count as usize);
    if wants_text(&headers) {
        let lines: String = runs
            .iter()
            .map(|run| format!("{} {}\n", run.start, run.end - 1))
            .collect();
        return Ok(text(lines));
    }
    Ok(Json(RangesResponse {
        counter: name.to_string(),
        kind: served.sequence.kind().to_string(),
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
        (status = 400, description = "Bad name", body = ErrorBody),
        (status = 403, description = "The token's app may not use the counter", body = ErrorBody),
        (status = 404, description = "No such counter", body = ErrorBody),
        (status = 503, description = "Database unreachable, or overloaded", body = ErrorBody),
    )
)]
pub(super) async fn counter(
    State(state): State<Shared>,
    counter: CounterPath,
) -> Result<Json<CounterResponse>, ApiError> {
    let current = sequence::state(&state.database, &counter.name).await?;
    let served = state
        .pool
        .peek(&counter.name)
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
        (status = 400, description = "Malformed body, too many IDs, or a bad counter name", body = ErrorBody),
        (status = 403, description = "The token's app may not use the counter named", body = ErrorBody),
        (status = 404, description = "No such counter", body = ErrorBody),
        (status = 409, description = "The counter named has no layout to read IDs with", body = ErrorBody),
        (status = 415, description = "A body that is not `application/json`", body = ErrorBody),
        (status = 500, description = "The policy failed (the cause is logged)", body = ErrorBody),
        (status = 503, description = "No policy slot, or overloaded", body = ErrorBody),
    )
)]
pub(super) async fn validate(
    State(state): State<Shared>,
    caller: Caller,
    ApiJson(request): ApiJson<ValidateRequest>,
) -> Result<Json<ValidateResponse>, ApiError> {
    if let Some(counter) = &request.counter {
        caller.may_use(counter)?;
    }
    if request.ids.is_empty() || request.ids.len() > state.limits.max_count {
        return Err(ApiError::BadRequest(format!(
            "ids must hold 1 to {} IDs, not {}",
            state.limits.max_count,
            request.ids.len()
        )));
    }
    // The layout IDs are read with, and the kind of the counter that has it.
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
                ApiError::wrong_route(
                    counter,
                    format!(
                        "counter '{counter}' is {}, which has no layout: IDs are read with the \
                         layout of {} counters only",
                        current.kind(),
                        CounterKind::names_where(|kind| kind.settings().contains(&Setting::Layout))
                    ),
                )
            })?;
            Some((layout, current.kind()))
        }
    };
    // A counter's IDs are read by the policy that writes them.
    let policy = match layout {
        Some((_, kind)) => state.policy_for(kind),
        None => state.follower.current(),
    };
    let layout = layout.map(|(layout, _)| layout);
    let ValidateRequest { ids, prefix, .. } = request;
    let slot = state.slots.acquire().await?;
    let (ids, verdicts) = run_blocking(slot, move || {
        let verdicts = check_ids(&ids, prefix.as_deref(), layout.as_ref(), || {
            Ok::<_, PolicyError>(policy)
        });
        (ids, verdicts)
    })
    .await?;
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
            Err(reason) => Checked {
                id,
                valid: false,
                parts: None,
                error: Some(reason),
            },
        })
        .collect();
    Ok(Json(ValidateResponse {
        valid: results.iter().all(|checked| checked.valid),
        results,
    }))
}

/// "a" or "an", before a kind's name.
fn article(kind: CounterKind) -> &'static str {
    if kind.as_str().starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

/// One value of a counter of `kind`, as bare decimal text (Leaf's answer).
/// The kind is checked before the counter is opened.
async fn leaf(
    state: Shared,
    RawCounterPath(counter): RawCounterPath,
    kind: CounterKind,
) -> Result<Response, ApiError> {
    let name = &counter.name;
    let served = state
        .counter_of_kind(
            name,
            |found| found == kind,
            |found| {
                format!(
                    "counter '{name}' is {} {found} counter; this route serves {kind} counters",
                    article(found)
                )
            },
        )
        .await?;
    let issued = served.sequence.take(1, SystemClock.now_micros()).await?;
    state.metrics.values(name.as_str(), 1);
    Ok(text(issued[0].sequence.to_string()))
}

/// Leaf's segment route: one value of segment counter `key`, bare decimal.
#[utoipa::path(
    get,
    path = "/api/segment/get/{key}",
    params(("key" = String, Path, description = "The segment counter")),
    responses(
        (status = 200, description = "One value, bare decimal", body = String, content_type = "text/plain"),
        (status = 400, description = "Bad name", body = ErrorBody),
        (status = 403, description = "The token's app may not use the counter, or is limited to some prefixes (so may take no raw values)", body = ErrorBody),
        (status = 404, description = "No such counter", body = ErrorBody),
        (status = 409, description = "A counter of another kind (nothing was opened), or one exhausted", body = ErrorBody),
        (status = 503, description = "Database unreachable, lease not held, or overloaded", body = ErrorBody),
    )
)]
pub(super) async fn leaf_segment(
    State(state): State<Shared>,
    counter: RawCounterPath,
) -> Result<Response, ApiError> {
    leaf(state, counter, CounterKind::Segment).await
}

/// Leaf's snowflake route: one ID of snowflake counter `key`, bare decimal.
#[utoipa::path(
    get,
    path = "/api/snowflake/get/{key}",
    params(("key" = String, Path, description = "The snowflake counter")),
    responses(
        (status = 200, description = "One ID, bare decimal", body = String, content_type = "text/plain"),
        (status = 400, description = "Bad name", body = ErrorBody),
        (status = 403, description = "The token's app may not use the counter, or is limited to some prefixes (so may take no raw values)", body = ErrorBody),
        (status = 404, description = "No such counter", body = ErrorBody),
        (status = 409, description = "A counter of another kind (nothing was opened), or one exhausted", body = ErrorBody),
        (status = 503, description = "Database unreachable, lease not held, or overloaded", body = ErrorBody),
    )
)]
pub(super) async fn leaf_snowflake(
    State(state): State<Shared>,
    counter: RawCounterPath,
) -> Result<Response, ApiError> {
    leaf(state, counter, CounterKind::Snowflake).await
}

/// The process is alive (served on both listeners, outside every limit).
#[utoipa::path(get, path = "/healthz", responses((status = 200, description = "Alive", body = String)))]
pub(super) async fn healthz() -> &'static str {
    "ok\n"
}

/// Any other path.
pub(super) async fn no_route(request: Request) -> ApiError {
    ApiError::NoRoute(format!("{} {}", request.method(), request.uri().path()))
}

/// A method a known path does not serve (axum sets the `Allow` header).
pub(super) async fn method_not_allowed(request: Request) -> ApiError {
    ApiError::MethodNotAllowed(format!("{} {}", request.method(), request.uri().path()))
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
/// never logged: only the method, route, status, time and the app; a 5xx
/// is logged with its full cause, which its answer does not carry.
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
    // The request's span: what it served (recorded by the pool when it
    // finds the counter) and the round trips it made, on every line it logs.
    // At debug: a span made for every request at info cost the server a
    // third of its one-value requests (docs/BENCHMARKS.md); disabled, it
    // costs nothing, and a failure's warning names its route and counter.
    let span = tracing::debug_span!(
        "request",
        %method,
        route = route.as_str(),
        counter = tracing::field::Empty,
        kind = tracing::field::Empty,
        round_trips = tracing::field::Empty,
        servers = tracing::field::Empty,
    );
    let (response, trips) = round_trips::counting(next.run(request))
        .instrument(span.clone())
        .await;
    if !span.is_disabled() {
        span.record("round_trips", trips.count);
        if !trips.servers.is_empty() {
            span.record("servers", trips.servers_text());
        }
    }
    let _entered = span.enter();
    let seconds = started.elapsed().as_secs_f64();
    let status = response.status().as_u16();
    state.metrics.request(&route, status, seconds);
    let app = response
        .extensions()
        .get::<AppName>()
        .map(|app| app.0.clone());
    if let Some(failure) = response.extensions().get::<FailureCause>() {
        tracing::warn!(
            %method,
            route,
            status,
            seconds,
            app,
            counter = failure.counter,
            cause = %failure.cause,
            "request failed"
        );
    } else if status >= 500 {
        tracing::warn!(%method, route, status, seconds, app, "request failed");
    } else {
        tracing::debug!(%method, route, status, seconds, app, "request");
    }
    response
}
