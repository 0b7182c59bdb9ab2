//! A deployment lost for good (issue 49 §4): the lanes of a counter across
//! deployments hand out values (cyclic lanes: timestamps; snowflake lanes:
//! time their holders reserve; periodic lanes: in periods up to their
//! ceiling's) only up to a ceiling another deployment recorded first
//! (`ceilings.DEPLOYMENT` in its copy of the map), raised a chunk at a
//! time; `idmint counter stripes NAME --forget DEPLOYMENT` is refused
//! while the deployment answers, and once its server is killed and its
//! data removed, starts a generation without it above every value its
//! lanes handed out.

use std::collections::BTreeSet;

use mongodb::bson::{doc, Document};
use mongodb::Database;

use idmint::sequence::striping::{
    Deployment, Deployments, StripeMap, CEILINGS, CEILING_CHUNK, CEILING_PERIODS,
};
use idmint::sequence::Sequence;

use crate::support::sites::{
    connect, idmint_across, in_deployment, open_across, own_servers, DEADLINE,
};
use crate::support::{assert_exit, run, stderr, stdout};

/// How many values each take asks for (a segment counter's step too).
const COUNT: usize = 1000;

/// How many takes the handle that prefers `us` makes before the checks.
const US_TAKES: usize = 300;

/// How many takes the handle that prefers `eu` makes.
const EU_TAKES: usize = 100;

/// Counter `orders`'s document in `database`.
async fn document(database: &Database, id: &str) -> Document {
    database
        .collection::<Document>("counters")
        .find_one(doc! { "_id": id })
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{id} is missing"))
}

/// The `last` and `ceiling` of lane `id` in `database`.
async fn lane_marks(database: &Database, id: &str) -> (u64, Option<u64>) {
    let lane = document(database, id).await;
    (
        lane.get_i64("last").unwrap() as u64,
        lane.get_i64("ceiling").ok().map(|ceiling| ceiling as u64),
    )
}

/// The ceiling `database`'s copy of `orders`'s map records for `us`.
async fn recorded_for_us(database: &Database) -> Option<u64> {
    let map = document(database, "orders").await;
    map.get_document(CEILINGS)
        .ok()
        .and_then(|ceilings| ceilings.get_i64("us").ok())
        .map(|ceiling| ceiling as u64)
}

/// `deployments`' databases `eu` and `us`, and the same deployments with
/// `us` preferred.
fn eu_us(deployments: &Deployments) -> (Database, Database, Deployments) {
    let eu = deployments.get("eu").unwrap().database.clone();
    let us = deployments.get("us").unwrap().database.clone();
    let us_first = Deployments::new(vec![
        Deployment {
            name: "us".into(),
            database: us.clone(),
        },
        Deployment {
            name: "eu".into(),
            database: eu.clone(),
        },
    ])
    .unwrap()
    .deadline(DEADLINE);
    (eu, us, us_first)
}

/// `count` values of `sequence`, each new to `seen`.
async fn take(sequence: &Sequence, seen: &mut BTreeSet<u64>) -> Result<Vec<u64>, String> {
    let taken = sequence
        .take(COUNT, 0)
        .await
        .map_err(|error| error.to_string())?;
    let values: Vec<u64> = taken.iter().map(|stamp| stamp.sequence).collect();
    for value in &values {
        assert!(seen.insert(*value), "{value} handed out twice");
    }
    Ok(values)
}

