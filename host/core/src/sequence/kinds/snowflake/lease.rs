//! Worker leases: which process may issue IDs with which worker id.
//!
//! A lease is a document of the `workers` collection,
//! `{_id: "<counter>#<worker>", counter, worker, owner, host, pid, acquired,
//! expires, floor, last_time}`:
//!
//! - it is claimed with one conditional write: an upsert whose pipeline
//!   takes the worker id only while no lease of it is live by the
//!   **server's** clock (`$$NOW`, not a TTL index, whose monitor runs once a
//!   minute), creating the document for an id never leased; two starters
//!   never share a worker id, and expired leases are reused, so restarts
//!   never exhaust worker ids (uid-generator's PR #88). Each claim has an
//!   owner token of its own, so renewals and releases meant for one holding
//!   can never match another;
//! - `last_time` is the last time unit the holder may have issued: each
//!   claim or renewal *reserves* time up to the holder's clock plus the
//!   reservation, and the holder never issues past it. A process that takes
//!   the worker id over starts at `floor = last_time + 1`, whatever its own
//!   clock says, so a clock stepped back across a restart, or a holder paused
//!   past its lease, can never make two processes issue the same time unit
//!   with one worker id (Leaf's issues #97 and #216);
//! - a clean exit releases the lease at once, writing the exact last time
//!   unit it issued, so that the next holder wastes nothing; only while it
//!   is still this holding's live lease, so a second release, or one after
//!   the lease ended, changes nothing.
//!
//! A holder of this version records each reservation in its gate first
//! (`gate.rs`) and says so in its lease (`gated: true`); a lease without
//! it was written by an idmint before gates, whose holder's reservations
//! no gate bounds (a change of stripes refuses to start while one is live).
//!
//! Every write uses write concern majority with journal. Expiry, takeover,
//! renewal, release and the local deadline are the one lease primitive's
//! (`crate::lease`); what a worker lease adds is the time reservation.

use std::time::{Duration, Instant};

use futures_util::TryStreamExt;
use mongodb::bson::{doc, DateTime, Document};
use mongodb::Database;
use serde::Serialize;

use super::gate::Gate;
use crate::lease::{Acquire, Fields, LeaseFields, LeaseStore};
use crate::parts::Layout;
use crate::sequence::{CounterName, SequenceError};

/// The collection of worker leases.
pub use crate::mongo::collections::WORKERS as WORKERS_COLLECTION;

/// How a worker lease names its lease fields.
/// The field of a lease whose holder records its reservations in the gate.
const GATED: &str = "gated";

const WORKER_FIELDS: LeaseFields = LeaseFields {
    owner: "owner",
    expires: "expires",
};

/// A lease as read from the server (`idmint workers`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkerLease {
    /// The worker id.
    pub worker: u64,
    /// The holder's random owner token.
    pub owner: String,
    /// The holder's host name.
    pub host: String,
    /// The holder's process id.
    pub pid: u64,
    /// When the lease expires (or expired), by the server's clock, ms since 1970.
    pub expires_ms: i64,
    /// The last time unit the holder may have issued (-1: none).
    pub last_time: i64,
    /// Whether the lease is live now, by the server's clock.
    pub live: bool,
    /// Whether its holder records its reservations in the counter's gate
    /// first (`gate.rs`): false for a lease an idmint before gates wrote.
    pub gated: bool,
}

/// A lease this process holds.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    /// The worker id.
    pub worker: u64,
    /// This holding's owner token: fresh for every claim, so that a write
    /// meant for one holding (a renewal, a release) can never match another
    /// one of the same process.
    pub owner: String,
    /// The first time unit this holder may issue.
    pub floor: u64,
    /// The last time unit this holder may issue (its reservation).
    pub reserved: u64,
    /// When the claim that got it was sent (the start of its local deadline).
    pub sent: Instant,
}

