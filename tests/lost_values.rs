//! Values lost in normal operation (issue 18, section 4): short bounded
//! runs of a segment counter one after another, and a ranges request whose
//! later fetch fails.

use std::time::Instant;

use crate::support::service::{assert_error, block_on, Service, DEADLINE};
use crate::support::{
    self, assert_exit, idmint, idmint_on, run, stdout, wait, OwnedServer, ServerConfig,
};

/// `idmint seq --count 5` on a segment counter of step 10, four times: a
/// bounded run prefetches no segment it cannot use and gives back the tail
/// of the one it took, so the four runs hand out 1 to 20 with no gap (the
/// 10% prefetch made each run lose the rest of its first segment).
#[test]
fn short_seq_runs_one_after_another_lose_nothing() {
    const TEST: &str = "lost_short_runs";
    block_on(support::database(TEST));
    assert_exit(
        &run(idmint(TEST).args([
            "counter", "create", "seg", "--kind", "segment", "--step", "10", "--raw",
        ])),
        0,
    );
    let mut values = Vec::new();
    for _ in 0..4 {
        let output = run(idmint(TEST).args(["seq", "seg", "--count", "5"]));
        assert_exit(&output, 0);
        values.extend(
            stdout(&output)
                .lines()
                .map(|line| line.trim().parse::<u64>().unwrap()),
        );
    }
    assert_eq!(values, (1..=20).collect::<Vec<u64>>());
}

/// A ranges request that took the buffered runs and then fails on a fetch
/// (the database gone) gives back what it took of the segment in service:
/// once the database is back, those values are handed out, not skipped.
#[test]
fn a_failed_ranges_request_gives_back_what_it_took() {
    let mut server = OwnedServer::start(ServerConfig {
        sync_on_commit: true,
        ..ServerConfig::default()
    });
    let idmint = || idmint_on(&server.uri, "lost_ranges");
    assert_exit(
        &run(idmint().args([
            "counter", "create", "seg", "--kind", "segment", "--step", "10", "--raw",
        ])),
        0,
    );
    // The request outlives the failing fetch (bounded by its own deadline),
    // so it is the fetch's failure that ends it, not the request's limit.
    let service = Service::spawn(
        idmint(),
        &["--server-timeout", "1", "--request-timeout", "60"],
    );
    assert_eq!(
        service.get("/v1/counters/seg/values?count=3").values(),
        [1, 2, 3]
    );
    // The first segment and the prefetched one are both in the buffers.
    wait::until(DEADLINE, "the prefetch", || {
        service
            .admin("/metrics")
            .body
            .contains(r#"idmint_segment_fetches_total{counter="seg"} 2"#)
    });
    server.kill();
    // More than both buffers hold: the next fetch fails.
    assert_error(
        &service.get("/v1/counters/seg/ranges?count=500"),
        503,
        "unavailable",
        "",
    );
    server.restart();
    let restarted = Instant::now();
    let next = loop {
        let answer = service.get("/v1/counters/seg/values");
        if answer.status == 200 {
            break answer.values();
        }
        assert!(restarted.elapsed() < DEADLINE, "no recovery: {answer:?}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    // The second segment began at 11: what the request took of it is
    // handed out again (4 to 10, in the segment it had already left, are a
    // gap).
    assert_eq!(next, [11], "the values the failed request took were lost");
}

/// A process that says how many values it will take (a bounded run:
/// `SegmentOptions::wants`) fetches one segment for five values and starts
/// no prefetch: the segment it would prefetch would be lost to everyone
/// once another process fetches after it (its give-back then fails). One
/// that runs until stopped prefetches as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bounded_run_prefetches_nothing_it_cannot_use() {
    use idmint::sequence::{
        self, CounterKind, CounterName, CounterSpec, OpenOptions, SegmentOptions, Sequence,
    };
    let database = support::database("lost_bounded_prefetch").await;
    let name = CounterName::new("seg").unwrap();
    sequence::create(
        &database,
        &name,
        &CounterSpec::of(CounterKind::Segment)
            .step(10)
            .prefixes(Vec::new()),
    )
    .await
    .unwrap();
    for (wants, prefetches) in [(Some(5), false), (None, true)] {
        let mut options = OpenOptions::default();
        options.segment = SegmentOptions::default().wants(wants);
        let (opened, _) = Sequence::open(&database, name.clone(), &options)
            .await
            .unwrap();
        opened.take(5, 0).await.unwrap();
        // A prefetch is started as the values are taken, before `take`
        // returns: in flight or done by now, if there is one.
        let buffers = opened.held().buffers.unwrap();
        let prefetched = buffers.fetch_waiting_ms.is_some() || buffers.fetches > 1;
        assert_eq!(prefetched, prefetches, "wants {wants:?}: {buffers:?}");
        opened.close().await.unwrap();
    }
}
