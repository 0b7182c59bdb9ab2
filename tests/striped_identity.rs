//! A counter is one counter by its identity, not its name (issue 49): a
//! counter of the same name in another deployment, or one deleted and made
//! again, is another counter. Each test is a way a name alone used to hand
//! out an ID twice, reproduced on real servers as a user would meet it.

use mongodb::bson::{doc, Document};
use mongodb::Database;

use idmint::sequence::striping::{create_laid_out, Layout};
use idmint::sequence::{CounterKind, CounterSpec, OpenOptions, Sequence};

use crate::support::sites::{connect, idmint_across, own_servers, Site, DEADLINE};
use crate::support::{assert_exit, counter_name, documents, idmint_on, run, stderr, stdout};

/// `idmint ARGS` on `site` alone.
fn idmint_in(site: &Site, args: &[&str]) -> std::process::Output {
    run(idmint_on(&site.uri, &site.database).args(args))
}

/// What a test compares before and after a refused command: the counters
/// and the prefix claims of each database.
async fn everything(databases: &[&Database]) -> Vec<Vec<Document>> {
    let mut all = Vec::new();
    for database in databases {
        all.push(documents(database, "counters").await);
        all.push(documents(database, "prefixes").await);
    }
    all
}

/// `us` has its own `orders`, striped there alone; `eu` an unrelated
/// `orders` that handed out 1..=300. Striping "orders" across both used to
/// take `us`'s map for a copy of `eu`'s counter, start above `us`'s values
/// only, and hand out `eu`'s values again. It is another counter: refused,
/// named, and nothing is written in either deployment.
#[tokio::test]
async fn a_counter_of_the_same_name_in_another_deployment_is_another_counter() {
    const TEST: &str = "identity_other_deployment";
    let (_servers, sites) = own_servers(TEST, 2);
    let (eu, us) = (&sites[0], &sites[1]);
    let deployments = connect(&sites, DEADLINE).await;
    let (eu_db, us_db) = (
        &deployments.get("eu").unwrap().database,
        &deployments.get("us").unwrap().database,
    );
    for (site, args) in [
        (
            us,
            &[
                "counter",
                "create",
                "orders",
                "--kind",
                "autoinc",
                "--stripes",
                "2",
            ][..],
        ),
        (us, &["seq", "orders", "--count", "5"]),
        (eu, &["counter", "create", "orders", "--kind", "autoinc"]),
        (eu, &["seq", "orders", "--count", "300"]),
    ] {
        assert_exit(&idmint_in(site, args), 0);
    }
    let before = everything(&[eu_db, us_db]).await;

    let refused = run(&mut idmint_across(
        &sites,
        &["counter", "stripes", "orders", "--set", "eu:1,us:1"],
    ));
    assert_exit(&refused, 2);
    let said = stderr(&refused);
    assert!(
        said.contains("deployment \"us\" holds another counter of its name")
            && said.contains("made on its own there"),
        "{said}"
    );
    assert_eq!(everything(&[eu_db, us_db]).await, before, "nothing written");

    // Nor is it adopted when the counter is made across both.
    let made = run(&mut idmint_across(
        &sites,
        &[
            "counter",
            "create",
            "orders",
            "--kind",
            "autoinc",
            "--stripes",
            "eu:1,us:1",
        ],
    ));
    assert_exit(&made, 2);
    assert_eq!(everything(&[eu_db, us_db]).await, before, "nothing written");

    // Each goes on as its own counter.
    let next = idmint_in(eu, &["seq", "orders", "--count", "1"]);
    assert_exit(&next, 0);
    assert_eq!(stdout(&next).trim(), "301");
}

/// In `us`, counter `inv` formatted `INV-000000001..3` and a DBA deleted
/// its document. Made again in `us` alone with `INV-`, it is refused by the
/// history of prefixes; made across `eu` and `us`, the claim in `us` used
/// to count `inv`'s old claim as its own, and `next` formatted
/// `INV-000000001` again. The new `inv` is another incarnation: refused,
/// naming the prefix and the deployment, and nothing is left behind.
#[tokio::test]
async fn a_retired_prefix_is_not_owned_again_across_deployments() {
    const TEST: &str = "identity_retired_prefix";
    let (_servers, sites) = own_servers(TEST, 2);
    let us = &sites[1];
    let deployments = connect(&sites, DEADLINE).await;
    let (eu_db, us_db) = (
        &deployments.get("eu").unwrap().database,
        &deployments.get("us").unwrap().database,
    );
    let create = [
        "counter", "create", "inv", "--kind", "autoinc", "--prefix", "INV-",
    ];
    assert_exit(&idmint_in(us, &create), 0);
    let formatted = idmint_in(
        us,
        &["next", "inv", "--count", "3", "--policy", "builtin:decimal"],
    );
    assert_exit(&formatted, 0);
    assert!(
        stdout(&formatted).contains("INV-000000001"),
        "{}",
        stdout(&formatted)
    );
    us_db
        .collection::<Document>("counters")
        .delete_one(doc! { "_id": "inv" })
        .await
        .unwrap();

    let again_in_us = idmint_in(us, &create);
    assert_exit(&again_in_us, 2);
    assert!(
        stderr(&again_in_us).contains("INV-"),
        "{}",
        stderr(&again_in_us)
    );

    let before = everything(&[eu_db, us_db]).await;
    let mut across = create.to_vec();
    across.extend(["--stripes", "eu:1,us:1"]);
    let refused = run(&mut idmint_across(&sites, &across));
    assert_exit(&refused, 2);
    let said = stderr(&refused);
    assert!(
        said.contains("\"us\"") && said.contains("INV-") && said.contains("inv"),
        "{said}"
    );
    assert_eq!(
        everything(&[eu_db, us_db]).await,
        before,
        "nothing written in either deployment"
    );
}

