//! Standard IDs from snowflake counters (docs/design/standard-ids.md): the
//! tag and salt each snowflake counter gets, unique in its database, drawn
//! durably, kept once when two processes race for an older counter's.

use std::sync::Arc;

use idmint::sequence::{draw_tag, ensure_tag, keep_tag, COUNTERS_COLLECTION, MAX_TAG, TAGS_ID};
use mongodb::bson::{doc, Document};
use serde_json::Value;
use tokio::sync::Barrier;

use crate::support::{
    self, assert_durable, assert_exit, counter_doc, counter_name, create, database_handle, idmint,
    run, stderr, stdout,
};

/// What the `tag:` line of `idmint counter show`'s text says.
fn tag_line(text: &str) -> &str {
    text.lines()
        .find_map(|line| line.trim_start().strip_prefix("tag:"))
        .unwrap_or_else(|| panic!("no tag line in {text}"))
        .trim()
}

/// `idmint counter show NAME --json` in `test`'s database.
fn shown(test: &str, name: &str) -> Value {
    let output = run(idmint(test).args(["counter", "show", name, "--json"]));
    assert_exit(&output, 0);
    serde_json::from_str(&stdout(&output)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_snowflake_counter_is_created_with_its_own_tag_and_a_secret_salt() {
    const TEST: &str = "standard_ids_created_tagged";
    let (database, log) = support::monitored_database(TEST).await;
    let name = counter_name("a");
    idmint::sequence::create(
        &database,
        &name,
        &idmint::sequence::CounterSpec::of(idmint::sequence::CounterKind::Snowflake),
    )
    .await
    .unwrap();
    let draws = log.named("findAndModify");
    assert_eq!(draws.len(), 1, "one draw of the tag: {draws:?}");
    assert_eq!(
        draws[0].get_str("findAndModify").unwrap(),
        COUNTERS_COLLECTION
    );
    assert_eq!(
        draws[0].get_document("query").unwrap(),
        &doc! { "_id": TAGS_ID }
    );
    assert_durable(&draws[0]);
    create(TEST, "b", &["--kind", "snowflake", "--raw"]);

    let (a, b) = (shown(TEST, "a"), shown(TEST, "b"));
    assert_eq!((a["tag"].as_u64(), b["tag"].as_u64()), (Some(1), Some(2)));
    for document in [counter_doc(TEST, "a").await, counter_doc(TEST, "b").await] {
        let salt = document.unwrap().get_str("salt").unwrap().to_string();
        assert!(
            salt.len() == 16 && u64::from_str_radix(&salt, 16).is_ok(),
            "{salt}"
        );
        assert!(!a.to_string().contains(&salt) && !b.to_string().contains(&salt));
    }
    let a_salt = counter_doc(TEST, "a")
        .await
        .unwrap()
        .get_str("salt")
        .unwrap()
        .to_string();
    let b_salt = counter_doc(TEST, "b")
        .await
        .unwrap()
        .get_str("salt")
        .unwrap()
        .to_string();
    assert_ne!(a_salt, b_salt);
    let text = run(idmint(TEST).args(["counter", "show", "b"]));
    assert_exit(&text, 0);
    assert_eq!(tag_line(&stdout(&text)), "2", "{}", stdout(&text));
    assert!(!stdout(&text).contains(&b_salt));

    // The tags document is not a counter: listings do not show it.
    let listed: Vec<String> = idmint::sequence::list(&database)
        .await
        .unwrap()
        .into_iter()
        .map(|listed| listed.name)
        .collect();
    assert_eq!(listed, ["a", "b"]);
    assert_eq!(idmint::sequence::count(&database, "").await.unwrap(), 2);
    assert_eq!(
        idmint::sequence::list_page(&database, "_", 0, 10)
            .await
            .unwrap()
            .len(),
        0
    );
    // Nor does a counter of another kind get a tag.
    create(TEST, "c", &["--kind", "autoinc", "--raw"]);
    assert!(counter_doc(TEST, "c").await.unwrap().get("tag").is_none());
}

/// Counter `name` made as idmint made snowflake counters before tags: its
/// document without `tag` and `salt`.
async fn untagged(test: &str, name: &str) {
    create(test, name, &["--kind", "snowflake", "--raw"]);
    let database = database_handle(test).await;
    database
        .collection::<Document>(COUNTERS_COLLECTION)
        .update_one(
            doc! { "_id": name },
            doc! { "$unset": { "tag": 1, "salt": 1 } },
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_racing_to_tag_an_older_counter_keep_the_first_tag() {
    const TEST: &str = "standard_ids_tag_race";
    support::database(TEST).await;
    untagged(TEST, "old").await;
    assert_eq!(shown(TEST, "old")["tag"], Value::Null);
    let text = stdout(&run(idmint(TEST).args(["counter", "show", "old"])));
    assert!(tag_line(&text).starts_with("none yet"), "{text}");
    // Other snowflake uses of it are as they were: IDs, no tag written.
    assert_exit(&run(idmint(TEST).args(["seq", "old", "--count", "3"])), 0);
    assert!(counter_doc(TEST, "old").await.unwrap().get("tag").is_none());

    // Two clients, as two processes: both draw before either keeps.
    let name = counter_name("old");
    let barrier = Arc::new(Barrier::new(2));
    let racers = (0..2).map(|_| {
        let (barrier, name) = (barrier.clone(), name.clone());
        tokio::spawn(async move {
            let database = database_handle(TEST).await;
            let drawn = draw_tag(&database, &name).await.unwrap();
            barrier.wait().await;
            let kept = keep_tag(&database, &name, drawn).await.unwrap();
            (drawn, kept)
        })
    });
    let mut results = Vec::new();
    for racer in racers.collect::<Vec<_>>() {
        results.push(racer.await.unwrap());
    }
    let [(drawn_a, kept_a), (drawn_b, kept_b)] = results[..] else {
        unreachable!()
    };
    assert_ne!(drawn_a.tag, drawn_b.tag, "each draw its own number");
    assert_eq!(kept_a, kept_b, "both keep one tag and salt");
    assert!(kept_a == drawn_a || kept_a == drawn_b);
    assert_eq!(
        shown(TEST, "old")["tag"].as_u64(),
        Some(u64::from(kept_a.tag))
    );

    // Once tagged, a counter keeps its tag: nothing more is drawn.
    let database = database_handle(TEST).await;
    assert_eq!(ensure_tag(&database, &name).await.unwrap(), kept_a);
    let tags = database
        .collection::<Document>(COUNTERS_COLLECTION)
        .find_one(doc! { "_id": TAGS_ID })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(tags.get_i64("last").unwrap(), 3, "{tags}");

    // An untagged counter gets one the first time it is asked for.
    untagged(TEST, "older").await;
    let given = ensure_tag(&database, &counter_name("older")).await.unwrap();
    assert_eq!(given.tag, 5);
    assert_eq!(shown(TEST, "older")["tag"].as_u64(), Some(5));
    // Only a snowflake counter has one.
    create(TEST, "plain", &["--kind", "autoinc", "--raw"]);
    let error = ensure_tag(&database, &counter_name("plain"))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("not a snowflake one"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_last_tag_a_snowflake_counter_is_refused_naming_the_limit() {
    const TEST: &str = "standard_ids_tags_run_out";
    let database = support::database(TEST).await;
    create(TEST, "first", &["--kind", "snowflake"]);
    database
        .collection::<Document>(COUNTERS_COLLECTION)
        .update_one(
            doc! { "_id": TAGS_ID },
            doc! { "$set": { "last": i64::from(MAX_TAG) - 1 } },
        )
        .await
        .unwrap();
    create(TEST, "last", &["--kind", "snowflake", "--raw"]);
    assert_eq!(
        shown(TEST, "last")["tag"].as_u64(),
        Some(u64::from(MAX_TAG))
    );
    let output =
        run(idmint(TEST).args(["counter", "create", "more", "--kind", "snowflake", "--raw"]));
    assert_ne!(output.status.code(), Some(0));
    assert!(
        stderr(&output).contains("16777215 snowflake counter tags are all taken"),
        "{}",
        stderr(&output)
    );
    assert!(counter_doc(TEST, "more").await.is_none(), "nothing written");
}
