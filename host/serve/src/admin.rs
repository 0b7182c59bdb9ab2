//! The operator's routes, served on the admin listener (`--admin-listen`)
//! only, never on the API's: what they show (every counter's name and
//! volume, worker ids, database errors) is for operators, and they must stay
//! answerable when the API is at its limits. They have limits of their own
//! (`Limits::admin_max_concurrent`, the request time limit), and `/readyz`
//! asks the database at most once per `Limits::readiness_interval`, however
//! often it is asked. This is the place for operator routes: the monitor
//! page (`/monitor`, and its data as JSON at `/monitor.json`) is one.
//!
//! Given a token ([`AdminAccess`](crate::AdminAccess)), every route here
//! answers 401 without it, before taking one of the listener's request
//! slots.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use mongodb::bson::doc;

use super::api::{FetchReadiness, LeaseReadiness, Readiness};
use super::error::{ApiError, ErrorBody};
use super::extract::ApiQuery;
use super::monitor::{
    self, BufferRow, DatabaseRead, Deadline, Instance, MonitorQuery, PageRead, PolicyRow, Snapshot,
    View,
};
use super::routes::Shared;
use super::state::AppState;

impl AppState {
    /// Whether the database can be used, and `ok` or why not: asked at
    /// most once per `readiness_interval` (callers at the same time share
    /// one ping). Across deployments, each is asked: usable while one
    /// answers (a striped counter spanning them is served from it), and the
    /// text names each that does not.
    async fn database_readiness(&self) -> (bool, String) {
        let mut last = self.readiness.last.lock().await;
        if let Some((asked, answer)) = &*last {
            if asked.elapsed() < self.limits.readiness_interval {
                return answer.clone();
            }
        }
        let answer = match self.pool.deployments().filter(|d| d.list().len() > 1) {
            None => match self.ping(&self.database).await {
                Ok(()) => (true, "ok".to_string()),
                Err(why) => (false, why),
            },
            Some(deployments) => {
                let pings = deployments.list().iter().map(|deployment| async move {
                    (
                        deployment.name.clone(),
                        self.ping(&deployment.database).await,
                    )
                });
                let answers = futures_util::future::join_all(pings).await;
                let failed: Vec<String> = answers
                    .iter()
                    .filter_map(|(name, answer)| {
                        answer.as_ref().err().map(|why| format!("{name}: {why}"))
                    })
                    .collect();
                if failed.is_empty() {
                    (true, "ok".to_string())
                } else {
                    (failed.len() < answers.len(), failed.join("; "))
                }
            }
        };
        *last = Some((Instant::now(), answer.clone()));
        answer
    }

    /// Pings `database` within `readiness_timeout`: why not, if it does not
    /// answer.
    async fn ping(&self, database: &mongodb::Database) -> Result<(), String> {
        let ping = tokio::time::timeout(
            self.limits.readiness_timeout,
            database.run_command(doc! { "ping": 1 }),
        )
        .await;
        match ping {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(error)) => Err(idmint::mongo::describe_error(&error)),
            Err(_) => Err(format!(
                "no answer within {} ms",
                self.limits.readiness_timeout.as_millis()
            )),
        }
    }
}

/// Middleware: 401 unless the request has the admin token (when one is
/// required).
pub(crate) async fn authenticate(
    State(state): State<Shared>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    if !state.admin.admits(request.headers()) {
        return Err(ApiError::Unauthenticated);
    }
    Ok(next.run(request).await)
}

/// The server can serve: the database answers, a policy is loaded, every
/// worker lease is held, and no segment fetch is stuck.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "admin",
    responses(
        (status = 200, description = "Ready", body = Readiness),
        (status = 503, description = "Not ready, and why", body = Readiness),
    )
)]
pub(super) async fn readyz(State(state): State<Shared>) -> (StatusCode, Json<Readiness>) {
    let (usable, database) = state.database_readiness().await;
    let opened = state.pool.opened();
    let leases: Vec<LeaseReadiness> = opened
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
    let stuck = state.limits.stuck_fetch.as_millis() as u64;
    let fetches: Vec<FetchReadiness> = opened
        .iter()
        .filter_map(|served| {
            let waiting_ms = served.sequence.held().buffers?.fetch_waiting_ms?;
            (waiting_ms > stuck).then(|| FetchReadiness {
                counter: served.state.name.clone(),
                waiting_ms,
            })
        })
        .collect();
    let policy = state.follower.current();
    let ready = usable && leases.iter().all(|lease| lease.holding) && fetches.is_empty();
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
            stuck_fetches: fetches,
        }),
    )
}

/// Prometheus metrics.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "admin",
    responses((status = 200, description = "OpenMetrics text", content_type = "application/openmetrics-text", body = String))
)]
pub(super) async fn metrics(State(state): State<Shared>) -> Response {
    let body = state
        .metrics
        .render(&state.pool.opened(), &state.policies(), &state.slots);
    typed(
        "application/openmetrics-text; version=1.0.0; charset=utf-8",
        body,
    )
}

/// The API listener's OpenAPI document.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "admin",
    responses((status = 200, description = "The OpenAPI 3.1 document of the API listener", body = Object))
)]
pub(super) async fn openapi(State(state): State<Shared>) -> Response {
    typed("application/json", state.openapi.clone())
}