/// The lease store of one snowflake counter (of one lane of it, once
/// striped).
#[derive(Debug, Clone)]
pub(crate) struct Leases {
    store: LeaseStore,
    counters: mongodb::Collection<Document>,
    gate: Gate,
    counter: CounterName,
    /// This process's host and pid.
    host: String,
    pid: u64,
}

impl Leases {
    pub fn new(database: &Database, counter: CounterName, gate: Gate) -> Self {
        Self {
            store: LeaseStore::new(database.collection(WORKERS_COLLECTION), WORKER_FIELDS),
            counters: database.collection(crate::mongo::collections::COUNTERS),
            gate,
            counter,
            host: crate::lease::host_name(),
            pid: u64::from(std::process::id()),
        }
    }

    /// The counter the leases are for.
    pub fn counter(&self) -> &CounterName {
        &self.counter
    }

    fn id(&self, worker: u64) -> String {
        format!("{}#{worker}", self.counter)
    }

    fn database_error(&self, action: &'static str, source: mongodb::error::Error) -> SequenceError {
        SequenceError::from_database_on(
            &self.counter,
            action,
            "find, insert and update",
            WORKERS_COLLECTION,
            source,
        )
    }

    fn corrupt(&self, document: &Document, reason: String) -> SequenceError {
        SequenceError::CorruptLease {
            counter: self.counter.clone(),
            id: document
                .get("_id")
                .map(|id| id.to_string())
                .unwrap_or_else(|| "?".into()),
            reason,
        }
    }

    /// Every lease of the counter, by worker id, with the server's time now.
    pub async fn list(&self) -> Result<(Vec<WorkerLease>, i64), SequenceError> {
        let pipeline = vec![
            doc! { "$match": { "counter": self.counter.as_str() } },
            doc! { "$addFields": { "__now": "$$NOW" } },
            doc! { "$sort": { "worker": 1 } },
        ];
        let documents: Vec<Document> = self
            .store
            .collection()
            .aggregate(pipeline)
            .await
            .map_err(|source| self.database_error("list leases of", source))?
            .try_collect()
            .await
            .map_err(|source| self.database_error("list leases of", source))?;
        let mut now = DateTime::now().timestamp_millis();
        let mut leases = Vec::with_capacity(documents.len());
        for document in &documents {
            if let Ok(server_now) = document.get_datetime("__now") {
                now = server_now.timestamp_millis();
            }
            leases.push(self.read(document, now)?);
        }
        Ok((leases, now))
    }

    /// Reads one lease document, or says what is wrong with it.
    fn read(&self, document: &Document, now_ms: i64) -> Result<WorkerLease, SequenceError> {
        let fields = Fields(document);
        let read = || -> Result<WorkerLease, String> {
            let expires_ms = fields.date(WORKER_FIELDS.expires)?.timestamp_millis();
            Ok(WorkerLease {
                worker: fields.integer("worker", 0)? as u64,
                owner: fields.string(WORKER_FIELDS.owner)?,
                host: fields.string("host").unwrap_or_default(),
                pid: fields.integer("pid", 0).unwrap_or(0) as u64,
                expires_ms,
                last_time: fields.integer("last_time", -1)?,
                live: expires_ms > now_ms,
                gated: document.get_bool(GATED).unwrap_or(false),
            })
        };
        read().map_err(|reason| self.corrupt(document, reason))
    }

    /// The time a holding reserves, as its document records it after a
    /// claim or renewal (`last_time`), read through the same reader.
    fn reservation(&self, document: &Document, field: &str) -> Result<u64, SequenceError> {
        Fields(document)
            .integer(field, 0)
            .map(|n| n as u64)
            .map_err(|reason| self.corrupt(document, reason))
    }