/// A counter of `kind` across `eu:2,us:2`: takers in this process (one
/// preferring each deployment) take from it; the ceilings of `us`'s lanes
/// are raised a chunk at a time (counted by watching each lane's ceiling
/// after every take of the handle that prefers `us`); with `outage`, while
/// `eu` is down, `us`'s lanes hand out nothing above what `eu` recorded;
/// `--forget us` is refused while `us` answers, and accepted once it is
/// killed and its data removed; every value handed out after it is above
/// every value `us`'s lanes handed out.
async fn forget_us(test: &str, kind: &str, chunk_local: u64, outage: bool) {
    let (mut owned, sites) = own_servers(test, 2);
    let deployments = connect(&sites, DEADLINE).await;
    let mut create = vec![
        "counter",
        "create",
        "orders",
        "--kind",
        kind,
        "--raw",
        "--stripes",
        "eu:2,us:2",
    ];
    if kind == "segment" {
        create.extend(["--step", "1000"]);
    }
    assert_exit(&run(&mut idmint_across(&sites, &create)), 0);
    let (eu, us, us_first) = eu_us(&deployments);
    let (from_eu, map) = open_across(&deployments, "orders").await;
    let (from_us, _) = open_across(&us_first, "orders").await;
    assert!(map.bounded, "{map:?}");
    let us_lanes = ["orders#2", "orders#3"];
    for id in us_lanes {
        // Nothing handed out yet, a first chunk to hand out.
        assert_eq!(
            lane_marks(&us, id).await,
            (map.base, Some(map.base + chunk_local * map.modulus))
        );
    }

    // Takes; each raise of a lane's ceiling seen (its ceiling after each
    // take of the one handle that takes from `us`'s lanes).
    let mut seen = BTreeSet::new();
    let mut ceilings: BTreeSet<(&str, u64)> = BTreeSet::new();
    for _ in 0..US_TAKES {
        take(&from_us, &mut seen).await.unwrap();
        for id in us_lanes {
            let (last, ceiling) = lane_marks(&us, id).await;
            let ceiling = ceiling.unwrap();
            assert!(
                last <= ceiling,
                "{id}: last {last} above its ceiling {ceiling}"
            );
            if ceiling > map.base {
                ceilings.insert((id, ceiling));
            }
        }
    }
    for _ in 0..EU_TAKES {
        take(&from_eu, &mut seen).await.unwrap();
    }
    let from_us_lanes = seen
        .iter()
        .filter(|value| in_deployment(&map, "us", **value))
        .count() as u64;
    // One raise per chunk of each lane, none per take.
    let local = from_us_lanes / COUNT as u64 * COUNT as u64 / 2;
    let raises = ceilings.len() as u64;
    // Each lane's first chunk, written with it, and one more each time
    // half a chunk is left (raised ahead of need).
    let most = 2 * (2 * local / chunk_local + 2);
    assert!(
        raises >= 2 && raises <= most,
        "{raises} raises for {from_us_lanes} values of us's lanes ({local} local values each, a \
         chunk {chunk_local}): expected 2 to {most}"
    );
    assert!(raises * 10 < US_TAKES as u64, "{raises} raises");
    eprintln!(
        "{kind}: {raises} raises of us's ceilings (each lane's first one included) for \
         {from_us_lanes} values of us's lanes in {US_TAKES} takes of {COUNT}"
    );
    // What `eu` recorded is at or above every ceiling of `us`'s lanes,
    // their first included.
    let recorded = recorded_for_us(&eu).await.unwrap();
    for id in us_lanes {
        let (_, ceiling) = lane_marks(&us, id).await;
        assert!(
            ceiling.unwrap() <= recorded,
            "{id}: {ceiling:?} above {recorded}"
        );
    }
    if kind == "periodic" {
        // The period of each lane's ceiling is one `eu` recorded: its
        // server's label of this year.
        let map = document(&eu, "orders").await;
        let recorded = map
            .get_document(CEILING_PERIODS)
            .unwrap()
            .get_str("us")
            .unwrap()
            .to_string();
        for id in us_lanes {
            let lane = document(&us, id).await;
            let period = lane.get_str("ceiling_period").unwrap();
            assert!(
                period <= recorded.as_str() && period == lane.get_str("current").unwrap(),
                "{id}: ceiling period {period:?}, current {:?}, eu recorded {recorded:?}",
                lane.get_str("current")
            );
        }
    }

    if outage {
        // `eu` down: `us`'s lanes hand out up to what `eu` recorded, and
        // then nothing (no other deployment records a higher ceiling).
        owned[0].kill();
        let mut failures = 0;
        let mut during = Vec::new();
        for _ in 0..(4 * chunk_local as usize / COUNT + 10) {
            match take(&from_us, &mut seen).await {
                Ok(values) => during.extend(values),
                Err(_) => failures += 1,
            }
            if failures >= 3 {
                break;
            }
        }
        assert!(
            failures >= 3,
            "us kept handing out with eu down: {} values",
            during.len()
        );
        owned[0].restart();
        let recorded = recorded_for_us(&eu).await.unwrap();
        let above: Vec<&u64> = during.iter().filter(|value| **value > recorded).collect();
        assert!(
            above.is_empty(),
            "{} values of us's lanes above the ceiling eu recorded ({recorded}), as {:?}",
            above.len(),
            &above[..above.len().min(5)]
        );
        for id in us_lanes {
            let (_, ceiling) = lane_marks(&us, id).await;
            assert!(
                ceiling.unwrap() <= recorded,
                "{id}: {ceiling:?} above {recorded}"
            );
        }
    }

    // Refused while `us` answers, nothing written.
    let forget = ["counter", "stripes", "orders", "--forget", "us"];
    let refused = run(&mut idmint_across(&sites, &forget));
    assert_exit(&refused, 2);
    assert!(
        stderr(&refused).contains("\"us\" answers"),
        "{}",
        stderr(&refused)
    );
    let generation = |document: &Document| {
        document
            .get_document("striped")
            .unwrap()
            .get_i64("generation")
            .unwrap()
    };
    assert_eq!(
        generation(&document(&eu, "orders").await),
        map.generation as i64
    );
    assert_eq!(
        generation(&document(&us, "orders").await),
        map.generation as i64
    );

    // Everything `us`'s lanes handed out, segments fetched and not handed
    // out yet included: their `last`, read just before it is lost.
    let mut highest_us = seen
        .iter()
        .copied()
        .filter(|value| in_deployment(&map, "us", *value))
        .max()
        .unwrap();
    for id in us_lanes {
        highest_us = highest_us.max(lane_marks(&us, id).await.0);
    }
    owned[1].lose();

    let forgot = run(&mut idmint_across(&sites, &forget));
    assert_exit(&forgot, 0);
    let copy = document(&eu, "orders").await;
    let striped = copy.get_document("striped").unwrap();
    assert_eq!(
        striped.get_array("spans").unwrap(),
        &vec![mongodb::bson::Bson::String("eu".into())],
        "{copy}"
    );
    let after: StripeMap = StripeMap::read(&copy).unwrap();
    assert!(after.live, "{after:?}");
    assert!(
        after.placement.iter().all(|deployment| deployment == "eu"),
        "{after:?}"
    );
    assert_eq!(after.modulus, 2, "{after:?}");
    assert!(
        after.base >= highest_us,
        "{after:?}, us handed out up to {highest_us}"
    );

    // Takes go on, above everything `us` handed out.
    let (fresh, _) = open_across(&deployments, "orders").await;
    for _ in 0..20 {
        for value in take(&fresh, &mut seen).await.unwrap() {
            assert!(
                value > highest_us,
                "{value}, handed out after the forget, is not above {highest_us}, handed out \
                 by us's lanes"
            );
        }
    }
    // A handle opened before takes on too (its map read again).
    for _ in 0..5 {
        take(&from_eu, &mut seen).await.unwrap();
    }
}

