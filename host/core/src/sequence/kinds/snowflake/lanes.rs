//! A snowflake counter's lanes (`docs/design/striped-counters.md`): a lane
//! hands out no values; it is the gate (`gate.rs`) of the worker ids of its
//! residue class (`worker % m == r`), leased in its deployment's `workers`
//! collection, and `last` is the last time unit any of their holders may
//! issue, raised before each claim and renewal of a lease; its holders
//! issue only above `b`, the highest `last` of the lanes before it, so no
//! two holders ever issue one (time, worker id):
//!
//! ```text
//! { _id: "ids#1", kind: "lane",
//!   lane: { kind: "snowflake", generation: 2, b: 90210, m: 2, r: 1 },
//!   last: 90377, sealed: null, prefixes: [] }
//! ```
//!
//! A taker leases a worker id of one lane ([`Takes::Leased`]) and issues
//! IDs from memory as an unstriped counter's handle does.

use mongodb::bson::{doc, Bson, Document};
use mongodb::Database;

use super::gate::{GateCeiling, GATE_CEILING_CHUNK_MS};
use super::{
    keep_tag_from_others, leases_of, LaneGate, SnowflakeCounter, SnowflakeKind, SnowflakeOptions,
    SnowflakeState,
};
use crate::parts::{Layout, Stamp, Stamps};
use crate::sequence::counter::fields::read_integer;
use crate::sequence::error::{striping, SequenceError};
use crate::sequence::identity::Incarnation;
use crate::sequence::kind_trait::{Handle, Kind, MAX_VALUE};
use crate::sequence::lane_kind::{Boxed, LaneLease, LaneLeaser, LiveLane, Stripable, Takes};
use crate::sequence::name::CounterName;
use crate::sequence::striping::{Deployments, Generation, Lane, Mark, StripingError, MAX_LANES};

/// A snowflake lane's local counter: the last time unit its worker ids'
/// holders may issue (its generation's floor `b` until the first claim).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snowflake {
    /// That value.
    pub reserved: u64,
}

impl Stripable for SnowflakeKind {
    /// The counter's layout, and its tag.
    type Of = SnowflakeState;
    type Local = Snowflake;

    const NO_COMMAND: Option<&'static str> = Some(
        "snowflake IDs are made in the process that leases a worker id of a lane; \
         no single command takes them",
    );

    /// Time ceilings: a lane's `last`, the time its holders reserved, stays
    /// at or below its ceiling (`gate.rs`).
    const CEILINGS: bool = true;

    fn of(fields: &Document) -> Result<SnowflakeState, String> {
        <SnowflakeKind as Kind>::read(fields)
    }

    /// One lane per worker id at most.
    fn check_lanes(state: &SnowflakeState, lanes: u64) -> Result<(), StripingError> {
        let most = MAX_LANES.min(state.layout.max_worker() + 1);
        if lanes > most {
            return Err(StripingError::TooFewWorkers {
                worker_bits: state.layout.worker_bits,
                most,
                lanes,
            });
        }
        Ok(())
    }

    fn read_local(
        document: &Document,
        _place: &Document,
        lane: Lane,
    ) -> Result<(Snowflake, u64), String> {
        let reserved = read_integer(document, "last", lane.generation().base, MAX_VALUE)?;
        Ok((Snowflake { reserved }, reserved))
    }

    /// Its holders reserve time above its floor.
    fn guard_terms() -> Vec<Bson> {
        vec![Bson::Document(doc! { "$gte": ["$last", "$lane.b"] })]
    }

    fn local_value(local: &Snowflake) -> u64 {
        local.reserved
    }

    fn untouched(reserved: &Snowflake, lane: Lane) -> bool {
        reserved.reserved == lane.generation().base
    }

    fn describe(reserved: &Snowflake, lane: Lane, _last: u64) -> String {
        let Generation { base, modulus } = lane.generation();
        format!(
            "worker ids {} modulo {modulus}, time reserved up to unit {} (from unit {})",
            lane.residue(),
            reserved.reserved,
            base + 1
        )
    }

    /// Its IDs come from its holders' memory, not from a take.
    fn taken(
        _reserved: &Snowflake,
        _lane: Lane,
        _last: u64,
        _count: u64,
        _client_micros: u64,
    ) -> Vec<Stamp> {
        Vec::new()
    }

    /// No take is made of it.
    fn short_filter(
        _reserved: &Snowflake,
        _lane: Lane,
        _ceiling: Option<u64>,
        _count: u64,
        _client_micros: u64,
        _filter: &mut Document,
    ) -> Option<()> {
        None
    }

    /// Hands out no values: matches nothing, changes nothing.
    fn lane_take(
        lane_id: &str,
        _state: &SnowflakeState,
        _count: u64,
        _client_micros: Bson,
        _guard: Document,
    ) -> (Document, Vec<Document>) {
        (
            doc! { "_id": lane_id, "$expr": false },
            vec![doc! { "$set": {} }],
        )
    }

    /// No time reserved above its floor yet.
    fn new_lane(
        _state: &SnowflakeState,
        lane: Lane,
        _base_period: Option<&str>,
        _place: &mut Document,
    ) -> Document {
        doc! { "last": lane.generation().base as i64 }
    }

    fn map_fields(state: &SnowflakeState, base: &Mark) -> Document {
        let layout = state.layout;
        let mut fields = doc! {
            "time_bits": i64::from(layout.time_bits),
            "worker_bits": i64::from(layout.worker_bits),
            "seq_bits": i64::from(layout.seq_bits),
            "unit": layout.unit.as_str(),
            "epoch_ms": layout.epoch_ms as i64,
            "reserved": base.value as i64,
        };
        if let Some(tag) = &state.tag {
            fields.extend(tag.fields());
        }
        fields
    }

    /// Ten minutes of time units ([`GATE_CEILING_CHUNK_MS`]).
    fn ceiling_chunk(state: &SnowflakeState, _count: u64, _modulus: u64) -> u64 {
        chunk_units(&state.layout)
    }

    /// A chunk above the later of its floor and the time unit of the
    /// clock of the change that writes it: its holders have a chunk of time
    /// to reserve in before they need another deployment.
    fn first_ceiling(state: &SnowflakeState, base: u64, _modulus: u64, clock_micros: u64) -> u64 {
        base.max(state.layout.time_at(clock_micros / 1000))
            .saturating_add(chunk_units(&state.layout))
            .min(MAX_VALUE)
    }

    /// The time its holders recorded in it (`gate.rs`).
    fn base_of_unstriped() -> Bson {
        Bson::Document(doc! { "$toLong": { "$ifNull": ["$reserved", 0_i64] } })
    }

    fn describe_generation(base: u64, _base_period: Option<&str>) -> String {
        format!(
            ", each leasing the worker ids of its residue, issuing after time unit {base} (IDs \
             unique, not increasing)"
        )
    }

    /// A worker id leased in one lane; across `deployments`, a lost lease
    /// is waited on no longer than half their deadline: another lane is
    /// leased then.
    fn takes(
        state: &SnowflakeState,
        options: &SnowflakeOptions,
        deployments: Option<&Deployments>,
    ) -> Takes {
        let mut options = options.clone();
        if let Some(deployments) = deployments {
            options.lease_wait = options.lease_wait.min(deployments.take_deadline() / 2);
        }
        Takes::Leased(Box::new(Leaser {
            layout: state.layout,
            options,
        }))
    }

    /// The last time unit any holder of a worker id reserved (-1: none),
    /// from its worker leases: what a holder of an idmint before gates
    /// (which does not record its reservations in the counter, `gate.rs`)
    /// may have issued up to. Refused, naming it, while such a holder's
    /// lease is live: it may reserve more, and nothing bounds what.
    async fn unstriped_floor(
        database: &Database,
        name: &CounterName,
    ) -> Result<Option<i64>, SequenceError> {
        let (leases, _) = leases_of(database, name).await?;
        if let Some(lease) = leases.iter().find(|lease| lease.live && !lease.gated) {
            return Err(striping(
                name,
                StripingError::UngatedHolder {
                    worker: lease.worker,
                    host: lease.host.clone(),
                    pid: lease.pid,
                    expires: chrono::DateTime::from_timestamp_millis(lease.expires_ms)
                        .map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
                        .unwrap_or_default(),
                },
            ));
        }
        Ok(Some(
            leases
                .iter()
                .map(|lease| lease.last_time)
                .max()
                .unwrap_or(-1),
        ))
    }

    /// Its tag, kept from every other counter of `database` (see
    /// `keep_tag_from_others`).
    async fn keep_tag(
        state: &SnowflakeState,
        database: &Database,
        name: &CounterName,
        incarnation: Option<&Incarnation>,
        unmarked_are_its_own: bool,
    ) -> Result<Option<(u32, String)>, SequenceError> {
        let Some(tag) = state.tag else {
            return Ok(None);
        };
        let owner =
            keep_tag_from_others(database, name, incarnation, unmarked_are_its_own, tag.tag)
                .await?;
        Ok(owner.map(|owner| (tag.tag, owner)))
    }
}

