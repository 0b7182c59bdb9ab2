//! The waiting line that makes a lock fair: waiters are served in the order
//! they started waiting, and a release hands the lock straight to the first.
//!
//! A blocking acquire ([`Lock::acquire`](super::Lock::acquire)) that finds
//! the lock held adds itself to the document's `queue`, an array of entries
//! `{owner, ticket, since, until, ttl}`: `ticket` names the acquire call
//! (random per call), `since` is when its entry was last refreshed and
//! `until` when the entry lapses (three refreshes later, [`entry_ttl`]), both
//! by the server's clock; `ttl` is the lease it asks for, in milliseconds. A
//! waiter refreshes its entry every [`REFRESH`] (by default) while it waits; an entry that lapsed (its
//! waiter crashed, or gave up without saying so) is ignored and dropped by
//! the next write. The rules, all decided on the server in the acquire and
//! release pipelines:
//!
//! - **Nobody jumps the line.** A free or ended lock is taken only by the
//!   first live entry, or by anyone when nobody waits; a `try_acquire` (and
//!   the stored JavaScript twin) on a free lock with live waiters is busy.
//! - **Release hands over.** A release that frees the lock gives it, in the
//!   same write, to the first live entry: owner and ticket set to the
//!   waiter's, the next fencing token, a hold count of 1, and an end of the
//!   entry's `since` plus its `ttl`. The waiter learns it from the change
//!   stream, with no write of its own. Its local deadline is counted from
//!   the send of its last acknowledged refresh: the entry's `since` is no
//!   earlier than the server's receipt of that refresh, so the deadline
//!   still comes before the server can end the lease. A release hands over
//!   only to an entry refreshed within half its TTL; otherwise it frees the
//!   lock and the first waiter takes it with its own write.
//! - **A waiter that stops waiting loses its place within three refreshes.**
//!   One that gives up at its deadline removes its entry (and releases the
//!   lock if it was handed over at that moment); one that is cancelled does
//!   the same from a spawned task; one that crashed is skipped once its entry
//!   lapses. A lock handed to a waiter that crashed in that window stays
//!   held until its TTL ends, as if the waiter had crashed just after taking
//!   it.
//!
//! The line holds at most [`MAX_WAITERS`] entries; a waiter that finds it
//! full polls instead and is served after the line empties.

use std::time::Duration;

use mongodb::bson::{doc, Bson, Document};

use crate::mongo::server_now_plus;

/// How often a waiter refreshes its entry, by default
/// ([`WaitOptions::refresh`](super::WaitOptions::refresh)).
pub const REFRESH: Duration = Duration::from_secs(1);

/// How long a waiter's entry lasts after its last refresh: three refreshes.
pub const fn entry_ttl(refresh: Duration) -> Duration {
    Duration::from_millis(refresh.as_millis() as u64 * 3)
}

/// The most entries the line holds.
pub const MAX_WAITERS: i64 = 1000;

/// The `$let` variables the acquire and release pipelines share: `q`, the
/// live entries in order.
pub(crate) fn vars() -> Document {
    doc! { "q": { "$filter": {
        "input": { "$cond": [{ "$isArray": "$queue" }, "$queue", []] },
        "cond": { "$gt": ["$$this.until", "$$NOW"] },
    }}}
}

/// The tickets of the live line, in order (a `$map` rather than the path
/// `$$q.ticket`, which some servers read as null for an empty line).
fn tickets() -> Document {
    doc! { "$map": { "input": "$$q", "in": "$$this.ticket" } }
}

/// True when a free lock may be taken by call `ticket`: nobody waits, or it
/// is first in line.
pub(crate) fn turn(ticket: &str) -> Document {
    doc! { "$or": [
        { "$eq": [{ "$size": "$$q" }, 0] },
        { "$eq": [{ "$arrayElemAt": [tickets(), 0] }, ticket] },
    ]}
}

/// True when the lock was handed to call `ticket` (with the lease live).
pub(crate) fn claimed(owner: &str, ticket: &str) -> Document {
    doc! { "$and": [{ "$eq": ["$owner", owner] }, { "$eq": ["$ticket", ticket] }] }
}

/// The live line without call `ticket`.
pub(crate) fn without(ticket: &str) -> Document {
    doc! { "$filter": { "input": "$$q", "cond": { "$ne": ["$$this.ticket", ticket] } } }
}

/// The document with call `ticket` in line (its entry refreshed, or added
/// at the end while the line has room) and lapsed entries dropped.
pub(crate) fn enqueued(owner: &str, ticket: &str, ttl: Duration, refresh: Duration) -> Document {
    in_line(entry(owner, ticket, ttl, refresh), ticket)
}

