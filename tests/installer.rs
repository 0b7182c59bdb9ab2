//! The installer as a DBA tool, against the server: manifest, status, dry
//! run, idempotence, hand edits, upgrades, concurrent and killed installs,
//! uninstall, and least-privilege roles under authentication.

use std::process::Stdio;

use idmint::installer::{self, Action, InstallOptions, ItemState, MANIFEST_COLLECTION};
use mongodb::bson::{doc, Bson, Document};
use mongodb::Database;

use crate::support::{self, assert_exit, run, stdout};

fn options() -> InstallOptions {
    InstallOptions::default()
}

/// Every collection of the database with every document, as bytes: two
/// snapshots are equal only if nothing at all was written in between.
async fn snapshot(database: &Database) -> Vec<(String, Vec<u8>)> {
    let mut names = database.list_collection_names().await.unwrap();
    names.sort();
    let mut out = Vec::new();
    for name in names {
        let documents: Vec<Document> = support::documents(database, &name).await;
        let mut bytes = Vec::new();
        for document in documents {
            bytes.extend(mongodb::bson::to_vec(&document).unwrap());
        }
        out.push((name, bytes));
    }
    // Roles live in admin.system.roles, out of the database's collections:
    // ask the server for this database's own roles.
    let roles = database
        .run_command(doc! { "rolesInfo": 1, "showPrivileges": true, "showBuiltinRoles": false })
        .await
        .unwrap();
    let roles = roles.get_array("roles").cloned().unwrap_or_default();
    let mut bytes = Vec::new();
    for role in roles {
        bytes.extend(mongodb::bson::to_vec(&doc! { "role": role }).unwrap());
    }
    out.push(("(roles)".to_string(), bytes));
    out
}

async fn stored_function(database: &Database, name: &str) -> Option<Document> {
    database
        .collection::<Document>("system.js")
        .find_one(doc! { "_id": name })
        .await
        .unwrap()
}

