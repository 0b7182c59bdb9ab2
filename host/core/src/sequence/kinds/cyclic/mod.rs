//! The cyclic counter: the seed's serial number `{_id, val, maxval, ts}`,
//! handed out in one atomic round trip, with a timestamp that never goes
//! backwards. This folder owns the kind's document rules, settings, wire
//! command and handle; it must not touch another kind's documents.
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
//! It does so only when the document is well formed ([`CyclicKind::guard`]);
//! a malformed one is replaced by itself, that is left exactly as it was, and
//! comes back for the Rust side to say what is wrong with it. The filter is
//! the plain `{_id}`: a validity test in the filter (`$expr`) cost about a
//! third of the throughput on the test server (docs/BENCHMARKS.md).
//!
//! A handle that has taken values once takes the next single value with the
//! short guard of [`KnownShape`]: the counter's fixed fields exactly as the
//! last take returned them, `val` and `ts` non-negative longs. The rule is
//! the same; a counter changed meanwhile is left as it was by that take and
//! taken again with the full guard.
//!
//! Why that keeps formatted IDs unique per counter, whatever the client clocks
//! do: the pair (ts, val) strictly increases with every update. If a client's
//! clock is ahead of `ts`, ts grows. If it is frozen or stepped back, ts stays
//! and val grows, and when val wraps, ts moves on by one microsecond. A
//! formatted ID is written from the pair the server returns, never from the
//! client's reading alone. The JavaScript twin in `mongo-js/getNextUniqueSeq.js`
//! runs the same rule as an optimistic retry loop, and the conformance tests
//! hold the two equal.

mod lanes;

pub use lanes::CEILING_CHUNK_MICROS;

use mongodb::bson::{doc, Bson, Document};
use mongodb::options::{ReturnDocument, WriteConcern};
use mongodb::{Collection, Database};
use serde::Serialize;

use crate::mongo::collections::COUNTERS as COUNTERS_COLLECTION;
use crate::mongo::durable_write_concern;
use crate::parts::Stamp;
use crate::sequence::counter::document::read;
use crate::sequence::counter::fields::database_of;
#[cfg(test)]
use crate::sequence::counter::fields::SHARED_FIELDS;
use crate::sequence::counter::fields::{integer_in, read_integer, well_formed};
use crate::sequence::error::SequenceError;
use crate::sequence::headroom::Headroom;
use crate::sequence::kind_trait::{
    check_block, CommandOptions, Fact, Handle, Kind, Repeats, ValueShape,
};
use crate::sequence::known_shape::{KnownShape, ShapeCache};
use crate::sequence::name::CounterName;
use crate::sequence::settings::{Setting, Settings};

/// The seed's default: two-digit sequences, 0 to 99.
pub const DEFAULT_MAXVAL: u64 = 99;

/// The largest maxval accepted: values must stay exact in a JavaScript number.
pub const MAX_MAXVAL: u64 = (1 << 53) - 2;

/// The fields a take never changes: the shared ones, then the kind's own.
const FIXED: &[&str] = &["kind", "prefix", "prefixes", "maxval"];

/// The fields every take writes.
const MOVING: &[&str] = &["val", "ts"];

/// The cyclic kind (see the module docs).
#[derive(Debug)]
pub struct CyclicKind;

/// A cyclic counter's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CyclicState {
    /// The last value handed out.
    pub val: u64,
    /// The largest value; the one after it is 0.
    pub maxval: u64,
    /// The timestamp issued with `val`, microseconds since the epoch (0: none yet).
    pub ts: u64,
}

impl Kind for CyclicKind {
    const NAME: &'static str = "cyclic";
    const SUMMARY: &'static str =
        "the seed's serial number: 0..=maxval, wrapping, each value with a server-decided timestamp";
    const SETTINGS: &'static [Setting] = &[Setting::Maxval];
    const RUNS: bool = false;
    const FIT_ADVICE: &'static str =
        "use a counter with a smaller maxval or a policy with a larger sequence";
    const READS_CLIENT_CLOCK: bool = true;
    type State = CyclicState;
    type Options = ();
    type Handle = CyclicCounter;

    fn read(document: &Document) -> Result<CyclicState, String> {
        let val = read_integer(document, "val", 0, u64::MAX)?;
        let maxval = read_integer(document, "maxval", 1, u64::MAX)?;
        let ts = match document.get("ts") {
            None => 0,
            Some(_) => read_integer(document, "ts", 0, u64::MAX)?,
        };
        Ok(CyclicState { val, maxval, ts })
    }