/// [`enqueued`] for a shared call (`shared.rs`) among `permits`: its entry
/// says so, and a release never hands it the exclusive lock.
pub(crate) fn enqueued_shared(
    owner: &str,
    ticket: &str,
    ttl: Duration,
    refresh: Duration,
    permits: u32,
) -> Document {
    let mut entry = entry(owner, ticket, ttl, refresh);
    entry.insert("shared", true);
    entry.insert("permits", i64::from(permits));
    in_line(entry, ticket)
}

/// The line entry of call `ticket`, refreshed now.
fn entry(owner: &str, ticket: &str, ttl: Duration, refresh: Duration) -> Document {
    doc! {
        "owner": owner,
        "ticket": ticket,
        "since": "$$NOW",
        "until": server_now_plus(entry_ttl(refresh).as_millis() as i64),
        "ttl": i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX),
    }
}

/// The document with `entry` of call `ticket` in line.
fn in_line(entry: Document, ticket: &str) -> Document {
    let queue = doc! { "$cond": [
        { "$in": [ticket, tickets()] },
        { "$map": { "input": "$$q", "in": { "$cond": [
            { "$eq": ["$$this.ticket", ticket] }, entry.clone(), "$$this",
        ]}}},
        { "$cond": [
            { "$lt": [{ "$size": "$$q" }, MAX_WAITERS] },
            { "$concatArrays": ["$$q", [entry]] },
            "$$q",
        ]},
    ]};
    doc! { "$mergeObjects": ["$$ROOT", { "queue": queue }] }
}

/// A call that a releasing holder passes the lock to directly, in the
/// release's write: a waiter of the same process (see `cohort`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Heir<'a> {
    /// The owner token of the heir's handle.
    pub owner: &'a str,
    /// The heir's acquire call.
    pub ticket: &'a str,
    /// The lease it asks for.
    pub ttl: Duration,
}

/// The release pipeline: one hold less; when none is left, the lock goes
/// to `heir` if one is given (the next fencing token, a hold count of 1, a
/// lease of the heir's TTL from now), else to the first live waiter if its
/// entry is fresh enough (see the module docs), else it is freed. Lapsed
/// entries are dropped either way.
///
/// With `at_least` (a scheduled job's, ShedLock's `lockAtLeastFor`), a last
/// hold released before `acquiredAt + at_least` by the server's clock
/// keeps the lock held by its owner, with no holds (`count` 0), until
/// then: nobody takes it, nor is it handed on, before that moment.
pub(crate) fn release_pipeline(heir: Option<Heir<'_>>, at_least: Duration) -> Vec<Document> {
    let unheld = match heir {
        Some(heir) => doc! { "$let": { "vars": vars(), "in": given(
            heir.owner,
            heir.ticket,
            server_now_plus(i64::try_from(heir.ttl.as_millis()).unwrap_or(i64::MAX)),
            "$$q",
        )}},
        None => handed_or_freed(),
    };
    let unheld = if at_least.is_zero() {
        unheld
    } else {
        // Date arithmetic through milliseconds, as in `handed_or_freed`.
        let held_until = doc! { "$add": [
            { "$toLong": { "$ifNull": ["$acquiredAt", { "$toDate": 0_i64 }] } },
            i64::try_from(at_least.as_millis()).unwrap_or(i64::MAX),
        ]};
        let early = doc! { "$gt": [held_until.clone(), { "$toLong": "$$NOW" }] };
        let kept = doc! { "$mergeObjects": ["$$ROOT", {
            "count": 0_i64,
            "expiresAt": { "$toDate": held_until },
        }]};
        doc! { "$cond": [early, kept, unheld] }
    };
    vec![
        doc! { "$set": { "count": { "$subtract": ["$count", 1_i64] } } },
        doc! { "$replaceWith": { "$cond": [{ "$gt": ["$count", 0] }, "$$ROOT", unheld] } },
    ]
}

/// The lock given to acquire call `ticket` of owner `owner` (values or
/// expressions): the next fencing token, a hold count of 1, its lease
/// ending at `expires_at`, the line left as `queue`.
fn given(
    owner: impl Into<Bson>,
    ticket: impl Into<Bson>,
    expires_at: impl Into<Bson>,
    queue: impl Into<Bson>,
) -> Document {
    doc! { "$mergeObjects": ["$$ROOT", {
        "owner": owner.into(),
        "ticket": ticket.into(),
        "token": { "$add": [{ "$ifNull": ["$token", 0_i64] }, 1_i64] },
        "count": 1_i64,
        "expiresAt": expires_at.into(),
        "acquiredAt": "$$NOW",
        "queue": queue.into(),
    }]}
}

