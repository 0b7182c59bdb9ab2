//! Waiting for an event the test cannot be told of, always with a deadline:
//! a wait that can last for ever would hang the suite instead of failing.

use std::future::Future;
use std::time::{Duration, Instant};

/// How long a test waits for something that takes a moment.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// Polls `done` (every 100 ms, no guessed sleep) until it holds; fails
/// naming `what` after `limit`.
#[track_caller]
pub fn until(limit: Duration, what: &str, done: impl FnMut() -> bool) {
    until_showing(limit, what, done, String::new);
}

/// [`until`], failing with what `shown` says then too (what the test was
/// watching: a terminal's screen).
#[track_caller]
pub fn until_showing(
    limit: Duration,
    what: &str,
    mut done: impl FnMut() -> bool,
    shown: impl Fn() -> String,
) {
    let start = Instant::now();
    while !done() {
        if start.elapsed() >= limit {
            let shown = shown();
            if shown.is_empty() {
                panic!("not within {limit:?}: {what}");
            }
            panic!("not within {limit:?}: {what}\n{shown}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Awaits `future` (a loop that waits for an event); fails naming `what`
/// after `limit`.
pub async fn within<T>(limit: Duration, what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(limit, future).await {
        Ok(done) => done,
        Err(_) => panic!("not within {limit:?}: {what}"),
    }
}
