//! idmint-serve: the idmint library as an HTTP service that apps in any
//! language take IDs from (`idmint serve`).
//!
//! A [`Server`] serves every counter kind through the sequence seam:
//!
//! - `GET /v1/counters/{name}/ids?count=N[&prefix=P]`: formatted IDs through
//!   the policy in service (JSON, or one per line with `Accept: text/plain`);
//! - `GET /v1/counters/{name}/values?count=N`: raw values;
//! - `GET /v1/counters/{name}/ranges?count=N`: runs of consecutive values
//!   of an auto-increment or segment counter, for clients that hand them
//!   out in-process (Tinyid's client-side segments; `clients/java/`);
//! - `GET /v1/counters/{name}`: the counter now, and what the server holds;
//! - `POST /v1/validate`: IDs in, parts or reasons out;
//! - `GET /api/segment/get/{key}`, `GET /api/snowflake/get/{key}`: Meituan
//!   Leaf's routes, answering a bare decimal, so that Leaf's clients switch
//!   without a change;
//! - `/healthz`, `/readyz`, `/metrics` (Prometheus), `/openapi.json`.
//!
//! Counters are opened on their first request and kept ([`CounterPool`]):
//! a segment counter is served from the process's double buffer and a
//! snowflake counter from its generator under a leased worker id, with no
//! database round trip per request; a cyclic or auto-increment request
//! reserves its whole `count` in one round trip. Policies are followed
//! live (a file, or the policies collection), or given per counter kind
//! ([`ServeOptions::kind_policies`]), and checked per counter before the
//! first value is taken ([`Minters`]). Policy calls run on the
//! blocking pool, so a slow policy never holds an executor thread.
//!
//! Limits ([`Limits`]): `count` per request, body size, a time limit per
//! request and a concurrency limit answering 503 at once rather than
//! queueing without bound. On shutdown ([`Server::run`]) the server stops
//! accepting, finishes the requests in flight, then gives back segment
//! tails and releases worker leases.

mod api;
mod error;
mod metrics;
mod minters;
pub mod monitor;
mod pool;
mod routes;

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use axum::error_handling::HandleErrorLayer;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;
use mongodb::Database;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tower::limit::GlobalConcurrencyLimitLayer;
use tower::load_shed::LoadShedLayer;
use tower::timeout::TimeoutLayer;
use tower::ServiceBuilder;

pub use api::{
    Checked, CounterResponse, IdsQuery, IdsResponse, LeaseReadiness, RangesQuery, RangesResponse,
    Readiness, ValidateRequest, ValidateResponse, ValuesQuery, ValuesResponse,
};
pub use error::{ApiError, ErrorBody};
use idmint::tokens::Access;
pub use metrics::Metrics;
pub use minters::Minters;
pub use pool::{CounterPool, Served};
pub use routes::ApiDoc;

use idmint::policy::watch::{self, SwapEvent};
use idmint::policy::{
    activation, ActivationOptions, LivePolicy, Policy, PolicyRuntime, PolicyStore,
};
use idmint::sequence::{
    Clock, CounterKind, CounterName, OpenOptions, SequenceError, SystemClock, MAX_BLOCK,
};

/// What a server allows one request.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Limits {
    /// The largest `count` (and the most IDs one validate request may
    /// check); at most [`MAX_BLOCK`], so that a cyclic or auto-increment
    /// request is one round trip. Default 1000.
    pub max_count: usize,
    /// The largest `count` of a ranges request, at most
    /// [`MAX_STEP`](idmint::sequence::MAX_STEP).
    /// Default 1,000,000 (the largest step a segment adapts to).
    pub max_range: u64,
    /// The largest request body, in bytes. Default 256 KiB.
    pub max_body_bytes: usize,
    /// How long a request may take before it is answered 503. Default 5 s.
    pub request_timeout: Duration,
    /// How many requests may be in progress at once; more are answered 503
    /// at once. Default 1024.
    pub max_concurrent: usize,
    /// How long `/readyz` waits for the database. Default 1 s.
    pub readiness_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_count: MAX_BLOCK,
            max_range: 1_000_000,
            max_body_bytes: 256 << 10,
            request_timeout: Duration::from_secs(5),
            max_concurrent: 1024,
            readiness_timeout: Duration::from_secs(1),
        }
    }
}

