//! Creating counters: the settings of each kind, checked before anything is
//! written, and reading a counter back.

use mongodb::bson::{doc, Document};
use mongodb::options::WriteConcern;
use mongodb::Collection;

use super::counter_doc::MAX_STEP;
use super::cyclic::{DEFAULT_MAXVAL, MAX_MAXVAL};
use super::kind::{CounterKind, MAX_VALUE};
use super::snowflake::{Layout, TimeUnit};
use super::{Clock, SystemClock};
use super::{CounterName, CounterState, SequenceError};
use crate::mongo;

/// A segment counter's default step: the smallest segment a process takes.
pub const DEFAULT_STEP: u64 = 1000;

/// Settings of a new counter. Each setting belongs to some kinds only:
/// `maxval` to cyclic counters, `start` to autoinc and segment ones, `step`
/// to segment ones; giving one to another kind is an error.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CounterSpec {
    /// The kind. Default: cyclic.
    pub kind: CounterKind,
    /// Cyclic: the largest value before wrapping to 0. Default: 99.
    pub maxval: Option<u64>,
    /// Autoinc and segment: the first value handed out. Default: 1.
    pub start: Option<u64>,
    /// Segment: the smallest segment a process takes. Default: 1000.
    pub step: Option<u64>,
    /// Snowflake: the bits of time, worker id and sequence. Default: 41,10,12.
    pub layout: Option<(u32, u32, u32)>,
    /// Snowflake: the time unit. Default: milliseconds.
    pub unit: Option<TimeUnit>,
    /// Snowflake: the epoch, ms since 1970. Default: 2025-01-01.
    pub epoch_ms: Option<u64>,
    /// The counter's default ID prefix. Default: none.
    pub prefix: Option<String>,
}

impl Default for CounterSpec {
    fn default() -> Self {
        Self {
            kind: CounterKind::Cyclic,
            maxval: None,
            start: None,
            step: None,
            layout: None,
            unit: None,
            epoch_ms: None,
            prefix: None,
        }
    }
}

impl CounterSpec {
    /// A spec of `kind` with every setting at its default.
    pub fn of(kind: CounterKind) -> Self {
        Self {
            kind,
            ..Self::default()
        }
    }

    /// Sets maxval (cyclic).
    pub fn maxval(mut self, maxval: u64) -> Self {
        self.maxval = Some(maxval);
        self
    }

    /// Sets the first value (autoinc, segment).
    pub fn start(mut self, start: u64) -> Self {
        self.start = Some(start);
        self
    }

    /// Sets the step (segment).
    pub fn step(mut self, step: u64) -> Self {
        self.step = Some(step);
        self
    }

    /// Sets the default prefix.
    pub fn prefix(mut self, prefix: Option<String>) -> Self {
        self.prefix = prefix;
        self
    }

    /// The snowflake layout this spec asks for, defaults filled in.
    pub fn snowflake_layout(&self) -> Layout {
        let default = Layout::default();
        let (time_bits, worker_bits, seq_bits) =
            self.layout
                .unwrap_or((default.time_bits, default.worker_bits, default.seq_bits));
        Layout {
            time_bits,
            worker_bits,
            seq_bits,
            unit: self.unit.unwrap_or(default.unit),
            epoch_ms: self.epoch_ms.unwrap_or(default.epoch_ms),
        }
    }

