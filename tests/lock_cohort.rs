//! The blocking acquires of one process wait for a lock as one member of
//! its stored line, and a holder among them passes it straight to the next
//! (`lock/cohort.rs`): in the order they came, one write per handoff,
//! at most `MAX_PASSES` handoffs in a row while another process waits, and
//! never behind a holder that can no longer prove its lease. Each test puts
//! the calls in the process's queue for certain (it watches the queue grow)
//! before the lock changes hands.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mongodb::{Client, Database};

use crate::support;
use crate::support::locks::{line, lock_name, until_line_is, until_queued};
use idmint::lock::{Lock, LockError, Locks, WaitOptions, MAX_PASSES};

const TTL: Duration = Duration::from_secs(30);

/// Who was served, in order, with the fencing token each got.
type Served = Arc<Mutex<Vec<(String, i64)>>>;

/// A handle on `database` through a client that records the name of every
/// command it sends.
async fn recording(database: &Database) -> (Database, Arc<Mutex<Vec<String>>>) {
    use mongodb::event::command::CommandEvent;
    use mongodb::event::EventHandler;
    let commands: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut options = mongodb::options::ClientOptions::parse(support::uri())
        .await
        .unwrap();
    let seen = commands.clone();
    options.command_event_handler = Some(EventHandler::callback(move |event| {
        if let CommandEvent::Started(started) = event {
            seen.lock().unwrap().push(started.command_name.clone());
        }
    }));
    let client = Client::with_options(options).unwrap();
    (client.database(database.name()), commands)
}

/// Four calls of one process take the lock three times each. Every holder
/// releases only once all the others that still want it wait in the
/// process: each is served in turn, round the table, and each handoff is
/// the release's one write (no entry in the stored line, no refresh, no
/// write to rejoin it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_of_one_process_are_served_in_turn_one_write_per_handoff() {
    const CALLS: usize = 4;
    const ROUNDS: usize = 3;
    let database = support::database("lock_cohort_turns").await;
    let (recorded, commands) = recording(&database).await;
    let locks = Locks::new(&recorded);
    let options = WaitOptions::new(Duration::from_secs(60));
    let handle = |call: usize| locks.lock_with_owner(lock_name("table"), format!("call{call}"));
    let first = handle(0).acquire(TTL, &options).await.unwrap();
    let writes_before = commands.lock().unwrap().len();
    let served: Served = Arc::default();
    // Acquisitions each call still wants.
    let wanted = Arc::new(Mutex::new(vec![ROUNDS; CALLS]));
    let (first_token, mut first) = (first.token(), Some(first));
    let mut calls = Vec::new();
    for call in 0..CALLS {
        let (lock, shared, served, wanted, options) = (
            handle(call),
            locks.clone(),
            served.clone(),
            wanted.clone(),
            options.clone(),
        );
        let mut lease = first.take();
        calls.push(tokio::spawn(async move {
            loop {
                let held = match lease.take() {
                    Some(held) => held,
                    None => lock.acquire(TTL, &options).await.unwrap(),
                };
                served
                    .lock()
                    .unwrap()
                    .push((format!("call{call}"), held.token()));
                let others = {
                    let mut wanted = wanted.lock().unwrap();
                    wanted[call] -= 1;
                    (0..CALLS).filter(|&c| c != call && wanted[c] > 0).count()
                };
                until_queued(&shared, "table", others).await;
                assert_eq!(held.release().await.unwrap(), 0);
                if wanted.lock().unwrap()[call] == 0 {
                    return;
                }
            }
        }));
        if call > 0 && call + 1 < CALLS {
            // Calls 1, 2, 3 join the queue in that order. (Not waited for
            // after the last: its joining lets call 0 release, and the
            // queue moves on at once.)
            until_queued(&locks, "table", call).await;
        }
    }
    for call in calls {
        call.await.unwrap();
    }
    let served = served.lock().unwrap().clone();
    let order: Vec<&str> = served.iter().map(|(owner, _)| owner.as_str()).collect();
    let expected: Vec<String> = (0..CALLS * ROUNDS)
        .map(|turn| format!("call{}", turn % CALLS))
        .collect();
    assert_eq!(order, expected, "served out of turn");
    let tokens: Vec<i64> = served.iter().map(|(_, token)| *token).collect();
    let consecutive: Vec<i64> = (0..(CALLS * ROUNDS) as i64)
        .map(|n| first_token + n)
        .collect();
    assert_eq!(tokens, consecutive, "each handoff is a new fencing token");
    let writes: Vec<String> = commands.lock().unwrap()[writes_before..]
        .iter()
        .filter(|name| {
            !matches!(
                name.as_str(),
                "getMore" | "killCursors" | "hello" | "isMaster"
            )
        })
        .cloned()
        .collect();
    assert_eq!(
        writes,
        vec!["findAndModify".to_string(); CALLS * ROUNDS],
        "one release per acquisition and nothing else"
    );
    assert!(line(&database, "table").await.is_empty());
    let state = handle(0).status().await.unwrap().unwrap();
    assert_eq!(state.owner, None, "the last release freed the lock");
}

