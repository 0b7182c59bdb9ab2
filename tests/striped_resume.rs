//! A change of stripes never leaves a counter without values for longer
//! than a deployment it needs is unreachable (issue 49, §3): a change held
//! after its seals while `us` is killed with `kill -9` stops half way,
//! the counter then has no live lane; once `us` answers again, the takers
//! finish the change themselves, with no person acting, and every value
//! taken before, during and after is taken once. And `counter stripes NAME
//! --resume` finishes such a change by hand.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use idmint::parts::Stamp;
use idmint::sequence::striping::hooks::{hold, Point};
use idmint::sequence::striping::{create_laid_out, set_layout, Layout, RESUME_AFTER};
use idmint::sequence::{CounterKind, CounterSpec};

use crate::support::sites::{connect, idmint_across, open_across_with, own_servers, DEADLINE};
use crate::support::takers::{leases_of, Takers, SLACK};
use crate::support::wait::{within, PATIENCE};
use crate::support::{assert_exit, counter_name, database_name, run, stderr, stdout};

/// What makes a value unique for a counter of `kind`: a cyclic counter's
/// (timestamp, value) pair, a periodic counter's (period, value), every
/// other kind's value (a snowflake ID whole).
fn key(kind: CounterKind, stamp: &Stamp) -> (u64, String, u64) {
    let timestamp = match kind {
        CounterKind::Cyclic => stamp.timestamp_micros,
        _ => 0,
    };
    let period = stamp
        .period
        .map(|period| period.to_string())
        .unwrap_or_default();
    (timestamp, period, stamp.sequence)
}

