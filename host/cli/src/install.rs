//! `idmint install`: deploy or upgrade what idmint needs in the database.

use std::fmt::Write;
#[cfg(feature = "test-hooks")]
use std::sync::atomic::{AtomicU32, Ordering};
#[cfg(feature = "test-hooks")]
use std::sync::Arc;

use clap::Args;
use idmint::installer::{self, Action, InstallOptions, ItemState, PlannedItem};

use super::{ConnectArgs, Outcome, Output};

/// Arguments of `idmint install`.
#[derive(Debug, Args)]
pub struct InstallCmd {
    /// Print the exact plan (create / update / unchanged per item) and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Replace functions and roles that were changed by hand or are not idmint's.
    #[arg(long)]
    pub force: bool,
    /// Also create the roles idmintApp (for apps) and idmintAdmin (for installing).
    #[arg(long)]
    pub create_roles: bool,
    /// Testing aid: abort the process right after this many writes, as a crash would.
    /// Only in builds with the `test-hooks` feature (the test suite's).
    #[cfg(feature = "test-hooks")]
    #[arg(long, hide = true, value_name = "N")]
    pub crash_after_writes: Option<u32>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

impl InstallCmd {
    pub async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        let database = self.connect.connect().await?;
        let mut options = InstallOptions::default();
        options.dry_run = self.dry_run;
        options.force = self.force;
        options.create_roles = self.create_roles;
        #[cfg(feature = "test-hooks")]
        if let Some(limit) = self.crash_after_writes {
            let writes = Arc::new(AtomicU32::new(0));
            options.after_write = Some(Arc::new(move |_what: &str| {
                if writes.fetch_add(1, Ordering::SeqCst) + 1 >= limit {
                    std::process::abort();
                }
            }));
        }
        let report = installer::install(&database, &options)
            .await
            .map_err(idmint::Error::from)?;
        // Counters that share a prefix (documents made before idmint declared
        // owners) are reported, never changed: resolving them is the DBA's
        // choice.
        let collisions = idmint::sequence::prefixes::collisions(&database)
            .await
            .map_err(idmint::Error::from)?;
        for collision in &collisions {
            output.warning(&collision.advice());
        }
        output.report(&report, || {
            let mut text = String::new();
            for item in &report.plan.items {
                let _ = writeln!(text, "{}", plan_line(item));
            }
            let database = &report.plan.database;
            let _ = match (report.dry_run, report.unchanged) {
                (_, true) => writeln!(text, "database '{database}' is current: nothing to write"),
                (true, false) => writeln!(text, "dry run: nothing was written to '{database}'"),
                (false, false) => writeln!(text, "installed into database '{database}'"),
            };
            text
        })?;
        Ok(Outcome::Success)
    }
}

/// One plan line: `create    function getNextUniqueSeq (0.1.0, sha256 1a2b3c4d5e6f)`.
pub fn plan_line(item: &PlannedItem) -> String {
    let action = match item.action {
        Action::Create => "create",
        Action::Update => "update",
        Action::Unchanged => "unchanged",
        Action::Refuse => "REFUSE",
    };
    let mut line = format!(
        "{action:9} {} {} ({}, sha256 {}) [{}]",
        item.kind.as_str(),
        item.name,
        item.version,
        &item.sha256[..12],
        state_text(&item.state)
    );
    if let Some(reason) = &item.reason {
        let _ = write!(line, ": {reason}");
    }
    line
}

/// The state in words.
pub fn state_text(state: &ItemState) -> String {
    match state {
        ItemState::Current => "current".into(),
        ItemState::Missing => "missing".into(),
        ItemState::Outdated { installed_version } => format!("older version {installed_version}"),
        ItemState::Modified { .. } => "changed by hand".into(),
        ItemState::Unmanaged { .. } => "not installed by idmint".into(),
    }
}
