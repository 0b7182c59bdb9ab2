//! [`AppState`]: what the handlers of both listeners share.

use std::collections::HashMap;
use std::sync::Weak;
use std::time::{Duration, Instant};

use mongodb::Database;

use idmint::policy::{Policy, PolicyFollower};
use idmint::sequence::CounterKind;

use super::admin_access::AdminAccess;
use super::limits::Limits;
use super::metrics::Metrics;
use super::minters::Minters;
use super::monitor;
use super::pool::CounterPool;
use super::slots::PolicySlots;
use super::tokens::Tokens;

/// What the handlers share.
pub struct AppState {
    pub(crate) database: Database,
    pub(crate) pool: CounterPool,
    pub(crate) minters: Minters,
    pub(crate) follower: PolicyFollower,
    pub(crate) kind_policies: HashMap<CounterKind, Policy>,
    pub(crate) tokens: Option<Tokens>,
    /// The locks taken through the service: one change stream per lock
    /// name for its waiters, who wait as one member of its line.
    pub(crate) locks: idmint::lock::Locks,
    /// Who may use the admin listener.
    pub(crate) admin: AdminAccess,
    pub(crate) metrics: Metrics,
    pub(crate) limits: Limits,
    pub(crate) slots: PolicySlots,
    pub(crate) readiness: ReadinessCache,
    /// Values and requests per second, for the monitor page.
    pub(crate) rates: std::sync::Mutex<monitor::RateHistory>,
    /// The monitor page's read of the database, shared by its viewers.
    pub(crate) monitor_reads: monitor::SharedRead<monitor::DatabaseRead>,
    /// The API listener's OpenAPI document, as JSON.
    pub(crate) openapi: String,
    /// The admin listener's OpenAPI document, as JSON.
    pub(crate) admin_openapi: String,
}

impl AppState {
    /// Reads the tokens collection every `every` while the server lives
    /// (`Tokens::reload`); returns at once for tokens from a file.
    pub(crate) async fn reload_tokens(state: Weak<AppState>, every: Duration) {
        loop {
            tokio::time::sleep(every).await;
            let Some(state) = state.upgrade() else {
                return;
            };
            let Some(tokens) = &state.tokens else {
                return;
            };
            if !tokens.reload(&state.database).await {
                return;
            }
        }
    }

    /// The policy that formats counters of `kind`: its own, if the server
    /// was given one for the kind, else the followed one in service now.
    pub(crate) fn policy_for(&self, kind: CounterKind) -> Policy {
        self.kind_policies
            .get(&kind)
            .cloned()
            .unwrap_or_else(|| self.follower.current())
    }

    /// Every policy in service, with the counters it formats: `any` for
    /// the followed one, a kind for the others.
    pub(crate) fn policies(&self) -> Vec<(String, Policy)> {
        let mut policies = vec![("any".to_string(), self.follower.current())];
        policies.extend(
            self.kind_policies
                .iter()
                .map(|(kind, policy)| (kind.to_string(), policy.clone())),
        );
        policies
    }
}

/// The last answer of the database to a readiness ping, reused for
/// `Limits::readiness_interval`.
#[derive(Default)]
pub(crate) struct ReadinessCache {
    pub(crate) last: tokio::sync::Mutex<Option<(Instant, (bool, String))>>,
}
