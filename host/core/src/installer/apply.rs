//! Carries out a plan.
//!
//! **Conditional writes, not a lock.** Each item is one document (a system.js
//! function, a role, a collection) and each write is conditional on what the
//! plan observed: a function is created with an insert that fails on a
//! duplicate `_id`, and replaced only where its stored value is still the one
//! the plan read. When two installs race, the loser's write matches nothing,
//! it reads the item again and accepts it if it is now what it wanted to
//! write. So several installs at once converge on one correct state, no item
//! is ever half-written (each write is atomic), and there is no lock that a
//! killed installer could leave behind (the failure of migrate-mongo's lock).
//! The manifest record of an item is written after the item itself; an install
//! killed between the two leaves a current item without a record, which the
//! next run recognises as current and records.

use std::sync::Arc;

use mongodb::bson::{doc, Bson, Document};
use mongodb::Database;

use super::items::{manifest_record, ItemSpec, MANIFEST_COLLECTION};
use super::observe::{observe, Observed};
use super::plan::{Action, Plan, PlannedItem};
use super::{InstallError, SYSTEM_JS};
use crate::mongo::{self, durable_write_concern};

/// Called after every write with a description of it (for progress output,
/// and for tests that kill an install half way).
pub type WriteHook = Arc<dyn Fn(&str) + Send + Sync>;

/// Writes what `plan` says. The plan must have no refused item.
pub(crate) async fn apply(
    database: &Database,
    plan: &Plan,
    hook: Option<&WriteHook>,
) -> Result<(), InstallError> {
    for planned in &plan.items {
        if matches!(planned.action, Action::Create | Action::Update) {
            write_item(database, planned).await?;
            notify(
                hook,
                &format!("{} {}", planned.item.kind.as_str(), planned.name),
            );
        }
        if planned.record {
            write_record(database, planned).await?;
            notify(hook, &format!("manifest {}", planned.item.key()));
        }
    }
    Ok(())
}

fn notify(hook: Option<&WriteHook>, what: &str) {
    if let Some(hook) = hook {
        hook(what);
    }
}

async fn write_item(database: &Database, planned: &PlannedItem) -> Result<(), InstallError> {
    let item = &planned.item;
    let outcome = match (&item.spec, planned.action) {
        (ItemSpec::Collection, _) => {
            match database
                .create_collection(&item.name)
                .write_concern(durable_write_concern())
                .await
            {
                // NamespaceExists: a concurrent install created it.
                Err(error) if mongo::error_code(&error) == Some(mongo::NAMESPACE_EXISTS) => {
                    Ok(true)
                }
                other => other.map(|()| true),
            }
        }
        (ItemSpec::Function { source }, Action::Create) => database
            .collection::<Document>(SYSTEM_JS)
            .insert_one(
                doc! { "_id": &item.name, "value": Bson::JavaScriptCode(source.to_string()) },
            )
            .write_concern(durable_write_concern())
            .await
            .map(|_| true)
            .or_else(|error| {
                if mongo::is_duplicate_key(&error) {
                    Ok(false)
                } else {
                    Err(error)
                }
            }),
        (ItemSpec::Function { source }, _) => {
            let Observed::Present {
                value: Some(seen), ..
            } = &planned.observed
            else {
                return Err(InstallError::Conflict {
                    item: item.key(),
                    detail: "it vanished".into(),
                });
            };
            database
                .collection::<Document>(SYSTEM_JS)
                .replace_one(
                    doc! { "_id": &item.name, "value": seen.clone() },
                    doc! { "_id": &item.name, "value": Bson::JavaScriptCode(source.to_string()) },
                )
                .write_concern(durable_write_concern())
                .await
                .map(|result| result.matched_count == 1)
        }
        (ItemSpec::Index { collection, model }, action) => {
            let model = model.model();
            let collection = database.collection::<Document>(collection);
            if action != Action::Create {
                // Replacing one changed by hand (--force): the new one under
                // the same name.
                let name = model.options.as_ref().and_then(|o| o.name.clone());
                if let Some(name) = name {
                    if let Err(error) = collection.drop_index(name).await {
                        if mongo::error_code(&error) != Some(mongo::INDEX_NOT_FOUND) {
                            return Err(InstallError::database(
                                "replace an index",
                                &item.name,
                                error,
                            ));
                        }
                    }
                }
            }
            match collection.create_index(model.clone()).await {
                // Counters that already share a prefix: the index cannot be
                // built until they are told apart, and nothing is changed.
                Err(error) if mongo::is_duplicate_key(&error) => {
                    let collisions = crate::sequence::prefixes::collisions(database)
                        .await
                        .unwrap_or_default();
                    let mut reasons: Vec<String> = collisions
                        .iter()
                        .filter(|collision| collision.declared_by.len() > 1)
                        .map(|collision| collision.advice())
                        .collect();
                    if reasons.is_empty() {
                        reasons.push(format!(
                            "{}: two counters declare one prefix: {}",
                            item.key(),
                            mongo::describe_error(&error)
                        ));
                    }
                    return Err(InstallError::Refused { reasons });
                }
                other => other.map(|_| true),
            }
        }
        (ItemSpec::Role(role), action) => {
            let verb = if action == Action::Create {
                "createRole"
            } else {
                "updateRole"
            };
            let command = doc! {
                verb: role.name, "privileges": role.privileges.clone(), "roles": [],
                "writeConcern": { "w": "majority", "j": true },
            };
            match database.run_command(command).await {
                // A concurrent install created it first (DuplicateKey / RoleAlreadyExists).
                Err(error)
                    if matches!(
                        mongo::error_code(&error),
                        Some(mongo::DUPLICATE_KEY | mongo::ROLE_EXISTS)
                    ) =>
                {
                    Ok(false)
                }
                other => other.map(|_| true),
            }
        }
    };
    let wrote =
        outcome.map_err(|source| InstallError::database(write_action(item), &item.name, source))?;
    if !wrote {
        // The conditional write matched nothing: someone else wrote first. Fine
        // if what is there now is what this install wanted.
        match observe(database, item).await? {
            Observed::Present { sha256, .. } if sha256 == item.sha256 => {}
            _ => {
                return Err(InstallError::Conflict {
                    item: item.key(),
                    detail: "it was changed by someone else while installing; run install again"
                        .into(),
                })
            }
        }
    }
    Ok(())
}

fn write_action(item: &super::Item) -> &'static str {
    match item.spec {
        ItemSpec::Collection => "create a collection",
        ItemSpec::Function { .. } => "write system.js",
        ItemSpec::Role(_) => "create or update a role",
        ItemSpec::Index { .. } => "create an index",
    }
}

async fn write_record(database: &Database, planned: &PlannedItem) -> Result<(), InstallError> {
    let manifest = database.collection::<Document>(MANIFEST_COLLECTION);
    let record = manifest_record(&planned.item);
    // Concurrent upserts of one _id can fail once with a duplicate key: both
    // write the same record, so a second attempt settles it.
    for attempt in 0..2 {
        match manifest
            .replace_one(doc! { "_id": planned.item.key() }, &record)
            .upsert(true)
            .write_concern(durable_write_concern())
            .await
        {
            Ok(_) => return Ok(()),
            Err(error) if attempt == 0 && mongo::is_duplicate_key(&error) => continue,
            Err(source) => {
                return Err(InstallError::database(
                    "write the manifest",
                    MANIFEST_COLLECTION,
                    source,
                ))
            }
        }
    }
    Ok(())
}
