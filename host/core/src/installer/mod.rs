//! The installer: deploys what idmint needs on the server, reports its state,
//! and removes it again. A DBA tool in the manner of migrate-mongo, Mongock or
//! Flyway:
//!
//! - every item (each function of `mongo-js/`, the collections, the roles) has
//!   a version and a sha256 derived from its content ([`items`]), and what was
//!   installed is recorded in the `idmint_manifest` collection;
//! - [`plan()`] compares the database with this build: current, missing, outdated,
//!   changed by hand, or not idmint's ([`ItemState`]); `status` reports it and
//!   `install --dry-run` prints it without writing anything;
//! - [`install`] writes only what differs, never overwrites a hand edit without
//!   `force`, and is safe to run concurrently and to re-run after a kill (the
//!   writes are conditional: see `apply.rs`);
//! - [`uninstall()`] removes only what the manifest says idmint installed.
//!
//! The stored functions are for DBAs working in mongosh (see the shell loader
//! in `mongo-js/shell/`). No supported MongoDB (4.4+) can run stored JavaScript
//! that writes, since `eval` is gone and `$where`/`$function` have no `db`, so
//! the host itself never calls them: its path is the aggregation-pipeline
//! update of [`crate::sequence::CyclicCounter`]. [`status`] says so.

mod apply;
mod error;
mod functions;
pub mod items;
mod observe;
mod plan;
pub mod roles;
mod server;
mod uninstall;

use mongodb::Database;
use serde::Serialize;

pub use apply::WriteHook;
pub use error::InstallError;
pub use functions::{server_functions, shell_loader, ServerFunction};
pub use items::{Item, ItemKind, MANIFEST_COLLECTION};
pub use plan::{plan, Action, ItemState, Plan, PlannedItem};
pub use roles::{ADMIN_ROLE, APP_ROLE};
pub use server::{JsSupport, ServerInfo, Topology};
pub use uninstall::{uninstall, UninstallAction, UninstallItem, UninstallOptions, UninstallReport};

/// The collection MongoDB reserves for stored JavaScript.
pub use crate::mongo::collections::SYSTEM_JS;

/// How the host hands out values, for reports.
pub const HOST_PATH: &str =
    "aggregation-pipeline update: one atomic findOneAndUpdate with a $cond pipeline per block of values";

/// How to install.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct InstallOptions {
    /// Compute and return the plan; write nothing at all.
    pub dry_run: bool,
    /// Replace items changed by hand or not installed by idmint.
    pub force: bool,
    /// Also create (and keep current) the `idmintApp` and `idmintAdmin` roles.
    pub create_roles: bool,
    /// Called after every write.
    pub after_write: Option<WriteHook>,
}

impl std::fmt::Debug for InstallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InstallOptions")
            .field("dry_run", &self.dry_run)
            .field("force", &self.force)
            .field("create_roles", &self.create_roles)
            .finish_non_exhaustive()
    }
}

/// The outcome of [`install`]: the plan, and whether it was carried out.
#[derive(Debug, Clone, Serialize)]
pub struct InstallReport {
    /// Whether nothing was written (`--dry-run`).
    pub dry_run: bool,
    /// True when the database was already current and nothing was (or would be) written.
    pub unchanged: bool,
    /// The plan, item by item.
    #[serde(flatten)]
    pub plan: Plan,
}

/// Installs or upgrades idmint in `database` (see the module docs). With an
/// item changed by hand and no `force`, nothing at all is written.
pub async fn install(
    database: &Database,
    options: &InstallOptions,
) -> Result<InstallReport, InstallError> {
    let plan = plan::plan(database, options.create_roles, options.force).await?;
    let unchanged = plan.writes_nothing();
    if !options.dry_run {
        let reasons: Vec<String> = plan
            .refused()
            .filter_map(|item| item.reason.clone())
            .collect();
        if !reasons.is_empty() {
            return Err(InstallError::Refused { reasons });
        }
        apply::apply(database, &plan, options.after_write.as_ref()).await?;
    }
    Ok(InstallReport {
        dry_run: options.dry_run,
        unchanged,
        plan,
    })
}

/// What `idmint status` reports.
#[derive(Debug, Clone, Serialize)]
pub struct StatusReport {
    /// The server and what it offers.
    pub server: ServerInfo,
    /// How the host hands out values.
    pub host_path: &'static str,
    /// Each item and its state.
    #[serde(flatten)]
    pub plan: Plan,
}

impl StatusReport {
    /// True when everything idmint installs is present and current.
    pub fn is_current(&self) -> bool {
        self.plan.is_current()
    }
}

/// Inspects the server and the installed items. Writes nothing.
pub async fn status(database: &Database) -> Result<StatusReport, InstallError> {
    let server = ServerInfo::detect(database).await?;
    let plan = plan::plan(database, false, false).await?;
    Ok(StatusReport {
        server,
        host_path: HOST_PATH,
        plan,
    })
}
