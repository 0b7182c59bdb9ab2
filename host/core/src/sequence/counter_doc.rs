//! The counter document and its validity rules, stated twice on purpose: as a
//! server-side aggregation expression, so that the atomic update leaves a
//! malformed counter exactly as it is, and in Rust, to say precisely what is
//! wrong with one. `tests/sequence.rs` holds the two to the same verdict on
//! every corrupt case.
//!
//! Every counter is `{_id: name, kind?, prefix?, ...}`:
//! - `kind`: `"cyclic"`, `"autoinc"` or `"segment"`; absent (or null) means
//!   cyclic, the seed's document;
//! - `prefix`, a string, optional: the prefix formatted IDs of this counter use
//!   unless the caller names another.
//!
//! and then, by kind:
//! - cyclic `{val, maxval, ts?}`: `val` >= 0 the last value handed out (0 for a
//!   new counter), `maxval` >= 1 after which `val` wraps to 0, `ts` >= 0
//!   (absent until the first value) the microsecond timestamp issued with `val`;
//! - autoinc `{seq}`: the last value handed out, 0 to [`MAX_VALUE`] (0: none yet);
//! - segment `{max, step}`: `max`, 0 to `MAX_VALUE + 1`, the first value no
//!   process has taken; `step`, 1 to [`MAX_STEP`], the smallest segment a
//!   process takes.

use mongodb::bson::{doc, Bson, Document};
use serde::Serialize;

use super::kind::{CounterKind, MAX_VALUE};
use super::snowflake::{Layout, TimeUnit};
use super::{CounterName, SequenceError};
use crate::mongo::describe_value;

/// The largest segment step a counter document may ask for.
pub const MAX_STEP: u64 = 100_000_000;

/// A well-formed counter, as read from the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CounterState {
    /// The counter's name (`_id`).
    pub name: String,
    /// The kind and its fields.
    #[serde(flatten)]
    pub kind: KindState,
    /// The counter's default ID prefix, if it has one.
    pub prefix: Option<String>,
}

/// The fields of each kind of counter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum KindState {
    /// A cyclic counter.
    Cyclic(CyclicState),
    /// An auto-increment counter.
    Autoinc(AutoincState),
    /// A segment counter.
    Segment(SegmentState),
    /// A snowflake counter.
    Snowflake(SnowflakeState),
}

/// A snowflake counter's fields: its layout (see [`Layout`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SnowflakeState {
    /// The layout.
    #[serde(flatten)]
    pub layout: Layout,
}

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

/// An auto-increment counter's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AutoincState {
    /// The last value handed out (0: none yet).
    pub seq: u64,
}

/// A segment counter's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SegmentState {
    /// The first value no process has taken yet.
    pub max: u64,
    /// The smallest segment a process takes.
    pub step: u64,
}

/// What a policy must know about the values a counter hands out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ValueShape {
    /// The largest value the counter can ever hand out.
    pub largest_value: u64,
    /// Whether values come round again (cyclic counters): only the
    /// timestamp issued with a value then tells two IDs apart.
    pub values_repeat: bool,
    /// Whether the timestamp issued with a value is decided by the server
    /// and increases with it (cyclic); otherwise it is the taking client's
    /// clock, informative only.
    pub server_timestamp: bool,
}