/// A process whose holder has more calls waiting than `MAX_PASSES` passes
/// the lock on `MAX_PASSES` times while another process waits in the
/// stored line, then hands it to that process; its next call then waits
/// in the stored line behind it, and the calls after that in the process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_passes_the_lock_on_at_most_max_passes_times_while_another_waits() {
    let database = support::database("lock_cohort_bound").await;
    let locks = Locks::new(&database);
    let options = WaitOptions::new(Duration::from_secs(60));
    let holder = locks.lock_with_owner(lock_name("bound"), "holder".into());
    let lease = holder.acquire(TTL, &options).await.unwrap();
    let served: Served = Arc::default();
    let serve = |lock: Lock| {
        let (served, options) = (served.clone(), options.clone());
        tokio::spawn(async move {
            let lease = lock.acquire(TTL, &options).await.unwrap();
            served
                .lock()
                .unwrap()
                .push((lock.owner().to_string(), lease.token()));
            lease.release().await.unwrap();
        })
    };
    let local = MAX_PASSES as usize + 2;
    let mut calls = Vec::new();
    for call in 1..=local {
        calls.push(serve(
            locks.lock_with_owner(lock_name("bound"), format!("local{call}")),
        ));
        until_queued(&locks, "bound", call).await;
    }
    // Another process (a handle made apart) waits in the stored line.
    calls.push(serve(Lock::with_owner(
        &database,
        lock_name("bound"),
        "remote".into(),
    )));
    until_line_is(&database, "bound", &["remote"]).await;
    assert_eq!(lease.release().await.unwrap(), 0);
    for call in calls {
        call.await.unwrap();
    }
    let served = served.lock().unwrap().clone();
    let order: Vec<&str> = served.iter().map(|(owner, _)| owner.as_str()).collect();
    let mut expected: Vec<String> = (1..=MAX_PASSES as usize)
        .map(|call| format!("local{call}"))
        .collect();
    expected.push("remote".into());
    expected.extend((MAX_PASSES as usize + 1..=local).map(|call| format!("local{call}")));
    assert_eq!(order, expected);
    let tokens: Vec<i64> = served.iter().map(|(_, token)| *token).collect();
    let consecutive: Vec<i64> = (2..2 + served.len() as i64).collect();
    assert_eq!(tokens, consecutive);
}

/// A call waiting in the process behind a holder that will never release
/// (its lease neither renewed nor released, or dropped) takes the lock once
/// the server has ended that lease, well before its own deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_that_cannot_prove_its_lease_keeps_nobody_waiting() {
    let database = support::database("lock_cohort_stuck").await;
    let locks = Locks::new(&database);
    let short = Duration::from_secs(1);
    let mut options = WaitOptions::new(Duration::from_secs(30));
    options.refresh = Duration::from_millis(200);
    for dropped in [false, true] {
        let holder = locks.lock_with_owner(lock_name("stuck"), "holder".into());
        let lease = holder.acquire(short, &options).await.unwrap();
        let waiter = locks.lock_with_owner(lock_name("stuck"), "waiter".into());
        let waiting = {
            let options = options.clone();
            tokio::spawn(async move { waiter.acquire(TTL, &options).await })
        };
        until_queued(&locks, "stuck", 1).await;
        let token = lease.token();
        let lease = if dropped {
            drop(lease);
            None
        } else {
            Some(lease)
        };
        let next = waiting
            .await
            .unwrap()
            .expect("the waiter took the lock after the server ended the lease");
        assert_eq!(next.token(), token + 1);
        if let Some(lease) = lease {
            assert!(!lease.is_live());
            assert!(matches!(lease.release().await, Err(LockError::Lost { .. })));
        }
        next.release().await.unwrap();
    }
}