/// How many time units of `layout` a raise of a lane's ceiling puts it
/// above its `last`: [`GATE_CEILING_CHUNK_MS`], at least one unit.
fn chunk_units(layout: &Layout) -> u64 {
    GATE_CEILING_CHUNK_MS.div_ceil(layout.unit.millis()).max(1)
}

/// Leases a worker id of a lane for a striped snowflake counter's taker.
#[derive(Debug)]
struct Leaser {
    layout: Layout,
    options: SnowflakeOptions,
}

impl LaneLeaser for Leaser {
    fn lease<'a>(
        &'a self,
        database: &'a Database,
        name: &'a CounterName,
        lane: LiveLane,
    ) -> Boxed<'a, Result<Box<dyn LaneLease>, SequenceError>> {
        Box::pin(async move {
            let LiveLane {
                live,
                residue,
                modulus,
                floor,
                ceiling,
            } = lane;
            let gate = LaneGate {
                live,
                residue,
                modulus,
                floor,
                ceiling: ceiling.map(|raise| GateCeiling {
                    raise,
                    chunk: chunk_units(&self.layout),
                }),
            };
            let counter = SnowflakeCounter::start_in_lane(
                database,
                name.clone(),
                self.layout,
                self.options.clone(),
                gate,
            )
            .await?;
            Ok(Box::new(Held {
                counter,
                layout: self.layout,
            }) as Box<dyn LaneLease>)
        })
    }
}

/// A worker id leased in one lane.
#[derive(Debug)]
struct Held {
    counter: SnowflakeCounter,
    layout: Layout,
}

impl LaneLease for Held {
    fn take(&self, count: u64) -> Boxed<'_, Result<Vec<Stamp>, SequenceError>> {
        Box::pin(async move {
            let ids = self.counter.take(count as usize).await?;
            Ok(ids
                .into_iter()
                .map(|id| {
                    Stamp::snowflake(id, &self.layout).expect("the generator issues 63-bit IDs")
                })
                .collect())
        })
    }

    /// One ID, as the unstriped counter's take issues it from memory.
    fn take_held(&self, count: u64) -> Option<Stamps> {
        Handle::take_held(&self.counter, usize::try_from(count).ok()?, 0)
    }

    fn close(&self) -> Boxed<'_, Result<(), SequenceError>> {
        Box::pin(self.counter.close())
    }
}