impl CounterState {
    /// Reads a counter document, or says what is wrong with it.
    pub fn from_document(name: &CounterName, doc: &Document) -> Result<Self, SequenceError> {
        let corrupt = |reason: String| SequenceError::CorruptCounter {
            name: name.clone(),
            reason,
        };
        let kind = match doc.get("kind") {
            None | Some(Bson::Null) => CounterKind::Cyclic,
            Some(Bson::String(text)) => text.parse().map_err(|_| SequenceError::UnknownKind {
                name: name.clone(),
                kind: text.clone(),
            })?,
            Some(other) => {
                return Err(corrupt(format!(
                    "kind is {}, not a string",
                    describe_value(other)
                )))
            }
        };
        let kind = match kind {
            CounterKind::Cyclic => {
                let val = read_integer(doc, "val", 0, u64::MAX).map_err(corrupt)?;
                let maxval = read_integer(doc, "maxval", 1, u64::MAX).map_err(corrupt)?;
                let ts = match doc.get("ts") {
                    None => 0,
                    Some(_) => read_integer(doc, "ts", 0, u64::MAX).map_err(corrupt)?,
                };
                KindState::Cyclic(CyclicState { val, maxval, ts })
            }
            CounterKind::Autoinc => KindState::Autoinc(AutoincState {
                seq: read_integer(doc, "seq", 0, MAX_VALUE).map_err(corrupt)?,
            }),
            CounterKind::Segment => KindState::Segment(SegmentState {
                max: read_integer(doc, "max", 0, MAX_VALUE + 1).map_err(corrupt)?,
                step: read_integer(doc, "step", 1, MAX_STEP).map_err(corrupt)?,
            }),
            CounterKind::Snowflake => {
                let unit = match doc.get("unit") {
                    Some(Bson::String(unit)) => unit
                        .parse::<TimeUnit>()
                        .map_err(|reason| corrupt(format!("unit: {reason}")))?,
                    Some(other) => {
                        return Err(corrupt(format!(
                            "unit is {}, not a string",
                            describe_value(other)
                        )))
                    }
                    None => return Err(corrupt("unit is missing".into())),
                };
                let layout = Layout {
                    time_bits: read_integer(doc, "time_bits", 1, 62).map_err(corrupt)? as u32,
                    worker_bits: read_integer(doc, "worker_bits", 1, 62).map_err(corrupt)? as u32,
                    seq_bits: read_integer(doc, "seq_bits", 1, 62).map_err(corrupt)? as u32,
                    unit,
                    epoch_ms: read_integer(doc, "epoch_ms", 0, i64::MAX as u64).map_err(corrupt)?,
                };
                layout.check_shape().map_err(corrupt)?;
                KindState::Snowflake(SnowflakeState { layout })
            }
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
            kind,
            prefix,
        })
    }

    /// The counter's kind.
    pub fn kind(&self) -> CounterKind {
        match self.kind {
            KindState::Cyclic(_) => CounterKind::Cyclic,
            KindState::Autoinc(_) => CounterKind::Autoinc,
            KindState::Segment(_) => CounterKind::Segment,
            KindState::Snowflake(_) => CounterKind::Snowflake,
        }
    }

    /// The cyclic fields, if this is a cyclic counter.
    pub fn cyclic(&self) -> Option<&CyclicState> {
        match &self.kind {
            KindState::Cyclic(state) => Some(state),
            _ => None,
        }
    }

    /// The layout, if this is a snowflake counter.
    pub fn snowflake_layout(&self) -> Option<&Layout> {
        match &self.kind {
            KindState::Snowflake(state) => Some(&state.layout),
            _ => None,
        }
    }

    /// What a policy must know about this counter's values.
    pub fn shape(&self) -> ValueShape {
        match &self.kind {
            KindState::Cyclic(state) => ValueShape {
                largest_value: state.maxval,
                values_repeat: true,
                server_timestamp: true,
            },
            KindState::Autoinc(_) | KindState::Segment(_) => ValueShape {
                largest_value: MAX_VALUE,
                values_repeat: false,
                server_timestamp: false,
            },
            KindState::Snowflake(_) => ValueShape {
                largest_value: i64::MAX as u64,
                values_repeat: false,
                server_timestamp: false,
            },
        }
    }
}