/// How a [`Server`] starts.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ServeOptions {
    /// Per-request limits.
    pub limits: Limits,
    /// The applications allowed in; `None`: no token required (unless
    /// `access_from_db`).
    pub access: Option<Access>,
    /// Take the applications allowed in from the tokens collection, read
    /// again every [`TOKENS_RELOAD`] (a token added or removed with `idmint
    /// token` is seen within that).
    pub access_from_db: bool,
    /// How counters are opened (segment buffers, worker leases).
    pub open: OpenOptions,
    /// A policy file to follow (swapped live when it changes).
    pub follow_file: Option<PathBuf>,
    /// Follow the active version of the policies collection.
    pub follow_store: bool,
    /// Policies for counters of one kind, instead of the followed one
    /// (e.g. `builtin:base32` for snowflake counters while cyclic ones get
    /// the default). Checked at start; not followed.
    pub kind_policies: Vec<(CounterKind, Policy)>,
}

/// What the handlers share.
pub struct AppState {
    database: Database,
    pool: CounterPool,
    minters: Minters,
    live: Arc<LivePolicy>,
    kind_policies: HashMap<CounterKind, Policy>,
    access: Option<RwLock<Access>>,
    metrics: Metrics,
    limits: Limits,
}

impl AppState {
    /// The policy that formats counters of `kind`: its own, if the server
    /// was given one for the kind, else the followed one in service now.
    fn policy_for(&self, kind: CounterKind) -> Policy {
        self.kind_policies
            .get(&kind)
            .cloned()
            .unwrap_or_else(|| self.live.current())
    }

    /// Every policy in service, with the counters it formats: `any` for
    /// the followed one, a kind for the others.
    fn policies(&self) -> Vec<(String, Policy)> {
        let mut policies = vec![("any".to_string(), self.live.current())];
        policies.extend(
            self.kind_policies
                .iter()
                .map(|(kind, policy)| (kind.to_string(), policy.clone())),
        );
        policies
    }
}

/// An ID service over one database (see the module docs).
pub struct Server {
    state: Arc<AppState>,
    followers: Vec<JoinHandle<()>>,
}

impl Server {
    /// Chooses the first policy (the active stored one when following the
    /// database and it passes its activation check, else `local`), starts
    /// the policy followers and returns the server, ready to
    /// [`run`](Server::run). Policy events are logged with `tracing` and
    /// counted in the metrics.
    pub async fn start(
        database: &Database,
        runtime: &PolicyRuntime,
        local: Policy,
        options: ServeOptions,
    ) -> Result<Self, idmint::Error> {
        let (sender, mut events) = mpsc::unbounded_channel::<SwapEvent>();
        // The fit of a policy to each counter is checked per counter, at its
        // first request; the activation check runs the samples.
        let checks = ActivationOptions::default().now_micros(SystemClock.now_micros());
        let store = PolicyStore::new(database);
        let first = if options.follow_store {
            watch::first_policy(&store, runtime, &local, &checks, &sender).await?
        } else {
            local.clone()
        };
        activation::check(&first, &checks)?;
        let mut kind_policies = HashMap::new();
        for (kind, policy) in options.kind_policies {
            activation::check(&policy, &checks)?;
            kind_policies.insert(kind, policy);
        }
        let live = Arc::new(LivePolicy::new(first, checks).with_local(local));
        let access = if options.access_from_db {
            Some(Access::from_database(database).await?)
        } else {
            options.access
        };
        let state = Arc::new(AppState {
            database: database.clone(),
            pool: CounterPool::new(database, options.open),
            minters: Minters::default(),
            live: live.clone(),
            kind_policies,
            access: access.map(RwLock::new),
            metrics: Metrics::new(),
            limits: options.limits,
        });

        let mut followers = watch::follow(
            options.follow_file,
            options.follow_store.then_some(store),
            runtime,
            &live,
            &sender,
        );
        let reporter = {
            let state = state.clone();
            tokio::spawn(async move {
                while let Some(event) = events.recv().await {
                    report(&state.metrics, &event);
                }
            })
        };
        followers.push(reporter);
        if options.access_from_db {
            followers.push(tokio::spawn(reload_tokens(Arc::downgrade(&state))));
        }
        Ok(Self { state, followers })
    }