async fn hand_edit(database: &Database, name: &str, code: &str) {
    database
        .collection::<Document>("system.js")
        .update_one(
            doc! { "_id": name },
            doc! { "$set": { "value": Bson::JavaScriptCode(code.into()) } },
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn install_records_a_manifest_and_a_second_run_is_a_no_op() {
    let database = support::database("install_twice").await;
    let before = installer::status(&database).await.unwrap();
    assert!(!before.is_current());
    assert!(
        !before.plan.items.is_empty()
            && before
                .plan
                .items
                .iter()
                .all(|item| item.state == ItemState::Missing),
        "{before:?}"
    );

    let first = installer::install(&database, &options()).await.unwrap();
    assert!(
        !first.plan.items.is_empty()
            && first
                .plan
                .items
                .iter()
                .all(|item| item.action == Action::Create),
        "{first:?}"
    );
    let function = stored_function(&database, "getNextUniqueSeq")
        .await
        .unwrap();
    assert!(
        matches!(function.get("value"), Some(Bson::JavaScriptCode(code)) if code.contains("clientMicros"))
    );
    let manifest: Vec<Document> = support::documents(&database, MANIFEST_COLLECTION).await;
    assert_eq!(manifest.len(), first.plan.items.len());
    let record = manifest
        .iter()
        .find(|r| r.get_str("_id") == Ok("function:getNextUniqueSeq"))
        .unwrap();
    let expected = first
        .plan
        .items
        .iter()
        .find(|i| i.name == "getNextUniqueSeq")
        .unwrap();
    assert_eq!(record.get_str("sha256").unwrap(), expected.sha256);
    assert_eq!(
        record.get_str("version").unwrap(),
        env!("CARGO_PKG_VERSION")
    );

    let snapshot_before = snapshot(&database).await;
    let second = installer::install(&database, &options()).await.unwrap();
    assert!(second.unchanged, "{second:?}");
    assert_eq!(
        snapshot(&database).await,
        snapshot_before,
        "a second install wrote something"
    );
    let status = installer::status(&database).await.unwrap();
    assert!(status.is_current(), "{status:?}");
    assert!(status.host_path.contains("findOneAndUpdate"));
    assert!(!status.server.server_js_can_write);
    assert!(
        matches!(
            status.server.topology,
            installer::Topology::ReplicaSet { .. }
        ),
        "{:?}",
        status.server
    );
}

#[tokio::test]
async fn a_dry_run_writes_nothing_at_all() {
    let database = support::database("dry_run").await;
    // On a database that has something (a counter, an outdated function) ...
    database
        .collection::<Document>("counters")
        .insert_one(doc! { "_id": "c", "val": 3, "maxval": 9 })
        .await
        .unwrap();
    installer::install(&database, &options()).await.unwrap();
    hand_edit(&database, "getNextUniqueSeq", "function () { return 42; }").await;
    database
        .collection::<Document>(MANIFEST_COLLECTION)
        .delete_one(doc! { "_id": "collection:counters" })
        .await
        .unwrap();
    let before = snapshot(&database).await;
    let mut dry = options();
    dry.dry_run = true;
    dry.force = true;
    dry.create_roles = true;
    let report = installer::install(&database, &dry).await.unwrap();
    assert_eq!(
        snapshot(&database).await,
        before,
        "the dry run wrote something"
    );
    let action = |name: &str| {
        report
            .plan
            .items
            .iter()
            .find(|i| i.name == name)
            .unwrap()
            .action
    };
    assert_eq!(action("getNextUniqueSeq"), Action::Update);
    assert_eq!(action("counters"), Action::Unchanged);
    assert_eq!(action(installer::APP_ROLE), Action::Create);
    // The snapshot sees roles: creating them for real changes it.
    let mut roles_only = options();
    roles_only.create_roles = true;
    roles_only.force = true;
    installer::install(&database, &roles_only).await.unwrap();
    let after = snapshot(&database).await;
    let roles = |snapshot: &[(String, Vec<u8>)]| {
        snapshot
            .iter()
            .find(|(name, _)| name == "(roles)")
            .map(|(_, bytes)| bytes.len())
    };
    assert_eq!(roles(&before), Some(0));
    assert!(roles(&after).unwrap() > 0, "the snapshot cannot see roles");

    // ... and on an empty one, where not even the database may appear.
    let empty = support::database("dry_run_empty").await;
    let report = installer::install(&empty, &dry).await.unwrap();
    assert!(
        !report.plan.items.is_empty()
            && report.plan.items.iter().all(|i| i.action == Action::Create),
        "{report:?}"
    );
    assert!(empty.list_collection_names().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_hand_edit_is_reported_and_not_overwritten_without_force() {
    const TEST: &str = "hand_edit";
    let database = support::database(TEST).await;
    installer::install(&database, &options()).await.unwrap();
    let source = installer::server_functions()
        .into_iter()
        .find(|f| f.name == "getNextUniqueStamp")
        .unwrap()
        .source;
    let edited = source.replacen("var MAX_ATTEMPTS = 100;", "var MAX_ATTEMPTS = 5;", 1);
    assert_ne!(edited, source, "the edit must change the function");
    hand_edit(&database, "getNextUniqueStamp", &edited).await;

    let status = run(support::idmint(TEST).args(["status"]));
    assert_exit(&status, 1);
    assert!(String::from_utf8_lossy(&status.stdout).contains("changed by hand"));

    let before = snapshot(&database).await;
    let refused = run(support::idmint(TEST).args(["install"]));
    assert_exit(&refused, 1);
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(message.contains("changed by hand"), "{message}");
    assert!(
        message.contains("MAX_ATTEMPTS = 5"),
        "the message shows what differs: {message}"
    );
    assert!(message.contains("--force"), "{message}");
    assert_eq!(
        snapshot(&database).await,
        before,
        "a refused install wrote something"
    );

    assert_exit(&run(support::idmint(TEST).args(["install", "--force"])), 0);
    let stored = stored_function(&database, "getNextUniqueStamp")
        .await
        .unwrap();
    assert_eq!(
        stored.get("value"),
        Some(&Bson::JavaScriptCode(source.to_string()))
    );
    assert_exit(&run(support::idmint(TEST).args(["status"])), 0);
}

#[tokio::test]
async fn a_function_that_is_not_idmints_is_not_overwritten() {
    let database = support::database("unmanaged").await;
    database
        .collection::<Document>("system.js")
        .insert_one(doc! { "_id": "getNextUniqueSeq", "value": Bson::JavaScriptCode("function () {}".into()) })
        .await
        .unwrap();
    let status = installer::status(&database).await.unwrap();
    let item = status
        .plan
        .items
        .iter()
        .find(|i| i.name == "getNextUniqueSeq")
        .unwrap();
    assert!(
        matches!(item.state, ItemState::Unmanaged { .. }),
        "{item:?}"
    );
    let error = installer::install(&database, &options()).await.unwrap_err();
    assert!(
        error.to_string().contains("not installed by idmint"),
        "{error}"
    );
    assert!(
        database
            .list_collection_names()
            .await
            .unwrap()
            .iter()
            .all(|n| n != "counters"),
        "nothing is written"
    );
}

/// An older idmint installed other content: the upgrade updates that item
/// only, and records the new version.
#[tokio::test]
async fn an_upgrade_updates_only_what_changed() {
    let database = support::database("upgrade").await;
    installer::install(&database, &options()).await.unwrap();
    let old = "function (keyName) { return 1; }";
    hand_edit(&database, "getNextUniqueSeq", old).await;
    database
        .collection::<Document>(MANIFEST_COLLECTION)
        .update_one(
            doc! { "_id": "function:getNextUniqueSeq" },
            doc! { "$set": { "version": "0.0.9", "sha256": installer::items::sha256_hex(old.as_bytes()) } },
        )
        .await
        .unwrap();
    let status = installer::status(&database).await.unwrap();
    let item = status
        .plan
        .items
        .iter()
        .find(|i| i.name == "getNextUniqueSeq")
        .unwrap();
    assert_eq!(
        item.state,
        ItemState::Outdated {
            installed_version: "0.0.9".into()
        }
    );

    let report = installer::install(&database, &options()).await.unwrap();
    for item in &report.plan.items {
        let expected = if item.name == "getNextUniqueSeq" {
            Action::Update
        } else {
            Action::Unchanged
        };
        assert_eq!(item.action, expected, "{}", item.name);
    }
    let record = database
        .collection::<Document>(MANIFEST_COLLECTION)
        .find_one(doc! { "_id": "function:getNextUniqueSeq" })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        record.get_str("version").unwrap(),
        env!("CARGO_PKG_VERSION")
    );
    assert!(installer::status(&database).await.unwrap().is_current());
}

#[tokio::test]
async fn four_concurrent_installs_end_in_one_correct_state() {
    const TEST: &str = "concurrent_installs";
    let database = support::database(TEST).await;
    let children: Vec<_> = (0..4)
        .map(|_| {
            support::idmint(TEST)
                .arg("install")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        assert_exit(&child.wait_with_output().unwrap(), 0);
    }
    let functions = database
        .collection::<Document>("system.js")
        .count_documents(doc! {})
        .await
        .unwrap();
    assert_eq!(functions as usize, installer::server_functions().len());
    let plan = installer::plan(&database, false, false).await.unwrap();
    let records = database
        .collection::<Document>(MANIFEST_COLLECTION)
        .count_documents(doc! {})
        .await
        .unwrap();
    assert_eq!(
        records as usize,
        plan.items.len(),
        "one manifest record per item"
    );
    assert!(plan.is_current(), "{plan:?}");
    assert!(plan.writes_nothing());
}

/// An install killed after its first, second, ... write leaves a state the
/// next install completes. Needs the `test-hooks` build (scripts/test.sh).
#[cfg(feature = "test-hooks")]
#[tokio::test]
async fn an_install_killed_half_way_is_completed_by_the_next_run() {
    const TEST: &str = "killed_install";
    let database = support::database(TEST).await;
    let writes = 2 * installer::plan(&database, false, false)
        .await
        .unwrap()
        .items
        .len();
    for crash_after in 1..writes {
        support::database(TEST).await;
        let crashed = run(support::idmint(TEST).args([
            "install",
            "--crash-after-writes",
            &crash_after.to_string(),
        ]));
        assert!(
            !crashed.status.success(),
            "the install did not crash after {crash_after} writes"
        );
        let half = installer::plan(&database, false, false).await.unwrap();
        assert!(
            !half.writes_nothing(),
            "after {crash_after} writes the state should be incomplete"
        );
        assert_exit(&run(support::idmint(TEST).arg("install")), 0);
        let plan = installer::plan(&database, false, false).await.unwrap();
        assert!(
            plan.writes_nothing(),
            "not completed after a crash at write {crash_after}: {plan:?}"
        );
    }
}

#[tokio::test]
async fn uninstall_removes_only_what_idmint_installed_and_keeps_data() {
    const TEST: &str = "uninstall";
    let database = support::database(TEST).await;
    let foreign = doc! { "_id": "someoneElses", "value": Bson::JavaScriptCode("function () { return 7; }".into()) };
    database
        .collection::<Document>("system.js")
        .insert_one(&foreign)
        .await
        .unwrap();
    assert_exit(&run(support::idmint(TEST).arg("install")), 0);
    assert_exit(
        &run(support::idmint(TEST).args(["counter", "create", "keepme"])),
        0,
    );

    let dry = run(support::idmint(TEST).args(["uninstall", "--dry-run"]));
    assert_exit(&dry, 0);
    assert!(
        stored_function(&database, "getNextUniqueSeq")
            .await
            .is_some(),
        "dry run removed something"
    );

    // Dropping data needs confirmation: with no terminal and no --yes, nothing happens.
    let unconfirmed = run(support::idmint(TEST).args(["uninstall", "--drop-counters"]));
    assert_exit(&unconfirmed, 2);
    assert!(String::from_utf8_lossy(&unconfirmed.stderr).contains("--yes"));
    assert!(stored_function(&database, "getNextUniqueSeq")
        .await
        .is_some());

    let removed = run(support::idmint(TEST).args(["uninstall", "--json"]));
    assert_exit(&removed, 0);
    let report: serde_json::Value = serde_json::from_slice(&removed.stdout).unwrap();
    assert!(report["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["name"] == "counters" && i["action"] == "keep"));
    assert!(stored_function(&database, "getNextUniqueSeq")
        .await
        .is_none());
    assert_eq!(
        stored_function(&database, "someoneElses").await,
        Some(foreign),
        "a foreign function was touched"
    );
    let counter = database
        .collection::<Document>("counters")
        .find_one(doc! { "_id": "keepme" })
        .await
        .unwrap();
    assert!(counter.is_some(), "counters are data and are kept");
    // Only the records of the kept data remain, so a later --drop-counters knows they are idmint's.
    let left: Vec<Document> = support::documents(&database, MANIFEST_COLLECTION).await;
    let mut left: Vec<&str> = left
        .iter()
        .map(|record| record.get_str("_id").unwrap())
        .collect();
    left.sort_unstable();
    assert_eq!(left, ["collection:counters", "collection:policies"]);

    assert_exit(&run(support::idmint(TEST).arg("install")), 0);
    assert_exit(
        &run(support::idmint(TEST).args(["uninstall", "--drop-counters", "--yes"])),
        0,
    );
    assert!(!database
        .list_collection_names()
        .await
        .unwrap()
        .contains(&"counters".to_string()));
    let left = database
        .collection::<Document>(MANIFEST_COLLECTION)
        .count_documents(doc! {})
        .await
        .unwrap();
    assert_eq!(
        left, 1,
        "only the kept policies collection is still recorded"
    );
}

#[tokio::test]
async fn uninstall_keeps_a_hand_edited_function_without_force() {
    const TEST: &str = "uninstall_edited";
    let database = support::database(TEST).await;
    installer::install(&database, &options()).await.unwrap();
    hand_edit(
        &database,
        "getNextUniqueSeq",
        "function () { return 'mine now'; }",
    )
    .await;
    let refused = run(support::idmint(TEST).arg("uninstall"));
    assert_exit(&refused, 1);
    assert!(String::from_utf8_lossy(&refused.stderr).contains("changed by hand"));
    assert!(stored_function(&database, "getNextUniqueSeq")
        .await
        .is_some());
    assert_exit(
        &run(support::idmint(TEST).args(["uninstall", "--force"])),
        0,
    );
    assert!(stored_function(&database, "getNextUniqueSeq")
        .await
        .is_none());
}

/// With authentication on: an app user (role idmintApp) can hand out values
/// but cannot write system.js or the manifest, and the error names the
/// missing privilege; an admin user (role idmintAdmin) can install.
#[tokio::test]
async fn roles_give_apps_counters_and_admins_the_installer() {
    let server = support::AuthServer::start().await;
    let root_uri = server.root_uri.clone();
    let idmint = |uri: &str| support::idmint_on(uri, "shop");
    let installed = run(idmint(&root_uri).args(["install", "--create-roles"]));
    assert_exit(&installed, 0);
    let root = mongodb::Client::with_uri_str(&root_uri)
        .await
        .unwrap()
        .database("shop");
    for (user, role) in [("app", installer::APP_ROLE), ("dba", installer::ADMIN_ROLE)] {
        root.run_command(doc! { "createUser": user, "pwd": format!("{user}pw"), "roles": [role] })
            .await
            .unwrap();
    }
    let app_uri = server.user_uri("app", "apppw", "shop");
    let dba_uri = server.user_uri("dba", "dbapw", "shop");

    assert_exit(
        &run(idmint(&dba_uri).args(["counter", "create", "orders"])),
        0,
    );
    assert_exit(
        &run(idmint(&app_uri).args(["next", "orders", "--count", "3"])),
        0,
    );
    assert_exit(&run(idmint(&app_uri).args(["seq", "orders"])), 0);
    // A gap-free series: made by the DBA, numbered and audited by the app,
    // which cannot make one.
    assert_exit(
        &run(idmint(&dba_uri).args(["series", "create", "invoices"])),
        0,
    );
    let numbered = run(idmint(&app_uri).args(["series", "next", "invoices", "--reference", "o-1"]));
    assert_exit(&numbered, 0);
    // Reserved, confirmed and voided by the app (a reserve voids its
    // series' expired reservations first: an update of the records).
    for (args, printed) in [
        (
            &["series", "reserve", "invoices", "--client-key", "k"][..],
            "2",
        ),
        (
            &["series", "confirm", "invoices", "2", "--reference", "o-2"][..],
            "confirmed",
        ),
        (&["series", "reserve", "invoices"][..], "3"),
        (
            &["series", "void", "invoices", "3", "--reason", "cancelled"][..],
            "voided",
        ),
    ] {
        let output = run(idmint(&app_uri).args(args));
        assert_exit(&output, 0);
        assert!(stdout(&output).contains(printed), "{args:?}: {output:?}");
    }
    assert_exit(
        &run(idmint(&app_uri).args(["series", "audit", "invoices"])),
        0,
    );
    assert_exit(
        &run(idmint(&app_uri).args(["series", "create", "sneaky-series"])),
        3,
    );
    // Snowflake worker leases and a stream that follows the stored policy,
    // as the app user.
    assert_exit(
        &run(idmint(&dba_uri).args([
            "counter",
            "create",
            "events",
            "--kind",
            "snowflake",
            "--raw",
        ])),
        0,
    );
    let leased = run(idmint(&app_uri).args(["seq", "events", "--count", "2"]));
    assert_exit(&leased, 0);
    assert_exit(
        &run(idmint(&dba_uri).args([
            "policy",
            "push",
            crate::support::fixture_policy("check-digit"),
        ])),
        0,
    );
    assert_exit(&run(idmint(&dba_uri).args(["policy", "activate", "1"])), 0);
    let mut stream = idmint(&app_uri)
        .args([
            "next",
            "orders",
            "--stream",
            "--rate",
            "50",
            "--policy-from-db",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let first = {
        use std::io::BufRead;
        let mut lines = std::io::BufReader::new(stream.stdout.take().unwrap()).lines();
        lines.next().unwrap().unwrap()
    };
    stream.kill().unwrap();
    stream.wait().unwrap();
    // The stored check-digit policy's shape: ...T...Z-NNN-C.
    assert!(first.contains('T') && first.contains("Z-"), "{first}");

    let denied = run(idmint(&app_uri).args(["install", "--force"]));
    assert_exit(&denied, 3);
    let message = String::from_utf8_lossy(&denied.stderr);
    assert!(message.contains("not authorized"), "{message}");
    assert!(
        message.contains("idmintAdmin"),
        "the message names the role that grants it: {message}"
    );
    assert!(!message.contains("apppw"), "{message}");
    let app = mongodb::Client::with_uri_str(&app_uri)
        .await
        .unwrap()
        .database("shop");
    for collection in ["system.js", MANIFEST_COLLECTION] {
        let write = app
            .collection::<Document>(collection)
            .insert_one(doc! { "_id": "x", "value": 1 })
            .await;
        assert!(write.is_err(), "the app user could write {collection}");
    }
    // Creating a counter first makes sure of the prefixes' unique index: the
    // first privilege the app user lacks.
    let denied = run(idmint(&app_uri).args(["counter", "create", "sneaky"]));
    assert_exit(&denied, 3);
    assert!(
        String::from_utf8_lossy(&denied.stderr).contains("createIndex"),
        "{}",
        String::from_utf8_lossy(&denied.stderr)
    );

    let again = run(idmint(&dba_uri).args(["install"]));
    assert_exit(&again, 0);
    assert!(String::from_utf8_lossy(&again.stdout).contains("is current"));
    let status = run(idmint(&dba_uri).args(["status", "--json"]));
    assert_exit(&status, 0);
    let report: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let roles: Vec<_> = report["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "role")
        .collect();
    assert_eq!(roles.len(), 2, "{report}");
}