/// A call waiting in the process whose deadline passes, or that is
/// cancelled, leaves the process's queue: the holder's release then frees
/// the lock rather than passing it to nobody.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_gives_up_or_is_cancelled_leaves_the_process_queue() {
    let database = support::database("lock_cohort_leave").await;
    let locks = Locks::new(&database);
    let holder = locks.lock_with_owner(lock_name("leave"), "holder".into());
    let lease = holder
        .acquire(TTL, &WaitOptions::new(Duration::from_secs(60)))
        .await
        .unwrap();
    let quitter = locks.lock_with_owner(lock_name("leave"), "quitter".into());
    let gave_up = quitter
        .acquire(TTL, &WaitOptions::new(Duration::from_millis(400)))
        .await;
    assert!(
        matches!(gave_up, Err(LockError::Busy { token, .. }) if token == lease.token()),
        "{gave_up:?}"
    );
    assert_eq!(locks.queued(&lock_name("leave")), 0);
    let cancelled = locks.lock_with_owner(lock_name("leave"), "cancelled".into());
    let task = tokio::spawn(async move {
        cancelled
            .acquire(TTL, &WaitOptions::new(Duration::from_secs(60)))
            .await
    });
    until_queued(&locks, "leave", 1).await;
    task.abort();
    until_queued(&locks, "leave", 0).await;
    assert_eq!(lease.release().await.unwrap(), 0);
    let state = holder.status().await.unwrap().unwrap();
    assert_eq!(state.owner, None, "passed to a call that left");
    assert!(line(&database, "leave").await.is_empty());
}

/// The call of a process that waits in the stored line for it, and whose
/// deadline passes or that is cancelled, hands the lead to the next call
/// waiting in the process: that call takes its place in the stored line
/// and is served when the holder (another process) releases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_gives_up_or_is_cancelled_hands_the_lead_on() {
    let database = support::database("lock_cohort_lead").await;
    let holder = Lock::with_owner(&database, lock_name("lead"), "holder".into());
    let locks = Locks::new(&database);
    for cancel in [false, true] {
        let lease = holder
            .acquire(TTL, &WaitOptions::new(Duration::from_secs(60)))
            .await
            .unwrap();
        let leader = locks.lock_with_owner(lock_name("lead"), "leader".into());
        let leading = tokio::spawn(async move {
            let wait = if cancel { 60 } else { 1 };
            leader
                .acquire(TTL, &WaitOptions::new(Duration::from_secs(wait)))
                .await
        });
        until_line_is(&database, "lead", &["leader"]).await;
        let next = locks.lock_with_owner(lock_name("lead"), "next".into());
        let waiting = tokio::spawn(async move {
            next.acquire(TTL, &WaitOptions::new(Duration::from_secs(60)))
                .await
        });
        until_queued(&locks, "lead", 1).await;
        if cancel {
            leading.abort();
        } else {
            assert!(matches!(
                leading.await.unwrap(),
                Err(LockError::Busy { .. })
            ));
        }
        until_line_is(&database, "lead", &["next"]).await;
        assert_eq!(locks.queued(&lock_name("lead")), 0);
        let token = lease.token();
        assert_eq!(lease.release().await.unwrap(), 0);
        let next = waiting.await.unwrap().unwrap();
        assert_eq!(next.token(), token + 1, "handed to the next call");
        next.release().await.unwrap();
    }
}
