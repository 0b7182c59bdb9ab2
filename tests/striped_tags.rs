//! A snowflake counter's tag brought into another deployment (issue 49, §2):
//! a create in that deployment that drew the same tag just before is held
//! with the library's hooks between its draw and its claim, or between its
//! claim and its document, while the spread runs. The two counters of one
//! database never share a tag: the create draws another one, or the spread
//! is refused naming the counter that has it; nothing is half-written.

use mongodb::bson::{doc, Document};
use mongodb::Database;

use idmint::mongo::collections::TAGS;
use idmint::sequence::striping::hooks::{hold, Point};
use idmint::sequence::striping::{set_layout, Deployments, Restriped, StripingError};
use idmint::sequence::{create, CounterKind, CounterSpec, SequenceError, TAGS_ID};

use crate::support::sites::{connect, database_of, Site, DEADLINE};
use crate::support::{counter_document, counter_name, documents, replace_counter};

/// The tag of counter `name` in `database`, as its document has it.
async fn tag_of(database: &Database, name: &str) -> Option<i64> {
    let document = counter_document(database, name).await?;
    document.get_i64("tag").ok()
}

/// The claims of tags in `database`, by tag: the counter of each.
async fn claims(database: &Database) -> Vec<(i64, String)> {
    let mut claims: Vec<(i64, String)> = documents(database, TAGS)
        .await
        .into_iter()
        .map(|claim| {
            (
                claim.get_i64("_id").unwrap(),
                claim.get_str("counter").unwrap().to_string(),
            )
        })
        .collect();
    claims.sort();
    claims
}

/// A raw snowflake counter's spec.
fn snowflake() -> CounterSpec {
    CounterSpec::of(CounterKind::Snowflake).prefixes(Vec::new())
}

/// `eu` and `us`, two databases of the shared server, emptied; in `eu` the
/// snowflake counter `spread`, tag 1, its first.
async fn sites(test: &str) -> (Deployments, Database, Database) {
    let sites = Site::shared_pair(test);
    let deployments = connect(&sites, DEADLINE).await;
    let (eu, us) = (
        database_of(&deployments, "eu"),
        database_of(&deployments, "us"),
    );
    create(&eu, &counter_name("spread"), &snowflake())
        .await
        .unwrap();
    assert_eq!(tag_of(&eu, "spread").await, Some(1));
    (deployments, eu, us)
}

/// While `us` creates `fresh` held at `point` (its tag drawn: 1, as
/// `spread`'s), `spread` is striped across `eu` and `us`. The outcome of
/// the change of stripes and of the create.
async fn race(
    deployments: &Deployments,
    eu: &Database,
    us: &Database,
    point: Point,
) -> Result<Restriped, SequenceError> {
    let held = hold(us.name(), "fresh", point, 1);
    let creating = {
        let us = us.clone();
        tokio::spawn(async move { create(&us, &counter_name("fresh"), &snowflake()).await })
    };
    held.arrived().await;
    let spread = set_layout(
        eu,
        Some(deployments),
        &counter_name("spread"),
        &"eu:1,us:1".parse().unwrap(),
    )
    .await;
    held.release().await;
    creating.await.unwrap().unwrap();
    spread
}

/// The two counters of `us` (`fresh`, and `spread` if it spans it) have
/// two tags.
async fn never_one_tag(eu: &Database, us: &Database, spread: &Result<Restriped, SequenceError>) {
    let (spread_tag, fresh_tag) = (tag_of(eu, "spread").await, tag_of(us, "fresh").await);
    assert_eq!(spread_tag, Some(1));
    assert!(fresh_tag.is_some(), "fresh was created without a tag");
    if spread.is_ok() {
        assert_ne!(
            spread_tag, fresh_tag,
            "spread spans us with tag {spread_tag:?}, and fresh, made there, has it too"
        );
    }
}