/// The admin listener's OpenAPI document.
#[utoipa::path(
    get,
    path = "/openapi-admin.json",
    tag = "admin",
    responses((status = 200, description = "The OpenAPI 3.1 document of the admin listener", body = Object))
)]
pub(super) async fn admin_document(State(state): State<Shared>) -> Response {
    typed("application/json", state.admin_openapi.clone())
}

/// `body` as a response of type `content_type`.
fn typed(content_type: &'static str, body: String) -> Response {
    (
        [(header::CONTENT_TYPE, HeaderValue::from_static(content_type))],
        body,
    )
        .into_response()
}

impl AppState {
    /// What the monitor page shows now for `view` (reads only): the
    /// database's side as read for every viewer of the last
    /// [`monitor::READ_REUSE`] (or read now, or being read), this
    /// instance's side now, and the page of counters `view` asks for, if
    /// any; all within `Limits::monitor_timeout`.
    async fn monitor_snapshot(&self, view: &View) -> Snapshot {
        let deadline = Deadline::after(self.limits.monitor_timeout);
        // A read started now has this request's deadline; one in flight
        // began earlier and ends by its own.
        let shared = deadline.wait(
            monitor::ASSEMBLY_GRACE,
            self.monitor_reads.get(|| {
                let busiest = self.metrics.activity().busiest(monitor::BUSIEST);
                DatabaseRead::read(
                    self.database.clone(),
                    self.pool.deployments().cloned(),
                    busiest,
                    deadline,
                )
            }),
        );
        let page = async {
            match view {
                View::Page(request) => Some(
                    PageRead::read(
                        &self.database,
                        self.pool.deployments(),
                        request.clone(),
                        deadline,
                    )
                    .await,
                ),
                View::First => None,
            }
        };
        let (read, page) = tokio::join!(shared, page);
        let read = read.unwrap_or_else(|| Arc::new(DatabaseRead::unfinished(deadline)));
        let buffers = self
            .pool
            .opened()
            .iter()
            .filter_map(|served| {
                let stats = served.sequence.held().buffers?;
                let segments = stats.segments;
                Some(BufferRow {
                    counter: served.state.name.clone(),
                    current: segments.map(|s| (s.current[0], s.current[1])),
                    position: segments.map(|s| s.position),
                    next: segments.and_then(|s| s.following).map(|f| (f[0], f[1])),
                    step: stats.step,
                    loading: stats.fetch_waiting_ms.is_some(),
                    fetches: stats.fetches,
                    values: stats.values,
                })
            })
            .collect();
        let instance = Instance {
            name: monitor::instance_name(),
            buffers,
            rates: self
                .rates
                .lock()
                .map(|rates| rates.points())
                .unwrap_or_default(),
            deployments: self
                .pool
                .deployments()
                .map(|deployments| deployments.health(Instant::now()))
                .unwrap_or_default(),
        };
        let policy = self.follower.current();
        let serving = PolicyRow {
            version: None,
            name: policy.info().name.clone(),
            policy_version: policy.info().version.clone(),
            sha256: policy.sha256().to_string(),
            contract: Some(policy.contract().to_string()),
            pushed_at: None,
            active: false,
        };
        Snapshot::assemble(
            &read,
            instance,
            Some(serving),
            view,
            page,
            self.metrics.activity(),
        )
    }
}

/// The view `query` asks for, or a 400 naming the parameter.
fn monitor_view(query: MonitorQuery) -> Result<View, ApiError> {
    query
        .view()
        .map_err(|invalid| ApiError::BadRequest(invalid.to_string()))
}

/// The monitor page: by default the counters to look at first (near their
/// end, malformed, with a prefix owned twice or undeclared, the busiest
/// here) and a count of the rest; with `q`, `page` or `per_page`, one page
/// of the counters by name. Then this instance's segment buffers and rates,
/// worker leases, locks held and the policy (HTML that works without
/// JavaScript, reloading itself). The database's side is read at most once
/// per few seconds, whoever asks.
#[utoipa::path(
    get,
    path = "/monitor",
    tag = "admin",
    params(MonitorQuery),
    responses(
        (status = 200, description = "The monitor page", content_type = "text/html", body = String),
        (status = 400, description = "A query parameter it cannot serve, named", body = ErrorBody),
    )
)]
pub(super) async fn monitor_page(
    State(state): State<Shared>,
    ApiQuery(query): ApiQuery<MonitorQuery>,
) -> Result<Response, ApiError> {
    let view = monitor_view(query)?;
    let snapshot = state.monitor_snapshot(&view).await;
    Ok(typed(
        "text/html; charset=utf-8",
        monitor::render(&snapshot).into_string(),
    ))
}

/// What the monitor page shows, as JSON, with the same parameters: the
/// counters shown and `paging` (which view; the counts, or the page with
/// its `total`, `pages` and the queries of the `next` and `previous`
/// pages).
#[utoipa::path(
    get,
    path = "/monitor.json",
    tag = "admin",
    params(MonitorQuery),
    responses(
        (status = 200, description = "The monitor page's data", body = Object),
        (status = 400, description = "A query parameter it cannot serve, named", body = ErrorBody),
    )
)]
pub(super) async fn monitor_json(
    State(state): State<Shared>,
    ApiQuery(query): ApiQuery<MonitorQuery>,
) -> Result<Json<Snapshot>, ApiError> {
    let view = monitor_view(query)?;
    Ok(Json(state.monitor_snapshot(&view).await))
}