/// A handle holds counter `orders`, striped; the counter is deleted (map
/// and lanes) and made again under its name, striped the same way. The
/// new counter's lanes start again at 1, values the first one handed out:
/// the old handle must take none of them, and says why.
#[tokio::test]
async fn a_handle_takes_nothing_from_a_counter_made_again_under_its_name() {
    const TEST: &str = "identity_made_again";
    let sites = Site::shared_pair(TEST);
    let deployments = connect(&sites[..1], DEADLINE).await;
    let database = &deployments.preferred().database;
    let name = counter_name("orders");
    let spec = CounterSpec::of(CounterKind::Autoinc).prefixes(vec!["ORD-".to_string()]);
    let layout: Layout = "2".parse().unwrap();
    create_laid_out(database, None, &name, &spec, &layout)
        .await
        .unwrap();
    let (old, _) = Sequence::open(database, name.clone(), &OpenOptions::default())
        .await
        .unwrap();
    let first = old.take(4, 0).await.unwrap();
    assert_eq!(first.len(), 4);

    // Deleted as a DBA would, map and lanes, and made again (its prefix
    // is retired: the new one formats raw values).
    database
        .collection::<Document>("counters")
        .delete_many(doc! { "_id": { "$regex": "^orders" } })
        .await
        .unwrap();
    let raw = CounterSpec::of(CounterKind::Autoinc).prefixes(Vec::new());
    create_laid_out(database, None, &name, &raw, &layout)
        .await
        .unwrap();

    let refused = old.take(1, 0).await.unwrap_err().to_string();
    assert!(
        refused.contains("made again since it was opened"),
        "{refused}"
    );
    // The new counter's lanes were not taken from.
    let (new, _) = Sequence::open(database, name.clone(), &OpenOptions::default())
        .await
        .unwrap();
    let mut values: Vec<u64> = new
        .take(2, 0)
        .await
        .unwrap()
        .iter()
        .map(|stamp| stamp.sequence)
        .collect();
    values.extend(
        new.take(2, 0)
            .await
            .unwrap()
            .iter()
            .map(|stamp| stamp.sequence),
    );
    values.sort_unstable();
    assert_eq!(values, [1, 2, 3, 4], "each lane's first values, untouched");
}

/// A counter across deployments made before incarnations (none in its map
/// copies, lanes and prefix claims, as an earlier idmint wrote them) is
/// given one by its next change of stripes: its copies there are its own
/// (they span from its home), its claims too, and afterwards every copy,
/// lane and claim carries the one incarnation.
#[tokio::test]
async fn a_counter_made_before_incarnations_is_given_one_by_its_next_change() {
    const TEST: &str = "identity_adopted";
    let (_servers, sites) = own_servers(TEST, 2);
    let deployments = connect(&sites, DEADLINE).await;
    let made = run(&mut idmint_across(
        &sites,
        &[
            "counter",
            "create",
            "orders",
            "--kind",
            "autoinc",
            "--stripes",
            "eu:1,us:1",
        ],
    ));
    assert_exit(&made, 0);
    assert_exit(
        &run(&mut idmint_across(
            &sites,
            &["seq", "orders", "--count", "6"],
        )),
        0,
    );
    let databases: Vec<&Database> = deployments
        .list()
        .iter()
        .map(|deployment| &deployment.database)
        .collect();
    for database in &databases {
        for (collection, fields) in [
            (
                "counters",
                doc! { "incarnation": "", "lane.incarnation": "" },
            ),
            ("prefixes", doc! { "incarnation": "" }),
        ] {
            database
                .collection::<Document>(collection)
                .update_many(doc! {}, doc! { "$unset": fields })
                .await
                .unwrap();
        }
    }

    let changed = run(&mut idmint_across(
        &sites,
        &["counter", "stripes", "orders", "--set", "eu:2,us:2"],
    ));
    assert_exit(&changed, 0);
    let mut seen = Vec::new();
    for database in &databases {
        for document in documents(database, "counters").await {
            if document.get_document("sealed").is_ok() {
                // A lane of an earlier generation, sealed for good.
                continue;
            }
            let incarnation = match document.get_str("kind") {
                Ok("lane") => document
                    .get_document("lane")
                    .unwrap()
                    .get_str("incarnation"),
                _ => document.get_str("incarnation"),
            };
            seen.push(incarnation.unwrap_or("none").to_string());
        }
        for claim in documents(database, "prefixes").await {
            seen.push(claim.get_str("incarnation").unwrap_or("none").to_string());
        }
    }
    seen.dedup();
    assert_eq!(seen.len(), 1, "one incarnation everywhere: {seen:?}");
    assert_ne!(seen[0], "none");
    let taken = run(&mut idmint_across(
        &sites,
        &["seq", "orders", "--count", "4"],
    ));
    assert_exit(&taken, 0);
    assert!(
        stdout(&taken)
            .lines()
            .all(|value| value.parse::<u64>().unwrap() > 6),
        "{}",
        stdout(&taken)
    );
}
