//! The CLI over counters of each kind: `counter create --kind`,
//! `counter show`, `seq` and `next` with the decimal policy, and bad input
//! refused before anything is written or consumed.

use mongodb::bson::{doc, Document};
use serde_json::Value;

use crate::support::{self, assert_exit, counter_doc, idmint, run, stderr, stdout};

#[tokio::test]
async fn an_auto_increment_counter_formats_through_the_decimal_policy() {
    const TEST: &str = "kinds_cli_autoinc";
    support::database(TEST).await;
    let created = run(idmint(TEST).args([
        "counter",
        "create",
        "inv",
        "--kind",
        "autoinc",
        "--start",
        "42",
        "--prefix",
        "INV-",
        "--policy",
        "builtin:decimal",
    ]));
    assert_exit(&created, 0);
    let shown = run(idmint(TEST).args(["counter", "show", "inv", "--json"]));
    assert_exit(&shown, 0);
    let mut shown: Value = serde_json::from_str(&stdout(&shown)).unwrap();
    // What is left: 2^53 - 1 values, less the 41 before the start.
    let headroom = shown.as_object_mut().unwrap().remove("headroom").unwrap();
    assert_eq!(
        headroom["left_values"],
        (1_u64 << 53) - 1 - 41,
        "{headroom}"
    );
    assert_eq!(
        shown,
        serde_json::json!({"name": "inv", "kind": "autoinc", "seq": 41, "prefix": "INV-", "prefixes": ["INV-"]})
    );
    let next =
        run(idmint(TEST).args(["next", "inv", "--count", "3", "--policy", "builtin:decimal"]));
    assert_exit(&next, 0);
    assert_eq!(
        stdout(&next),
        "INV-000000042\nINV-000000043\nINV-000000044\n"
    );
    let values = run(idmint(TEST).args(["seq", "inv", "--count", "2"]));
    assert_eq!(stdout(&values), "45\n46\n");

    // The default policy holds 100 values: refused, and nothing consumed.
    let before = counter_doc(TEST, "inv").await;
    let refused = run(idmint(TEST).args(["next", "inv"]));
    assert_exit(&refused, 4);
    assert!(
        stderr(&refused).contains("holds 100 sequence values")
            && stderr(&refused)
                .contains("autoinc counter 'inv' hands out values up to 9007199254740991")
            && stderr(&refused).contains("builtin:decimal"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(counter_doc(TEST, "inv").await, before);
}

#[tokio::test]
async fn a_segment_counter_serves_and_gives_back_what_it_did_not_hand_out() {
    const TEST: &str = "kinds_cli_segment";
    support::database(TEST).await;
    assert_exit(
        &run(idmint(TEST).args([
            "counter",
            "create",
            "ord",
            "--kind",
            "segment",
            "--step",
            "500",
            "--prefix",
            "ORD-",
            "--policy",
            "builtin:decimal",
        ])),
        0,
    );
    let next = run(idmint(TEST).args([
        "next",
        "ord",
        "--count",
        "3",
        "--prefix",
        "ORD-",
        "--policy",
        "builtin:decimal",
    ]));
    assert_exit(&next, 0);
    assert_eq!(
        stdout(&next),
        "ORD-000000001\nORD-000000002\nORD-000000003\n"
    );
    let shown = run(idmint(TEST).args(["counter", "show", "ord"]));
    assert_exit(&shown, 0);
    assert!(
        stdout(&shown).contains("kind:   segment") && stdout(&shown).contains("max:    4 "),
        "the unused 497 values were given back: {}",
        stdout(&shown)
    );
}

#[tokio::test]
async fn a_policy_without_time_is_refused_for_a_cyclic_counter() {
    const TEST: &str = "kinds_cli_needs_time";
    support::database(TEST).await;
    assert_exit(&run(idmint(TEST).args(["counter", "create", "c"])), 0);
    let before = counter_doc(TEST, "c").await;
    let refused = run(idmint(TEST).args(["next", "c", "--policy", "builtin:decimal"]));
    assert_exit(&refused, 4);
    assert!(
        stderr(&refused).contains("does not write the time")
            && stderr(&refused).contains("counter 'c' is cyclic"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(counter_doc(TEST, "c").await, before, "a value was consumed");
}

#[tokio::test]
async fn bad_counter_settings_exit_2_and_write_nothing() {
    const TEST: &str = "kinds_cli_bad_settings";
    support::database(TEST).await;
    for (args, message) in [
        (
            &["c1", "--step", "10"][..],
            "step applies to segment counters, not to cyclic ones",
        ),
        (
            &["c2", "--kind", "autoinc", "--max", "5"][..],
            "maxval applies to cyclic counters, not to autoinc ones",
        ),
        (
            &["c3", "--kind", "segment", "--step", "0"][..],
            "step 0 is out of range 1..=100000000",
        ),
        (
            &["c4", "--kind", "autoinc", "--start", "0"][..],
            "start 0 is out of range 1..=9007199254740991",
        ),
        (
            &["c5", "--kind", "hilo"][..],
            "unknown counter kind \"hilo\"",
        ),
        (
            &["c6", "--kind", "segment", "--start", "9007199254740993"][..],
            "start 9007199254740993 is out of range 0..=9007199254740991",
        ),
    ] {
        let output = run(idmint(TEST).args(["counter", "create"]).args(args));
        assert_exit(&output, 2);
        assert!(
            stderr(&output).contains(message),
            "{args:?}: {}",
            stderr(&output)
        );
        assert_eq!(
            counter_doc(TEST, args[0]).await,
            None,
            "{args:?} wrote a counter"
        );
    }
    // An unknown built-in policy is named, with the known ones.
    let output = run(idmint(TEST).args(["next", "c", "--policy", "builtin:nope"]));
    assert_exit(&output, 2);
    assert!(
        stderr(&output).contains(
            "there is no built-in policy \"nope\"; the built-in policies are default, decimal"
        ),
        "{}",
        stderr(&output)
    );
}

#[tokio::test]
async fn a_corrupt_counter_of_each_kind_exits_2_and_is_left_as_it_was() {
    const TEST: &str = "kinds_cli_corrupt";
    let database = support::database(TEST).await;
    let collection = database.collection::<Document>("counters");
    for (id, document, reason) in [
        (
            "a",
            doc! { "_id": "a", "kind": "autoinc", "seq": -4_i64 },
            "seq is -4",
        ),
        (
            "s",
            doc! { "_id": "s", "kind": "segment", "max": 1 },
            "step is missing",
        ),
        (
            "k",
            doc! { "_id": "k", "kind": "hilo", "next": 1 },
            "kind \"hilo\"",
        ),
        (
            "p",
            doc! { "_id": "p", "kind": "periodic", "period": "month", "zone": "UTC", "current": "2026-13", "seq": 1 },
            "current \"2026-13\" is not a month label",
        ),
        (
            "p2",
            doc! { "_id": "p2", "kind": "periodic", "period": "year", "zone": "UTC", "current": "", "seq": 0, "prefixes": ["A-", "A-"] },
            "prefixes holds \"A-\" twice",
        ),
    ] {
        collection.insert_one(&document).await.unwrap();
        let output = run(idmint(TEST).args(["seq", id]));
        assert_exit(&output, 2);
        assert!(
            stderr(&output).contains(reason),
            "{id}: {}",
            stderr(&output)
        );
        assert_eq!(counter_doc(TEST, id).await, Some(document));
    }
}
