//! Distributed locks through the library against the real server: leases
//! decided by the server's clock, fencing tokens, owner+token checks,
//! re-entrancy, waiting, a re-entry that never shortens a lease, and the
//! local deadline. `idmint lock run` is `lock_run`'s; the stored functions
//! `lock_stored_functions`'.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use idmint::lock::{fenced_filter, fenced_set, Acquired, Lock, LockError, LockName, WaitOptions};
use mongodb::bson::{doc, Document};
use mongodb::{Client, Database};

use crate::support::{self, held, lock_name, wait};

#[tokio::test]
async fn every_lock_write_is_durable_and_reentrant_holds_count() {
    let (database, log) = support::monitored_database("lock_durable_reentrant").await;
    let lock = Lock::new(&database, lock_name("job"));
    let first = held(&lock, Duration::from_secs(30)).await;
    let second = held(&lock, Duration::from_secs(30)).await;
    assert_eq!((first.count(), second.count()), (1, 2));
    assert_eq!(first.token(), second.token(), "re-entry keeps the token");
    second.renew().await.unwrap();

    // Another owner cannot take it while held twice, nor once.
    let other = Lock::new(&database, lock_name("job"));
    assert!(matches!(
        other.try_acquire(Duration::from_secs(30)).await.unwrap(),
        Acquired::Busy(_)
    ));
    assert_eq!(second.release().await.unwrap(), 1);
    assert!(matches!(
        other.try_acquire(Duration::from_secs(30)).await.unwrap(),
        Acquired::Busy(_)
    ));
    assert_eq!(first.release().await.unwrap(), 0);
    let next = held(&other, Duration::from_secs(30)).await;
    assert_eq!(
        next.token(),
        2,
        "a new acquisition gets the next fencing token"
    );
    next.release().await.unwrap();

    let writes: Vec<Document> = ["findAndModify", "update"]
        .iter()
        .flat_map(|command| log.named(command))
        .collect();
    assert!(writes.len() >= 7, "{writes:?}");
    writes.iter().for_each(support::assert_durable);
}

#[tokio::test]
async fn release_and_renew_need_the_owner_and_the_token() {
    let database = support::database("lock_wrong_owner").await;
    let ttl = Duration::from_secs(30);
    let a = Lock::new(&database, lock_name("job"));
    let b = Lock::new(&database, lock_name("job"));
    let dba = Lock::new(&database, lock_name("job"));

    let a1 = held(&a, ttl).await;
    assert_eq!(dba.force_release().await.unwrap().token, a1.token());
    let b2 = held(&b, ttl).await;
    assert_eq!(dba.force_release().await.unwrap().token, b2.token());
    // Owner a holds the lock again, with a new token.
    let a3 = held(&a, ttl).await;
    assert_eq!((a1.token(), b2.token(), a3.token()), (1, 2, 3));

    // The right owner with an old token is refused ...
    assert!(matches!(
        a1.renew().await,
        Err(LockError::Lost { token: 1, .. })
    ));
    assert!(matches!(
        a1.release().await,
        Err(LockError::Lost { token: 1, .. })
    ));
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
    let database = support::database("lock_stale_holder").await;
    let paused = Lock::new(&database, lock_name("job"));
    let old = held(&paused, Duration::from_millis(300)).await;
    let next = Lock::new(&database, lock_name("job"));
    // The next holder waits for the server to end the old lease (polling:
    // expiry writes nothing a change stream could see).
    let new = next
        .acquire(
            Duration::from_secs(30),
            &WaitOptions::new(Duration::from_secs(30)),
        )
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
            reports
                .update_one(filter, doc! { "$set": set })
                .await
                .unwrap()
                .matched_count
        }
    };
    assert_eq!(fenced_write(new.token()).await, 1);
    assert_eq!(
        fenced_write(old_token).await,
        0,
        "a stale token got through the fence"
    );
    assert_eq!(
        fenced_write(new.token()).await,
        1,
        "the holder can write again"
    );
    let state = next.status().await.unwrap().unwrap();
    assert_eq!(
        (state.owner.as_deref(), state.token),
        (Some(next.owner()), new.token())
    );
    new.release().await.unwrap();
}

