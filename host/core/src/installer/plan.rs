//! Compares what this build installs with what the database holds and the
//! manifest records, item by item: the state `status` reports and the action
//! `install` takes (or, with `--dry-run`, would take).

use std::collections::HashMap;

use mongodb::Database;
use serde::Serialize;

use super::items::{desired_items, Item, ItemKind};
use super::observe::{manifest, observe, Observed, Recorded};
use super::InstallError;

/// The state of one item in the database.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ItemState {
    /// There, identical to what this build installs.
    Current,
    /// Not there.
    Missing,
    /// There as an earlier idmint installed it, untouched since; this build
    /// ships other content.
    Outdated {
        /// The version the manifest records.
        installed_version: String,
    },
    /// Changed by hand since idmint installed it: its checksum is not the one
    /// the manifest records.
    Modified {
        /// sha256 the manifest records.
        recorded_sha256: String,
        /// sha256 of what is there.
        found_sha256: String,
    },
    /// There, but not installed by idmint (no manifest record), and different
    /// from what this build installs.
    Unmanaged {
        /// sha256 of what is there.
        found_sha256: String,
    },
}

/// What install does to one item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Create it.
    Create,
    /// Replace it with this build's content.
    Update,
    /// Nothing: it is current. (The manifest record is written if missing.)
    Unchanged,
    /// Nothing: it was changed by hand or is not idmint's; `--force` replaces it.
    Refuse,
}

/// One line of a plan or status report.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedItem {
    /// The item's kind.
    pub kind: ItemKind,
    /// Its name.
    pub name: String,
    /// The version this build installs.
    pub version: &'static str,
    /// sha256 of this build's content.
    pub sha256: String,
    /// Its state in the database.
    #[serde(flatten)]
    pub state: ItemState,
    /// What install does.
    pub action: Action,
    /// Why, when the action is `refuse`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Whether the manifest record must be (re)written.
    #[serde(skip)]
    pub(crate) record: bool,
    #[serde(skip)]
    pub(crate) item: Item,
    #[serde(skip)]
    pub(crate) observed: Observed,
}

/// Every item with its state and action.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// The database.
    pub database: String,
    /// One entry per item, in install order.
    pub items: Vec<PlannedItem>,
}

impl Plan {
    /// True when every item is current (and so install has nothing to do).
    pub fn is_current(&self) -> bool {
        self.items
            .iter()
            .all(|item| item.state == ItemState::Current)
    }

    /// True when install would write nothing at all, manifest included.
    pub fn writes_nothing(&self) -> bool {
        self.items
            .iter()
            .all(|item| item.action == Action::Unchanged && !item.record)
    }

    /// The items install refuses to overwrite without `--force`.
    pub fn refused(&self) -> impl Iterator<Item = &PlannedItem> {
        self.items
            .iter()
            .filter(|item| item.action == Action::Refuse)
    }
}

/// Computes the plan for `database`. Roles are part of it with `roles`, or
/// when the manifest shows they were installed before. Writes nothing.
pub async fn plan(database: &Database, roles: bool, force: bool) -> Result<Plan, InstallError> {
    let recorded = manifest(database).await?;
    let roles = roles || recorded.keys().any(|key| key.starts_with("role:"));
    let mut items = Vec::new();
    for item in desired_items(database.name(), roles) {
        let observed = observe(database, &item).await?;
        items.push(plan_item(item, observed, force, &recorded));
    }
    Ok(Plan {
        database: database.name().to_string(),
        items,
    })
}

fn plan_item(
    item: Item,
    observed: Observed,
    force: bool,
    manifest: &HashMap<String, Recorded>,
) -> PlannedItem {
    let recorded = manifest.get(&item.key());
    let state = match (&observed, recorded) {
        (Observed::Absent, _) => ItemState::Missing,
        (Observed::Present { sha256, .. }, _) if *sha256 == item.sha256 => ItemState::Current,
        (Observed::Present { sha256, .. }, Some(record)) if *sha256 == record.sha256 => {
            ItemState::Outdated {
                installed_version: record.version.clone(),
            }
        }
        (Observed::Present { sha256, .. }, Some(record)) => ItemState::Modified {
            recorded_sha256: record.sha256.clone(),
            found_sha256: sha256.clone(),
        },
        (Observed::Present { sha256, .. }, None) => ItemState::Unmanaged {
            found_sha256: sha256.clone(),
        },
    };
    let (action, reason) = match &state {
        ItemState::Missing => (Action::Create, None),
        ItemState::Current => (Action::Unchanged, None),
        ItemState::Outdated { .. } => (Action::Update, None),
        ItemState::Modified { .. } | ItemState::Unmanaged { .. } if force => (Action::Update, None),
        ItemState::Modified { recorded_sha256, found_sha256 } => (
            Action::Refuse,
            Some(format!(
                "{} {} was changed by hand since idmint installed it (sha256 {} recorded, {} found); \
                 {}; run with --force to replace it",
                item.kind.as_str(),
                item.name,
                short(recorded_sha256),
                short(found_sha256),
                difference(&item, &observed),
            )),
        ),
        ItemState::Unmanaged { found_sha256 } => (
            Action::Refuse,
            Some(format!(
                "{} {} exists but was not installed by idmint (sha256 {} found, {} expected); {}; \
                 run with --force to replace it",
                item.kind.as_str(),
                item.name,
                short(found_sha256),
                short(&item.sha256),
                difference(&item, &observed),
            )),
        ),
    };
    // The manifest follows every write, and is repaired where it is missing or
    // stale (an install killed between an item and its record).
    let record = match action {
        Action::Create | Action::Update => true,
        Action::Unchanged => recorded.is_none_or(|record| record.sha256 != item.sha256),
        Action::Refuse => false,
    };
    PlannedItem {
        kind: item.kind,
        name: item.name.clone(),
        version: item.version,
        sha256: item.sha256.clone(),
        state,
        action,
        reason,
        record,
        item,
        observed,
    }
}

fn short(sha256: &str) -> &str {
    &sha256[..sha256.len().min(12)]
}

/// Says where a stored function differs from this build's: the first line
/// that differs, with its number.
fn difference(item: &Item, observed: &Observed) -> String {
    use super::items::ItemSpec;
    let (
        ItemSpec::Function { source },
        Observed::Present {
            value: Some(value), ..
        },
    ) = (&item.spec, observed)
    else {
        return "its content differs".to_string();
    };
    let stored = match value {
        mongodb::bson::Bson::JavaScriptCode(code) => code.clone(),
        other => return format!("its value is not code but {other}"),
    };
    let mut expected_lines = source.lines();
    let mut found_lines = stored.lines();
    for number in 1.. {
        match (expected_lines.next(), found_lines.next()) {
            (Some(expected), Some(found)) if expected == found => continue,
            (expected, found) => {
                return format!(
                    "first difference at line {number}: expected {:?}, found {:?}",
                    expected.unwrap_or("<end>").trim(),
                    found.unwrap_or("<end>").trim()
                )
            }
        }
    }
    unreachable!("the loop returns")
}
