//! Distributed locks on MongoDB: leases with fencing tokens.
//!
//! A lock is one document `{_id: name, owner, token, count, expiresAt,
//! acquiredAt, ticket, queue}` in the `locks` collection. It is taken by one
//! `findOneAndUpdate` with `upsert` whose update is an aggregation pipeline:
//! the server decides, against its own clock (`$$NOW`), whether the lock is
//! free (no owner, or `expiresAt <= $$NOW`), held by the caller (re-entrant:
//! the hold count grows), or held by someone else (the document is left as it
//! was). No TTL index and no client clock take part, so a client whose clock
//! runs ahead cannot steal a live lock, and a lease ends when the server says
//! so, to the millisecond rather than at the next TTL monitor pass.
//!
//! Every acquisition of a free lock increments `token`, the **fencing token**:
//! the document is never deleted on release (only its owner cleared), so tokens
//! of one lock name strictly increase over its whole life. Release and renew
//! match the owner *and* the token, so a holder that lost its lease (paused
//! past its TTL, partitioned) can neither free nor extend the next holder's
//! lock. [`fence`] gives the filter that makes a write elsewhere conditional on
//! the token, so the protected resource itself rejects a stale holder.
//!
//! A re-entry, or a renewal, never shortens a lease: the lease ends at the
//! later of its current end and the new TTL from now. Release and renew also
//! need the lease live by the server's clock, so a release after the lease
//! ended changes nothing and reports the lease lost.
//!
//! The lock is fair ([`queue`]): a blocking acquire that finds it held joins
//! the lock's waiting line and is served in the order it joined; a release
//! hands the lock to the first in line in the same write (the waiter learns
//! it from a change stream), and nobody takes a free lock while someone
//! waits ahead of them. The blocking acquires of one process ([`Locks`])
//! wait as one member of that line, and a holder among them passes the lock
//! straight to the next, at most [`MAX_PASSES`] times in a row while someone
//! else waits in the line (`cohort`: one write per handoff).
//!
//! A holder fails closed: a [`Lease`] is proved held only until its local
//! deadline (the send time of the last acknowledged acquire or renewal, plus
//! the TTL, less a tenth, on the monotonic clock), which comes before the
//! server can end it. [`Watchdog`] renews every third of the TTL and says when
//! the holder must stop; `idmint lock run` stops its command by then.
//!
//! Besides its exclusive holder, a lock can be held **shared** (`shared.rs`):
//! the permits of a semaphore, the readers of a read-write lock, each a
//! lease with a fencing token of its own in the document's `shared` array,
//! admitted in the same line, never beside an exclusive holder.
//!
//! A lease can be handed to another process ([`LeaseId`]): `idmint serve`
//! takes it for an HTTP client and gives it the ID, with which the client
//! renews and releases it through any instance of the service.
//!
//! Expiry, takeover, renewal, release and the local deadline are the one lease
//! primitive's (`crate::lease`), shared with snowflake worker leases; the
//! fencing token and the hold count are the lock's own.
//!
//! Every write uses majority write concern with journal and a `wtimeout`
//! ([`crate::mongo::durable_write_concern`]).

mod cohort;
mod document;
mod error;
pub mod fence;
mod handles;
mod holders;
mod lease_id;
mod name;
pub mod queue;
mod shared;
mod wait;
mod watch;
mod watchdog;

pub use cohort::MAX_PASSES;
pub use document::LockState;
pub use error::LockError;
pub use fence::{fenced_filter, fenced_set};
pub use handles::{acquire_pipeline, status_all, Acquired, Lease, Lock, Locks};
pub use holders::SharedHolder;
pub use lease_id::LeaseId;
pub use name::{InvalidLockName, LockName};
pub use shared::{MAX_PERMITS, READERS};
pub use wait::{WaitOptions, MAX_WAIT};
pub use watch::LINGER;
pub use watchdog::Watchdog;

/// The collection that holds lock documents.
pub use crate::mongo::collections::LOCKS as LOCKS_COLLECTION;

/// The shortest lease accepted.
pub const MIN_TTL: std::time::Duration = std::time::Duration::from_millis(100);
/// The longest lease accepted: one day.
pub const MAX_TTL: std::time::Duration = std::time::Duration::from_secs(86_400);

/// The most a holder that cannot renew is given to stop on its own.
pub const MAX_STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// How long before its lease's local deadline a holder that could not renew
/// is asked to stop (`lock run`: SIGTERM), so that it can be forced to
/// (SIGKILL) by the deadline itself: a quarter of the TTL, at most
/// [`MAX_STOP_GRACE`]. The grace is taken from within the TTL, never added
/// to it: whatever the holder does, it is stopped before the server could
/// end its lease and give the lock to someone else.
pub fn stop_grace(ttl: std::time::Duration) -> std::time::Duration {
    (ttl / 4).min(MAX_STOP_GRACE)
}
