//! The lock is fair: waiters are served in the order they joined its line,
//! a release hands the lock to the first of them (a new fencing token each
//! time), nobody jumps the line (not the releasing holder, not a
//! `try_acquire`), and a waiter that gives up or is cancelled leaves it.
//! Each test puts the waiters in line for certain (it watches the line grow)
//! before the lock is released.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mongodb::bson::{doc, Document};
use mongodb::Database;

use crate::harness::{self, held};
use idmint::lock::{Acquired, Lock, LockName, Locks, WaitOptions};

const TTL: Duration = Duration::from_secs(30);

fn name(text: &str) -> LockName {
    LockName::new(text).unwrap()
}

/// The lock's waiting line as stored: each entry's owner.
async fn line(database: &Database, lock: &str) -> Vec<String> {
    let document = database
        .collection::<Document>("locks")
        .find_one(doc! { "_id": lock })
        .await
        .unwrap()
        .unwrap_or_default();
    document
        .get_array("queue")
        .map(|queue| {
            queue
                .iter()
                .filter_map(|entry| entry.as_document()?.get_str("owner").ok().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Waits (by polling the document, not by sleeping a guess) until the line
/// holds `owners`, in that order.
async fn until_line_is(database: &Database, lock: &str, owners: &[&str]) {
    for _ in 0..2000 {
        if line(database, lock).await == owners {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!(
        "the line of {lock} never became {owners:?}: {:?}",
        line(database, lock).await
    );
}

/// How the waiters of [`served_in_order`] learn of a handover.
#[derive(Clone, Copy)]
enum Waiting {
    /// Each from a change stream of its own (handles made apart, as in
    /// separate processes).
    Apart,
    /// All from the one stream their `Locks` shares.
    Shared,
    /// By polling (no change stream).
    Polling,
}

/// Four waiters join the line one after another; then the holder releases
/// and at once asks again. Each is served in turn, the holder last.
///
/// With a change stream, a waiter refreshes its place only every 20 s and
/// gives up after 15 (when it tries once more): the line must be served
/// long before that, each handover reaching its waiter through the stream.
async fn served_in_order(test: &str, waiting: Waiting) {
    let database = harness::database(test).await;
    let locks = Locks::new(&database);
    let handle = |owner: &str| match waiting {
        Waiting::Shared => locks.lock_with_owner(name("fair"), owner.into()),
        Waiting::Apart | Waiting::Polling => {
            Lock::with_owner(&database, name("fair"), owner.into())
        }
    };
    let holder = handle("holder");
    let first = held(&holder, TTL).await;
    let served: Arc<Mutex<Vec<(String, i64)>>> = Arc::default();
    let mut options = WaitOptions::new(Duration::from_secs(60));
    if let Waiting::Polling = waiting {
        options.change_stream = false;
    } else {
        options.wait = Duration::from_secs(15);
        options.refresh = Duration::from_secs(20);
    }
    let mut waiters = Vec::new();
    let mut expected = Vec::new();
    for index in 0..4 {
        let owner = format!("waiter{index}");
        let lock = handle(&owner);
        let (served, options) = (served.clone(), options.clone());
        waiters.push(tokio::spawn(async move {
            let lease = lock.acquire(TTL, &options).await.unwrap();
            served.lock().unwrap().push((owner, lease.token()));
            lease.release().await.unwrap();
        }));
        expected.push(format!("waiter{index}"));
        let in_line: Vec<&str> = expected.iter().map(String::as_str).collect();
        until_line_is(&database, "fair", &in_line).await;
    }
    // The holder releases and asks again at once: it goes to the back.
    let released = std::time::Instant::now();
    assert_eq!(first.release().await.unwrap(), 0);
    let again = holder.acquire(TTL, &options).await.unwrap();
    served
        .lock()
        .unwrap()
        .push(("holder".into(), again.token()));
    again.release().await.unwrap();
    for waiter in waiters {
        waiter.await.unwrap();
    }
    if !matches!(waiting, Waiting::Polling) {
        assert!(
            released.elapsed() < Duration::from_secs(10),
            "the handovers were not seen on the change stream: served only after {:?}",
            released.elapsed()
        );
    }
    let served = served.lock().unwrap().clone();
    let order: Vec<&str> = served.iter().map(|(owner, _)| owner.as_str()).collect();
    assert_eq!(
        order,
        ["waiter0", "waiter1", "waiter2", "waiter3", "holder"]
    );
    let tokens: Vec<i64> = served.iter().map(|(_, token)| *token).collect();
    assert_eq!(
        tokens,
        [2, 3, 4, 5, 6],
        "each handover is a new fencing token"
    );
    assert!(line(&database, "fair").await.is_empty());
}

#[tokio::test]
async fn waiters_are_served_in_the_order_they_joined_the_line() {
    served_in_order("lock_fair_order", Waiting::Apart).await;
}

#[tokio::test]
async fn waiters_sharing_one_change_stream_are_served_in_order_too() {
    served_in_order("lock_fair_shared", Waiting::Shared).await;
}

#[tokio::test]
async fn without_a_change_stream_the_order_holds_too() {
    served_in_order("lock_fair_polling", Waiting::Polling).await;
}

#[tokio::test]
async fn a_try_acquire_does_not_jump_the_line() {
    let database = harness::database("lock_fair_try").await;
    let holder = Lock::new(&database, name("line"));
    // A short lease that runs out while a waiter is in line: the lock is
    // then free by the server's clock, but the waiter is first.
    let short = held(&holder, Duration::from_millis(300)).await;
    let waiter = Lock::with_owner(&database, name("line"), "waiter".into());
    let waiting = tokio::spawn(async move {
        waiter
            .acquire(TTL, &WaitOptions::new(Duration::from_secs(60)))
            .await
            .unwrap()
    });
    until_line_is(&database, "line", &["waiter"]).await;
    // Until the short lease has ended by the server's clock (or the waiter
    // already took the lock on its own).
    loop {
        let state = holder.status().await.unwrap().unwrap();
        let ended = state.owner.as_deref() != Some(holder.owner())
            || state.expires_in_ms.is_some_and(|ms| ms <= 0);
        if !short.is_live() && ended {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let barger = Lock::new(&database, name("line"));
    assert!(
        matches!(barger.try_acquire(TTL).await.unwrap(), Acquired::Busy(_)),
        "a try_acquire took a lock someone waits for"
    );
    std::mem::forget(short);
    let lease = waiting.await.unwrap();
    assert_eq!(lease.token(), 2);
    lease.release().await.unwrap();
}

#[tokio::test]
async fn a_waiter_that_gives_up_or_is_cancelled_leaves_the_line() {
    let database = harness::database("lock_fair_leave").await;
    let holder = Lock::new(&database, name("leave"));
    let lease = held(&holder, TTL).await;
    // Gives up at its deadline.
    let quitter = Lock::with_owner(&database, name("leave"), "quitter".into());
    let gave_up = quitter
        .acquire(TTL, &WaitOptions::new(Duration::from_millis(400)))
        .await;
    assert!(gave_up.is_err());
    assert!(
        line(&database, "leave").await.is_empty(),
        "the quitter is still in line"
    );
    // Cancelled while in line.
    let cancelled = Lock::with_owner(&database, name("leave"), "cancelled".into());
    let task = tokio::spawn(async move {
        cancelled
            .acquire(TTL, &WaitOptions::new(Duration::from_secs(60)))
            .await
    });
    until_line_is(&database, "leave", &["cancelled"]).await;
    task.abort();
    until_line_is(&database, "leave", &[]).await;
    // The lock is then free for whoever comes next once released.
    assert_eq!(lease.release().await.unwrap(), 0);
    let next = held(&Lock::new(&database, name("leave")), TTL).await;
    next.release().await.unwrap();
}
