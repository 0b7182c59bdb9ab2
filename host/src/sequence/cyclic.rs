//! The cyclic counter: the seed's serial number, handed out in one atomic
//! round trip, with a timestamp that never goes backwards.
//!
//! The update is an aggregation pipeline sent through `findOneAndUpdate`
//! (MongoDB >= 4.2; idmint supports 4.4+). Its one `$replaceWith` stage reads
//! the document as it was before the update, and computes the new `val` and
//! the new `ts` from that same old state:
//!
//! ```text
//! wrapped = val >= maxval
//! val     = wrapped ? 0 : val + 1
//! ts      = max(client_us, ts + (wrapped ? 1 : 0))
//! ```
//!
//! It does so only when the document is well formed (see `counter_doc.rs`);
//! a malformed one is replaced by itself, that is left exactly as it was, and
//! comes back for the Rust side to say what is wrong with it. The filter is
//! the plain `{_id}`: a validity test in the filter (`$expr`) cost about a
//! third of the throughput on the test server, in the guard it costs nothing
//! measurable (docs/BENCHMARKS.md).
//!
//! Why that keeps formatted IDs unique per counter, whatever the client clocks
//! do: the pair (ts, val) strictly increases with every update. If a client's
//! clock is ahead of `ts`, ts grows. If it is frozen or stepped back, ts stays
//! and val grows, and when val wraps, ts moves on by one microsecond. A
//! formatted ID is written from the pair the server returns, never from the
//! client's reading alone. The JavaScript twin in `mongo-js/getNextUniqueSeq.js`
//! runs the same rule as an optimistic retry loop, and the conformance tests
//! hold the two equal.

use mongodb::bson::{doc, Document};
use mongodb::options::{ReturnDocument, WriteConcern};
use mongodb::{Collection, Database};
use serde::Serialize;

use super::counter_doc::well_formed_expr;
use super::{CounterName, CounterState, SequenceError, COUNTERS_COLLECTION};
use crate::mongo::{self, durable_write_concern};

/// The seed's default: two-digit sequences, 0 to 99.
pub const DEFAULT_MAXVAL: u64 = 99;

/// The largest maxval accepted: values must stay exact in a JavaScript number.
pub const MAX_MAXVAL: u64 = (1 << 53) - 2;

/// One value handed out by a counter, with the timestamp issued with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Issued {
    /// The server-decided timestamp, microseconds since the epoch.
    pub timestamp_micros: u64,
    /// The sequence value, 0 to the counter's maxval.
    pub value: u64,
}

/// Settings of a new counter.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CounterSpec {
    /// The largest value before wrapping to 0. Default: 99.
    pub maxval: u64,
    /// The counter's default ID prefix. Default: none.
    pub prefix: Option<String>,
}

impl Default for CounterSpec {
    fn default() -> Self {
        Self {
            maxval: DEFAULT_MAXVAL,
            prefix: None,
        }
    }
}

impl CounterSpec {
    /// Sets maxval.
    pub fn maxval(mut self, maxval: u64) -> Self {
        self.maxval = maxval;
        self
    }

    /// Sets the default prefix.
    pub fn prefix(mut self, prefix: Option<String>) -> Self {
        self.prefix = prefix;
        self
    }
}

/// Handle on one counter document in `<db>.counters`.
#[derive(Debug, Clone)]
pub struct CyclicCounter {
    collection: Collection<Document>,
    name: CounterName,
    write_concern: WriteConcern,
}

impl CyclicCounter {
    /// A handle on counter `name` in `database`, writing with majority + journal.
    pub fn new(database: &Database, name: CounterName) -> Self {
        Self {
            collection: database.collection(COUNTERS_COLLECTION),
            name,
            write_concern: durable_write_concern(),
        }
    }

    /// Replaces the write concern (the default is majority with journal; a
    /// weaker one can return a value that a crash or failover then forgets).
    pub fn with_write_concern(mut self, write_concern: WriteConcern) -> Self {
        self.write_concern = write_concern;
        self
    }