/// Counter `c` of `spec`, one lane in `eu` and one in `us`, taken from by
/// four takers; a change to `eu:2,us:2` held after its seals while `us` is
/// killed, so that it stops half way; `us` restarted once the takers have
/// failed for [`RESUME_AFTER`]. Takes succeed again within the take's
/// deadline of `us` answering, the change finished as it was asked, and no
/// value was taken twice.
async fn a_change_stopped_by_a_dead_deployment_finishes_itself(
    test: &'static str,
    spec: CounterSpec,
) {
    let kind = spec.kind;
    let (mut owned, sites) = own_servers(test, 2);
    let deployments = connect(&sites, DEADLINE).await;
    let name = counter_name("c");
    let preferred = deployments.preferred().database.clone();
    let layout: Layout = "eu:1,us:1".parse().unwrap();
    create_laid_out(
        &preferred,
        Some(&deployments),
        &name,
        &spec.prefixes(Vec::new()),
        &layout,
    )
    .await
    .unwrap();
    let (sequence, _) =
        open_across_with(&deployments, "c", leases_of(Duration::from_secs(3))).await;
    let takers = Takers::start(&sequence, 4);
    takers.progress(100, "values from both deployments").await;

    // The change, held with its lanes sealed and its new ones not written;
    // `us` killed meanwhile: it cannot write there, and stops.
    let held = hold(&database_name(test), "c", Point::BeforeLaneWrites, 1);
    let change = {
        let (preferred, deployments, name) = (preferred.clone(), deployments.clone(), name.clone());
        tokio::spawn(async move {
            let wider: Layout = "eu:2,us:2".parse().unwrap();
            set_layout(&preferred, Some(&deployments), &name, &wider).await
        })
    };
    held.arrived().await;
    owned[1].kill();
    held.release().await;
    let stopped = change.await.unwrap().unwrap_err().to_string();
    assert!(
        stopped.contains("stopped half way") && stopped.contains("\"us\""),
        "{stopped}"
    );

    // An outage of at least the time a handle watches a change half way
    // before it finishes it: the takers fail meanwhile, taking nothing.
    within(PATIENCE, "takes failing for a while", async {
        while takers.failing_for() < RESUME_AFTER {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let before = takers.count();
    owned[1].restart();
    let answered = Instant::now();
    let back = within(PATIENCE, "a take after the restart", async {
        loop {
            if let Ok(stamps) = sequence.take(1, 0).await {
                return stamps;
            }
        }
    })
    .await;
    let resumed_after = answered.elapsed();
    takers
        .progress_after_failures(100, "values after the change finished")
        .await;
    let map = sequence.state().await.unwrap().striped.unwrap();
    let (stamps, _, _) = takers.stop_stamps().await;
    let _ = sequence.close().await;
    drop(owned);

    assert!(
        resumed_after <= DEADLINE + SLACK,
        "takes resumed {resumed_after:?} after us answered"
    );
    assert!(map.live && map.modulus == 4, "{}", map.describe());
    assert_eq!(map.placement, ["eu", "eu", "us", "us"]);
    let mut seen = HashSet::new();
    for stamp in stamps.iter().chain(&back) {
        assert!(seen.insert(key(kind, stamp)), "{stamp:?} taken twice");
    }
    assert!(stamps.len() > before, "values after the restart");
    eprintln!("{test}: takes resumed {resumed_after:?} after us answered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_autoinc_counter_finishes_a_change_a_dead_deployment_stopped() {
    a_change_stopped_by_a_dead_deployment_finishes_itself(
        "resume_autoinc",
        CounterSpec::of(CounterKind::Autoinc),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_segment_counter_finishes_a_change_a_dead_deployment_stopped() {
    a_change_stopped_by_a_dead_deployment_finishes_itself(
        "resume_segment",
        CounterSpec::of(CounterKind::Segment).step(20),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cyclic_counter_finishes_a_change_a_dead_deployment_stopped() {
    a_change_stopped_by_a_dead_deployment_finishes_itself(
        "resume_cyclic",
        CounterSpec::of(CounterKind::Cyclic).maxval(99),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_periodic_counter_finishes_a_change_a_dead_deployment_stopped() {
    a_change_stopped_by_a_dead_deployment_finishes_itself(
        "resume_periodic",
        CounterSpec::of(CounterKind::Periodic),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snowflake_counter_finishes_a_change_a_dead_deployment_stopped() {
    a_change_stopped_by_a_dead_deployment_finishes_itself(
        "resume_snowflake",
        CounterSpec::of(CounterKind::Snowflake),
    )
    .await;
}

/// `counter stripes NAME --resume` finishes a change that stopped half way
/// (no taker around to do it), and says so; with nothing half way it says
/// that, changing nothing.
#[tokio::test]
async fn resume_finishes_a_change_by_hand() {
    const TEST: &str = "resume_by_hand";
    let (mut owned, sites) = own_servers(TEST, 2);
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
    let nothing = run(&mut idmint_across(
        &sites,
        &["counter", "stripes", "orders", "--resume"],
    ));
    assert_exit(&nothing, 0);
    assert!(
        stdout(&nothing).contains("no change of stripes under way"),
        "{}",
        stdout(&nothing)
    );

    let held = hold(&database_name(TEST), "orders", Point::BeforeLaneWrites, 1);
    let change = {
        let preferred = deployments.preferred().database.clone();
        let deployments = deployments.clone();
        tokio::spawn(async move {
            let wider: Layout = "eu:2,us:1".parse().unwrap();
            set_layout(
                &preferred,
                Some(&deployments),
                &counter_name("orders"),
                &wider,
            )
            .await
        })
    };
    held.arrived().await;
    owned[1].kill();
    held.release().await;
    change.await.unwrap().unwrap_err();
    let half_way = run(&mut idmint_across(
        &sites,
        &["seq", "orders", "--count", "1"],
    ));
    assert_exit(&half_way, 3);
    assert!(
        stderr(&half_way).contains("--resume"),
        "{}",
        stderr(&half_way)
    );
    owned[1].restart();

    let resumed = run(&mut idmint_across(
        &sites,
        &["counter", "stripes", "orders", "--resume"],
    ));
    assert_exit(&resumed, 0);
    assert!(
        stdout(&resumed).contains("3 lanes in eu, us"),
        "{}",
        stdout(&resumed)
    );
    let taken = run(&mut idmint_across(
        &sites,
        &["seq", "orders", "--count", "3"],
    ));
    assert_exit(&taken, 0);
}

/// `counter show` of a change of stripes stopped half way long ago (its
/// claim 10 s old or more: no process is still making it) finishes it
/// before it shows the counter; one claimed just now it leaves to its
/// process, and says what it makes.
#[tokio::test]
async fn counter_show_finishes_a_change_stopped_long_ago() {
    use mongodb::bson::{doc, DateTime, Document};
    const TEST: &str = "resume_by_show";
    let database = crate::support::database(TEST).await;
    crate::support::create(
        TEST,
        "orders",
        &["--kind", "autoinc", "--stripes", "3", "--raw"],
    );
    let held = hold(&database_name(TEST), "orders", Point::BeforeLaneWrites, 1);
    let stopped = {
        let database = database.clone();
        tokio::spawn(async move {
            idmint::sequence::striping::set_stripes(&database, &counter_name("orders"), 2).await
        })
    };
    held.arrived().await;
    stopped.abort();
    assert!(stopped.await.unwrap_err().is_cancelled());
    drop(held);

    let show = || run(crate::support::idmint(TEST).args(["counter", "show", "orders"]));
    let fresh = stdout(&show());
    assert!(
        fresh.contains("a change of stripes to 2 under way"),
        "{fresh}"
    );
    // Its claim, as if made a minute ago.
    database
        .collection::<Document>("counters")
        .update_one(
            doc! { "_id": "orders" },
            doc! { "$set": { "striped.since": DateTime::from_millis(
                DateTime::now().timestamp_millis() - 60_000,
            ) } },
        )
        .await
        .unwrap();
    let finished = stdout(&show());
    assert!(finished.contains("generation 3: 2 lanes"), "{finished}");
}
