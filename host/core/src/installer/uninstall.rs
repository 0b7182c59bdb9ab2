//! Removes what idmint installed, and only that.
//!
//! The manifest says what idmint installed; nothing else is considered, so a
//! function or collection that someone else put in the database is never
//! touched. A function or role changed by hand since install is kept unless
//! `force`. Data is kept: `counters` unless `drop_counters`, `policies` unless
//! `drop_policies`.

use mongodb::bson::{doc, Document};
use mongodb::Database;
use serde::Serialize;

use super::items::{desired_items, Item, ItemKind, ItemSpec, MANIFEST_COLLECTION};
use super::observe::{manifest, observe, Observed};
use super::{InstallError, SYSTEM_JS};
use crate::mongo::{self, durable_write_concern};
use crate::policy::POLICIES_COLLECTION;
use crate::sequence::COUNTERS_COLLECTION;

/// What to remove.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct UninstallOptions {
    /// Print the plan, write nothing.
    pub dry_run: bool,
    /// Also remove functions and roles changed by hand.
    pub force: bool,
    /// Also drop the `counters` collection (data).
    pub drop_counters: bool,
    /// Also drop the `policies` collection (data).
    pub drop_policies: bool,
}

/// What uninstall does to one item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UninstallAction {
    /// Removed (or, in a dry run, would be).
    Remove,
    /// Kept: data, unless asked to drop it.
    Keep,
    /// Kept: changed by hand since install; `--force` removes it.
    Refuse,
    /// Recorded but already gone; only its record is removed.
    Forget,
}

/// One line of an uninstall report.
#[derive(Debug, Clone, Serialize)]
pub struct UninstallItem {
    /// The item's kind.
    pub kind: ItemKind,
    /// Its name.
    pub name: String,
    /// What is done.
    pub action: UninstallAction,
    /// Why, for `keep` and `refuse`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The outcome of [`uninstall`].
#[derive(Debug, Clone, Serialize)]
pub struct UninstallReport {
    /// The database.
    pub database: String,
    /// Whether nothing was written.
    pub dry_run: bool,
    /// One entry per item the manifest records.
    pub items: Vec<UninstallItem>,
}

/// Removes what the manifest records (see the module docs). With any item
/// refused, nothing at all is removed.
pub async fn uninstall(
    database: &Database,
    options: &UninstallOptions,
) -> Result<UninstallReport, InstallError> {
    let recorded = manifest(database).await?;
    // Every item any build could install, so records of this build's items
    // are found; roles included.
    let known = desired_items(database.name(), true);
    let mut plan: Vec<(Item, Observed, UninstallItem)> = Vec::new();
    for (key, record) in &recorded {
        let Some(item) = known.iter().find(|item| item.key() == *key) else {
            continue;
        };
        let observed = observe(database, item).await?;
        let keep_data = match item.name.as_str() {
            COUNTERS_COLLECTION if item.kind == ItemKind::Collection => !options.drop_counters,
            POLICIES_COLLECTION if item.kind == ItemKind::Collection => !options.drop_policies,
            _ => false,
        };
        let (action, reason) = match &observed {
            Observed::Absent => (UninstallAction::Forget, None),
            _ if keep_data => (
                UninstallAction::Keep,
                Some(format!("data: kept unless --drop-{}", item.name)),
            ),
            Observed::Present { sha256, .. } if *sha256 == record.sha256 || options.force => {
                (UninstallAction::Remove, None)
            }
            Observed::Present { .. } => (
                UninstallAction::Refuse,
                Some(format!(
                    "{} {} was changed by hand since install; --force removes it",
                    item.kind.as_str(),
                    item.name
                )),
            ),
        };
        plan.push((
            item.clone(),
            observed,
            UninstallItem {
                kind: item.kind,
                name: item.name.clone(),
                action,
                reason,
            },
        ));
    }
    // Roles first, then functions, then collections.
    plan.sort_by_key(|(item, _, _)| std::cmp::Reverse(item.kind));
    let report = UninstallReport {
        database: database.name().to_string(),
        dry_run: options.dry_run,
        items: plan.iter().map(|(_, _, line)| line.clone()).collect(),
    };
    if options.dry_run {
        return Ok(report);
    }
    if let Some(refused) = report
        .items
        .iter()
        .find(|line| line.action == UninstallAction::Refuse)
    {
        return Err(InstallError::Refused {
            reasons: vec![refused.reason.clone().unwrap_or_default()],
        });
    }
    let manifest = database.collection::<Document>(MANIFEST_COLLECTION);
    for (item, observed, line) in &plan {
        if line.action == UninstallAction::Remove {
            remove(database, item, observed).await?;
        }
        if line.action != UninstallAction::Keep {
            manifest
                .delete_one(doc! { "_id": item.key() })
                .write_concern(durable_write_concern())
                .await
                .map_err(|source| {
                    InstallError::database("write the manifest", MANIFEST_COLLECTION, source)
                })?;
        }
    }
    let left = manifest.count_documents(doc! {}).await.map_err(|source| {
        InstallError::database("read the manifest", MANIFEST_COLLECTION, source)
    })?;
    if left == 0 {
        manifest.drop().await.map_err(|source| {
            InstallError::database("drop the manifest", MANIFEST_COLLECTION, source)
        })?;
    }
    Ok(report)
}

async fn remove(database: &Database, item: &Item, observed: &Observed) -> Result<(), InstallError> {
    let result = match &item.spec {
        // Conditional on the value checked above: a hand edit made since is kept.
        ItemSpec::Function { .. } => database
            .collection::<Document>(SYSTEM_JS)
            .delete_one(match observed {
                Observed::Present {
                    value: Some(value), ..
                } => doc! { "_id": &item.name, "value": value.clone() },
                _ => doc! { "_id": &item.name },
            })
            .write_concern(durable_write_concern())
            .await
            .map(|_| ()),
        ItemSpec::Role(role) => {
            match database
                .run_command(doc! { "dropRole": role.name, "writeConcern": { "w": "majority" } })
                .await
            {
                // RoleNotFound: already gone.
                Err(error) if mongo::error_code(&error) == Some(mongo::ROLE_NOT_FOUND) => Ok(()),
                other => other.map(|_| ()),
            }
        }
        ItemSpec::Collection => database.collection::<Document>(&item.name).drop().await,
        ItemSpec::Index { collection, model } => {
            let model = model.model();
            let name = model
                .options
                .as_ref()
                .and_then(|o| o.name.clone())
                .unwrap_or_default();
            match database
                .collection::<Document>(collection)
                .drop_index(name)
                .await
            {
                // Gone already, with its collection or by hand.
                Err(error)
                    if matches!(
                        mongo::error_code(&error),
                        Some(mongo::INDEX_NOT_FOUND | mongo::NAMESPACE_NOT_FOUND)
                    ) =>
                {
                    Ok(())
                }
                other => other,
            }
        }
    };
    result.map_err(|source| InstallError::database("remove an installed item", &item.name, source))
}
