//! idmint-serve: the idmint library as an HTTP service that apps in any
//! language take IDs from (`idmint serve`).
//!
//! A [`Server`] serves every counter kind through the sequence seam, on an
//! API listener:
//!
//! - `GET /v1/counters/{name}/ids?count=N[&prefix=P]`: formatted IDs through
//!   the policy in service (JSON, or one per line with `Accept: text/plain`);
//! - `GET /v1/counters/{name}/values?count=N`: raw values;
//! - `GET /v1/counters/{name}/ranges?count=N`: runs of consecutive values
//!   of an auto-increment or segment counter, for clients that hand them
//!   out in-process (Tinyid's client-side segments; `clients/java/`);
//! - `GET /v1/counters/{name}`: the counter now, and what the server holds;
//! - `POST /v1/validate`: IDs in, parts or reasons out;
//! - `POST /v1/series/{name}/reservations`, `.../reservations/{number}/confirm`
//!   and `.../void`: numbers of a gap-free series reserved, then confirmed
//!   or voided (`series.rs`, which also voids expired reservations);
//! - `GET /v1/locks/{name}`: who holds a lock, who leads an election
//!   (`locks.rs`);
//! - `POST /v1/locks/{name}/acquire`, `.../renew`, `.../release`: a lock
//!   held by an HTTP client, in any of its shapes (`lock_leases.rs`);
//! - `GET /api/segment/get/{key}`, `GET /api/snowflake/get/{key}`: Meituan
//!   Leaf's routes, answering a bare decimal, so that Leaf's clients switch
//!   without a change;
//! - `/healthz`;
//!
//! and the operator's routes (`admin.rs`) on an admin listener of their own:
//! `/readyz`, `/metrics` (Prometheus), `/monitor`, `/openapi.json` (the API
//! listener's OpenAPI document), `/openapi-admin.json` (the admin
//! listener's), `/healthz`. Each route is registered with its OpenAPI
//! documentation in one call (utoipa-axum), so the two cannot drift; what
//! the server's configuration adds to the documents is `openapi.rs`'s.
//!
//! Counters are opened on their first request and kept ([`CounterPool`];
//! those that hold nothing of their own up to `Limits::max_open_counters`):
//! a segment counter is served from the process's double buffer and a
//! snowflake counter from its generator under a leased worker id, with no
//! database round trip per request; a cyclic or auto-increment request
//! reserves its whole `count` in one round trip. Policies are followed
//! live through one [`PolicyFollower`] (a file, or the policies collection),
//! or given per counter kind ([`ServeOptions::kind_policies`]), and checked
//! per counter before the first value is taken ([`Minters`]). Policy calls
//! take a slot ([`PolicySlots`]) before any value is taken and run on the
//! blocking pool; the requests for one minter's IDs that arrive together
//! share one call ([`Batcher`]).
//!
//! Hostile clients ([`Limits`]): a connection cap, a header-read (and idle)
//! timeout, bodies read outside the request slots within a time limit, a
//! token checked from the headers before a body is read, a time limit and a
//! concurrency limit per request answering 503 rather than queueing without
//! bound. On shutdown ([`Server::run`]) the server stops accepting, lets the
//! requests in flight finish until the shutdown deadline, abandons the rest,
//! then gives back segment tails and releases worker leases, all counters
//! at once, each within a deadline.
//!
//! The modules: `limits` (what is allowed), `error` (failures and their
//! statuses), `extract` (authentication, bodies and rejections), `routes`
//! (the API), `admin` (the operator's routes), `net` (the listeners and
//! connections), `pool`, `minters`, `slots`, `access` (tokens), `metrics`,
//! `openapi` (the documents).

mod admin;
mod admin_access;
mod api;
mod background;
mod batcher;
mod error;
mod extract;
mod limits;
mod lock_leases;
mod locks;
mod metrics;
mod minters;
pub mod monitor;
mod net;
mod openapi;
mod pool;
mod routes;
mod series;
mod slots;
mod stalls;
mod state;
mod tokens;

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::error_handling::HandleErrorLayer;
use axum::extract::DefaultBodyLimit;
use axum::middleware::{from_fn_with_state, FromFnLayer};
use axum::Router;
use mongodb::Database;
use tokio::task::JoinHandle;
use tower::limit::GlobalConcurrencyLimitLayer;
use tower::load_shed::LoadShedLayer;
use tower::timeout::TimeoutLayer;
use tower::ServiceBuilder;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use admin_access::{AdminAccess, AdminAccessError};
pub use api::{
    Checked, CounterResponse, FetchReadiness, IdsQuery, IdsResponse, LeaseReadiness, RangesQuery,
    RangesResponse, Readiness, ValidateRequest, ValidateResponse, ValuesQuery, ValuesResponse,
};
pub use batcher::{BatchMeter, Batcher, MAX_GROUP};
pub use error::{class_status, ApiError, ErrorBody};
pub use extract::{ApiJson, ApiQuery, Caller, CounterPath, RawCounterPath};
pub use limits::{
    Limits, LimitsError, MAX_BODY_BYTES, MAX_CONNECTION_BUFFER, MAX_TIMEOUT, MIN_CONNECTION_BUFFER,
};
pub use metrics::Metrics;
pub use minters::{Minters, Prepared, Taken};
pub use openapi::{AdminDoc, ApiDoc};
pub use pool::{CounterPool, Served};
pub use slots::{PolicySlot, PolicySlots};
pub use state::AppState;

