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

use crate::support::locks::{held, line, lock_name, until_line_is, until_queued};
use crate::support::{self, wait};
use idmint::lock::{Acquired, Lock, Locks, WaitOptions};

const TTL: Duration = Duration::from_secs(30);

/// How the waiters of [`served_in_order`] learn of a handover.
#[derive(Clone, Copy)]
enum Waiting {
    /// Each from a change stream of its own (handles made apart, as in
    /// separate processes).
    Apart,
    /// Handles of one `Locks`: the first waits in the stored line (on the
    /// stream the `Locks` shares), the others in the process behind it.
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
    let database = support::database(test).await;
    let locks = Locks::new(&database);
    let handle = |owner: &str| match waiting {
        Waiting::Shared => locks.lock_with_owner(lock_name("fair"), owner.into()),
        Waiting::Apart | Waiting::Polling => {
            Lock::with_owner(&database, lock_name("fair"), owner.into())
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
        if let Waiting::Shared = waiting {
            until_line_is(&database, "fair", &["waiter0"]).await;
            until_queued(&locks, "fair", index).await;
        } else {
            let in_line: Vec<&str> = expected.iter().map(String::as_str).collect();
            until_line_is(&database, "fair", &in_line).await;
        }
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
    let database = support::database("lock_fair_try").await;
    let holder = Lock::new(&database, lock_name("line"));
    // A short lease that runs out while a waiter is in line: the lock is
    // then free by the server's clock, but the waiter is first.
    let short = held(&holder, Duration::from_millis(300)).await;
    let waiter = Lock::with_owner(&database, lock_name("line"), "waiter".into());
    let waiting = tokio::spawn(async move {
        waiter
            .acquire(TTL, &WaitOptions::new(Duration::from_secs(60)))
            .await
            .unwrap()
    });
    until_line_is(&database, "line", &["waiter"]).await;
    // Until the short lease has ended by the server's clock (or the waiter
    // already took the lock on its own).
    wait::within(wait::PATIENCE, "the end of the short lease", async {
        loop {
            let state = holder.status().await.unwrap().unwrap();
            let ended = state.owner.as_deref() != Some(holder.owner())
                || state.expires_in_ms.is_some_and(|ms| ms <= 0);
            if !short.is_live() && ended {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let barger = Lock::new(&database, lock_name("line"));
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
    let database = support::database("lock_fair_leave").await;
    let holder = Lock::new(&database, lock_name("leave"));
    let lease = held(&holder, TTL).await;
    // Gives up at its deadline.
    let quitter = Lock::with_owner(&database, lock_name("leave"), "quitter".into());
    let gave_up = quitter
        .acquire(TTL, &WaitOptions::new(Duration::from_millis(400)))
        .await;
    assert!(gave_up.is_err());
    assert!(
        line(&database, "leave").await.is_empty(),
        "the quitter is still in line"
    );
    // Cancelled while in line.
    let cancelled = Lock::with_owner(&database, lock_name("leave"), "cancelled".into());
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
    let next = held(&Lock::new(&database, lock_name("leave")), TTL).await;
    next.release().await.unwrap();
}

/// The `since` of the first entry of the stored line.
async fn first_since(database: &Database, lock: &str) -> Option<mongodb::bson::DateTime> {
    let document = database
        .collection::<Document>("locks")
        .find_one(doc! { "_id": lock })
        .await
        .unwrap()?;
    let queue = document.get_array("queue").ok()?;
    queue
        .first()?
        .as_document()?
        .get_datetime("since")
        .ok()
        .copied()
}

/// A waiter without a change stream learns of a handover only at its next
/// poll, a whole interval after the refresh its handed lease counts from.
/// The lease it returns must still be proved only while the server keeps
/// it: its local deadline comes before the server's end.
#[tokio::test]
async fn a_lease_found_handed_over_at_a_poll_is_proved_only_while_the_server_keeps_it() {
    let database = support::database("lock_fair_polled").await;
    let holder = Lock::new(&database, lock_name("polled"));
    let lease = held(&holder, TTL).await;
    let waiter = Lock::with_owner(&database, lock_name("polled"), "waiter".into());
    // Polls (and refreshes its entry) every 1 to 2 s; a 4 s lease keeps
    // 0.4 s of it as the safety margin, less than the time between a
    // refresh and the next poll.
    let ttl = Duration::from_secs(4);
    let mut options = WaitOptions::new(Duration::from_secs(60))
        .poll(Duration::from_secs(2), Duration::from_secs(2));
    options.change_stream = false;
    options.refresh = Duration::from_secs(2);
    let waiting = tokio::spawn(async move { waiter.acquire(ttl, &options).await.unwrap() });
    until_line_is(&database, "polled", &["waiter"]).await;
    // Released just after one of its refreshes: handed over for certain,
    // and found by the waiter a whole poll later.
    let joined = first_since(&database, "polled").await;
    wait::within(
        wait::PATIENCE,
        "the waiter's refresh of its place in line",
        async {
            while first_since(&database, "polled").await == joined {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        },
    )
    .await;
    assert_eq!(lease.release().await.unwrap(), 0);
    let handed = waiting.await.unwrap();
    assert_eq!(handed.token(), 2, "handed over, not taken after a free");
    let asked = std::time::Instant::now();
    let state = handed.lock().status().await.unwrap().unwrap();
    let left = Duration::from_millis(state.expires_in_ms.unwrap().max(0) as u64);
    // The server ends the lease no earlier than `left` after the status
    // request was sent.
    let deadline = handed.deadline().expect("a live lease");
    assert!(
        deadline <= asked + left,
        "the local deadline is {:?} past the server's end",
        deadline - (asked + left)
    );
    handed.release().await.unwrap();
}

/// A holder whose lease ended while someone waited in line asks again
/// through the same handle (as `lock elect` does once it found its lease
/// lost): the lock is the waiter's turn, not the holder's again. The
/// document still named the holder as its owner, and an answer that named
/// it was read as held: the holder trusted a lease the server had ended,
/// and ran beside the waiter it was handed to.
#[tokio::test]
async fn an_owner_whose_lease_ended_does_not_hold_it_again_while_someone_waits() {
    let database = support::database("lock_fair_ended").await;
    let holder = Lock::with_owner(&database, lock_name("ended"), "holder".into());
    let short = held(&holder, Duration::from_millis(300)).await;
    assert_eq!(short.token(), 1);
    // Wakes only on an event (refreshes every 20 s): a lease that runs out
    // writes none, so it does not take the lock on its own before the
    // holder asks again.
    let mut options = WaitOptions::new(Duration::from_secs(15));
    options.refresh = Duration::from_secs(20);
    let waiter = Lock::with_owner(&database, lock_name("ended"), "waiter".into());
    let waiting = tokio::spawn(async move { waiter.acquire(TTL, &options).await.unwrap() });
    until_line_is(&database, "ended", &["waiter"]).await;
    wait::within(wait::PATIENCE, "the end of the short lease", async {
        while holder
            .status()
            .await
            .unwrap()
            .unwrap()
            .expires_in_ms
            .is_some_and(|ms| ms > 0)
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    std::mem::forget(short);
    let again = holder
        .acquire(TTL, &WaitOptions::new(Duration::from_millis(300)))
        .await;
    assert!(
        again.is_err(),
        "the holder whose lease ended took it again (fencing token {:?}) while a waiter was first",
        again.as_ref().ok().map(|lease| lease.token())
    );
    let lease = waiting.await.unwrap();
    assert_eq!(lease.token(), 2, "the waiter took the next fencing token");
    lease.release().await.unwrap();
}