/// The fields of a lock nobody holds: what a release that hands it to
/// nobody sets, and an acquire that finds a lease ended and leaves it to
/// the next in line.
pub(crate) fn freed() -> Document {
    doc! { "owner": Bson::Null, "ticket": Bson::Null, "expiresAt": Bson::Null, "count": 0_i64 }
}

/// The document of a lock whose last hold was released: handed to the
/// first live waiter if its entry is fresh enough, else freed.
fn handed_or_freed() -> Document {
    let handed = given(
        "$$head.owner",
        "$$head.ticket",
        // Date arithmetic through milliseconds ($toLong, $toDate): every
        // server supports it, not all add a number to a date.
        doc! { "$toDate": { "$add": [{ "$toLong": "$$head.since" }, "$$head.ttl"] } },
        doc! { "$slice": ["$$q", 1, MAX_WAITERS] },
    );
    let mut unheld = freed();
    unheld.insert("queue", "$$q");
    let freed = doc! { "$mergeObjects": ["$$ROOT", unheld] };
    // Fresh enough: refreshed within half the lease it asks for; and an
    // exclusive call (a shared one takes its place itself).
    let fresh_head = doc! { "$and": [
        { "$gt": [{ "$size": "$$q" }, 0] },
        { "$ne": [{ "$ifNull": ["$$head.shared", false] }, true] },
        { "$gt": [
            { "$add": [{ "$toLong": "$$head.since" }, { "$divide": ["$$head.ttl", 2] }] },
            { "$toLong": "$$NOW" },
        ]},
    ]};
    doc! { "$let": { "vars": vars(), "in": { "$let": {
        "vars": { "head": { "$arrayElemAt": ["$$q", 0] } },
        "in": { "$cond": [fresh_head, handed, freed] },
    }}}}
}

/// The update that takes call `ticket` out of line (a waiter giving up).
pub(crate) fn leave_pipeline(ticket: &str) -> Vec<Document> {
    vec![doc! { "$replaceWith": { "$let": { "vars": vars(), "in": {
        "$mergeObjects": ["$$ROOT", { "queue": without(ticket) }],
    }}}}]
}

/// The server-side check of `queue` (missing, or an array of entries), the
/// twin of [`read_waiters`].
pub(crate) fn well_formed_term() -> Document {
    doc! { "$or": [
        { "$eq": [{ "$type": "$queue" }, "missing"] },
        { "$and": [
            { "$isArray": "$queue" },
            { "$allElementsTrue": [{ "$map": { "input": "$queue", "in": { "$and": [
                { "$eq": [{ "$type": "$$this.owner" }, "string"] },
                { "$eq": [{ "$type": "$$this.ticket" }, "string"] },
                { "$eq": [{ "$type": "$$this.since" }, "date"] },
                { "$eq": [{ "$type": "$$this.until" }, "date"] },
                { "$in": [{ "$type": "$$this.ttl" }, ["int", "long"]] },
                // A field an entry lacks reads "missing" on MongoDB, "null"
                // on some other servers: both mean none.
                { "$in": [{ "$type": "$$this.shared" }, ["missing", "null", "bool"]] },
                { "$in": [{ "$type": "$$this.permits" }, ["missing", "null", "int", "long"]] },
            ]}}}] },
        ]},
    ]}
}

/// How many entries `queue` holds (lapsed ones included), or what is wrong
/// with it.
pub(crate) fn read_waiters(document: &Document) -> Result<usize, String> {
    let entries = match document.get("queue") {
        None => return Ok(0),
        Some(Bson::Array(entries)) => entries,
        Some(other) => {
            return Err(format!(
                "queue is {}, not an array",
                crate::mongo::describe_value(other)
            ))
        }
    };
    for (index, entry) in entries.iter().enumerate() {
        let Bson::Document(entry) = entry else {
            return Err(format!("queue[{index}] is not a document"));
        };
        let ok = matches!(entry.get("owner"), Some(Bson::String(_)))
            && matches!(entry.get("ticket"), Some(Bson::String(_)))
            && matches!(entry.get("since"), Some(Bson::DateTime(_)))
            && matches!(entry.get("until"), Some(Bson::DateTime(_)))
            && matches!(entry.get("ttl"), Some(Bson::Int32(_) | Bson::Int64(_)));
        if !ok {
            return Err(format!(
                "queue[{index}] is not an entry {{owner, ticket, since, until, ttl}}"
            ));
        }
    }
    Ok(entries.len())
}
