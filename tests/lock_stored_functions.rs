//! The stored functions `getLock`/`releaseLock`, run by mongosh, held
//! equal to the library's acquire and release.

use std::time::Duration;

use idmint::lock::{Acquired, Lock, LockName};
use mongodb::bson::{doc, Document};
use serde_json::{json, Value};

use crate::support::{self, held, lock_name};

fn mongosh_lines(test: &str, script: &str) -> Vec<Value> {
    crate::support::mongosh::json_lines(&mut crate::support::mongosh::shell(test, script))
}

fn lock_cases() -> Vec<Document> {
    let past = mongodb::bson::DateTime::from_millis(1_000_000);
    let future = mongodb::bson::DateTime::from_millis(i64::MAX / 4);
    vec![
        doc! { "_id": "released", "owner": null, "token": 5_i64, "count": 0_i64, "expiresAt": null },
        doc! { "_id": "expired", "owner": "x", "token": 7_i64, "count": 2_i64, "expiresAt": past },
        doc! { "_id": "live", "owner": "x", "token": 3_i64, "count": 1_i64, "expiresAt": future },
        doc! { "_id": "corrupt", "owner": 42, "token": 1_i64 },
        doc! { "_id": "badtoken", "owner": null, "token": "seven" },
        // A free lock with someone in line is theirs first; one whose only
        // entry lapsed is free for anyone, and the entry is dropped.
        doc! { "_id": "waited", "owner": null, "token": 4_i64, "count": 0_i64, "expiresAt": null,
        "queue": [{ "owner": "w", "ticket": "t", "since": past, "until": future, "ttl": 1000_i64 }] },
        // An ended lease with someone in line is freed by the write that
        // finds it, and stays theirs first.
        doc! { "_id": "ended-waited", "owner": "x", "ticket": "tx", "token": 6_i64, "count": 1_i64,
        "expiresAt": past,
        "queue": [{ "owner": "w", "ticket": "t", "since": past, "until": future, "ttl": 1000_i64 }] },
        doc! { "_id": "lapsed", "owner": null, "token": 4_i64, "count": 0_i64, "expiresAt": null,
        "queue": [{ "owner": "w", "ticket": "t", "since": past, "until": past, "ttl": 1000_i64 }] },
        doc! { "_id": "badqueue", "owner": null, "token": 4_i64, "queue": [{ "owner": "w" }] },
    ]
}

/// A lock document with what differs by run (owner tokens, times) masked.
fn masked(document: &Document) -> Document {
    let mut document = document.clone();
    for (key, value) in document.iter_mut() {
        match value {
            mongodb::bson::Bson::DateTime(_) => *value = "date".into(),
            mongodb::bson::Bson::String(s) if (key == "owner" || key == "ticket") && s != "x" => {
                *value = "new owner".into()
            }
            _ => {}
        }
    }
    document
}

#[tokio::test]
async fn get_lock_in_mongosh_agrees_with_the_rust_acquire() {
    let rust_db = support::database("lock_conformance_rust").await;
    let js_db = support::database("lock_conformance_js").await;
    idmint::installer::install(&js_db, &Default::default())
        .await
        .unwrap();
    let mut names: Vec<String> = vec!["fresh".into()];
    for case in lock_cases() {
        names.push(case.get_str("_id").unwrap().to_string());
        rust_db
            .collection::<Document>("locks")
            .insert_one(&case)
            .await
            .unwrap();
        js_db
            .collection::<Document>("locks")
            .insert_one(&case)
            .await
            .unwrap();
    }
    let mut rust = Vec::new();
    for name in &names {
        let lock = Lock::new(&rust_db, LockName::new(name.as_str()).unwrap());
        rust.push(match lock.try_acquire(Duration::from_secs(60)).await {
            Ok(Acquired::Held(lease)) => {
                let token = lease.token();
                std::mem::forget(lease);
                json!({ "case": name, "token": token })
            }
            Ok(Acquired::Busy(_)) => json!({ "case": name, "busy": true }),
            Err(error) => {
                json!({ "case": name, "error": error.class() == idmint::ErrorClass::Conflict })
            }
        });
    }
    let script = format!(
        "for (const name of {names}) {{\n\
           try {{ const t = getLock(name, 60000);\n\
                  print(JSON.stringify(t === null ? {{ case: name, busy: true }} : {{ case: name, token: Number(t.split(':')[0]) }})); }}\n\
           catch (e) {{ print(JSON.stringify({{ case: name, error: e.message.includes('corrupt') }})); }}\n\
         }}",
        names = json!(names)
    );
    let js = mongosh_lines("lock_conformance_js", &script);
    assert_eq!(rust, js, "the two implementations disagree");
    let rust_docs: Vec<Document> = support::documents(&rust_db, "locks")
        .await
        .iter()
        .map(masked)
        .collect();
    let js_docs: Vec<Document> = support::documents(&js_db, "locks")
        .await
        .iter()
        .map(masked)
        .collect();
    assert_eq!(rust_docs, js_docs, "they left different documents");
}

#[tokio::test]
async fn mongosh_holders_and_rust_holders_exclude_each_other() {
    const TEST: &str = "lock_mongosh_vs_rust";
    let database = support::database(TEST).await;
    idmint::installer::install(&database, &Default::default())
        .await
        .unwrap();
    let rust = Lock::new(&database, lock_name("shared"));

    let taken = mongosh_lines(
        TEST,
        "print(JSON.stringify({ t: getLock('shared', 60000) }));",
    );
    let shell_token = taken[0]["t"].as_str().unwrap().to_string();
    assert!(shell_token.starts_with("1:"), "{shell_token}");
    assert!(matches!(
        rust.try_acquire(Duration::from_secs(60)).await.unwrap(),
        Acquired::Busy(_)
    ));

    let released = mongosh_lines(
        TEST,
        &format!(
            "print(JSON.stringify({{ wrong: releaseLock('shared', '1:{}'), stale: releaseLock('shared', '0:{}'), \
             right: releaseLock('shared', '{shell_token}') }}));",
            rust.owner(),
            &shell_token[2..]
        ),
    );
    assert_eq!(
        released[0],
        json!({ "wrong": false, "stale": false, "right": true })
    );

    let lease = held(&rust, Duration::from_secs(60)).await;
    assert_eq!(lease.token(), 2);
    let refused = mongosh_lines(
        TEST,
        "print(JSON.stringify({ got: getLock('shared', 60000), freed: releaseLock('shared', '2:ffff') }));",
    );
    assert_eq!(refused[0], json!({ "got": null, "freed": false }));
    lease.release().await.unwrap();
    let again = mongosh_lines(
        TEST,
        "print(JSON.stringify({ t: getLock('shared', 60000) }));",
    );
    assert!(
        again[0]["t"].as_str().unwrap().starts_with("3:"),
        "{again:?}"
    );
}