    fn guard() -> Vec<Bson> {
        vec![
            integer_in("val", 0, u64::MAX),
            integer_in("maxval", 1, u64::MAX),
            Bson::Document(doc! { "$or": [
                { "$eq": [{ "$type": "$ts" }, "missing"] },
                integer_in("ts", 0, u64::MAX),
            ]}),
        ]
    }

    fn fields(settings: &Settings, _now_ms: u64) -> Result<Document, SequenceError> {
        let maxval = settings.maxval.unwrap_or(DEFAULT_MAXVAL);
        if !(1..=MAX_MAXVAL).contains(&maxval) {
            return Err(SequenceError::InvalidSpec(format!(
                "maxval {maxval} is out of range 1..={MAX_MAXVAL}"
            )));
        }
        Ok(doc! { "val": 0_i64, "maxval": maxval as i64 })
    }

    /// A cyclic counter wraps: what it can run short of is its pace,
    /// `maxval + 1` values per microsecond of `ts` (the module docs); read
    /// once, how far `ts` is ahead of `now_ms`.
    fn headroom(state: &CyclicState, now_ms: u64) -> Option<Headroom> {
        Some(Headroom::of_pace(
            state.maxval.saturating_add(1),
            state.ts / 1000,
            now_ms,
        ))
    }

    fn shape(state: &CyclicState) -> ValueShape {
        ValueShape {
            largest_value: state.maxval,
            repeats: Repeats::AfterWrap,
            server_timestamp: true,
        }
    }

    fn facts(state: &CyclicState, _now_ms: u64) -> Vec<Fact> {
        let last_issued_at = (state.ts > 0).then(|| crate::parts::rfc3339_micros(state.ts));
        vec![
            Fact::text(
                "val",
                format!("{} (values cycle 0..={})", state.val, state.maxval),
            ),
            Fact::text("maxval", state.maxval.to_string()),
            Fact::derived(
                "last issued at",
                last_issued_at
                    .clone()
                    .unwrap_or_else(|| "never".to_string()),
                "last_issued_at",
                last_issued_at.map_or(serde_json::Value::Null, serde_json::Value::String),
            )
            .after_prefix(),
        ]
    }

    fn take_command(
        name: &CounterName,
        count: u64,
        options: &CommandOptions,
    ) -> Result<(Document, Vec<Document>), SequenceError> {
        check_block(name, usize::try_from(count).unwrap_or(usize::MAX))?;
        Ok((
            doc! { "_id": name.as_str() },
            block_pipeline(count as i64, options.client.expression()),
        ))
    }

    async fn open(
        database: &Database,
        name: CounterName,
        _state: &CyclicState,
        _options: &(),
    ) -> Result<CyclicCounter, SequenceError> {
        Ok(CyclicCounter::new(database, name))
    }
}

/// Handle on one counter document in `<db>.counters`. Its clones share
/// what the last take learnt of the counter's shape.
#[derive(Debug, Clone)]
pub struct CyclicCounter {
    collection: Collection<Document>,
    name: CounterName,
    write_concern: WriteConcern,
    known: ShapeCache,
}

