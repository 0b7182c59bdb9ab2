//! Distributed locks against the real server: leases decided by the server's
//! clock, fencing tokens, owner+token checks, re-entrancy, waiting.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use idmint::lock::{fenced_filter, fenced_set, Acquired, Lease, Lock, LockError, LockName, WaitOptions};
use mongodb::bson::{doc, Document};
use mongodb::{Client, Database};

use crate::harness;

fn name(n: &str) -> LockName {
    LockName::new(n).unwrap()
}

async fn held(lock: &Lock, ttl: Duration) -> Lease {
    match lock.try_acquire(ttl).await.unwrap() {
        Acquired::Held(lease) => lease,
        Acquired::Busy(state) => panic!("lock busy: {state:?}"),
    }
}

#[tokio::test]
async fn every_lock_write_is_durable_and_reentrant_holds_count() {
    let (database, log) = harness::monitored_database("lock_durable_reentrant").await;
    let lock = Lock::new(&database, name("job"));
    let first = held(&lock, Duration::from_secs(30)).await;
    let second = held(&lock, Duration::from_secs(30)).await;
    assert_eq!((first.count(), second.count()), (1, 2));
    assert_eq!(first.token(), second.token(), "re-entry keeps the token");
    second.renew().await.unwrap();

    // Another owner cannot take it while held twice, nor once.
    let other = Lock::new(&database, name("job"));
    assert!(matches!(other.try_acquire(Duration::from_secs(30)).await.unwrap(), Acquired::Busy(_)));
    assert_eq!(second.release().await.unwrap(), 1);
    assert!(matches!(other.try_acquire(Duration::from_secs(30)).await.unwrap(), Acquired::Busy(_)));
    assert_eq!(first.release().await.unwrap(), 0);
    let next = held(&other, Duration::from_secs(30)).await;
    assert_eq!(next.token(), 2, "a new acquisition gets the next fencing token");
    next.release().await.unwrap();

    let writes: Vec<Document> = ["findAndModify", "update"]
        .iter()
        .flat_map(|command| log.named(command))
        .collect();
    assert!(writes.len() >= 7, "{writes:?}");
    writes.iter().for_each(harness::assert_durable);
}

#[tokio::test]
async fn release_and_renew_need_the_owner_and_the_token() {
    let database = harness::database("lock_wrong_owner").await;
    let ttl = Duration::from_secs(30);
    let a = Lock::new(&database, name("job"));
    let b = Lock::new(&database, name("job"));
    let dba = Lock::new(&database, name("job"));

    let a1 = held(&a, ttl).await;
    assert_eq!(dba.force_release().await.unwrap().token, a1.token());
    let b2 = held(&b, ttl).await;
    assert_eq!(dba.force_release().await.unwrap().token, b2.token());
    // Owner a holds the lock again, with a new token.
    let a3 = held(&a, ttl).await;
    assert_eq!((a1.token(), b2.token(), a3.token()), (1, 2, 3));

    // The right owner with an old token is refused ...
    assert!(matches!(a1.renew().await, Err(LockError::Lost { token: 1, .. })));
    assert!(matches!(a1.release().await, Err(LockError::Lost { token: 1, .. })));
    // ... as is another owner.
    assert!(matches!(b2.renew().await, Err(LockError::Lost { .. })));
    assert!(matches!(b2.release().await, Err(LockError::Lost { .. })));

    let state = a.status().await.unwrap().unwrap();
    assert_eq!(
        (state.owner.as_deref(), state.token, state.count),
        (Some(a.owner()), 3, 1),
        "a refused release or renew changed the lock"
    );
    assert!(state.is_held());
    a3.release().await.unwrap();
    assert!(!a.status().await.unwrap().unwrap().is_held());
}