use idmint::policy::{ActivationOptions, FollowOptions, Policy, PolicyFollower, PolicyRuntime};
use idmint::sequence::{Clock, CounterKind, CounterName, OpenOptions, SequenceError, SystemClock};
use idmint::tokens::Access;

/// How a [`Server`] starts.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServeOptions {
    /// What the server allows (checked at start).
    pub limits: Limits,
    /// The applications allowed in; `None`: no token required (unless
    /// `access_from_db`).
    pub access: Option<Access>,
    /// Take the applications allowed in from the tokens collection, read
    /// again every `tokens_reload`.
    pub access_from_db: bool,
    /// How often the tokens collection is read again. Default
    /// [`TOKENS_RELOAD`] (a token added or removed with `idmint token` is
    /// seen within that).
    pub tokens_reload: Duration,
    /// How long tokens read from the database are trusted when they cannot
    /// be read again: past this age every request is answered 503 until a
    /// read succeeds. Default [`TOKENS_MAX_AGE`].
    pub tokens_max_age: Duration,
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
    /// Who may use the admin listener (default: anyone who reaches it, on
    /// a loopback address only).
    pub admin: AdminAccess,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            access: None,
            access_from_db: false,
            tokens_reload: TOKENS_RELOAD,
            tokens_max_age: TOKENS_MAX_AGE,
            open: OpenOptions::default(),
            follow_file: None,
            follow_store: false,
            kind_policies: Vec::new(),
            admin: AdminAccess::default(),
        }
    }
}

/// How often a server with `--tokens-from-db` reads the tokens collection.
pub const TOKENS_RELOAD: Duration = Duration::from_secs(10);