    /// The routes, with their limits, metrics and logs.
    pub fn router(&self) -> Router {
        let state = self.state.clone();
        let limits = &state.limits;
        let api = Router::new()
            .route("/v1/counters/{name}/ids", get(routes::ids))
            .route("/v1/counters/{name}/values", get(routes::values))
            .route("/v1/counters/{name}/ranges", get(routes::ranges))
            .route("/v1/counters/{name}", get(routes::counter))
            .route("/v1/validate", post(routes::validate))
            .route("/api/segment/get/{key}", get(routes::leaf_segment))
            .route("/api/snowflake/get/{key}", get(routes::leaf_snowflake))
            .layer(DefaultBodyLimit::max(limits.max_body_bytes))
            .layer(
                ServiceBuilder::new()
                    .layer(HandleErrorLayer::new(routes::overloaded))
                    .layer(LoadShedLayer::new())
                    .layer(GlobalConcurrencyLimitLayer::new(limits.max_concurrent))
                    .layer(TimeoutLayer::new(limits.request_timeout)),
            );
        // Operations stay answerable when the API is at its limits.
        let operations = Router::new()
            .route("/healthz", get(routes::healthz))
            .route("/readyz", get(routes::readyz))
            .route("/metrics", get(routes::metrics))
            .route("/openapi.json", get(routes::openapi));
        api.merge(operations)
            .fallback(routes::no_route)
            .layer(axum::middleware::from_fn_with_state(
                state.clone(),
                routes::track,
            ))
            .with_state(state)
    }

    /// Serves on `listener` until `shutdown` completes, then stops
    /// accepting, lets the requests in flight finish, stops following
    /// policies and closes every counter (segment tails given back, worker
    /// leases released). Returns the counters that could not be closed.
    pub async fn run(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<Vec<(CounterName, SequenceError)>> {
        let router = self.router();
        let served = axum::serve(listener, router)
            .with_graceful_shutdown(shutdown)
            .await;
        for follower in &self.followers {
            follower.abort();
        }
        let failures = self.state.pool.close_all().await;
        served.map(|()| failures)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        for follower in &self.followers {
            follower.abort();
        }
    }
}

/// How often a server with `--tokens-from-db` reads the tokens collection.
pub const TOKENS_RELOAD: Duration = Duration::from_secs(10);

/// Reads the tokens collection every [`TOKENS_RELOAD`] while the server
/// lives; a read that fails (or finds the collection invalid) keeps the
/// tokens in force and is logged.
async fn reload_tokens(state: std::sync::Weak<AppState>) {
    loop {
        tokio::time::sleep(TOKENS_RELOAD).await;
        let Some(state) = state.upgrade() else {
            return;
        };
        let Some(current) = &state.access else {
            return;
        };
        match Access::from_database(&state.database).await {
            Ok(access) => {
                *current.write().unwrap_or_else(PoisonError::into_inner) = access;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot reload the tokens; keeping those in force")
            }
        }
    }
}

/// Logs a policy event and counts it.
fn report(metrics: &Metrics, event: &SwapEvent) {
    match event {
        SwapEvent::Swapped { source, report } => {
            metrics.policy_swapped();
            tracing::info!(
                source,
                policy = %report.policy.name,
                version = %report.policy.version,
                sha256 = %report.sha256,
                "policy swapped in"
            );
        }
        SwapEvent::Refused { source, error } => {
            metrics.policy_refused();
            tracing::warn!(source, %error, "policy refused; the current one keeps serving");
        }
        SwapEvent::SourceError { source, message } => {
            tracing::warn!(source, message, "cannot read a policy source");
        }
        SwapEvent::Polling { reason } => {
            tracing::info!(reason, "no change stream; polling the policies collection");
        }
        other => tracing::info!(event = ?other, "policy event"),
    }
}
