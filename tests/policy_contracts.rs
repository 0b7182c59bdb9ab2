//! Contract 0.4.0 end to end: a periodic counter's IDs carry their period
//! through the built-in decimal policy (`idmint next`), read back by
//! `idmint validate`; a policy that cannot write periods, on the current
//! contract or on 0.3.0, is refused for the counter before a value is taken.
//!
//! Contract 0.5.0: a snowflake counter's tag reaches a 0.5.0 policy (the
//! UUIDv7 one writes it and reads it back) and not a 0.4.0 one (base32),
//! through whose adapter the same counter's IDs are as they were.

use serde_json::Value;

use crate::support::{self, assert_exit, counter_doc, idmint, run, stderr, stdout};

#[tokio::test]
async fn a_periodic_counter_prints_its_period_through_the_decimal_policy() {
    const TEST: &str = "contracts_periodic_decimal";
    support::database(TEST).await;
    let created = run(idmint(TEST).args([
        "counter", "create", "inv", "--kind", "periodic", "--prefix", "INV-",
    ]));
    assert_exit(&created, 0);

    let next =
        run(idmint(TEST).args(["next", "inv", "--count", "3", "--policy", "builtin:decimal"]));
    assert_exit(&next, 0);
    // The period is the server's year when it handed the values out: the
    // label the counter now holds (not this machine's clock).
    let current = counter_doc(TEST, "inv").await.expect("the counter exists");
    let year = current.get_str("current").expect("a current period");
    assert!(
        year.len() == 4 && year.bytes().all(|b| b.is_ascii_digit()),
        "{current}"
    );
    assert_eq!(
        stdout(&next),
        format!("INV-{year}-000000001\nINV-{year}-000000002\nINV-{year}-000000003\n")
    );

    // The policy reads the period back.
    let id = format!("INV-{year}-000000002");
    let checked = run(idmint(TEST).args([
        "validate",
        "--json",
        "--prefix",
        "INV-",
        "--policy",
        "builtin:decimal",
        &id,
    ]));
    assert_exit(&checked, 0);
    let report: serde_json::Value = serde_json::from_str(&stdout(&checked)).unwrap();
    assert_eq!(
        report["results"][0]["parts"],
        serde_json::json!({
            "prefix": "INV-",
            "timestamp_micros": 0,
            "sequence": 2,
            "period": year,
        }),
        "{report}"
    );
}

#[tokio::test]
async fn a_policy_that_cannot_write_the_period_is_refused_before_a_value_is_taken() {
    const TEST: &str = "contracts_periodic_refused";
    support::database(TEST).await;
    let created = run(idmint(TEST).args([
        "counter", "create", "inv", "--kind", "periodic", "--prefix", "INV-",
    ]));
    assert_exit(&created, 0);
    let before = counter_doc(TEST, "inv").await.expect("the counter exists");

    // The base32 policy (contract 0.4.0) writes no period; the decimal
    // policy built against contract 0.3.0 never sees one.
    let decimal_0_3 = support::fixture_policy("decimal-0.3");
    for policy in ["builtin:base32", decimal_0_3] {
        let refused = run(idmint(TEST).args(["next", "inv", "--policy", policy]));
        assert_exit(&refused, 4);
        assert!(
            stderr(&refused).contains("does not write the period into its IDs")
                && stderr(&refused).contains("counter 'inv' is periodic")
                && stderr(&refused).contains("--policy builtin:decimal"),
            "{policy}: {}",
            stderr(&refused)
        );
        assert_eq!(
            counter_doc(TEST, "inv").await,
            Some(before.clone()),
            "{policy}"
        );
    }
}

/// `idmint validate ID --policy POLICY --layout 41,10,12 --json`: the
/// snowflake fields the policy read back.
fn read_back(test: &str, id: &str, policy: &str) -> Value {
    let checked = run(idmint(test).args([
        "validate", id, "--policy", policy, "--layout", "41,10,12", "--json",
    ]));
    assert_exit(&checked, 0);
    let checked: Value = serde_json::from_str(&stdout(&checked)).unwrap();
    checked["results"][0]["parts"]["snowflake"].clone()
}

#[tokio::test]
async fn a_snowflake_counter_tag_reaches_a_0_5_policy_and_not_an_older_one() {
    const TEST: &str = "contracts_snowflake_tag";
    support::database(TEST).await;
    assert_exit(
        &run(idmint(TEST).args(["counter", "create", "ids", "--kind", "snowflake"])),
        0,
    );
    let next = |policy: &str| {
        let output = run(idmint(TEST).args(["next", "ids", "--policy", policy]));
        assert_exit(&output, 0);
        stdout(&output).trim().to_string()
    };
    let (base32, uuid) = (next("builtin:base32"), next("builtin:uuidv7"));
    assert_eq!(base32.len(), 13, "{base32}");
    let old = read_back(TEST, &base32, "builtin:base32");
    assert_eq!(old.get("tag"), None, "0.4.0 carries no tag: {old}");
    let new = read_back(TEST, &uuid, "builtin:uuidv7");
    assert_eq!(new["tag"].as_u64(), Some(1), "{new}");
    assert_eq!(
        new["worker"], old["worker"],
        "one process's worker id each time: {new} {old}"
    );
}