    /// The counter document this spec creates, or what is wrong with the spec.
    pub fn document(&self, name: &CounterName) -> Result<Document, SequenceError> {
        let kind = self.kind;
        let refuse = |setting: &str, kinds: &str| {
            SequenceError::InvalidSpec(format!(
                "{setting} applies to {kinds} counters, not to {kind} ones"
            ))
        };
        let in_range = |setting: &str, value: u64, min: u64, max: u64| {
            if (min..=max).contains(&value) {
                Ok(value as i64)
            } else {
                Err(SequenceError::InvalidSpec(format!(
                    "{setting} {value} is out of range {min}..={max}"
                )))
            }
        };
        let mut document = doc! { "_id": name.as_str(), "kind": kind.as_str() };
        if kind != CounterKind::Snowflake {
            if self.layout.is_some() {
                return Err(refuse("layout", "snowflake"));
            }
            if self.unit.is_some() {
                return Err(refuse("unit", "snowflake"));
            }
            if self.epoch_ms.is_some() {
                return Err(refuse("epoch", "snowflake"));
            }
        }
        match kind {
            CounterKind::Cyclic => {
                if self.start.is_some() {
                    return Err(refuse("start", "autoinc and segment"));
                }
                if self.step.is_some() {
                    return Err(refuse("step", "segment"));
                }
                let maxval = self.maxval.unwrap_or(DEFAULT_MAXVAL);
                document.insert("val", 0_i64);
                document.insert("maxval", in_range("maxval", maxval, 1, MAX_MAXVAL)?);
            }
            CounterKind::Autoinc => {
                if self.maxval.is_some() {
                    return Err(refuse("maxval", "cyclic"));
                }
                if self.step.is_some() {
                    return Err(refuse("step", "segment"));
                }
                let start = in_range("start", self.start.unwrap_or(1), 1, MAX_VALUE)?;
                document.insert("seq", start - 1);
            }
            CounterKind::Segment => {
                if self.maxval.is_some() {
                    return Err(refuse("maxval", "cyclic"));
                }
                let start = in_range("start", self.start.unwrap_or(1), 0, MAX_VALUE)?;
                let step = in_range("step", self.step.unwrap_or(DEFAULT_STEP), 1, MAX_STEP)?;
                document.insert("max", start);
                document.insert("step", step);
            }
            CounterKind::Snowflake => {
                if self.maxval.is_some() {
                    return Err(refuse("maxval", "cyclic"));
                }
                if self.start.is_some() {
                    return Err(refuse("start", "autoinc and segment"));
                }
                if self.step.is_some() {
                    return Err(refuse("step", "segment"));
                }
                let layout = self.snowflake_layout();
                layout
                    .check_new(SystemClock.now_micros() / 1000)
                    .map_err(SequenceError::InvalidSpec)?;
                document.insert("time_bits", i64::from(layout.time_bits));
                document.insert("worker_bits", i64::from(layout.worker_bits));
                document.insert("seq_bits", i64::from(layout.seq_bits));
                document.insert("unit", layout.unit.as_str());
                document.insert("epoch_ms", layout.epoch_ms as i64);
            }
        }
        if let Some(prefix) = &self.prefix {
            document.insert("prefix", prefix.as_str());
        }
        Ok(document)
    }
}

/// Creates counter `name` as `spec` says; fails with
/// [`SequenceError::CounterExists`] if there is one already (of any kind).
pub(crate) async fn create(
    collection: &Collection<Document>,
    name: &CounterName,
    spec: &CounterSpec,
    write_concern: &WriteConcern,
) -> Result<CounterState, SequenceError> {
    let document = spec.document(name)?;
    match collection
        .insert_one(&document)
        .write_concern(write_concern.clone())
        .await
    {
        Ok(_) => CounterState::from_document(name, &document),
        Err(error) if mongo::is_duplicate_key(&error) => {
            Err(SequenceError::CounterExists(name.clone()))
        }
        Err(source) => Err(SequenceError::from_database(
            name, "create", "insert", source,
        )),
    }
}

/// Reads counter `name` as it is now.
pub(crate) async fn read_state(
    collection: &Collection<Document>,
    name: &CounterName,
) -> Result<CounterState, SequenceError> {
    match collection
        .find_one(doc! { "_id": name.as_str() })
        .await
        .map_err(|source| SequenceError::from_database(name, "read", "find", source))?
    {
        Some(document) => CounterState::from_document(name, &document),
        None => Err(SequenceError::UnknownCounter(name.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name() -> CounterName {
        CounterName::new("c").unwrap()
    }

    #[test]
    fn each_kind_writes_its_document() {
        assert_eq!(
            CounterSpec::default().document(&name()).unwrap(),
            doc! { "_id": "c", "kind": "cyclic", "val": 0_i64, "maxval": 99_i64 }
        );
        assert_eq!(
            CounterSpec::of(CounterKind::Autoinc)
                .start(100)
                .prefix(Some("INV-".into()))
                .document(&name())
                .unwrap(),
            doc! { "_id": "c", "kind": "autoinc", "seq": 99_i64, "prefix": "INV-" }
        );
        assert_eq!(
            CounterSpec::of(CounterKind::Segment)
                .document(&name())
                .unwrap(),
            doc! { "_id": "c", "kind": "segment", "max": 1_i64, "step": 1000_i64 }
        );
    }

    #[test]
    fn refuses_a_setting_of_another_kind_or_out_of_range() {
        for (spec, message) in [
            (
                CounterSpec::default().step(10),
                "step applies to segment counters, not to cyclic ones",
            ),
            (
                CounterSpec::default().start(10),
                "start applies to autoinc and segment counters, not to cyclic ones",
            ),
            (
                CounterSpec::of(CounterKind::Autoinc).maxval(10),
                "maxval applies to cyclic counters, not to autoinc ones",
            ),
            (
                CounterSpec::of(CounterKind::Segment).step(0),
                "step 0 is out of range 1..=100000000",
            ),
            (
                CounterSpec::of(CounterKind::Autoinc).start(0),
                "start 0 is out of range 1..=9007199254740991",
            ),
            (
                CounterSpec::default().maxval(0),
                "maxval 0 is out of range 1..=9007199254740990",
            ),
        ] {
            let error = spec.document(&name()).unwrap_err().to_string();
            assert_eq!(error, format!("invalid counter setting: {message}"));
        }
    }
}