/// The server-side twin of [`CounterState::from_document`] for one kind: an
/// aggregation expression that is true only while the document is a
/// well-formed counter of that kind. `$and` stops at the first false term,
/// so `$trunc` never sees a non-number.
pub(crate) fn well_formed_expr(kind: CounterKind) -> Document {
    let integer_in = |field: &str, min: u64, max: u64| {
        let path = format!("${field}");
        let mut terms = vec![
            Bson::Document(doc! { "$isNumber": &path }),
            Bson::Document(doc! { "$eq": [&path, { "$trunc": &path }] }),
            Bson::Document(doc! { "$gte": [&path, min as i64] }),
        ];
        if max < u64::MAX {
            terms.push(Bson::Document(doc! { "$lte": [&path, max as i64] }));
        }
        doc! { "$and": terms }
    };
    let mut terms = vec![
        Bson::Document(doc! { "$eq": [{ "$ifNull": ["$kind", "cyclic"] }, kind.as_str()] }),
        Bson::Document(doc! { "$in": [{ "$type": "$prefix" }, ["missing", "null", "string"]] }),
    ];
    match kind {
        CounterKind::Cyclic => {
            terms.push(integer_in("val", 0, u64::MAX).into());
            terms.push(integer_in("maxval", 1, u64::MAX).into());
            terms.push(
                doc! { "$or": [
                    { "$eq": [{ "$type": "$ts" }, "missing"] },
                    integer_in("ts", 0, u64::MAX),
                ]}
                .into(),
            );
        }
        CounterKind::Autoinc => terms.push(integer_in("seq", 0, MAX_VALUE).into()),
        CounterKind::Segment => {
            terms.push(integer_in("max", 0, MAX_VALUE + 1).into());
            terms.push(integer_in("step", 1, MAX_STEP).into());
        }
        // Never updated by a pipeline: its document is read, not advanced.
        CounterKind::Snowflake => {}
    }
    doc! { "$and": terms }
}

/// Reads an integer field in `min..=max` (BSON int32, int64, or a double
/// holding an integer), or says what is wrong with it.
fn read_integer(doc: &Document, field: &str, min: u64, max: u64) -> Result<u64, String> {
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
    let number = u64::try_from(number)
        .map_err(|_| format!("{field} is {number}, it must not be negative"))?;
    if number < min {
        return Err(format!("{field} is {number}, it must be at least {min}"));
    }
    if number > max {
        return Err(format!("{field} is {number}, it must be at most {max}"));
    }
    Ok(number)
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
            (state.cyclic().copied(), state.prefix.as_deref()),
            (
                Some(CyclicState {
                    val: 5,
                    maxval: 99,
                    ts: 7
                }),
                Some("P")
            )
        );
        let fresh = CounterState::from_document(&name(), &doc! { "val": 0, "maxval": 1 }).unwrap();
        assert_eq!((fresh.cyclic().unwrap().ts, fresh.prefix), (0, None));
    }

    #[test]
    fn reads_each_kind() {
        let autoinc =
            CounterState::from_document(&name(), &doc! { "kind": "autoinc", "seq": 41_i64 })
                .unwrap();
        assert_eq!(autoinc.kind, KindState::Autoinc(AutoincState { seq: 41 }));
        let segment = CounterState::from_document(
            &name(),
            &doc! { "kind": "segment", "max": 1, "step": 1000 },
        )
        .unwrap();
        assert_eq!(
            segment.kind,
            KindState::Segment(SegmentState { max: 1, step: 1000 })
        );
        assert!(segment.shape().largest_value == MAX_VALUE && !segment.shape().values_repeat);
        let json = serde_json::to_value(&segment).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"name": "c", "kind": "segment", "max": 1, "step": 1000, "prefix": null})
        );
    }

    #[test]
    fn names_an_unknown_kind() {
        let error = CounterState::from_document(&name(), &doc! { "kind": "hilo" })
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "counter 'c' has kind \"hilo\", which this idmint does not know \
             (it knows cyclic, autoinc, segment and snowflake); it was left unchanged"
        );
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
            (doc! { "kind": 3 }, "kind is the number 3, not a string"),
            (doc! { "kind": "autoinc" }, "seq is missing"),
            (
                doc! { "kind": "autoinc", "seq": 9_007_199_254_740_992_i64 },
                "seq is 9007199254740992, it must be at most 9007199254740991",
            ),
            (
                doc! { "kind": "segment", "max": -5, "step": 10 },
                "max is -5, it must not be negative",
            ),
            (doc! { "kind": "segment", "max": 1 }, "step is missing"),
            (
                doc! { "kind": "segment", "max": 1, "step": 0 },
                "step is 0, it must be at least 1",
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
