//! Snowflake IDs (seed 001, as Baidu's uid-generator and Twitter's snowflake
//! make them), with MongoDB as the only coordinator: a 64-bit ID of time,
//! worker id and sequence ([`Layout`]), issued from memory by a
//! [`SnowflakeCounter`] whose worker id is leased ([`lease`]) and whose generator
//! fails closed and never repeats an ID when the clock goes back
//! ([`generator`]).
//!
//! The counter document is `{_id, kind: "snowflake", time_bits,
//! worker_bits, seq_bits, unit, epoch_ms, tag, salt, reserved?, prefix?}`;
//! it is written after creation only for the tag and salt of a counter made
//! before idmint knew them, written once (`late_tag.rs`), and for
//! `reserved`, the last time unit any holder of its worker ids may issue,
//! which every claim and renewal raises first (`gate.rs`: striping the
//! counter seals it). The leases live in the `workers` collection.
//!
//! `mod.rs` holds the kind (settings, creation, reading the document) and
//! its `Handle` impl (the two name each other), `counter.rs`
//! [`SnowflakeCounter`] (claiming a worker id, the renewer, `close`),
//! `gate.rs` the document every reservation is recorded in first (the
//! counter's own, or a lane's once striped, whose filter and field the
//! striping module gives), `workers.rs` the listings (the worker leases of a counter, the layout
//! lifetime of every counter), `lease.rs` the worker-lease documents and
//! their time reservation, `generator.rs` the word IDs are taken from and
//! its fail-closed checks, `tag.rs` the counter's tag and salt (standard
//! IDs tell counters apart by them) and the tags document they are drawn
//! from (`_id: "_idmint.tags"` in `counters`), `late_tag.rs` giving them to
//! a counter made before idmint knew them. This folder owns
//! its counters' documents (read only but for the tag) and their `workers` documents
//! (`_id: "<counter>#<worker>"`), nothing else: it must not touch another
//! kind's documents nor the `locks` collection, and it does not write its
//! own lease rules (server-clock expiry, takeover, conditional renewal and
//! release, the local deadline): those are the one lease primitive's
//! (`crate::lease`), shared with locks; what this folder adds is the time
//! reservation (`floor`, `last_time`).

mod counter;
mod gate;
mod generator;
mod lanes;
mod late_tag;
mod lease;
mod tag;
mod tag_claim;
mod workers;

use mongodb::bson::{doc, Bson, Document};
use mongodb::Database;
use serde::Serialize;

pub use counter::{SnowflakeCounter, SnowflakeOptions};
pub use gate::LaneGate;
pub use generator::{OnRollback, RollbackOptions};
pub use late_tag::{ensure_tag, keep_tag};
pub(crate) use lease::leases_of;
pub use lease::{WorkerLease, WORKERS_COLLECTION};
pub use tag::{draw_tag, keep_tag_from_others, CounterTag, MAX_TAG, TAGS_ID};
pub use workers::workers;

use crate::mongo::describe_value;
use crate::parts::snowflake::date;
use crate::parts::{Layout, Stamp, Stamps, TimeUnit};
use crate::sequence::counter::fields::read_integer;
use crate::sequence::error::SequenceError;
use crate::sequence::headroom::Headroom;
use crate::sequence::identity::Incarnation;
use crate::sequence::kind_trait::{
    CommandOptions, Fact, GiveBack, Handle, Held, Kind, Repeats, ValueShape,
};
use crate::sequence::name::CounterName;
use crate::sequence::settings::{Setting, Settings};

/// The snowflake kind (see the module docs).
#[derive(Debug)]
pub struct SnowflakeKind;

/// A snowflake counter's fields: its layout (see [`Layout`]), its tag and
/// salt (serialized as the tag alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SnowflakeState {
    /// The layout.
    #[serde(flatten)]
    pub layout: Layout,
    /// The counter's tag and salt; `None` for a counter made before idmint
    /// knew them, until they are first needed ([`ensure_tag`]).
    pub tag: Option<CounterTag>,
}

/// The layout `settings` ask for, defaults filled in.
pub fn layout_of(settings: &Settings) -> Layout {
    let default = Layout::default();
    let (time_bits, worker_bits, seq_bits) =
        settings
            .layout
            .unwrap_or((default.time_bits, default.worker_bits, default.seq_bits));
    Layout {
        time_bits,
        worker_bits,
        seq_bits,
        unit: settings.unit.unwrap_or(default.unit),
        epoch_ms: settings.epoch_ms.unwrap_or(default.epoch_ms),
    }
}

impl Kind for SnowflakeKind {
    const NAME: &'static str = "snowflake";
    const SUMMARY: &'static str = "snowflake IDs (seed 001, Baidu uid-generator): time, leased \
         worker id and sequence in 63 bits, issued from memory";
    const SETTINGS: &'static [Setting] = &[Setting::Layout, Setting::Unit, Setting::Epoch];
    const RUNS: bool = false;
    const FIT_ADVICE: &'static str = "use a policy that holds 64-bit IDs, such as the built-in \
         base32 policy (--policy builtin:base32)";
    type State = SnowflakeState;
    type Options = SnowflakeOptions;
    type Handle = SnowflakeCounter;