/// How long a server trusts tokens it read from the database and cannot
/// read again (six missed reloads).
pub const TOKENS_MAX_AGE: Duration = Duration::from_secs(60);

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// A limit the server cannot work with.
    #[error(transparent)]
    Limits(#[from] LimitsError),
    /// The library failed (the database, the policy, the tokens).
    #[error(transparent)]
    Library(#[from] idmint::Error),
}

impl StartError {
    /// What kind of failure this is.
    pub fn class(&self) -> idmint::ErrorClass {
        match self {
            StartError::Limits(error) => error.class(),
            StartError::Library(error) => error.class(),
        }
    }
}

/// The class of `error` if it is one of the service's errors or the
/// library's ([`idmint::ErrorClass::of`]); `None` for any other error.
pub fn class_of(error: &(dyn std::error::Error + 'static)) -> Option<idmint::ErrorClass> {
    if let Some(error) = error.downcast_ref::<StartError>() {
        return Some(error.class());
    }
    if let Some(error) = error.downcast_ref::<LimitsError>() {
        return Some(error.class());
    }
    idmint::ErrorClass::of(error)
}

/// The routes of each listener, registered with their documentation.
#[derive(Clone)]
struct Routes {
    /// The API's routes, behind authentication and the request limits.
    api: Router<Arc<AppState>>,
    /// `/healthz`, on both listeners, outside every limit.
    health: Router<Arc<AppState>>,
    /// The operator's routes.
    admin: Router<Arc<AppState>>,
}

impl Routes {
    /// Every route, and the documents of each listener's (the API's, the
    /// admin's): one list.
    fn new() -> (Self, utoipa::openapi::OpenApi, utoipa::openapi::OpenApi) {
        let (api, api_doc) = OpenApiRouter::new()
            .routes(routes!(routes::ids))
            .routes(routes!(routes::values))
            .routes(routes!(routes::ranges))
            .routes(routes!(routes::counter))
            .routes(routes!(routes::validate))
            .routes(routes!(routes::leaf_segment))
            .routes(routes!(routes::leaf_snowflake))
            .routes(routes!(series::reserve))
            .routes(routes!(series::confirm))
            .routes(routes!(series::void))
            .routes(routes!(locks::lock))
            .routes(routes!(lock_leases::acquire))
            .routes(routes!(lock_leases::renew))
            .routes(routes!(lock_leases::release))
            .split_for_parts();
        let (health, health_doc) = OpenApiRouter::new()
            .routes(routes!(routes::healthz))
            .split_for_parts();
        let (admin, admin_doc) = OpenApiRouter::new()
            .routes(routes!(admin::readyz))
            .routes(routes!(admin::metrics))
            .routes(routes!(admin::openapi))
            .routes(routes!(admin::admin_document))
            .routes(routes!(admin::monitor_page))
            .routes(routes!(admin::monitor_json))
            .split_for_parts();
        let mut api_document = ApiDoc::openapi();
        api_document.merge(api_doc);
        api_document.merge(health_doc.clone());
        let mut admin_document = AdminDoc::openapi();
        admin_document.merge(admin_doc);
        admin_document.merge(health_doc);
        (Self { api, health, admin }, api_document, admin_document)
    }
}

/// An ID service over one database (see the module docs).
pub struct Server {
    state: Arc<AppState>,
    routes: Routes,
    tasks: Vec<JoinHandle<()>>,
}

impl Server {
    /// Checks the limits, chooses the first policy (the active stored one
    /// when following the database and it passes its activation check, else
    /// `local`), starts following the policy sources and returns the
    /// server, ready to [`run`](Server::run). Policy events are logged with
    /// `tracing`, in the words the library gives them, and counted in the
    /// metrics.
    pub async fn start(
        database: &Database,
        runtime: &PolicyRuntime,
        local: Policy,
        options: ServeOptions,
    ) -> Result<Self, StartError> {
        options.limits.check()?;
        // The fit of a policy to each counter is checked per counter, at its
        // first request; the activation check runs the samples.
        let checks = ActivationOptions::default().now_micros(SystemClock.now_micros());
        let follow = FollowOptions::default()
            .file(options.follow_file)
            .store(options.follow_store);
        let first = PolicyFollower::choose(database, runtime, local, checks.clone(), follow)
            .await
            .map_err(idmint::Error::from)?;
        let mut kind_policies = HashMap::new();
        for (kind, policy) in options.kind_policies {
            idmint::policy::activation::check(&policy, &checks).map_err(idmint::Error::from)?;
            kind_policies.insert(kind, policy);
        }
        let (follower, events) = first.follow().map_err(idmint::Error::from)?;
        let tokens = if options.access_from_db {
            Some(
                tokens::Tokens::from_database(database, options.tokens_max_age)
                    .await
                    .map_err(idmint::Error::from)?,
            )
        } else {
            options.access.map(tokens::Tokens::Fixed)
        };
        let limits = options.limits;
        let (routes, api_document, admin_document) = Routes::new();
        let documents = openapi::Documents::new(
            api_document,
            admin_document,
            &limits,
            tokens.is_some(),
            options.admin.requires_token(),
        );
        let metrics = Metrics::new();
        let state = Arc::new(AppState {
            database: database.clone(),
            pool: CounterPool::new(database, options.open, limits.max_open_counters),
            minters: Minters::new(
                limits.max_minters,
                limits.minter_max_age,
                metrics.batch_meter(),
            ),
            follower,
            kind_policies,
            tokens,
            locks: idmint::lock::Locks::new(database),
            admin: options.admin,
            metrics,
            slots: PolicySlots::new(limits.policy_slots, limits.policy_wait),
            readiness: state::ReadinessCache::default(),
            rates: Default::default(),
            monitor_reads: monitor::SharedRead::new(monitor::READ_REUSE),
            openapi: documents.api,
            admin_openapi: documents.admin,
            limits,
        });
        let tasks = background::spawn(
            &state,
            events,
            options.access_from_db.then_some(options.tokens_reload),
        );
        Ok(Self {
            state,
            routes,
            tasks,
        })
    }

    /// The API's routes, with their limits, authentication, metrics and
    /// logs: what the API listener serves.
    pub fn router(&self) -> Router {
        let state = self.state.clone();
        let limits = &state.limits;
        // Outermost last: authentication (from the headers), then the body
        // (read in time, before a slot is taken), then the request limits.
        let api = self
            .routes
            .api
            .clone()
            .layer(DefaultBodyLimit::max(limits.max_body_bytes))
            .layer(
                ServiceBuilder::new()
                    .layer(HandleErrorLayer::new(routes::overloaded))
                    .layer(LoadShedLayer::new())
                    .layer(GlobalConcurrencyLimitLayer::new(limits.max_concurrent))
                    .layer(TimeoutLayer::new(limits.request_timeout)),
            )
            .layer(with_state(&state, extract::read_body))
            .layer(with_state(&state, extract::authenticate));
        api.merge(self.routes.health.clone())
            .fallback(routes::no_route)
            .method_not_allowed_fallback(routes::method_not_allowed)
            .layer(with_state(&state, routes::track))
            .with_state(state)
    }

    /// The operator's routes (`/readyz`, `/metrics`, `/monitor`,
    /// `/openapi.json`, `/openapi-admin.json`, `/healthz`), with limits of
    /// their own, behind the admin token if one is given (`/healthz`
    /// outside it): what the admin listener serves.
    pub fn admin_router(&self) -> Router {
        let state = self.state.clone();
        let limits = &state.limits;
        self.routes
            .admin
            .clone()
            .layer(
                ServiceBuilder::new()
                    .layer(HandleErrorLayer::new(routes::overloaded))
                    .layer(LoadShedLayer::new())
                    .layer(GlobalConcurrencyLimitLayer::new(
                        limits.admin_max_concurrent,
                    ))
                    .layer(TimeoutLayer::new(limits.request_timeout)),
            )
            .layer(with_state(&state, admin::authenticate))
            .merge(self.routes.health.clone())
            .fallback(routes::no_route)
            .method_not_allowed_fallback(routes::method_not_allowed)
            .with_state(state)
    }

    /// The policy slots (see [`PolicySlots::semaphore`]).
    pub fn policy_slots(&self) -> &PolicySlots {
        &self.state.slots
    }

    /// The names of the counters open now, sorted.
    pub fn open_counters(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .state
            .pool
            .opened()
            .iter()
            .map(|served| served.state.name.clone())
            .collect();
        names.sort();
        names
    }

    /// Serves the API on `listener` (and no admin listener) until
    /// `shutdown` completes; see [`Server::run_with`].
    pub async fn run(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<Vec<(CounterName, SequenceError)>> {
        self.run_with(listener, None, shutdown).await
    }

    /// Serves the API on `listener` and the operator's routes on `admin`
    /// until `shutdown` completes, then stops accepting, lets the requests
    /// in flight finish for at most `Limits::shutdown_timeout` (then cuts
    /// the connections left, abandoning their requests), stops following
    /// policies and closes every counter, all at once, each within
    /// `Limits::close_timeout` (segment tails given back, worker leases
    /// released). Returns the counters that could not be closed.
    pub async fn run_with(
        self,
        listener: tokio::net::TcpListener,
        admin: Option<tokio::net::TcpListener>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<Vec<(CounterName, SequenceError)>> {
        // Refused before anything is served: the admin address first.
        if let Some(admin) = &admin {
            let address = admin.local_addr()?;
            self.state.admin.check_address(address).map_err(|error| {
                std::io::Error::new(std::io::ErrorKind::PermissionDenied, error)
            })?;
        }
        let limits = self.state.limits.clone();
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let api = tokio::spawn(net::accept_loop(
            listener,
            self.router(),
            net::ConnectionOptions {
                name: "api",
                max_connections: limits.max_connections,
                header_timeout: limits.header_timeout,
                write_timeout: limits.write_timeout,
                connection_buffer: limits.connection_buffer,
                shutdown_timeout: limits.shutdown_timeout,
                state: Some(self.state.clone()),
            },
            stopped.clone(),
        ));
        if let Some(admin) = &admin {
            let address = admin.local_addr()?;
            if self.state.admin.open_to_other_hosts(address) {
                tracing::warn!(
                    %address,
                    "THE ADMIN LISTENER REQUIRES NO TOKEN and other hosts can reach it: anyone \
                     there sees every counter, worker hosts and pids, and lock holders; give it \
                     a token or bind it to a loopback address"
                );
            }
        }
        let admin = admin.map(|listener| {
            tokio::spawn(net::accept_loop(
                listener,
                self.admin_router(),
                net::ConnectionOptions {
                    name: "admin",
                    max_connections: ADMIN_MAX_CONNECTIONS,
                    header_timeout: limits.header_timeout,
                    write_timeout: limits.write_timeout,
                    connection_buffer: limits.connection_buffer,
                    shutdown_timeout: limits.shutdown_timeout,
                    state: None,
                },
                stopped,
            ))
        });
        shutdown.await;
        tracing::info!(
            deadline_secs = limits.shutdown_timeout.as_secs_f64(),
            "shutting down: no new connections, finishing requests in flight"
        );
        let _ = stop.send(true);
        let _ = api.await;
        if let Some(admin) = admin {
            let _ = admin.await;
        }
        self.state.follower.stop();
        for task in &self.tasks {
            task.abort();
        }
        Ok(self.state.pool.close_all(limits.close_timeout).await)
    }
}

/// The admin listener's connection cap: a handful of operators and
/// scrapers, never the API's clients.
const ADMIN_MAX_CONNECTIONS: usize = 64;

impl Drop for Server {
    fn drop(&mut self) {
        self.state.follower.stop();
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// A middleware function with the server's state.
fn with_state<F, T>(state: &Arc<AppState>, f: F) -> FromFnLayer<F, Arc<AppState>, T> {
    from_fn_with_state(state.clone(), f)
}