/// An autoinc counter (its chunk: 65,536 local values of a lane), with
/// `eu` down a while.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forgetting_a_lost_deployment_of_an_autoinc_counter_starts_above_its_ceilings() {
    forget_us("striped_forget_autoinc", "autoinc", CEILING_CHUNK, true).await;
}

/// A segment counter of step 1000 (its chunk: 65,536 local values, more
/// than 64 segments), with `eu` down a while.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forgetting_a_lost_deployment_of_a_segment_counter_starts_above_its_ceilings() {
    forget_us("striped_forget_segment", "segment", CEILING_CHUNK, true).await;
}

/// `--forget` of the deployment given first (the one the CLI reads from
/// first) shows the counter as a deployment it still spans holds it.
#[test]
fn forgetting_the_first_deployment_given_shows_the_counter_from_another() {
    let (mut owned, sites) = own_servers("striped_forget_first", 2);
    let create = [
        "counter",
        "create",
        "orders",
        "--kind",
        "autoinc",
        "--raw",
        "--stripes",
        "eu:1,us:1",
    ];
    assert_exit(&run(&mut idmint_across(&sites, &create)), 0);
    let taken = run(&mut idmint_across(
        &sites,
        &["seq", "orders", "--count", "5"],
    ));
    assert_exit(&taken, 0);
    owned[0].lose();

    let forget = ["counter", "stripes", "orders", "--forget", "eu"];
    let forgot = run(&mut idmint_across(&sites, &forget));
    assert_exit(&forgot, 0);
    let shown = stdout(&forgot);
    assert!(
        shown.starts_with("forgot a deployment of counter 'orders'") && shown.contains("in us"),
        "{shown}"
    );
}

