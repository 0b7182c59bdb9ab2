//! An ID once returned is never returned again, even across a server crash:
//! values are written with majority + journal, and the server is killed with
//! SIGKILL in the middle of a run and restarted on the same data while the
//! clients keep asking.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use idmint::config::ConnectOptions;
use idmint::sequence::{CounterName, CounterSpec, CyclicCounter, OpenedCounter};
use idmint::{Clock, SystemClock};

use crate::support::{wait, OwnedServer, ServerConfig};

/// How long each half of the run may take: the workers' calls wait up to
/// their 60 s server selection for the restarted server, and some of
/// them fail meanwhile.
const ROUND: Duration = Duration::from_secs(300);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_value_is_handed_out_twice_across_a_crash() {
    let mut server = OwnedServer::start(ServerConfig {
        sync_on_commit: true,
        ..ServerConfig::default()
    });
    // Long enough for calls made while the server is down to wait for its restart.
    let options = ConnectOptions::new(&server.uri)
        .database("crash")
        .server_selection_timeout(Duration::from_secs(60));
    let database = options.connect().await.unwrap();
    let counter = CyclicCounter::new(&database, CounterName::new("crashy").unwrap());
    counter
        .create(&CounterSpec::default().maxval(1_000_000))
        .await
        .unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (counter, sender, stop) = (counter.clone(), sender.clone(), stop.clone());
            tokio::spawn(async move {
                let mut failures = 0;
                while !stop.load(Ordering::SeqCst) {
                    // A call cut by the crash may fail; only returned values count.
                    match counter.next(SystemClock.now_micros()).await {
                        Ok(issued) => {
                            let _ = sender.send(issued.sequence);
                        }
                        Err(_) => failures += 1,
                    }
                }
                failures
            })
        })
        .collect();
    drop(sender);

    let mut values = Vec::new();
    // Crash once 300 values are acknowledged (an event, not a timer) ...
    wait::within(ROUND, "300 values before the crash", async {
        while values.len() < 300 {
            values.push(receiver.recv().await.expect("a value before the crash"));
        }
    })
    .await;
    server.kill();
    server.restart();
    // ... and keep going until 300 more came after the restart.
    wait::within(ROUND, "300 values after the restart", async {
        while values.len() < 600 {
            values.push(receiver.recv().await.expect("a value after the restart"));
        }
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    for worker in workers {
        worker.await.unwrap();
    }
    while let Some(value) = receiver.recv().await {
        values.push(value);
    }

    let distinct: HashSet<u64> = values.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        values.len(),
        "a value was handed out twice across the crash"
    );
    let state = counter.state().await.unwrap();
    assert!(
        state.cyclic().unwrap().val >= *values.iter().max().unwrap(),
        "the counter went back: {state:?}"
    );
}
