//! Worker leases: which process may issue IDs with which worker id.
//!
//! A lease is a document of the `workers` collection,
//! `{_id: "<counter>#<worker>", counter, worker, owner, host, pid, acquired,
//! expires, floor, last_time}`:
//!
//! - it is claimed with one conditional write: a worker id never leased is
//!   inserted (a concurrent starter's insert fails with a duplicate key),
//!   an expired one is taken with a `findOneAndUpdate` that matches only
//!   while it is expired by the **server's** clock (`$$NOW` in the filter,
//!   not a TTL index, whose monitor runs once a minute), so two starters
//!   never share a worker id; expired leases are reused, so restarts never
//!   exhaust worker ids (uid-generator's PR #88);
//! - `last_time` is the last time unit the holder may have issued: each
//!   claim or renewal *reserves* time up to the holder's clock plus the
//!   reservation, and the holder never issues past it. A process that takes
//!   the worker id over starts at `floor = last_time + 1`, whatever its own
//!   clock says, so a clock stepped back across a restart, or a holder paused
//!   past its lease, can never make two processes issue the same time unit
//!   with one worker id (Leaf's issues #97 and #216);
//! - a clean exit releases the lease at once, writing the exact last time
//!   unit it issued, so that the next holder wastes nothing.
//!
//! Every write uses write concern majority with journal.

use std::time::{Duration, Instant};

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, DateTime, Document};
use mongodb::options::{ReturnDocument, WriteConcern};
use mongodb::{Collection, Database};
use serde::Serialize;

use crate::mongo::{self, describe_value, durable_write_concern};
use crate::parts::Layout;
use crate::sequence::{CounterName, SequenceError};

/// The collection of worker leases.
pub use crate::mongo::collections::WORKERS as WORKERS_COLLECTION;

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
}

/// A lease this process holds.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    /// The worker id.
    pub worker: u64,
    /// The first time unit this holder may issue.
    pub floor: u64,
    /// The last time unit this holder may issue (its reservation).
    pub reserved: u64,
}

/// The lease store of one snowflake counter.
#[derive(Debug, Clone)]
pub(crate) struct Leases {
    collection: Collection<Document>,
    counter: CounterName,
    write_concern: WriteConcern,
    /// This process's owner token, host and pid.
    owner: String,
    host: String,
    pid: u64,
}