#[tokio::test]
async fn a_corrupt_lock_is_reported_and_left_unchanged() {
    let database = support::database("lock_corrupt").await;
    let locks = database.collection::<Document>("locks");
    let corrupt = doc! { "_id": "job", "owner": 42, "token": "seven" };
    locks.insert_one(corrupt.clone()).await.unwrap();
    let error = Lock::new(&database, lock_name("job"))
        .try_acquire(Duration::from_secs(5))
        .await
        .unwrap_err();
    // A corrupt document: left unchanged, and reported as such.
    assert_eq!(error.class(), idmint::ErrorClass::Conflict, "{error}");
    assert!(
        error.to_string().contains("owner is the number 42"),
        "{error}"
    );
    assert_eq!(support::documents(&database, "locks").await, vec![corrupt]);

    for ttl in [Duration::ZERO, Duration::from_secs(86_401)] {
        let error = Lock::new(&database, lock_name("other"))
            .try_acquire(ttl)
            .await
            .unwrap_err();
        assert!(matches!(error, LockError::OutOfRange { .. }), "{error}");
    }
    assert!(LockName::new("a b").is_err());
    assert_eq!(
        support::documents(&database, "locks").await.len(),
        1,
        "bad input wrote something"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_is_handed_the_lock_on_release_not_on_a_poll() {
    let database = support::database("lock_wakeup").await;
    let holder = Lock::new(&database, lock_name("job"));
    let lease = held(&holder, Duration::from_secs(120)).await;

    // The waiter's client counts its completed attempts, so the release comes
    // after its first (failed) attempt for certain.
    let attempts = Arc::new(AtomicUsize::new(0));
    let attempted = Arc::new(tokio::sync::Notify::new());
    let waiter_db = counting_database(&database, attempts.clone(), attempted.clone()).await;
    let waiter = Lock::new(&waiter_db, lock_name("job"));
    // It would poll (refresh its place in line) again only after ten
    // minutes, past its 60 s wait.
    let mut options = WaitOptions::new(Duration::from_secs(60))
        .poll(Duration::from_secs(600), Duration::from_secs(600));
    options.refresh = Duration::from_secs(600);
    let waiting = tokio::spawn(async move {
        let started = std::time::Instant::now();
        let lease = waiter.acquire(Duration::from_secs(30), &options).await;
        (lease, started.elapsed())
    });
    wait::within(wait::PATIENCE, "the waiter's first attempt", async {
        while attempts.load(Ordering::SeqCst) == 0 {
            attempted.notified().await;
        }
    })
    .await;
    let old_token = lease.token();
    lease.release().await.unwrap();
    let (new, waited) = waiting.await.unwrap();
    let new = new.expect("the waiter got the lock");
    // Its only other chance was the last attempt at its 60 s deadline.
    assert!(
        waited < Duration::from_secs(50),
        "woken only at the deadline: {waited:?}"
    );
    // The release handed it the lock; the change stream told it: no write
    // of its own after the one that put it in line.
    assert_eq!(
        attempts.load(Ordering::SeqCst),
        1,
        "one attempt (in line), then handed the lock on release"
    );
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
    let mut options = mongodb::options::ClientOptions::parse(support::uri())
        .await
        .unwrap();
    options.command_event_handler = Some(EventHandler::callback(move |event| {
        if let CommandEvent::Succeeded(done) = event {
            if done.command_name == "findAndModify" {
                attempts.fetch_add(1, Ordering::SeqCst);
                attempted.notify_waiters();
                attempted.notify_one();
            }
        }
    }));
    Client::with_options(options)
        .unwrap()
        .database(database.name())
}

/// The lock's `expiresAt` as stored (server clock).
async fn expires_at(database: &Database, lock: &str) -> mongodb::bson::DateTime {
    let document = database
        .collection::<Document>("locks")
        .find_one(doc! { "_id": lock })
        .await
        .unwrap()
        .unwrap();
    *document.get_datetime("expiresAt").unwrap()
}

#[tokio::test]
async fn a_reentrant_acquire_or_renewal_with_a_shorter_ttl_never_shortens_the_lease() {
    let database = support::database("lock_reentry_ttl").await;
    let lock = Lock::new(&database, lock_name("job"));
    let outer = held(&lock, Duration::from_secs(3600)).await;
    let outer_end = expires_at(&database, "job").await;
    let inner = held(&lock, Duration::from_secs(1)).await;
    assert_eq!(inner.count(), 2);
    assert!(
        expires_at(&database, "job").await >= outer_end,
        "a re-entry for 1 s shortened the outer holder's hour"
    );
    inner.renew().await.unwrap();
    assert!(
        expires_at(&database, "job").await >= outer_end,
        "a renewal for 1 s shortened the outer holder's hour"
    );
    // Another owner still finds it held (an hour, not a second).
    let other = Lock::new(&database, lock_name("job"));
    assert!(matches!(
        other.try_acquire(Duration::from_secs(1)).await.unwrap(),
        Acquired::Busy(_)
    ));
    assert_eq!(inner.release().await.unwrap(), 1);
    assert_eq!(outer.release().await.unwrap(), 0);
}

#[tokio::test]
async fn a_lease_fails_closed_at_its_local_deadline_and_when_found_lost() {
    let database = support::database("lock_local_deadline").await;
    let lock = Lock::new(&database, lock_name("job"));
    let before = std::time::Instant::now();
    let lease = held(&lock, Duration::from_secs(60)).await;
    let after = std::time::Instant::now();
    let deadline = lease.deadline().unwrap();
    // The TTL less a tenth from when the acquire was sent (between `before`
    // and `after`), not from when its answer came: never later than the
    // server's expiry can be.
    let ttl_less_margin = Duration::from_secs(54);
    assert!(
        before + ttl_less_margin <= deadline && deadline <= after + ttl_less_margin,
        "deadline {:?} after the start of the acquire",
        deadline - before
    );
    assert!(lease.is_live());
    // A DBA removes the holder: the next renewal finds the lease lost and
    // the lease stops being proved held at once.
    Lock::new(&database, lock_name("job"))
        .force_release()
        .await
        .unwrap();
    assert!(matches!(lease.renew().await, Err(LockError::Lost { .. })));
    assert!(!lease.is_live() && lease.deadline().is_none());
    assert!(matches!(lease.release().await, Err(LockError::Lost { .. })));
}