#[tokio::test]
async fn expiry_is_the_servers_and_a_stale_holder_is_fenced_off() {
    let database = harness::database("lock_stale_holder").await;
    let paused = Lock::new(&database, name("job"));
    let old = held(&paused, Duration::from_millis(300)).await;
    let next = Lock::new(&database, name("job"));
    // The next holder waits for the server to end the old lease (polling:
    // expiry writes nothing a change stream could see).
    let new = next
        .acquire(Duration::from_secs(30), &WaitOptions::new(Duration::from_secs(30)))
        .await
        .unwrap();
    assert!(new.token() > old.token());

    // The old holder resumes: it can neither renew nor release ...
    assert!(matches!(old.renew().await, Err(LockError::Lost { .. })));
    let old_token = old.token();
    assert!(matches!(old.release().await, Err(LockError::Lost { .. })));
    // ... and a fenced write with its token is rejected once the new holder wrote.
    let reports = database.collection::<Document>("reports");
    reports.insert_one(doc! { "_id": "r" }).await.unwrap();
    let fenced_write = |token: i64| {
        let reports = reports.clone();
        async move {
            let mut filter = doc! { "_id": "r" };
            filter.extend(fenced_filter("lockToken", token));
            let mut set = doc! { "by": token };
            set.extend(fenced_set("lockToken", token));
            reports.update_one(filter, doc! { "$set": set }).await.unwrap().matched_count
        }
    };
    assert_eq!(fenced_write(new.token()).await, 1);
    assert_eq!(fenced_write(old_token).await, 0, "a stale token got through the fence");
    assert_eq!(fenced_write(new.token()).await, 1, "the holder can write again");
    let state = next.status().await.unwrap().unwrap();
    assert_eq!((state.owner.as_deref(), state.token), (Some(next.owner()), new.token()));
    new.release().await.unwrap();
}

#[tokio::test]
async fn a_corrupt_lock_is_reported_and_left_unchanged() {
    let database = harness::database("lock_corrupt").await;
    let locks = database.collection::<Document>("locks");
    let corrupt = doc! { "_id": "job", "owner": 42, "token": "seven" };
    locks.insert_one(corrupt.clone()).await.unwrap();
    let error = Lock::new(&database, name("job"))
        .try_acquire(Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(error.is_bad_input(), "{error}");
    assert!(error.to_string().contains("owner is the number 42"), "{error}");
    assert_eq!(harness::documents(&database, "locks").await, vec![corrupt]);

    for ttl in [Duration::ZERO, Duration::from_secs(86_401)] {
        let error = Lock::new(&database, name("other")).try_acquire(ttl).await.unwrap_err();
        assert!(matches!(error, LockError::OutOfRange { .. }), "{error}");
    }
    assert!(LockName::new("a b").is_err());
    assert_eq!(harness::documents(&database, "locks").await.len(), 1, "bad input wrote something");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_wakes_on_release_not_on_a_poll() {
    let database = harness::database("lock_wakeup").await;
    let holder = Lock::new(&database, name("job"));
    let lease = held(&holder, Duration::from_secs(120)).await;

    // The waiter's client counts its completed attempts, so the release comes
    // after its first (failed) attempt for certain.
    let attempts = Arc::new(AtomicUsize::new(0));
    let attempted = Arc::new(tokio::sync::Notify::new());
    let waiter_db = counting_database(&database, attempts.clone(), attempted.clone()).await;
    let waiter = Lock::new(&waiter_db, name("job"));
    // It would poll again only after a minute, past its 60 s wait.
    let options = WaitOptions::new(Duration::from_secs(60))
        .poll(Duration::from_secs(600), Duration::from_secs(600));
    let waiting = tokio::spawn(async move {
        let started = std::time::Instant::now();
        let lease = waiter.acquire(Duration::from_secs(30), &options).await;
        (lease, started.elapsed())
    });
    while attempts.load(Ordering::SeqCst) == 0 {
        attempted.notified().await;
    }
    let old_token = lease.token();
    lease.release().await.unwrap();
    let (new, _) = waiting.await.unwrap();
    let new = new.expect("the waiter was woken by the release");
    assert_eq!(attempts.load(Ordering::SeqCst), 2, "one failed attempt, then one on wake-up");
    assert!(new.token() > old_token);
    new.release().await.unwrap();
}

async fn counting_database(
    database: &Database,
    attempts: Arc<AtomicUsize>,
    attempted: Arc<tokio::sync::Notify>,
) -> Database {
    use mongodb::event::command::CommandEvent;
    use mongodb::event::EventHandler;
    let mut options = mongodb::options::ClientOptions::parse(harness::uri()).await.unwrap();
    options.command_event_handler = Some(EventHandler::callback(move |event| {
        if let CommandEvent::Succeeded(done) = event {
            if done.command_name == "findAndModify" {
                attempts.fetch_add(1, Ordering::SeqCst);
                attempted.notify_waiters();
                attempted.notify_one();
            }
        }
    }));
    Client::with_options(options).unwrap().database(database.name())
}