    /// Raises the gate to `until` (see `gate.rs`): the most a holder may
    /// reserve now, or [`SequenceError::Striped`] when the gate is sealed.
    async fn raise_gate(&self, until: u64) -> Result<u64, SequenceError> {
        self.gate
            .raise(&self.counters, &self.counter, until)
            .await?
            .ok_or_else(|| SequenceError::Striped {
                name: self.counter.clone(),
            })
    }

    /// The time a holding that is at `now_units` reserves up to: from the
    /// later of now and its gate's first unit, `reserve_units` on.
    fn until(&self, now_units: u64, reserve_units: u64) -> u64 {
        now_units.max(self.gate.first_unit()) + reserve_units
    }

    /// Claims the lowest worker id its gate owns that is free or expired,
    /// reserving time from `now_units` on for `reserve_units`, no more than
    /// its gate recorded first. Fails, naming when the first lease expires,
    /// when every such worker id is leased and live;
    /// [`SequenceError::Striped`] when the gate is sealed.
    pub async fn claim(
        &self,
        layout: &Layout,
        now_units: u64,
        reserve_units: u64,
        ttl: Duration,
    ) -> Result<Held, SequenceError> {
        let (leases, _) = self.list().await?;
        if let Some(lease) = leases.iter().find(|l| l.worker > layout.max_worker()) {
            if lease.live {
                return Err(SequenceError::WorkerOutsideLayout {
                    counter: self.counter.clone(),
                    worker: lease.worker,
                    worker_bits: layout.worker_bits,
                });
            }
        }
        let live: std::collections::BTreeSet<u64> =
            leases.iter().filter(|l| l.live).map(|l| l.worker).collect();
        let cap = self
            .raise_gate(self.until(now_units, reserve_units))
            .await?;
        let owner = crate::random::random_token();
        let workers = (0..=layout.max_worker()).filter(|w| self.gate.owns(*w));
        let owned = workers.clone().count() as u64;
        for worker in workers.filter(|w| !live.contains(w)) {
            if let Some(held) = self
                .try_claim(worker, &owner, now_units, reserve_units, ttl, cap)
                .await?
            {
                return Ok(held);
            }
        }
        let first_expiry = leases.iter().filter(|l| l.live).map(|l| l.expires_ms).min();
        Err(SequenceError::NoWorkerFree {
            counter: self.counter.clone(),
            workers: owned,
            first_expiry: first_expiry
                .and_then(chrono::DateTime::from_timestamp_millis)
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
                .unwrap_or_else(|| "unknown".into()),
        })
    }

    /// Leases `worker` if it is free, released or expired by the server's
    /// clock (one upsert: an id never leased is created, an ended one taken
    /// over); `None` if it is live (another process claimed or renewed it
    /// first). The holding starts at `floor = last_time + 1` of the lease
    /// it takes over (0 for a new one), or its gate's first unit if later,
    /// and reserves up to the later of that and `now_units`, plus
    /// `reserve_units`, but never past `cap`, what its gate recorded.
    async fn try_claim(
        &self,
        worker: u64,
        owner: &str,
        now_units: u64,
        reserve_units: u64,
        ttl: Duration,
        cap: u64,
    ) -> Result<Option<Held>, SequenceError> {
        let floor = doc! { "$toLong": { "$max": [
            { "$add": [{ "$ifNull": ["$last_time", -1_i64] }, 1_i64] },
            self.gate.first_unit() as i64,
        ]}};
        let acquire = Acquire {
            well_formed: well_formed_expr(),
            fresh: doc! {
                "counter": self.counter.as_str(),
                "worker": worker as i64,
                "host": &self.host,
                "pid": self.pid as i64,
                "acquired": "$$NOW",
                GATED: { "$literal": true },
                "floor": floor.clone(),
                "last_time": { "$toLong": { "$min": [
                    cap as i64,
                    { "$add": [{ "$max": [floor, now_units as i64] }, reserve_units as i64] },
                ]}},
            },
            ..Acquire::default()
        };
        let Some(acquisition) = self
            .store
            .acquire(&self.id(worker), owner, ttl, &acquire)
            .await
            .map_err(|source| self.database_error("lease a worker id of", source))?
        else {
            return Ok(None);
        };
        if !acquisition.held {
            // Live, or malformed (left unchanged): say which.
            self.read(&acquisition.document, 0)?;
            return Ok(None);
        }
        Ok(Some(Held {
            worker,
            owner: owner.to_string(),
            floor: self.reservation(&acquisition.document, "floor")?,
            reserved: self.reservation(&acquisition.document, "last_time")?,
            sent: acquisition.sent,
        }))
    }

