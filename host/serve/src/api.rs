//! What the HTTP API takes and returns: query strings, bodies and answers,
//! with their OpenAPI schemas (`/openapi.json` is generated from these
//! types and the handlers' annotations).

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use idmint::policy::IdParts;

/// Query of `GET /v1/counters/{name}/ids`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct IdsQuery {
    /// How many IDs (1 to the server's `--max-count`, default 1).
    pub count: Option<usize>,
    /// The prefix, instead of the counter's own.
    pub prefix: Option<String>,
}

/// Query of `GET /v1/counters/{name}/values`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ValuesQuery {
    /// How many values (1 to the server's `--max-count`, default 1).
    pub count: Option<usize>,
}

/// Query of `GET /v1/counters/{name}/ranges`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RangesQuery {
    /// How many values (1 to the server's `--max-range`).
    pub count: u64,
}

/// Runs of consecutive values, for a client that hands them out itself.
#[derive(Debug, Serialize, ToSchema)]
pub struct RangesResponse {
    /// The counter.
    pub counter: String,
    /// Its kind: `autoinc` or `segment`.
    pub kind: String,
    /// `[first, last]` of each run, both included, in increasing order.
    pub ranges: Vec<[u64; 2]>,
}

/// Formatted IDs.
#[derive(Debug, Serialize, ToSchema)]
pub struct IdsResponse {
    /// The counter.
    pub counter: String,
    /// The policy that formatted them: `NAME VERSION`.
    pub policy: String,
    /// The IDs, in the order issued.
    pub ids: Vec<String>,
}

/// Raw sequence values.
#[derive(Debug, Serialize, ToSchema)]
pub struct ValuesResponse {
    /// The counter.
    pub counter: String,
    /// Its kind: `cyclic`, `periodic`, `autoinc`, `segment` or `snowflake`.
    pub kind: String,
    /// The values, in the order issued.
    pub values: Vec<u64>,
    /// Cyclic counters only: each value's server-decided timestamp
    /// (microseconds since 1970), which makes the pair unique.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamps_micros: Option<Vec<u64>>,
    /// Periodic counters only: each value's period (`2026`, `2026-11` or
    /// `2026-11-23`): values restart at 1 in each period, so only the pair
    /// is unique.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub periods: Option<Vec<String>>,
}

/// Body of `POST /v1/validate`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidateRequest {
    /// The IDs to check.
    pub ids: Vec<String>,
    /// Also require this exact prefix.
    #[serde(default)]
    pub prefix: Option<String>,
    /// A snowflake counter whose layout the IDs are read with (time,
    /// worker id and sequence).
    #[serde(default)]
    pub counter: Option<String>,
}

/// One checked ID.
#[derive(Debug, Serialize, ToSchema)]
pub struct Checked {
    /// The ID as given.
    pub id: String,
    /// Whether it is valid under the policy in service.
    pub valid: bool,
    /// Its parts, when valid.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub parts: Option<IdParts>,
    /// Why not, when invalid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Answer of `POST /v1/validate`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ValidateResponse {
    /// Whether every ID is valid.
    pub valid: bool,
    /// One entry per ID, in order.
    pub results: Vec<Checked>,
}

/// Answer of `GET /v1/counters/{name}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CounterResponse {
    /// The counter document as read now.
    #[schema(value_type = Object)]
    pub state: serde_json::Value,
    /// What this server holds of it, if it has served it: segment buffer
    /// figures, or the worker lease.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub served: Option<serde_json::Value>,
}

/// Answer of `GET /readyz`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Readiness {
    /// Whether the server can serve: database reachable, policy loaded,
    /// every worker lease held, no segment fetch stuck.
    pub ready: bool,
    /// `ok`, or why the database is not usable (across deployments: each
    /// deployment that does not answer, and why; the server is ready while
    /// one does).
    pub database: String,
    /// The policy in service: `NAME VERSION (sha256 ...)`.
    pub policy: String,
    /// Snowflake counters opened, and whether each lease is held.
    pub leases: Vec<LeaseReadiness>,
    /// Segment fetches waiting on the database for longer than the server
    /// allows before it says so (a majority that does not answer).
    pub stuck_fetches: Vec<FetchReadiness>,
}

/// A segment fetch that has waited too long, for `/readyz`.
#[derive(Debug, Serialize, ToSchema)]
pub struct FetchReadiness {
    /// The segment counter.
    pub counter: String,
    /// How long its fetch has been waiting, in milliseconds.
    pub waiting_ms: u64,
}

/// A worker lease, for `/readyz`.
#[derive(Debug, Serialize, ToSchema)]
pub struct LeaseReadiness {
    /// The snowflake counter.
    pub counter: String,
    /// The worker id.
    pub worker: u64,
    /// Whether the lease is proved valid now.
    pub holding: bool,
}