    fn read(document: &Document) -> Result<SnowflakeState, String> {
        let unit = match document.get("unit") {
            Some(Bson::String(unit)) => unit
                .parse::<TimeUnit>()
                .map_err(|reason| format!("unit: {reason}"))?,
            Some(other) => return Err(format!("unit is {}, not a string", describe_value(other))),
            None => return Err("unit is missing".into()),
        };
        let layout = Layout {
            time_bits: read_integer(document, "time_bits", 1, 62)? as u32,
            worker_bits: read_integer(document, "worker_bits", 1, 62)? as u32,
            seq_bits: read_integer(document, "seq_bits", 1, 62)? as u32,
            unit,
            epoch_ms: read_integer(document, "epoch_ms", 0, i64::MAX as u64)?,
        };
        layout.check_shape()?;
        let tag = CounterTag::read(document)?;
        Ok(SnowflakeState { layout, tag })
    }

    /// Never updated by a pipeline: its document is read, not advanced.
    fn guard() -> Vec<Bson> {
        Vec::new()
    }

    fn fields(settings: &Settings, now_ms: u64) -> Result<Document, SequenceError> {
        let layout = layout_of(settings);
        layout
            .check_new(now_ms)
            .map_err(SequenceError::InvalidSpec)?;
        Ok(doc! {
            "time_bits": i64::from(layout.time_bits),
            "worker_bits": i64::from(layout.worker_bits),
            "seq_bits": i64::from(layout.seq_bits),
            "unit": layout.unit.as_str(),
            "epoch_ms": layout.epoch_ms as i64,
        })
    }

    /// A tag and a salt drawn for the new counter (`tag.rs`).
    async fn drawn_fields(
        database: &Database,
        name: &CounterName,
        incarnation: &Incarnation,
    ) -> Result<Document, SequenceError> {
        tag::drawn_fields(database, name, incarnation).await
    }

    fn shape(_state: &SnowflakeState) -> ValueShape {
        ValueShape {
            largest_value: i64::MAX as u64,
            repeats: Repeats::Never,
            server_timestamp: false,
        }
    }

    /// Time: the share of the time bits' span gone by at `now_ms`.
    fn headroom(state: &SnowflakeState, now_ms: u64) -> Option<Headroom> {
        let l = state.layout;
        Some(Headroom::of_time(l.epoch_ms, l.runs_out_at_ms(), now_ms))
    }

    fn facts(state: &SnowflakeState, now_ms: u64) -> Vec<Fact> {
        let l = state.layout;
        let runs_out_on = date(l.runs_out_at_ms());
        let mut facts = vec![
            Fact::text(
                "layout",
                format!(
                    "{},{},{} in {} from {}: {} worker ids, {} IDs per {} per worker",
                    l.time_bits,
                    l.worker_bits,
                    l.seq_bits,
                    l.unit,
                    date(l.epoch_ms),
                    l.max_worker() + 1,
                    l.max_seq() + 1,
                    l.unit
                ),
            ),
            Fact::derived(
                "runs out on",
                runs_out_on.clone(),
                "runs_out_on",
                serde_json::Value::String(runs_out_on),
            ),
        ];
        facts.push(Fact::text(
            "tag",
            match state.tag {
                Some(tag) => tag.tag.to_string(),
                None => "none yet (given the first time a standard ID needs one)".to_string(),
            },
        ));
        let warning = l.lifetime_warning(now_ms);
        if let Some(text) = &warning {
            facts.push(Fact::derived(
                "warning",
                text.clone(),
                "warning",
                serde_json::Value::String(text.clone()),
            ));
        }
        facts
    }

    fn take_command(
        _name: &CounterName,
        _count: u64,
        _options: &CommandOptions,
    ) -> Result<(Document, Vec<Document>), SequenceError> {
        Err(SequenceError::NoCommand {
            kind: Self::NAME,
            reason: "snowflake IDs are made in the process that leases a worker id; \
                     no single command takes them",
        })
    }

    async fn open(
        database: &Database,
        name: CounterName,
        state: &SnowflakeState,
        options: &SnowflakeOptions,
    ) -> Result<SnowflakeCounter, SequenceError> {
        SnowflakeCounter::start(database, name, state.layout, options.clone()).await
    }
}

impl Handle for SnowflakeCounter {
    type Of = SnowflakeKind;

    fn name(&self) -> &CounterName {
        SnowflakeCounter::name(self)
    }

    fn database(&self) -> Database {
        SnowflakeCounter::database(self)
    }

    /// The IDs, each decomposed once into the stamp a policy formats.
    async fn take(&self, count: usize, _client_micros: u64) -> Result<Vec<Stamp>, SequenceError> {
        let layout = *self.layout();
        let ids = SnowflakeCounter::take(self, count).await?;
        Ok(ids
            .into_iter()
            .map(|id| Stamp::snowflake(id, &layout).expect("the generator issues 63-bit IDs"))
            .collect())
    }

    /// One ID, when the generator can issue it now: its every check (the
    /// lease proved valid, the clock, the reservation), with no await. A
    /// block, and a stall of any kind, go the ordinary way.
    fn take_held(&self, count: usize, _client_micros: u64) -> Option<Stamps> {
        if count != 1 {
            return None;
        }
        let id = self.try_next_id()?;
        Some(Stamps::one(
            Stamp::snowflake(id, self.layout()).expect("the generator issues 63-bit IDs"),
        ))
    }

    async fn close(&self) -> Result<GiveBack, SequenceError> {
        SnowflakeCounter::close(self).await?;
        Ok(GiveBack::default())
    }

    fn held(&self) -> Held {
        Held {
            buffers: None,
            lease: Some(self.lease_stats()),
        }
    }
}