impl CyclicCounter {
    /// A handle on counter `name` in `database`, writing with majority + journal.
    pub fn new(database: &Database, name: CounterName) -> Self {
        Self {
            collection: database.collection(COUNTERS_COLLECTION),
            name,
            write_concern: durable_write_concern(),
            known: ShapeCache::new(FIXED, MOVING),
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

    /// Hands out the next value: [`CyclicCounter::take`] of one.
    pub async fn next(&self, client_micros: u64) -> Result<Stamp, SequenceError> {
        let mut block = self.take(1, client_micros).await?;
        Ok(block.remove(0))
    }

    /// Reserves `count` consecutive (timestamp, value) pairs, 1 to
    /// [`MAX_BLOCK`](crate::sequence::MAX_BLOCK), in one atomic `findOneAndUpdate`, and returns them in
    /// order. Every pair is greater than every pair the counter issued
    /// before, wrap-arounds included: each wrap moves the timestamp on by one
    /// microsecond. The pairs carry the time of the reservation.
    ///
    /// `client_micros` is the caller's clock reading; the first timestamp is
    /// never below it, nor below any timestamp this counter issued before.
    /// An unknown or corrupt counter, or one of another kind, is reported
    /// and left untouched.
    pub async fn take(
        &self,
        count: usize,
        client_micros: u64,
    ) -> Result<Vec<Stamp>, SequenceError> {
        check_block(&self.name, count)?;
        // Clamp to what a BSON long holds; 2^63 microseconds is year 294,247.
        let client_micros = Bson::Int64(i64::try_from(client_micros).unwrap_or(i64::MAX));
        self.known
            .take(
                |shape| {
                    (count == 1)
                        .then(|| short_pipeline(shape, client_micros.clone()))
                        .flatten()
                },
                || block_pipeline(count as i64, client_micros.clone()),
                |update| self.find_and_update(update),
                |after| self.unfold(after, count),
            )
            .await
    }

    /// Sends one take's update; the counter as it is after it.
    async fn find_and_update(&self, update: Vec<Document>) -> Result<Document, SequenceError> {
        self.collection
            .find_one_and_update(doc! { "_id": self.name.as_str() }, update)
            .return_document(ReturnDocument::After)
            .write_concern(self.write_concern.clone())
            .await
            .map_err(|source| self.database_error("advance", "find and update", source))?
            .ok_or_else(|| SequenceError::UnknownCounter(self.name.clone()))
    }

    /// The `count` pairs a take reserved, from the counter after it: a
    /// well-formed counter was advanced; a malformed one came back as it
    /// was, and the reader says what is wrong with it.
    fn unfold(&self, taken: &Document, count: usize) -> Result<Vec<Stamp>, SequenceError> {
        let last = read::<CyclicKind>(&self.name, taken)?.kind;
        Ok(unfold_block(last.ts, last.val, last.maxval, count))
    }

    fn database_error(
        &self,
        action: &'static str,
        privilege: &'static str,
        source: mongodb::error::Error,
    ) -> SequenceError {
        SequenceError::from_database(&self.name, action, privilege, source)
    }
}

impl Handle for CyclicCounter {
    type Of = CyclicKind;

    fn name(&self) -> &CounterName {
        &self.name
    }

    fn database(&self) -> Database {
        database_of(&self.collection)
    }

    async fn take(&self, count: usize, client_micros: u64) -> Result<Vec<Stamp>, SequenceError> {
        CyclicCounter::take(self, count, client_micros).await
    }
}

/// The update that reserves a block of `count` pairs.
///
/// It applies the one-value rule of the module docs `count` times, in
/// closed form. With `a = min(val, maxval)` and `m = maxval + 1`, the values
/// handed out are `(a + k) mod m` for `k = 1..=count`, so the block wraps
/// `W = floor((a + count) / m)` times, the first value wraps iff `a = maxval`
/// (`w1`), and:
///
/// ```text
/// val = (a + count) mod m
/// ts  = max(client_us, ts + w1) + (W - w1)
/// ```
///
/// A block of one, the common case, is the one-value rule as written, with
/// half the operators of the closed form (the server parses the update on
/// every call); `tests/cyclic.rs` holds both to the rule on the server.
pub(crate) fn block_pipeline(count: i64, client_micros: Bson) -> Vec<Document> {
    let advanced = if count == 1 {
        one_value(client_micros)
    } else {
        closed_form(count, client_micros)
    };
    vec![doc! { "$replaceWith": {
        "$cond": [
            well_formed::<CyclicKind>(),
            { "$mergeObjects": ["$$ROOT", advanced] },
            "$$ROOT",
        ],
    }}]
}

/// The update that takes one value of a counter known to have `shape`: the
/// one-value rule, with `maxval` read from the shape and no conversions,
/// since `val` and `ts` are longs whenever the short guard holds (`val`
/// wraps before it could overflow; a `ts` at the largest long would become
/// a double, which the guard's Rust twin then refuses, so the value is
/// skipped, never issued twice).
/// `None` if the shape has no `maxval` (never, for a shape learnt from a
/// well-formed counter).
fn short_pipeline(shape: &KnownShape, client_micros: Bson) -> Option<Vec<Document>> {
    let maxval = shape.fixed("maxval")?.clone();
    let wrapped = doc! { "$gte": ["$val", maxval] };
    Some(vec![doc! { "$replaceWith": { "$cond": [
        shape.expression().clone(),
        { "$mergeObjects": ["$$ROOT", {
            "val": { "$cond": [wrapped.clone(), 0_i64, { "$add": ["$val", 1_i64] }] },
            "ts": { "$max": [
                client_micros,
                { "$add": ["$ts", { "$cond": [wrapped, 1_i64, 0_i64] }] },
            ]},
        }]},
        "$$ROOT",
    ]}}])
}

/// The one-value rule of the module docs: `val` and `ts` after one value.
pub(crate) fn one_value(client_micros: Bson) -> Document {
    doc! { "$let": {
        "vars": { "wrapped": { "$gte": ["$val", "$maxval"] } },
        "in": {
            "val": { "$cond": ["$$wrapped", 0_i64, { "$toLong": { "$add": ["$val", 1_i64] } }] },
            "ts": { "$toLong": { "$max": [
                client_micros,
                { "$add": [{ "$ifNull": ["$ts", 0_i64] }, { "$cond": ["$$wrapped", 1_i64, 0_i64] }] },
            ]}},
        },
    }}
}

/// `val` and `ts` after a block of `count` values, in closed form.
pub(crate) fn closed_form(count: i64, client_micros: Bson) -> Document {
    doc! { "$let": {
        "vars": {
            "a": { "$min": ["$val", "$maxval"] },
            "m": { "$add": ["$maxval", 1_i64] },
        },
        "in": { "$let": {
            "vars": {
                "end": { "$add": ["$$a", count] },
                "w1": { "$cond": [{ "$gte": ["$$a", "$maxval"] }, 1_i64, 0_i64] },
            },
            "in": { "$let": {
                "vars": {
                    "rest": { "$mod": ["$$end", "$$m"] },
                },
                "in": {
                    "val": { "$toLong": "$$rest" },
                    "ts": { "$toLong": { "$add": [
                        { "$max": [client_micros, { "$add": [{ "$ifNull": ["$ts", 0_i64] }, "$$w1"] }] },
                        // W - w1, with W = (end - rest) / m, an exact division.
                        { "$subtract": [
                            { "$toLong": { "$divide": [{ "$subtract": ["$$end", "$$rest"] }, "$$m"] } },
                            "$$w1",
                        ]},
                    ]}},
                },
            }},
        }},
    }}
}

/// The `count` pairs of a block, from the counter's state after it: walks
/// back from the last pair, undoing one step at a time (a value of 0 was a
/// wrap, which moved the timestamp on by one).
pub(crate) fn unfold_block(last_ts: u64, last_val: u64, maxval: u64, count: usize) -> Vec<Stamp> {
    let mut block = Vec::with_capacity(count);
    let (mut ts, mut value) = (last_ts, last_val);
    for _ in 0..count {
        block.push(Stamp::new(ts, value));
        if value == 0 {
            ts = ts.saturating_sub(1);
            value = maxval;
        } else {
            value -= 1;
        }
    }
    block.reverse();
    block
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixed_fields_include_every_shared_one() {
        assert!(FIXED.starts_with(SHARED_FIELDS));
        assert!(!FIXED.iter().any(|field| MOVING.contains(field)));
    }

    /// The one-value rule of the module docs, applied step by step.
    fn step_by_step(
        mut ts: u64,
        mut val: u64,
        maxval: u64,
        client: u64,
        count: usize,
    ) -> Vec<Stamp> {
        (0..count)
            .map(|_| {
                let wrapped = val >= maxval;
                val = if wrapped { 0 } else { val + 1 };
                ts = client.max(ts + u64::from(wrapped));
                Stamp::new(ts, val)
            })
            .collect()
    }

    /// The closed form of `block_pipeline`, in Rust.
    fn closed_form(ts: u64, val: u64, maxval: u64, client: u64, count: u64) -> (u64, u64) {
        let a = val.min(maxval);
        let m = maxval + 1;
        let end = a + count;
        let w1 = u64::from(a >= maxval);
        let wraps = end / m;
        (client.max(ts + w1) + wraps - w1, end % m)
    }

    #[test]
    fn a_block_is_the_one_value_rule_repeated() {
        for maxval in [1, 2, 3, 99] {
            for val in [0, 1, maxval - 1, maxval, maxval + 5] {
                for (ts, client) in [(1000, 5), (1000, 1000), (1000, 2000), (0, 0)] {
                    for count in [1, 2, maxval as usize, maxval as usize + 1, 250] {
                        let expected = step_by_step(ts, val, maxval, client, count);
                        let last = expected.last().unwrap();
                        let (last_ts, last_val) =
                            closed_form(ts, val, maxval, client, count as u64);
                        assert_eq!(
                            (last_ts, last_val),
                            (last.timestamp_micros, last.sequence),
                            "maxval {maxval} val {val} ts {ts} client {client} count {count}"
                        );
                        assert_eq!(unfold_block(last_ts, last_val, maxval, count), expected);
                        assert!(expected.windows(2).all(|w| w[0] < w[1]));
                    }
                }
            }
        }
    }
}