    /// Renews `held` and extends its reservation to `now_units +
    /// reserve_units` (from its gate's first unit at least), recorded in
    /// its gate first. Returns the reservation and when the renewal was
    /// sent, or `None` if the lease is no longer this holding's live one;
    /// [`SequenceError::Striped`] when the gate is sealed.
    pub async fn renew(
        &self,
        held: &Held,
        now_units: u64,
        reserve_units: u64,
        ttl: Duration,
    ) -> Result<Option<(u64, Instant)>, SequenceError> {
        let until = self.until(now_units, reserve_units);
        self.raise_gate(until).await?;
        let renewed = self
            .store
            .renew(
                &self.id(held.worker),
                &doc! { WORKER_FIELDS.owner: &held.owner },
                ttl,
                doc! {
                    "last_time": { "$toLong": { "$max": ["$last_time", until as i64] } },
                    GATED: { "$literal": true },
                },
            )
            .await
            .map_err(|source| self.database_error("renew a worker lease of", source))?;
        match renewed {
            Some((document, sent)) => Ok(Some((self.reservation(&document, "last_time")?, sent))),
            None => Ok(None),
        }
    }

    /// Releases `held`, recording `last_time` (the last time unit issued,
    /// -1 for none) so that the next holder starts right after, if it is
    /// still this holding's live lease; `false` (and nothing changed) if
    /// not: it ended, was taken over, or was released already.
    pub async fn release(&self, held: &Held, last_time: i64) -> Result<bool, SequenceError> {
        let released = self
            .store
            .release(
                &self.id(held.worker),
                &doc! { WORKER_FIELDS.owner: &held.owner },
                vec![doc! { "$set": { WORKER_FIELDS.expires: "$$NOW", "last_time": last_time } }],
            )
            .await
            .map_err(|source| self.database_error("release a worker lease of", source))?;
        Ok(released.is_some())
    }
}

/// True (on the server) for a lease document idmint can take over: a new
/// one (nothing but its `_id`, as an upsert starts), or one whose fields
/// [`Leases::read`] accepts. A malformed one is left unchanged.
fn well_formed_expr() -> Document {
    let type_of = |field: &str| doc! { "$type": format!("${field}") };
    let missing = |field: &str| doc! { "$eq": [type_of(field), "missing"] };
    let integer_from = |field: &str, min: i64| {
        doc! { "$and": [
            { "$in": [type_of(field), ["int", "long"]] },
            { "$gte": [format!("${field}"), min] },
        ]}
    };
    doc! { "$or": [
        { "$and": [missing("owner"), missing("expires"), missing("last_time")] },
        { "$and": [
            { "$eq": [type_of("owner"), "string"] },
            { "$eq": [type_of("expires"), "date"] },
            integer_from("last_time", -1),
            { "$or": [missing("worker"), integer_from("worker", 0)] },
        ]},
    ]}
}

/// Every worker lease of unstriped snowflake counter `name` in `database`,
/// by worker id, with the server's time now (ms since 1970), read without
/// the counter (a change of stripes reads them while it seals it).
pub(crate) async fn leases_of(
    database: &Database,
    name: &CounterName,
) -> Result<(Vec<WorkerLease>, i64), SequenceError> {
    Leases::new(database, name.clone(), Gate::Counter)
        .list()
        .await
}