    /// The counter's name.
    pub fn name(&self) -> &CounterName {
        &self.name
    }

    /// Creates the counter with `val: 0`; the first value handed out is 1.
    pub async fn create(&self, spec: &CounterSpec) -> Result<CounterState, SequenceError> {
        if !(1..=MAX_MAXVAL).contains(&spec.maxval) {
            return Err(SequenceError::InvalidSpec(format!(
                "maxval {} is out of range 1..={MAX_MAXVAL}",
                spec.maxval
            )));
        }
        let mut document =
            doc! { "_id": self.name.as_str(), "val": 0_i64, "maxval": spec.maxval as i64 };
        if let Some(prefix) = &spec.prefix {
            document.insert("prefix", prefix.as_str());
        }
        match self
            .collection
            .insert_one(&document)
            .write_concern(self.write_concern.clone())
            .await
        {
            Ok(_) => CounterState::from_document(&self.name, &document),
            Err(error) if mongo::is_duplicate_key(&error) => {
                Err(SequenceError::CounterExists(self.name.clone()))
            }
            Err(source) => Err(self.database_error("create", "insert", source)),
        }
    }

    /// Reads the counter as it is now.
    pub async fn state(&self) -> Result<CounterState, SequenceError> {
        match self
            .collection
            .find_one(doc! { "_id": self.name.as_str() })
            .await
            .map_err(|source| self.database_error("read", "find", source))?
        {
            Some(document) => CounterState::from_document(&self.name, &document),
            None => Err(SequenceError::UnknownCounter(self.name.clone())),
        }
    }

    /// Hands out the next value: one atomic `findOneAndUpdate`.
    ///
    /// `client_micros` is the caller's clock reading; the returned timestamp is
    /// never below it, nor below any timestamp this counter issued before.
    /// An unknown or corrupt counter is reported and left untouched.
    pub async fn next(&self, client_micros: u64) -> Result<Issued, SequenceError> {
        // Clamp to what a BSON long holds; 2^63 microseconds is year 294,247.
        let client_micros = i64::try_from(client_micros).unwrap_or(i64::MAX);
        let updated = self
            .collection
            .find_one_and_update(
                doc! { "_id": self.name.as_str() },
                advance_pipeline(client_micros),
            )
            .return_document(ReturnDocument::After)
            .write_concern(self.write_concern.clone())
            .await
            .map_err(|source| self.database_error("advance", "find and update", source))?;
        // A well-formed counter was advanced; a malformed one came back as it
        // was, and `from_document` says what is wrong with it.
        let state = match updated {
            Some(document) => CounterState::from_document(&self.name, &document)?,
            None => return Err(SequenceError::UnknownCounter(self.name.clone())),
        };
        Ok(Issued {
            timestamp_micros: state.ts,
            value: state.val,
        })
    }

    fn database_error(
        &self,
        action: &'static str,
        privilege: &'static str,
        source: mongodb::error::Error,
    ) -> SequenceError {
        if mongo::is_unauthorized(&source) {
            return SequenceError::Unauthorized {
                name: self.name.clone(),
                action,
                privilege,
                server_message: mongo::server_message(&source)
                    .unwrap_or_default()
                    .to_string(),
            };
        }
        SequenceError::Database {
            name: self.name.clone(),
            source,
        }
    }
}

/// The update that hands out the next value (see the module docs).
pub(crate) fn advance_pipeline(client_micros: i64) -> Vec<Document> {
    let wrapped = doc! { "$gte": ["$val", "$maxval"] };
    let advanced = doc! {
        "val": { "$cond": [wrapped.clone(), 0_i64, { "$add": ["$val", 1_i64] }] },
        "ts": { "$max": [
            client_micros,
            { "$add": [{ "$ifNull": ["$ts", 0_i64] }, { "$cond": [wrapped, 1_i64, 0_i64] }] },
        ]},
    };
    vec![doc! { "$replaceWith": {
        "$cond": [well_formed_expr(), { "$mergeObjects": ["$$ROOT", advanced] }, "$$ROOT"],
    }}]
}