impl Leases {
    pub fn new(database: &Database, counter: CounterName) -> Self {
        Self {
            collection: database.collection(WORKERS_COLLECTION),
            counter,
            write_concern: durable_write_concern(),
            owner: crate::random::random_token(),
            host: hostname(),
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

    /// Every lease of the counter, by worker id, with the server's time now.
    pub async fn list(&self) -> Result<(Vec<WorkerLease>, i64), SequenceError> {
        let pipeline = vec![
            doc! { "$match": { "counter": self.counter.as_str() } },
            doc! { "$addFields": { "__now": "$$NOW" } },
            doc! { "$sort": { "worker": 1 } },
        ];
        let documents: Vec<Document> = self
            .collection
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
        let id = document
            .get("_id")
            .map(|id| id.to_string())
            .unwrap_or_else(|| "?".into());
        let corrupt = |reason: String| SequenceError::CorruptLease {
            counter: self.counter.clone(),
            id: id.clone(),
            reason,
        };
        let integer = |field: &str, min: i64| -> Result<i64, SequenceError> {
            match document.get(field) {
                Some(Bson::Int32(n)) if i64::from(*n) >= min => Ok(i64::from(*n)),
                Some(Bson::Int64(n)) if *n >= min => Ok(*n),
                Some(other) => Err(corrupt(format!(
                    "{field} is {}, not an integer >= {min}",
                    describe_value(other)
                ))),
                None => Err(corrupt(format!("{field} is missing"))),
            }
        };
        let text = |field: &str| -> Result<String, SequenceError> {
            match document.get(field) {
                Some(Bson::String(text)) => Ok(text.clone()),
                Some(other) => Err(corrupt(format!(
                    "{field} is {}, not a string",
                    describe_value(other)
                ))),
                None => Err(corrupt(format!("{field} is missing"))),
            }
        };
        let expires_ms = match document.get("expires") {
            Some(Bson::DateTime(expires)) => expires.timestamp_millis(),
            Some(other) => {
                return Err(corrupt(format!(
                    "expires is {}, not a date",
                    describe_value(other)
                )))
            }
            None => return Err(corrupt("expires is missing".into())),
        };
        Ok(WorkerLease {
            worker: integer("worker", 0)? as u64,
            owner: text("owner")?,
            host: text("host").unwrap_or_default(),
            pid: integer("pid", 0).unwrap_or(0) as u64,
            expires_ms,
            last_time: integer("last_time", -1)?,
            live: expires_ms > now_ms,
        })
    }

    /// Claims the lowest worker id that is free or expired, reserving time
    /// from `now_units` on for `reserve_units`. Fails, naming when the first
    /// lease expires, when every worker id is leased and live.
    pub async fn claim(
        &self,
        layout: &Layout,
        now_units: u64,
        reserve_units: u64,
        ttl: Duration,
    ) -> Result<Held, SequenceError> {
        let (leases, server_now) = self.list().await?;
        if let Some(lease) = leases.iter().find(|l| l.worker > layout.max_worker()) {
            if lease.live {
                return Err(SequenceError::WorkerOutsideLayout {
                    counter: self.counter.clone(),
                    worker: lease.worker,
                    worker_bits: layout.worker_bits,
                });
            }
        }
        let listed = Instant::now();
        let live: std::collections::BTreeSet<u64> =
            leases.iter().filter(|l| l.live).map(|l| l.worker).collect();
        let known: std::collections::BTreeSet<u64> = leases.iter().map(|l| l.worker).collect();
        for worker in (0..=layout.max_worker()).filter(|w| !live.contains(w)) {
            let held = if known.contains(&worker) {
                self.try_take_over(worker, now_units, reserve_units, ttl)
                    .await?
            } else {
                // The server's time, as read by `list`, moved on locally.
                let expires =
                    server_now + listed.elapsed().as_millis() as i64 + ttl.as_millis() as i64;
                self.try_insert(worker, now_units, reserve_units, expires)
                    .await?
            };
            if let Some(held) = held {
                return Ok(held);
            }
        }
        let first_expiry = leases.iter().filter(|l| l.live).map(|l| l.expires_ms).min();
        Err(SequenceError::NoWorkerFree {
            counter: self.counter.clone(),
            workers: layout.max_worker() + 1,
            first_expiry: first_expiry
                .and_then(chrono::DateTime::from_timestamp_millis)
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
                .unwrap_or_else(|| "unknown".into()),
        })
    }

    /// Leases `worker`, never leased before, by inserting its lease; `None`
    /// if another process inserted it first.
    async fn try_insert(
        &self,
        worker: u64,
        now_units: u64,
        reserve_units: u64,
        expires_ms: i64,
    ) -> Result<Option<Held>, SequenceError> {
        let reserved = now_units + reserve_units;
        let lease = doc! {
            "_id": self.id(worker),
            "counter": self.counter.as_str(),
            "worker": worker as i64,
            "owner": &self.owner,
            "host": &self.host,
            "pid": self.pid as i64,
            "acquired": DateTime::now(),
            "expires": DateTime::from_millis(expires_ms),
            "floor": 0_i64,
            "last_time": reserved as i64,
        };
        match self
            .collection
            .insert_one(lease)
            .write_concern(self.write_concern.clone())
            .await
        {
            Ok(_) => Ok(Some(Held {
                worker,
                floor: 0,
                reserved,
            })),
            Err(error) if mongo::is_duplicate_key(&error) => Ok(None),
            Err(source) => Err(self.database_error("lease a worker id of", source)),
        }
    }

    /// Takes `worker` over if its lease has expired by the server's clock;
    /// `None` if it is live (another process renewed or took it first).
    async fn try_take_over(
        &self,
        worker: u64,
        now_units: u64,
        reserve_units: u64,
        ttl: Duration,
    ) -> Result<Option<Held>, SequenceError> {
        let filter = doc! {
            "_id": self.id(worker),
            "expires": { "$type": "date" },
            "$expr": { "$lte": ["$expires", "$$NOW"] },
        };
        let update = vec![
            doc! { "$set": {
                "counter": self.counter.as_str(),
                "worker": worker as i64,
                "owner": &self.owner,
                "host": &self.host,
                "pid": self.pid as i64,
                "acquired": "$$NOW",
                "expires": mongo::server_now_plus(ttl.as_millis() as i64),
                "floor": { "$toLong": { "$add": [{ "$ifNull": ["$last_time", -1_i64] }, 1_i64] } },
            }},
            doc! { "$set": {
                "last_time": { "$toLong": { "$add": [{ "$max": ["$floor", now_units as i64] }, reserve_units as i64] } },
            }},
        ];
        let claimed = self
            .collection
            .find_one_and_update(filter, update)
            .return_document(ReturnDocument::After)
            .write_concern(self.write_concern.clone())
            .await
            .map_err(|source| self.database_error("lease a worker id of", source))?;
        let Some(document) = claimed else {
            return Ok(None);
        };
        let floor = document.get_i64("floor").unwrap_or(0).max(0) as u64;
        let reserved = document.get_i64("last_time").unwrap_or(0).max(0) as u64;
        Ok(Some(Held {
            worker,
            floor,
            reserved,
        }))
    }

    /// Renews the lease on `worker` and extends the reservation to
    /// `now_units + reserve_units`. Returns the reservation, or `None` if the
    /// lease is no longer this process's.
    pub async fn renew(
        &self,
        worker: u64,
        now_units: u64,
        reserve_units: u64,
        ttl: Duration,
    ) -> Result<Option<u64>, SequenceError> {
        let renewed = self
            .collection
            .find_one_and_update(
                doc! {
                    "_id": self.id(worker),
                    "owner": &self.owner,
                    "$expr": { "$gt": ["$expires", "$$NOW"] },
                },
                vec![doc! { "$set": {
                    "expires": mongo::server_now_plus(ttl.as_millis() as i64),
                    "last_time": { "$toLong": { "$max": ["$last_time", (now_units + reserve_units) as i64] } },
                }}],
            )
            .return_document(ReturnDocument::After)
            .write_concern(self.write_concern.clone())
            .await
            .map_err(|source| self.database_error("renew a worker lease of", source))?;
        Ok(renewed.map(|document| document.get_i64("last_time").unwrap_or(0).max(0) as u64))
    }

    /// Releases the lease on `worker`, recording `last_time` (the last time
    /// unit issued, -1 for none) so that the next holder starts right after.
    pub async fn release(&self, worker: u64, last_time: i64) -> Result<bool, SequenceError> {
        let result = self
            .collection
            .update_one(
                doc! { "_id": self.id(worker), "owner": &self.owner },
                vec![doc! { "$set": { "expires": "$$NOW", "last_time": last_time } }],
            )
            .write_concern(self.write_concern.clone())
            .await
            .map_err(|source| self.database_error("release a worker lease of", source))?;
        Ok(result.modified_count == 1)
    }
}

/// This machine's host name, for `idmint workers` (empty if unknown).
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_default()
}
