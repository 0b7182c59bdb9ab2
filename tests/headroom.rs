//! Headroom: what is left of each counter and when a time-bound one runs
//! out, said by `idmint status` (exit 1 within `--warn-days` or
//! `--warn-space`), `counter show` and `serve`'s `/metrics`, on counters
//! brought close to their end: an autoinc, a segment and a periodic
//! counter a few values from 2^53 - 1, taken to the last value and refused
//! past it, a snowflake counter whose time bits end in 300 days, and a
//! cyclic counter taken by a client whose clock is 30 s ahead (its
//! timestamps run ahead, as they do when it is taken faster than its pace).

use mongodb::bson::{doc, Document};
use serde_json::Value;

use crate::support::service::{Service, DEADLINE};
use crate::support::{self, assert_exit, create, idmint, run, stderr, stdout, wait};

/// 2^53 - 1, the last value of a numeric counter.
const LAST: i64 = (1 << 53) - 1;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_near_their_end_are_warned_of_everywhere() {
    const TEST: &str = "headroom_near_end";
    let database = support::database(TEST).await;
    assert_exit(&run(idmint(TEST).arg("install")), 0);
    create(TEST, "orders", &["--kind", "autoinc", "--prefix", "ORD-"]);
    create(
        TEST,
        "blocks",
        &["--kind", "segment", "--step", "2", "--raw"],
    );
    create(TEST, "yearly", &["--kind", "periodic", "--raw"]);
    create(TEST, "wraps", &["--kind", "cyclic", "--prefix", "CY-"]);
    create(TEST, "busy", &["--kind", "autoinc", "--raw"]);
    create(
        TEST,
        "ahead",
        &["--kind", "cyclic", "--max", "1", "--prefix", "AH-"],
    );
    assert_exit(&run(idmint(TEST).arg("status")), 0);
    // The periodic counter's period begins with its first value.
    assert_exit(&run(idmint(TEST).args(["seq", "yearly"])), 0);
    // A client whose clock is 30 s ahead: the cyclic counter's timestamps
    // follow it.
    let mut ahead_client = idmint(TEST);
    support::fake_clock(&mut ahead_client, "+30s").args(["seq", "ahead", "--count", "3"]);
    assert_exit(&run(&mut ahead_client), 0);

    // Five values left in each: the last value handed out (autoinc,
    // periodic) 5 below the last, or the segment counter's next value 4
    // below it.
    let counters = database.collection::<Document>("counters");
    for (name, field, at) in [
        ("orders", "seq", LAST - 5),
        ("yearly", "seq", LAST - 5),
        ("blocks", "max", LAST - 4),
        ("busy", "seq", LAST - 1_000),
    ] {
        counters
            .update_one(doc! { "_id": name }, doc! { "$set": { field: at } })
            .await
            .unwrap();
    }
    let now_ms = chrono::Utc::now().timestamp_millis();
    let epoch_ms = now_ms + 300 * 86_400_000 - (1_i64 << 30) * 1000;
    counters
        .insert_one(
            doc! { "_id": "events", "kind": "snowflake", "time_bits": 30_i64,
            "worker_bits": 20_i64, "seq_bits": 13_i64, "unit": "s", "epoch_ms": epoch_ms,
            "prefixes": ["EV-"] },
        )
        .await
        .unwrap();

    let status = run(idmint(TEST).arg("status"));
    assert_exit(&status, 1);
    let text = stdout(&status);
    for line in [
        "warning: counter 'orders' 5 values left (0.0% of its values, less than 10%)",
        "warning: counter 'yearly' 5 values left",
        "warning: counter 'blocks' 5 values left",
        "warning: counter 'events' runs out on",
        "days left, fewer than 365)",
        "warning: counter 'ahead' has timestamps 2",
        "ms ahead of this clock (more than 1,000): it is taken faster than 2,000,000 values/s, \
         or a client's clock is ahead",
        "NOT ready: counters near their end (see above)",
    ] {
        assert!(text.contains(line), "no {line:?} in:\n{text}");
    }
    // A cyclic counter never runs out: it has a pace, not an end.
    let wraps = text.lines().find(|line| line.contains(" wraps ")).unwrap();
    assert!(
        wraps.ends_with("at most 100,000,000 values/s, timestamps 0 ms ahead"),
        "{wraps}"
    );
    assert!(!text.contains("counter 'wraps'"), "{text}");
    // Limits an operator chose: the snowflake counter's 299 days are more
    // than 200; no share of values is less than 0%; 30 s ahead is less
    // than a minute.
    let calm = run(idmint(TEST).args([
        "status",
        "--warn-days",
        "200",
        "--warn-space",
        "0",
        "--warn-ahead-ms",
        "60000",
    ]));
    assert_exit(&calm, 0);
    let refused = run(idmint(TEST).args(["status", "--warn-space", "120"]));
    assert_exit(&refused, 2);
    assert!(
        stderr(&refused).contains("120 is not 0 to 100 percent"),
        "{}",
        stderr(&refused)
    );

    let json = run(idmint(TEST).args(["status", "--json"]));
    let json: Value = serde_json::from_str(&stdout(&json)).unwrap();
    let events = json["headroom"]
        .as_array()
        .unwrap()
        .iter()
        .find(|counter| counter["counter"] == "events")
        .unwrap()
        .clone();
    assert_eq!(events["kind"], "snowflake", "{events}");
    assert!(
        events["runs_out_at_ms"].as_i64().unwrap() > now_ms,
        "{events}"
    );
    assert!(
        events["warning"].as_str().unwrap().contains("days left"),
        "{events}"
    );

    let shown = run(idmint(TEST).args(["counter", "show", "orders"]));
    assert!(
        stdout(&shown).contains("left:   5 values (100.0% used)"),
        "{}",
        stdout(&shown)
    );
    let shown = stdout(&run(idmint(TEST).args(["counter", "show", "ahead"])));
    assert!(
        shown.contains("pace:   at most 2,000,000 values/s, timestamps 2"),
        "{shown}"
    );

    // The metrics say it, read at the service's start and every 10 s.
    let service = Service::start(TEST, &[]);
    wait::until(DEADLINE, "the counters' headroom in /metrics", || {
        service
            .admin("/metrics")
            .body
            .contains("idmint_counter_headroom_used_ratio{counter=\"orders\"}")
    });
    let metrics = service.admin("/metrics").body;
    assert!(
        metrics.contains("idmint_counter_headroom_used_ratio{counter=\"orders\"} 0.99999999"),
        "{metrics}"
    );
    let runs_out = metrics
        .lines()
        .find_map(|line| {
            line.strip_prefix("idmint_counter_runs_out_timestamp_seconds{counter=\"events\"} ")
        })
        .expect("the snowflake counter's end in /metrics");
    let runs_out: i64 = runs_out.parse().unwrap();
    assert!(
        (runs_out - (now_ms / 1000 + 300 * 86_400)).abs() < 86_400,
        "{runs_out}"
    );
    let ahead: f64 = metrics
        .lines()
        .find_map(|line| {
            line.strip_prefix("idmint_counter_timestamps_ahead_seconds{counter=\"ahead\"} ")
        })
        .expect("the cyclic counter's lead in /metrics")
        .parse()
        .unwrap();
    assert!((20.0..=30.0).contains(&ahead), "{ahead}");
    // A cyclic counter's pace used: by the busiest 10 s of the values this
    // instance handed out, none before.
    let pace_used = |metrics: &str| -> f64 {
        metrics
            .lines()
            .find_map(|line| {
                line.strip_prefix("idmint_counter_headroom_used_ratio{counter=\"wraps\"} ")
            })
            .expect("the cyclic counter's pace in /metrics")
            .parse()
            .unwrap()
    };
    assert_eq!(pace_used(&metrics), 0.0, "{metrics}");
    assert_eq!(
        service
            .get("/v1/counters/wraps/values?count=1000")
            .values()
            .len(),
        1000
    );
    // 1,000 values in one 10 s slot: 100/s of its 100,000,000/s.
    wait::until(DEADLINE, "wraps' pace used in /metrics", || {
        pace_used(&service.admin("/metrics").body) > 0.0
    });
    let used = pace_used(&service.admin("/metrics").body);
    assert!((used - 1e-6).abs() < 1e-9, "{used}");
    // A counter that runs out of values: at the rate they went between two
    // reads (10 s apart), none while nothing is taken.
    assert!(
        !metrics.contains("timestamp_seconds{counter=\"busy\"}"),
        "{metrics}"
    );
    assert_eq!(
        service
            .get("/v1/counters/busy/values?count=100")
            .values()
            .len(),
        100
    );
    let mut projected = None;
    wait::until(DEADLINE, "busy's end at its rate in /metrics", || {
        projected = service.admin("/metrics").body.lines().find_map(|line| {
            line.strip_prefix("idmint_counter_runs_out_timestamp_seconds{counter=\"busy\"} ")
                .map(|value| value.parse::<i64>().unwrap())
        });
        projected.is_some()
    });
    let projected = projected.unwrap();
    // 900 left at 100 per 10 s: about 90 s from now, not days.
    let from_now = projected - now_ms / 1000;
    assert!((30..600).contains(&from_now), "{from_now} s");
    drop(service);

    // Run to the end: the last five values, then a refusal, nothing past it.
    for name in ["orders", "yearly", "blocks"] {
        let last = run(idmint(TEST).args(["seq", name, "--count", "5"]));
        assert_exit(&last, 0);
        let values: Vec<i64> = stdout(&last)
            .lines()
            // A periodic counter's lines carry the period first.
            .map(|line| line.split_whitespace().last().unwrap().parse().unwrap())
            .collect();
        assert_eq!(values.last(), Some(&LAST), "{name}: {values:?}");
        let past = run(idmint(TEST).args(["seq", name]));
        assert_exit(&past, 2);
        assert!(
            stderr(&past).contains("exhausted") || stderr(&past).contains("no values left"),
            "{name}: {}",
            stderr(&past)
        );
    }
}