/// The pairs a take of `count` at `client_micros` from a cyclic counter
/// handed out, each new to `seen`.
async fn take_pairs(
    sequence: &Sequence,
    count: usize,
    client_micros: u64,
    seen: &mut BTreeSet<(u64, u64)>,
) -> Result<Vec<(u64, u64)>, String> {
    let taken = sequence
        .take(count, client_micros)
        .await
        .map_err(|error| error.to_string())?;
    let pairs: Vec<(u64, u64)> = taken
        .iter()
        .map(|stamp| (stamp.timestamp_micros, stamp.sequence))
        .collect();
    for pair in &pairs {
        assert!(seen.insert(*pair), "{pair:?} handed out twice");
    }
    Ok(pairs)
}

/// The `ts` and `ceiling` of cyclic lane `id` in `database`.
async fn lane_times(database: &Database, id: &str) -> (u64, u64) {
    let lane = document(database, id).await;
    (
        lane.get_i64("ts").unwrap() as u64,
        lane.get_i64("ceiling").unwrap() as u64,
    )
}

/// A cyclic counter across `eu:2,us:2`: its lanes' ceilings bound their
/// timestamps, raised a minute at a time as the takers' clock (given to
/// each take, a simulated clock) moves on; while `eu` is down, `us`'s
/// lanes hand out only up to the timestamp `eu` recorded, then nothing;
/// once `us` is lost and forgotten, every pair handed out is later than
/// every timestamp `us`'s lanes issued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forgetting_a_lost_deployment_of_a_cyclic_counter_starts_after_its_time_ceilings() {
    use idmint::sequence::CEILING_CHUNK_MICROS as CHUNK;

    let now_micros = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_micros() as u64
    };
    let before = now_micros();
    let (mut owned, sites) = own_servers("striped_forget_cyclic", 2);
    let deployments = connect(&sites, DEADLINE).await;
    let create = [
        "counter",
        "create",
        "orders",
        "--max",
        "99",
        "--raw",
        "--stripes",
        "eu:2,us:2",
    ];
    assert_exit(&run(&mut idmint_across(&sites, &create)), 0);
    let (eu, us, us_first) = eu_us(&deployments);
    let (from_eu, map) = open_across(&deployments, "orders").await;
    let (from_us, _) = open_across(&us_first, "orders").await;
    assert!(map.bounded, "{map:?}");
    let us_lanes = ["orders#2", "orders#3"];
    let of_us = |value: u64| map.deployment_of(value % map.modulus) == Some("us");
    let created = now_micros();
    for id in us_lanes {
        // At its floor, five minutes of the clock of the change that
        // wrote it to issue in (not five minutes after its base, 0).
        let (ts, ceiling) = lane_times(&us, id).await;
        assert_eq!(ts, map.base);
        assert!(
            (before + CHUNK..=created + CHUNK).contains(&ceiling),
            "{id}: first ceiling {ceiling}, created between {before} and {created}"
        );
    }

    // The takers' clock moves on 15 s a take for 30 minutes: each lane's
    // ceiling is raised ahead of it, five minutes at a time.
    const STEP: u64 = 15_000_000;
    const TAKES: u64 = 120;
    let mut clock = created;
    let mut seen = BTreeSet::new();
    let mut ceilings: BTreeSet<(&str, u64)> = BTreeSet::new();
    for _ in 0..TAKES {
        clock += STEP;
        for (ts, value) in take_pairs(&from_us, 30, clock, &mut seen).await.unwrap() {
            assert!(of_us(value), "{value} is not of us's lanes");
            assert!(ts >= clock, "{ts} before the take's clock {clock}");
        }
        for id in us_lanes {
            let (ts, ceiling) = lane_times(&us, id).await;
            assert!(ts <= ceiling, "{id}: ts {ts} after its ceiling {ceiling}");
            ceilings.insert((id, ceiling));
        }
    }
    take_pairs(&from_eu, 30, clock, &mut seen).await.unwrap();
    // One raise per half a chunk to a chunk of each lane's time, none per
    // take: its first ceiling, and then one each time less than half a
    // chunk is left.
    let span = TAKES * STEP;
    let (fewest, most) = (2 * (span / CHUNK + 1), 2 * (span / (CHUNK / 2) + 2));
    let raises = ceilings.len() as u64;
    assert!(
        (fewest..=most).contains(&raises),
        "{raises} ceilings of us's lanes in {TAKES} takes over {} minutes: expected {fewest} to \
         {most}",
        span / 60_000_000
    );
    eprintln!("cyclic: {raises} ceilings of us's lanes in {TAKES} takes over 30 minutes");
    let recorded = recorded_for_us(&eu).await.unwrap();
    for id in us_lanes {
        let (_, ceiling) = lane_times(&us, id).await;
        assert!(ceiling <= recorded, "{id}: {ceiling} after {recorded}");
    }

    // `eu` down: `us`'s lanes hand out up to what `eu` recorded, then
    // nothing.
    owned[0].kill();
    let mut during = Vec::new();
    let mut failures = 0;
    for _ in 0..2 * CHUNK / STEP {
        clock += STEP;
        match take_pairs(&from_us, 30, clock, &mut seen).await {
            Ok(pairs) => during.extend(pairs),
            Err(_) => failures += 1,
        }
        if failures >= 3 {
            break;
        }
    }
    assert!(
        failures >= 3,
        "us kept handing out with eu down: {} pairs",
        during.len()
    );
    assert!(!during.is_empty(), "us handed out nothing with eu down");
    owned[0].restart();
    let recorded = recorded_for_us(&eu).await.unwrap();
    let after_recorded: Vec<_> = during.iter().filter(|(ts, _)| *ts > recorded).collect();
    assert!(
        after_recorded.is_empty(),
        "{after_recorded:?} after the ceiling eu recorded ({recorded})"
    );

    // Lost and forgotten: every pair after it is later than every
    // timestamp `us`'s lanes issued.
    let mut latest_us = seen
        .iter()
        .filter(|(_, value)| of_us(*value))
        .map(|(ts, _)| *ts)
        .max()
        .unwrap();
    for id in us_lanes {
        latest_us = latest_us.max(lane_times(&us, id).await.0);
    }
    owned[1].lose();
    let forget = ["counter", "stripes", "orders", "--forget", "us"];
    let forgot = run(&mut idmint_across(&sites, &forget));
    assert_exit(&forgot, 0);
    let after: StripeMap = StripeMap::read(&document(&eu, "orders").await).unwrap();
    assert!(after.live, "{after:?}");
    assert!(
        after.base >= recorded,
        "{after:?}, eu recorded {recorded} for us"
    );
    let (fresh, _) = open_across(&deployments, "orders").await;
    for _ in 0..10 {
        // The takers' clock where it was: the pairs are later still.
        for (ts, value) in take_pairs(&fresh, 30, clock, &mut seen).await.unwrap() {
            assert!(
                ts > latest_us,
                "({ts}, {value}), handed out after the forget, is not after {latest_us}, \
                 issued by us's lanes"
            );
        }
    }
}

