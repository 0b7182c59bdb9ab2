//! The formatted ID space belongs to one counter (issue 18, section 1): two
//! counters cannot own one prefix, the empty one included; an ID may only
//! be formatted with a prefix its counter owns; a token may be limited to
//! some prefixes; counters made before owners were declared are reported,
//! never silently changed. Every refusal changes nothing.

use std::collections::HashSet;

use mongodb::bson::{doc, Document};

use crate::support::service::{assert_error, block_on, Service};
use crate::support::{self, assert_exit, database_handle, documents, idmint, run, stderr, stdout};

/// The counters of test `test`, sorted by name.
async fn counters(test: &str) -> Vec<Document> {
    documents(&database_handle(test).await, "counters").await
}

/// The names of the counters of test `test`, sorted: compared whole, so
/// that a read of the wrong place (nothing) fails too.
async fn counter_names(test: &str) -> Vec<String> {
    counters(test)
        .await
        .iter()
        .map(|counter| {
            counter
                .get_str("_id")
                .expect("a counter's name")
                .to_string()
        })
        .collect()
}

/// Two counters under a frozen clock: without owners they issued the same
/// IDs (the issue's reproduction); now the second cannot take the first's
/// (empty) prefix, and with a prefix of its own all their IDs differ.
#[tokio::test]
async fn two_counters_never_issue_one_id_even_under_a_frozen_clock() {
    const TEST: &str = "prefixes_frozen";
    support::database(TEST).await;
    assert_exit(&run(idmint(TEST).args(["counter", "create", "c1"])), 0);
    let before = counters(TEST).await;
    let refused = run(idmint(TEST).args(["counter", "create", "c2"]));
    assert_exit(&refused, 2);
    assert!(
        stderr(&refused).contains("prefix \"\" is owned by counter 'c1'"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(
        counters(TEST).await,
        before,
        "a refused counter was written"
    );

    assert_exit(
        &run(idmint(TEST).args(["counter", "create", "c2", "--prefix", "C2-"])),
        0,
    );
    // Borrowing the other counter's prefix is refused before a value is taken.
    let before = counters(TEST).await;
    for (counter, prefix) in [("c2", ""), ("c1", "C2-")] {
        let borrowed = run(idmint(TEST).args(["next", counter, "--prefix", prefix]));
        assert_exit(&borrowed, 2);
        assert!(
            stderr(&borrowed).contains(&format!("counter '{counter}' does not own prefix")),
            "{}",
            stderr(&borrowed)
        );
    }
    assert_eq!(
        counters(TEST).await,
        before,
        "a refused request took a value"
    );

    // Both processes on one frozen instant: 100 IDs each, none shared, and
    // all 200 within a few microseconds of it (a wrapping sequence moves the
    // time on by one), so prefix and sequence tell them apart.
    let mut seen = HashSet::new();
    for counter in ["c1", "c2"] {
        let output = run(
            support::fake_clock(&mut idmint(TEST), "2026-01-01 00:00:00")
                .args(["next", counter, "--count", "100"]),
        );
        assert_exit(&output, 0);
        for id in stdout(&output).lines() {
            assert!(seen.insert(id.to_string()), "{id} was issued twice");
            let time = id.trim_start_matches("C2-");
            assert!(
                time.starts_with("202601010000000000"),
                "{id} is not at the frozen instant"
            );
        }
    }
    assert_eq!(seen.len(), 200);
}

/// `counter prefix add`: a prefix another counter owns is refused and
/// nothing changes; a free one is owned; `remove` gives it up (and what
/// becomes of it then is `a_prefix_that_formatted_ids_is_never_owned_again`'s).
#[tokio::test]
async fn prefixes_are_added_and_removed_under_the_unique_index() {
    const TEST: &str = "prefixes_add_remove";
    support::database(TEST).await;
    assert_exit(
        &run(idmint(TEST).args(["counter", "create", "a", "--prefix", "A-"])),
        0,
    );
    assert_exit(
        &run(idmint(TEST).args(["counter", "create", "b", "--prefix", "B-", "--prefix", "X-"])),
        0,
    );
    let before = counters(TEST).await;
    let taken = run(idmint(TEST).args(["counter", "prefix", "add", "a", "X-"]));
    assert_exit(&taken, 2);
    assert!(
        stderr(&taken).contains("prefix \"X-\" is owned by counter 'b'"),
        "{}",
        stderr(&taken)
    );
    assert_eq!(
        counters(TEST).await,
        before,
        "a refused add changed a counter"
    );

    let added = run(idmint(TEST).args(["counter", "prefix", "add", "a", "Y-"]));
    assert_exit(&added, 0);
    assert!(
        stdout(&added).contains("prefix: A- (it also owns Y-)"),
        "{}",
        stdout(&added)
    );
    let ids = run(idmint(TEST).args(["next", "a", "--prefix", "Y-", "--count", "2"]));
    assert_exit(&ids, 0);
    let ids = stdout(&ids);
    assert_eq!(ids.lines().count(), 2, "{ids}");
    assert!(ids.lines().all(|id| id.starts_with("Y-")), "{ids}");
    assert_exit(
        &run(idmint(TEST).args(["counter", "prefix", "remove", "b", "X-"])),
        0,
    );
    let gone = run(idmint(TEST).args(["next", "b", "--prefix", "X-"]));
    assert_exit(&gone, 2);
    // A counter that owns none hands out raw values, and no IDs.
    assert_exit(
        &run(idmint(TEST).args(["counter", "create", "r", "--kind", "autoinc", "--raw"])),
        0,
    );
    assert_exit(&run(idmint(TEST).args(["seq", "r"])), 0);
    let none = run(idmint(TEST).args(["next", "r", "--policy", "builtin:decimal"]));
    assert_exit(&none, 2);
    assert!(
        stderr(&none).contains("counter 'r' owns no prefix"),
        "{}",
        stderr(&none)
    );
}

/// Counters made before owners were declared (the seed's documents): one
/// prefix owned twice is reported by `status` (exit 1) and `install` with
/// what to do, no ID is formatted with it, and neither document changes.
#[tokio::test]
async fn counters_sharing_an_undeclared_prefix_are_reported_not_changed() {
    const TEST: &str = "prefixes_legacy";
    let database = support::database(TEST).await;
    let collection = database.collection::<Document>("counters");
    for name in ["SerialNo1", "SerialNo2"] {
        collection
            .insert_one(doc! { "_id": name, "val": 0, "maxval": 99 })
            .await
            .unwrap();
    }
    let before = counters(TEST).await;
    let installed = run(idmint(TEST).args(["install"]));
    assert_exit(&installed, 0);
    assert!(
        stderr(&installed).contains("prefix \"\" is owned by counters SerialNo1, SerialNo2"),
        "{}",
        stderr(&installed)
    );
    let status = run(idmint(TEST).args(["status"]));
    assert_exit(&status, 1);
    assert!(
        stdout(&status)
            .contains("conflict:   prefix \"\" is owned by counters SerialNo1, SerialNo2"),
        "{}",
        stdout(&status)
    );
    let next = run(idmint(TEST).args(["next", "SerialNo1"]));
    assert_exit(&next, 2);
    assert!(
        stderr(&next).contains("is owned by counters SerialNo1, SerialNo2"),
        "{}",
        stderr(&next)
    );
    assert_eq!(
        counters(TEST).await,
        before,
        "an undeclared counter was changed"
    );
    // Raw values are not affected.
    assert_exit(&run(idmint(TEST).args(["seq", "SerialNo1"])), 0);

    // Resolved the way the report says: declared, and one given its own.
    assert_exit(
        &run(idmint(TEST).args(["counter", "prefix", "add", "SerialNo2", "S2-"])),
        0,
    );
    assert_exit(
        &run(idmint(TEST).args(["counter", "prefix", "remove", "SerialNo2", ""])),
        0,
    );
    assert_exit(&run(idmint(TEST).args(["status"])), 0);
    assert_exit(&run(idmint(TEST).args(["next", "SerialNo1"])), 0);
    assert_exit(&run(idmint(TEST).args(["next", "SerialNo2"])), 0);
}

/// The service looks up a prefix's other owners beside a counter's first
/// take: two counters sharing an undeclared prefix get no ID from it (409
/// naming both, every time), the first request's values are dropped (a
/// gap), and the refusal is kept, so asking again takes nothing more.
#[test]
fn a_service_hands_out_no_id_with_a_prefix_two_counters_own() {
    const TEST: &str = "prefixes_shared_serve";
    block_on(async {
        let collection = support::database(TEST)
            .await
            .collection::<Document>("counters");
        for name in ["SerialNo1", "SerialNo2"] {
            collection
                .insert_one(doc! { "_id": name, "val": 0_i64, "maxval": 99_i64 })
                .await
                .unwrap();
        }
    });
    let service = Service::start(TEST, &[]);
    let val = || {
        block_on(counters(TEST))[0]
            .get_i64("val")
            .expect("SerialNo1's val, a long")
    };
    let refusal = service.get("/v1/counters/SerialNo1/ids?count=5");
    assert_error(
        &refusal,
        409,
        "counter",
        "prefix \"\" is owned by counters SerialNo1, SerialNo2",
    );
    let after_first = val();
    assert!(
        after_first <= 5,
        "the first take went past its count: {after_first}"
    );
    for _ in 0..3 {
        let again = service.get("/v1/counters/SerialNo1/ids?count=5");
        assert_error(
            &again,
            409,
            "counter",
            "prefix \"\" is owned by counters SerialNo1, SerialNo2",
        );
    }
    assert_eq!(val(), after_first, "a kept refusal took values again");
    // Raw values are not formatted with the prefix, and are still served.
    assert_eq!(
        service.get("/v1/counters/SerialNo1/values?count=1").status,
        200
    );
}

/// Two documents that declare one prefix (written by hand): `install`
/// cannot build the unique index, refuses with what to do (exit 1), and
/// writes nothing of it.
#[tokio::test]
async fn install_refuses_to_index_declared_collisions() {
    const TEST: &str = "prefixes_declared_collision";
    let database = support::database(TEST).await;
    let collection = database.collection::<Document>("counters");
    for name in ["a", "b"] {
        collection
            .insert_one(doc! { "_id": name, "val": 0, "maxval": 99, "prefixes": ["P-"] })
            .await
            .unwrap();
    }
    let refused = run(idmint(TEST).args(["install"]));
    assert_exit(&refused, 1);
    assert!(
        stderr(&refused).contains("prefix \"P-\" is owned by counters a, b"),
        "{}",
        stderr(&refused)
    );
    let indexes: Vec<String> = collection.list_index_names().await.unwrap();
    assert_eq!(
        indexes,
        ["_id_"],
        "install wrote an index of the refused ones"
    );
}

/// The prefix history.
async fn claims(test: &str) -> Vec<Document> {
    documents(&database_handle(test).await, "prefixes").await
}

/// The issue's reproduction: a prefix given up by one counter, then asked
/// for by another. Its history is kept, so neither a new counter, nor the
/// one that gave it up, nor a new counter of the old one's name after it
/// was deleted by hand, ever formats IDs with it again: each is refused
/// with what happened to the prefix (never as contention, whatever the
/// server's partial index kept), and nothing is written.
#[tokio::test]
async fn a_prefix_that_formatted_ids_is_never_owned_again() {
    const TEST: &str = "prefixes_history";
    let database = support::database(TEST).await;
    let decimal = ["--policy", "builtin:decimal"];
    assert_exit(
        &run(idmint(TEST).args([
            "counter", "create", "a", "--kind", "autoinc", "--prefix", "INV-",
        ])),
        0,
    );
    let issued = run(idmint(TEST)
        .args(["next", "a", "--count", "5"])
        .args(decimal));
    assert_exit(&issued, 0);
    assert_eq!(stdout(&issued).lines().next(), Some("INV-000000001"));
    assert_exit(
        &run(idmint(TEST).args(["counter", "prefix", "remove", "a", "INV-"])),
        0,
    );

    let before = (counters(TEST).await, claims(TEST).await);
    for (args, says) in [
        (
            &[
                "counter", "create", "b", "--kind", "autoinc", "--prefix", "INV-",
            ][..],
            "prefix \"INV-\" was given up by counter 'a'",
        ),
        (
            &["counter", "prefix", "add", "a", "INV-"][..],
            "prefix \"INV-\" was given up by counter 'a'",
        ),
    ] {
        let refused = run(idmint(TEST).args(args).args(decimal));
        assert_exit(&refused, 2);
        let message = stderr(&refused);
        assert!(message.contains(says), "{args:?}: {message}");
        assert!(message.contains("choose a new prefix"), "{message}");
        assert!(!message.contains("contended"), "{message}");
        assert_eq!(
            (counters(TEST).await, claims(TEST).await),
            before,
            "{args:?} was refused but wrote"
        );
    }

    // A counter deleted by hand, and another of its name made again: the
    // prefixes the first owned are not the second's.
    assert_exit(
        &run(idmint(TEST).args([
            "counter", "create", "c", "--kind", "autoinc", "--prefix", "C-",
        ])),
        0,
    );
    assert_exit(&run(idmint(TEST).args(["next", "c"]).args(decimal)), 0);
    database
        .collection::<Document>("counters")
        .delete_one(doc! { "_id": "c" })
        .await
        .unwrap();
    let again = run(idmint(TEST)
        .args([
            "counter", "create", "c", "--kind", "autoinc", "--prefix", "C-",
        ])
        .args(decimal));
    assert_exit(&again, 2);
    assert!(
        stderr(&again)
            .contains("prefix \"C-\" was owned by an earlier counter 'c' that no longer exists"),
        "{}",
        stderr(&again)
    );
    assert_eq!(
        counter_names(TEST).await,
        ["a"],
        "a refused create wrote its counter"
    );
}

/// A create that stopped between claiming its prefix and writing its
/// counter (the claim is there, the counter is not) looks like a counter
/// deleted since: the prefix stays blocked for every counter, the same
/// name included, which costs a prefix and never repeats an ID.
#[tokio::test]
async fn a_claim_left_half_way_blocks_the_prefix() {
    const TEST: &str = "prefixes_half_claim";
    let database = support::database(TEST).await;
    database
        .collection::<Document>("prefixes")
        .insert_one(doc! { "_id": "H-", "counter": "h", "state": "owned" })
        .await
        .unwrap();
    let before = claims(TEST).await;
    for (name, says) in [
        ("o", "prefix \"H-\" is owned by counter 'h'"),
        (
            "h",
            "prefix \"H-\" was owned by an earlier counter 'h' that no longer exists",
        ),
    ] {
        let refused = run(idmint(TEST).args(["counter", "create", name, "--prefix", "H-"]));
        assert_exit(&refused, 2);
        assert!(stderr(&refused).contains(says), "{}", stderr(&refused));
    }
    assert_eq!(claims(TEST).await, before);
    assert!(counters(TEST).await.is_empty());
}

/// Nested prefixes (the issue's two pairs): under the decimal policy a
/// periodic counter owning `X-` and an autoinc one owning `X-2026-` both
/// made `X-2026-000000001`, as did `""` and `2026-`. The policy reads an
/// ID's prefix back alone and refuses a prefix it would read back as a
/// shorter one, and the host checks it before any value is taken, also for
/// a counter another tool wrote.
#[tokio::test]
async fn nested_prefixes_never_make_one_id() {
    const TEST: &str = "prefixes_nested";
    let database = support::database(TEST).await;
    let decimal = ["--policy", "builtin:decimal"];
    for (periodic, autoinc, long) in [("p", "q", "X-2026-"), ("p0", "q0", "2026-")] {
        let short = long.trim_end_matches("2026-");
        assert_exit(
            &run(idmint(TEST)
                .args([
                    "counter", "create", periodic, "--kind", "periodic", "--prefix", short,
                ])
                .args(decimal)),
            0,
        );
        let first = run(idmint(TEST).args(["next", periodic]).args(decimal));
        assert_exit(&first, 0);
        let refused = run(idmint(TEST)
            .args([
                "counter", "create", autoinc, "--kind", "autoinc", "--prefix", long,
            ])
            .args(decimal));
        assert_exit(&refused, 2);
        assert!(
            stderr(&refused).contains(
                "the prefix must not end with what reads as a period's label and its dash ('2026-'"
            ),
            "{}",
            stderr(&refused)
        );
        let names = counter_names(TEST).await;
        assert!(
            names.iter().any(|name| name == periodic) && !names.iter().any(|name| name == autoinc),
            "{autoinc} was refused but written: {names:?}"
        );
    }

    // Made by another tool, with no policy to ask: refused before a value.
    database
        .collection::<Document>("counters")
        .insert_one(doc! { "_id": "r", "kind": "autoinc", "seq": 0_i64, "prefix": "X-2026-", "prefixes": ["X-2026-"] })
        .await
        .unwrap();
    let refused = run(idmint(TEST).args(["next", "r"]).args(decimal));
    assert_exit(&refused, 2);
    assert!(
        stderr(&refused)
            .contains("what reads as a period's label and its dash ('2026-' at byte 2)"),
        "{}",
        stderr(&refused)
    );
    let r = counters(TEST)
        .await
        .into_iter()
        .find(|c| c.get_str("_id") == Ok("r"))
        .unwrap();
    assert_eq!(r.get_i64("seq"), Ok(0), "a refused next took a value");
}
