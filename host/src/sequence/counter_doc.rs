//! The counter document and its validity rules, stated twice on purpose: as a
//! server-side aggregation expression, so that the atomic update leaves a
//! malformed counter exactly as it is, and in Rust, to say precisely what is
//! wrong with one. `tests/sequence.rs` holds the two to the same verdict on
//! every corrupt case.
//!
//! A counter is `{_id: name, val, maxval, ts?, prefix?}`:
//! - `val`, an integer >= 0: the last value handed out (0 for a new counter);
//! - `maxval`, an integer >= 1: after it, `val` wraps to 0;
//! - `ts`, an integer >= 0, absent until the first value is issued: the
//!   microsecond timestamp issued with `val`;
//! - `prefix`, a string, optional: the prefix formatted IDs of this counter use
//!   unless the caller names another.

use mongodb::bson::{doc, Bson, Document};
use serde::Serialize;

use super::{CounterName, SequenceError};
use crate::mongo::describe_value;

/// A well-formed counter, as read from the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CounterState {
    /// The counter's name (`_id`).
    pub name: String,
    /// The last value handed out.
    pub val: u64,
    /// The largest value; the one after it is 0.
    pub maxval: u64,
    /// The timestamp issued with `val`, microseconds since the epoch (0: none yet).
    pub ts: u64,
    /// The counter's default ID prefix, if it has one.
    pub prefix: Option<String>,
}

impl CounterState {
    /// Reads a counter document, or says what is wrong with it.
    pub fn from_document(name: &CounterName, doc: &Document) -> Result<Self, SequenceError> {
        let corrupt = |reason: String| SequenceError::CorruptCounter {
            name: name.clone(),
            reason,
        };
        let val = read_integer(doc, "val").map_err(corrupt)?;
        let maxval = read_integer(doc, "maxval").map_err(corrupt)?;
        if maxval < 1 {
            return Err(corrupt(format!(
                "maxval is {maxval}, it must be at least 1"
            )));
        }
        let ts = match doc.get("ts") {
            None => 0,
            Some(_) => read_integer(doc, "ts").map_err(corrupt)?,
        };
        let prefix = match doc.get("prefix") {
            None | Some(Bson::Null) => None,
            Some(Bson::String(prefix)) => Some(prefix.clone()),
            Some(other) => {
                return Err(corrupt(format!(
                    "prefix is {}, not a string",
                    describe_value(other)
                )))
            }
        };
        Ok(Self {
            name: name.to_string(),
            val,
            maxval,
            ts,
            prefix,
        })
    }

    /// How many distinct values the counter cycles through (`maxval + 1`).
    pub fn cycle_len(&self) -> u64 {
        self.maxval.saturating_add(1)
    }
}

/// The server-side twin of [`CounterState::from_document`]: an aggregation
/// expression that is true only while the counter document is well formed.
/// `$and` stops at the first false term, so `$trunc` never sees a non-number.
pub(crate) fn well_formed_expr() -> Document {
    let integer_at_least = |field: &str, min: i32| {
        let path = format!("${field}");
        doc! { "$and": [
            { "$isNumber": &path },
            { "$eq": [&path, { "$trunc": &path }] },
            { "$gte": [&path, min] },
        ]}
    };
    doc! { "$and": [
        integer_at_least("val", 0),
        integer_at_least("maxval", 1),
        { "$or": [
            { "$eq": [{ "$type": "$ts" }, "missing"] },
            integer_at_least("ts", 0),
        ]},
        { "$in": [{ "$type": "$prefix" }, ["missing", "null", "string"]] },
    ]}
}

fn read_integer(doc: &Document, field: &str) -> Result<u64, String> {
    let value = doc
        .get(field)
        .ok_or_else(|| format!("{field} is missing"))?;
    let number = match value {
        Bson::Int32(n) => i64::from(*n),
        Bson::Int64(n) => *n,
        Bson::Double(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => *x as i64,
        Bson::Double(x) => return Err(format!("{field} is {x}, not an integer")),
        other => {
            return Err(format!(
                "{field} is {}, not a number",
                describe_value(other)
            ))
        }
    };
    u64::try_from(number).map_err(|_| format!("{field} is {number}, it must not be negative"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name() -> CounterName {
        CounterName::new("c").unwrap()
    }

    #[test]
    fn reads_every_integer_representation() {
        let state = CounterState::from_document(
            &name(),
            &doc! { "_id": "c", "val": 5_i32, "maxval": 99_i64, "ts": 7.0_f64, "prefix": "P" },
        )
        .unwrap();
        assert_eq!(
            (state.val, state.maxval, state.ts, state.prefix.as_deref()),
            (5, 99, 7, Some("P"))
        );
        let fresh = CounterState::from_document(&name(), &doc! { "val": 0, "maxval": 1 }).unwrap();
        assert_eq!((fresh.ts, fresh.prefix), (0, None));
    }

    #[test]
    fn names_what_is_corrupt() {
        for (doc, needle) in [
            (doc! { "maxval": 9 }, "val is missing"),
            (
                doc! { "val": "7", "maxval": 9 },
                "val is the string \"7\", not a number",
            ),
            (
                doc! { "val": 1.5, "maxval": 9 },
                "val is 1.5, not an integer",
            ),
            (
                doc! { "val": -1, "maxval": 9 },
                "val is -1, it must not be negative",
            ),
            (
                doc! { "val": 0, "maxval": 0 },
                "maxval is 0, it must be at least 1",
            ),
            (
                doc! { "val": 0, "maxval": 9, "ts": true },
                "ts is the boolean true",
            ),
            (
                doc! { "val": 0, "maxval": 9, "prefix": 3 },
                "prefix is the number 3, not a string",
            ),
        ] {
            let err = CounterState::from_document(&name(), &doc)
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle), "{doc}: {err}");
            assert!(err.contains("counter 'c' is corrupt"), "{err}");
        }
    }
}