/// A snowflake counter across `eu:1,us:1`: its lanes' ceilings bound the
/// time units their holders reserve (`last`, raised before each claim and
/// renewal of a worker lease), raised first in the other deployment. A
/// holder whose lane is at its ceiling raises it and issues; with `eu`
/// down it cannot, and issues nothing from `us`'s lane; once `us` is lost
/// and forgotten, every ID has a time unit above every one `us`'s holders
/// may have issued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forgetting_a_lost_deployment_of_a_snowflake_counter_starts_above_its_ceilings() {
    use idmint::parts::Layout;

    let layout = Layout::default();
    let chunk = 600_000 / layout.unit.millis();
    let now_units = || {
        layout.time_at(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis() as u64,
        )
    };
    let before = now_units();
    let (mut owned, sites) = own_servers("striped_forget_snowflake", 2);
    let deployments = connect(&sites, DEADLINE).await;
    let create = [
        "counter",
        "create",
        "orders",
        "--kind",
        "snowflake",
        "--raw",
        "--stripes",
        "eu:1,us:1",
    ];
    assert_exit(&run(&mut idmint_across(&sites, &create)), 0);
    let created = now_units();
    let (eu, us, us_first) = eu_us(&deployments);
    let map = StripeMap::read(&document(&eu, "orders").await).unwrap();
    assert!(map.bounded, "{map:?}");
    let us_residue = (0..map.modulus)
        .find(|residue| map.deployment_of(*residue) == Some("us"))
        .unwrap();
    let us_lane = format!("orders#{us_residue}");
    let of_us = |id: u64| layout.decompose(id).unwrap().worker % map.modulus == us_residue;
    let time_of = |id: u64| layout.decompose(id).unwrap().time;
    // A first ceiling ten minutes above the clock of the change.
    let (last, ceiling) = lane_marks(&us, &us_lane).await;
    assert_eq!(last, map.base);
    let ceiling = ceiling.unwrap();
    assert!(
        (before + chunk..=created + chunk).contains(&ceiling),
        "first ceiling {ceiling}, created between units {before} and {created}"
    );
    assert!(recorded_for_us(&eu).await.unwrap() >= ceiling);
    let lanes = us.collection::<Document>("counters");
    let use_up = |last: u64| {
        let lanes = lanes.clone();
        let us_lane = us_lane.clone();
        async move {
            lanes
                .update_one(
                    doc! { "_id": &us_lane },
                    doc! { "$set": { "ceiling": last as i64 } },
                )
                .await
                .unwrap();
        }
    };

    // Its ceiling used up (as after ten minutes of reservations): the
    // holder's claim raises it, recorded in `eu` first, and issues.
    use_up(last).await;
    let (from_us, _) = open_across(&us_first, "orders").await;
    let mut seen = BTreeSet::new();
    let mut issued_by_us = Vec::new();
    for stamp in from_us.take(100, 0).await.unwrap().iter() {
        let id = stamp.sequence;
        assert!(seen.insert(id), "{id} twice");
        assert!(of_us(id), "{id} is not of us's lane");
        issued_by_us.push(id);
    }
    let (last, ceiling) = lane_marks(&us, &us_lane).await;
    let ceiling = ceiling.unwrap();
    let recorded = recorded_for_us(&eu).await.unwrap();
    assert!(
        last <= ceiling && ceiling <= recorded && ceiling >= last + chunk / 2,
        "us's lane: last {last}, ceiling {ceiling}; eu recorded {recorded}"
    );
    from_us.close().await.unwrap();

    // Used up again, and `eu` down: a holder in `us` cannot raise it, so
    // `us`'s lane issues nothing, and `eu`'s cannot be leased.
    use_up(last).await;
    owned[0].kill();
    let (stopped, _) = open_across(&us_first, "orders").await;
    // Its claim waits on `eu` to record the ceiling for half the take's
    // deadline: refused, naming why.
    let refused = stopped.take(10, 0).await.unwrap_err().to_string();
    assert!(
        refused.contains("no value was handed out")
            && refused.contains("at its ceiling")
            && refused.contains("not raised"),
        "{refused}"
    );
    assert_eq!(lane_marks(&us, &us_lane).await, (last, Some(last)));
    owned[0].restart();
    drop(stopped);

    // Lost for good and forgotten: every ID after is later than any time
    // unit `us`'s holders may have issued.
    let highest_us = issued_by_us.iter().map(|id| time_of(*id)).max().unwrap();
    let recorded = recorded_for_us(&eu).await.unwrap();
    assert!(recorded >= highest_us && recorded >= last);
    owned[1].lose();
    let forget = ["counter", "stripes", "orders", "--forget", "us"];
    let forgot = run(&mut idmint_across(&sites, &forget));
    assert_exit(&forgot, 0);
    let after = StripeMap::read(&document(&eu, "orders").await).unwrap();
    assert!(after.live, "{after:?}");
    assert!(
        after.base >= recorded,
        "{after:?}, eu recorded {recorded} for us"
    );
    let (fresh, _) = open_across(&deployments, "orders").await;
    for stamp in fresh.take(100, 0).await.unwrap().iter() {
        let id = stamp.sequence;
        assert!(seen.insert(id), "{id} twice");
        assert!(
            time_of(id) > recorded,
            "{id} (time unit {}), issued after the forget, is not after {recorded}, the \
             ceiling eu recorded for us",
            time_of(id)
        );
    }
    fresh.close().await.unwrap();
}

/// A periodic counter (its chunk: 65,536 local values of a lane, in the
/// period of its ceiling), with `eu` down a while: its lanes start with the
/// period of the home's clock when the change ran as their ceiling's (the
/// label its server makes), which `eu` recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forgetting_a_lost_deployment_of_a_periodic_counter_starts_above_its_ceilings() {
    forget_us("striped_forget_periodic", "periodic", CEILING_CHUNK, true).await;
}