/// Held between its draw and its claim: the spread claims the tag first,
/// and the create draws another one.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_create_that_drew_a_tag_spread_here_meanwhile_draws_another() {
    const TEST: &str = "striped_tags_drawn";
    let (deployments, eu, us) = sites(TEST).await;
    let spread = race(&deployments, &eu, &us, Point::AfterTagDrawn).await;
    never_one_tag(&eu, &us, &spread).await;

    // The spread won: spread spans us, its tag claimed there; fresh drew
    // tag 2 and claimed it.
    let restriped = spread.unwrap();
    assert_eq!(restriped.map.spans, ["eu", "us"]);
    assert_eq!(tag_of(&us, "fresh").await, Some(2));
    assert_eq!(
        claims(&us).await,
        [(1, "spread".to_string()), (2, "fresh".to_string())]
    );
    // The claim of tag 1 in us is spread's own: its incarnation.
    let incarnation = counter_document(&eu, "spread").await.unwrap();
    let claim = us
        .collection::<Document>(TAGS)
        .find_one(doc! { "_id": 1_i64 })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        claim.get_str("incarnation").ok(),
        incarnation.get_str("incarnation").ok(),
        "{claim}"
    );
    // Laid out again, spread finds its own claim in us.
    set_layout(
        &eu,
        Some(&deployments),
        &counter_name("spread"),
        &"eu:1,us:1".parse().unwrap(),
    )
    .await
    .unwrap();
}

/// Held between its claim and its document: the spread finds the claim and
/// is refused naming `fresh`, and `spread` is left as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_spread_to_a_deployment_whose_create_claimed_the_tag_is_refused_naming_it() {
    const TEST: &str = "striped_tags_claimed";
    let (deployments, eu, us) = sites(TEST).await;
    let spread = race(&deployments, &eu, &us, Point::AfterTagClaimed).await;
    never_one_tag(&eu, &us, &spread).await;

    match spread {
        Err(SequenceError::Striping {
            source:
                StripingError::TagInDeployment {
                    deployment,
                    tag,
                    owner,
                },
            ..
        }) => assert_eq!(
            (deployment.as_str(), tag, owner.as_str()),
            ("us", 1, "fresh")
        ),
        other => panic!("the spread was not refused for its tag: {other:?}"),
    }
    assert_eq!(tag_of(&us, "fresh").await, Some(1));
    assert_eq!(claims(&us).await, [(1, "fresh".to_string())]);
    // Nothing of spread in us, and spread in eu as it was: unstriped.
    assert!(counter_document(&us, "spread").await.is_none());
    let spread = counter_document(&eu, "spread").await.unwrap();
    assert_eq!(spread.get_str("kind").ok(), Some("snowflake"), "{spread}");
    assert!(spread.get("striped").is_none(), "{spread}");
}

/// A counter made before tag claims has its tag in its document alone: a
/// spread of that tag finds it there and is refused naming it, and claims
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_counter_made_before_tag_claims_still_keeps_its_tag() {
    const TEST: &str = "striped_tags_older";
    let (deployments, eu, us) = sites(TEST).await;
    create(&us, &counter_name("older"), &snowflake())
        .await
        .unwrap();
    let mut older = counter_document(&us, "older").await.unwrap();
    older.remove("_id");
    older.remove("incarnation");
    replace_counter(&us, "older", older).await;
    us.collection::<Document>(TAGS).drop().await.unwrap();
    assert_eq!(tag_of(&us, "older").await, Some(1));

    let refused = set_layout(
        &eu,
        Some(&deployments),
        &counter_name("spread"),
        &"eu:1,us:1".parse().unwrap(),
    )
    .await;
    assert!(
        matches!(
            &refused,
            Err(SequenceError::Striping {
                source: StripingError::TagInDeployment { owner, tag: 1, .. },
                ..
            }) if owner == "older"
        ),
        "{refused:?}"
    );
    assert!(claims(&us).await.is_empty());
    // us's tags were raised past it all the same.
    let tags = counter_document(&us, TAGS_ID).await.unwrap();
    assert_eq!(tags.get_i64("last"), Ok(1), "{tags}");
}
