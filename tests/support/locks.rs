//! Locks as tests take and watch them: a lock taken for certain, and the
//! waiters in line (stored, or queued in one process) watched until they
//! are there.

use std::process::{Command, Stdio};
use std::time::Duration;

use idmint::lock::{Acquired, Lease, Lock, LockName, Locks};
use mongodb::bson::{doc, Document};
use mongodb::Database;

/// `idmint lock run NAME <flags> -- sh -c SCRIPT` for `test`, its stdin,
/// stdout and stderr piped.
pub fn lock_run(test: &str, name: &str, flags: &[&str], script: &str) -> Command {
    let mut command = super::idmint(test);
    command
        .args(["lock", "run", name])
        .args(flags)
        .args(["--", "sh", "-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// A lock's name from a test's literal.
pub fn lock_name(text: &str) -> LockName {
    LockName::new(text).unwrap()
}

/// `lock` taken for `ttl` by one attempt; panics if someone holds it.
pub async fn held(lock: &Lock, ttl: Duration) -> Lease {
    match lock.try_acquire(ttl).await.unwrap() {
        Acquired::Held(lease) => lease,
        Acquired::Busy(state) => panic!("{} is busy: {state:?}", lock.name()),
    }
}

/// The lock's waiting line as stored: each entry's owner.
pub async fn line(database: &Database, lock: &str) -> Vec<String> {
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
pub async fn until_line_is(database: &Database, lock: &str, owners: &[&str]) {
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

/// Waits (by polling, not by sleeping a guess) until `calls` blocking
/// acquires of lock `lock` wait in the process of `locks`, behind a call of
/// its own (they have no entry in the stored line).
pub async fn until_queued(locks: &Locks, lock: &str, calls: usize) {
    for _ in 0..2000 {
        if locks.queued(&lock_name(lock)) == calls {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!(
        "{calls} calls never waited for {lock} in the process: {}",
        locks.queued(&lock_name(lock))
    );
}
