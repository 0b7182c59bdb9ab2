//! `idmint install` and `idmint status` against the server.

use idmint::installer::{self, FunctionState, ItemAction};
use mongodb::bson::{doc, Bson, Document};

use crate::harness;

#[tokio::test]
async fn install_writes_every_function_and_a_second_run_changes_nothing() {
    let database = harness::database("install_idempotent").await;
    let before = installer::status(&database).await.unwrap();
    assert!(!before.is_current());
    assert!(before
        .functions
        .iter()
        .all(|f| f.state == FunctionState::Missing));

    let first = installer::install(&database).await.unwrap();
    assert!(
        first
            .items
            .iter()
            .all(|item| item.action == ItemAction::Created),
        "{first:?}"
    );
    let stored = database
        .collection::<Document>("system.js")
        .find_one(doc! { "_id": "getNextUniqueSeq" })
        .await
        .unwrap()
        .unwrap();
    let Some(Bson::JavaScriptCode(code)) = stored.get("value") else {
        panic!("not code: {stored}")
    };
    assert!(code.contains("function (keyName, clientMicros)"));

    let second = installer::install(&database).await.unwrap();
    assert!(second.changed_nothing(), "{second:?}");
    let after = installer::status(&database).await.unwrap();
    assert!(after.is_current(), "{after:?}");
    assert!(after.host_path.contains("findOneAndUpdate"));
}

#[tokio::test]
async fn status_reports_the_server_and_a_changed_function() {
    let database = harness::database("status_reports").await;
    installer::install(&database).await.unwrap();
    database
        .collection::<Document>("system.js")
        .update_one(
            doc! { "_id": "getNextUniqueSeq" },
            doc! { "$set": { "value": Bson::JavaScriptCode("function () { return 1; }".into()) } },
        )
        .await
        .unwrap();
    let report = installer::status(&database).await.unwrap();
    assert!(!report.is_current());
    let function = report
        .functions
        .iter()
        .find(|f| f.name == "getNextUniqueSeq")
        .unwrap();
    assert_eq!(function.state, FunctionState::Differs);
    assert!(!report.server.version.is_empty());
    assert!(!report.server.server_js_can_write);
    // The test server is a single-node replica set.
    assert!(
        matches!(
            report.server.topology,
            installer::Topology::ReplicaSet { .. }
        ),
        "{:?}",
        report.server
    );

    let again = installer::install(&database).await.unwrap();
    let item = again
        .items
        .iter()
        .find(|i| i.name == "getNextUniqueSeq")
        .unwrap();
    assert_eq!(item.action, ItemAction::Updated);
    assert!(installer::status(&database).await.unwrap().is_current());
}

#[tokio::test]
async fn the_cli_status_exits_1_until_installed() {
    const TEST: &str = "cli_status_exit";
    harness::database(TEST).await;
    let run = |args: &[&str]| harness::idmint(TEST).args(args).output().unwrap();
    let drop = run(&["status"]);
    assert_eq!(
        drop.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&drop.stdout)
    );
    let install = run(&["install", "--json"]);
    assert_eq!(install.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&install.stdout).unwrap();
    assert_eq!(report["items"][0]["name"], "counters");
    let status = run(&["status", "--json"]);
    assert_eq!(
        status.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&status.stdout)
    );
    let report: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(report["server"]["server_js_can_write"], false);
    let again = run(&["install"]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("already current"));
}
