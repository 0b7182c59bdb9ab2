//! What a kind's lanes are: the [`Stripable`] trait a kind's folder
//! implements (`kinds/<kind>/lanes.rs`) when its counters can be striped,
//! beside [`Kind`], and the types `striping/` holds a kind's lanes as
//! without naming the kind ([`KindLanes`], [`LaneOf`], [`Local`]).
//!
//! A kind that implements [`Stripable`] says everything about its lanes
//! (`striping/lane.rs` has the document they share): what a lane needs to
//! know of its counter ([`Stripable::Of`], read from the counter's own
//! fields), how a lane's local counter is read and guarded on the server,
//! its take command, the base a generation starts above and the mark it
//! reaches, the fields of its map, how many lanes it can have, and how its
//! takes are made ([`Takes`]: values from a lane, a run of them buffered,
//! or a lease held in one lane). `striping/` knows no kind: the map, the
//! arithmetic, the taker, the change of stripes and the deployments ask a
//! [`LaneOf`] what they need.
//!
//! Which kinds implement it is found by `kinds/mod.rs`'s `lanes` (the
//! kinds' folder, below `striping/`, which reads maps and lanes by their
//! kind's name), with [`stripable!`](crate::sequence::lane_kind::stripable):
//! a kind is stripable when its folder implements the trait, and no list
//! says so.

use std::any::Any;
use std::fmt::{self, Debug};
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use mongodb::bson::{Bson, Document};
use mongodb::Database;

use super::counter::document::{read, Registered};
use super::counter::fields::well_formed;
use super::error::SequenceError;
use super::identity::Incarnation;
use super::kind_trait::{Kind, MAX_VALUE};
pub use super::lane_ceiling::LaneCeiling;
use super::name::CounterName;
use super::striping::counting::CEILING_CHUNK;
use super::striping::{Deployments, Lane, Mark, StripingError};
use crate::parts::{Stamp, Stamps};

/// The `kind` of a lane document (`striping/lane.rs`): no path that does
/// not know lanes takes from it.
pub const LANE_KIND: &str = "lane";

/// A future a kind's lanes answer with, whatever the kind.
pub type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A kind whose counters can be striped (see the module docs). Implemented
/// in the kind's folder, `kinds/<kind>/lanes.rs`, on the kind's own type.
pub trait Stripable: Kind + Registered {
    /// What a new lane of a counter needs to know of it (a cyclic
    /// counter's cycle), read from the counter's own fields.
    type Of: Debug + Clone + PartialEq + Send + Sync + 'static;
    /// A lane's local counter, as read from its document.
    type Local: Debug + Clone + PartialEq + Send + Sync + 'static;

    /// How an application reads the values of the answer of a lane's take
    /// command (`idmint pipeline --lane`), in words.
    const HOW_TO_READ: &'static str =
        "the value is `value.last` (with --count N, the N values `value.lane.m` apart up to it)";
    /// Why no single command takes from a lane, for a kind whose lanes hand
    /// out no values (none: [`Stripable::lane_take`] does).
    const NO_COMMAND: Option<&'static str> = None;
    /// Whether a lane of a counter across deployments has a ceiling
    /// (`striping/counting.rs`): what it hands out is bounded by what
    /// another deployment recorded first.
    const CEILINGS: bool = false;

    /// What the lanes of a counter whose own fields are `fields` (an
    /// unstriped counter's document, or its map's) need to know of it, or
    /// what is wrong with the fields.
    fn of(fields: &Document) -> Result<Self::Of, String>;

    /// Fails unless a generation of `lanes` lanes gives each lane what it
    /// hands out (a cyclic counter's cycle has a value for each).
    fn check_lanes(of: &Self::Of, lanes: u64) -> Result<(), StripingError> {
        let _ = (of, lanes);
        Ok(())
    }

    /// Reads the local counter of a lane `lane` whose document is
    /// `document` (its place, `lane: {...}`, is `place`): the local counter
    /// and the value its `last` must be, or what is wrong.
    fn read_local(
        document: &Document,
        place: &Document,
        lane: Lane,
    ) -> Result<(Self::Local, u64), String>;

    /// The server-side twin of [`Stripable::read_local`]: aggregation terms,
    /// all true only while the lane's local counter is well formed (the
    /// place and the seal are `lane.rs`'s).
    fn guard_terms() -> Vec<Bson>;

    /// The last local value.
    fn local_value(local: &Self::Local) -> u64;

    /// Whether the lane has handed out nothing yet.
    fn untouched(local: &Self::Local, lane: Lane) -> bool;

    /// What the lane has handed out, in words (once it has).
    fn describe(local: &Self::Local, lane: Lane, last: u64) -> String;

    /// The highest mark of what the lane handed out, which the next
    /// generation starts above.
    fn high_water(local: &Self::Local, last: u64) -> Mark {
        let _ = local;
        Mark::of(last)
    }

    /// What the lane's last take of `count` handed out, in order, read from
    /// the lane after that take.
    fn taken(
        local: &Self::Local,
        lane: Lane,
        last: u64,
        count: u64,
        client_micros: u64,
    ) -> Vec<Stamp>;

    /// How many more values a take may ask for (none: it never runs out).
    fn room(local: &Self::Local, lane: Lane, last: u64) -> Option<u64> {
        let _ = (local, lane, last);
        None
    }

    /// The fields of `document`, a live lane read as `local`, that no take
    /// changes, besides its place and prefixes (none: one is not where a
    /// take left it).
    fn fixed_fields(document: &Document, local: &Self::Local) -> Option<Document> {
        let _ = (document, local);
        Some(Document::new())
    }

    /// Narrows `filter`, the short filter of a take of `count` from a lane
    /// known as `local` (its ceiling `ceiling`), to the local values the
    /// take may move through; none when the lane has not `count` values
    /// left whatever its local value.
    /// `client_micros` is the taker's clock, as the take's own.
    fn short_filter(
        local: &Self::Local,
        lane: Lane,
        ceiling: Option<u64>,
        count: u64,
        client_micros: u64,
        filter: &mut Document,
    ) -> Option<()>;

    /// The filter and update that take `count` values of lane `lane_id` in
    /// one `findAndModify`, the lane's full guard being `guard` (a cyclic
    /// lane's timestamp is never below `client_micros`, an expression).
    fn lane_take(
        lane_id: &str,
        of: &Self::Of,
        count: u64,
        client_micros: Bson,
        guard: Document,
    ) -> (Document, Vec<Document>);

    /// The kind's fields of a new lane `lane` (nothing handed out yet; a
    /// periodic lane's base counts in `base_period`), after its place,
    /// which they may add to.
    fn new_lane(
        of: &Self::Of,
        lane: Lane,
        base_period: Option<&str>,
        place: &mut Document,
    ) -> Document;

    /// The kind's own fields of a map whose generation is above `base`.
    fn map_fields(of: &Self::Of, base: &Mark) -> Document;

    /// The base the lanes of an unstriped counter's next generation start
    /// above, as an expression of its document.
    fn base_of_unstriped() -> Bson;

    /// The period an unstriped counter's base counts in, as an expression
    /// of its document (none: the kind has no periods).
    fn base_period_of_unstriped() -> Option<Bson> {
        None
    }

    /// How far above a lane's [`CeilingReach::now`] a raise of its ceiling
    /// puts it, for a take of `count` from a lane of a generation of
    /// `modulus` lanes: [`CEILING_CHUNK`] local values (`m` apart) at
    /// least, or `count` of them if more.
    fn ceiling_chunk(of: &Self::Of, count: u64, modulus: u64) -> u64 {
        let _ = of;
        count.max(CEILING_CHUNK).saturating_mul(modulus)
    }

    /// The label of the period a take lands in now, as an expression of a
    /// server's clock, for a kind whose ceilings bound periods too (none:
    /// its ceilings are values alone).
    fn ceiling_period(of: &Self::Of) -> Option<Document> {
        let _ = of;
        None
    }

    /// The first ceiling of a new lane of a generation above `base` of
    /// `modulus` lanes, written by a change of stripes that began at
    /// `clock_micros`: a chunk above the base.
    fn first_ceiling(of: &Self::Of, base: u64, modulus: u64, clock_micros: u64) -> u64 {
        let _ = clock_micros;
        base.saturating_add(Self::ceiling_chunk(of, 1, modulus))
            .min(MAX_VALUE)
    }

    /// What a lane's ceiling bounds, for a take of `count` at
    /// `client_micros` from a lane known as `local` (its `last` `last`):
    /// a counting lane's values, `count` of them `m` apart above `last`.
    fn ceiling_reach(
        local: &Self::Local,
        lane: Lane,
        last: u64,
        count: u64,
        client_micros: u64,
    ) -> CeilingReach {
        let _ = (local, client_micros);
        CeilingReach {
            now: last,
            after: last.saturating_add(count.saturating_mul(lane.generation().modulus)),
        }
    }

    /// The generation of a live map above `base` (in `base_period`), in
    /// words, after `generation G: N lanes`.
    fn describe_generation(base: u64, base_period: Option<&str>) -> String {
        values_above(base, base_period)
    }

    /// How a taker of a counter whose lanes are `of`, opened with
    /// `options` across `deployments`, takes.
    fn takes(of: &Self::Of, options: &Self::Options, deployments: Option<&Deployments>) -> Takes {
        let _ = (of, options, deployments);
        Takes::Values
    }

    /// The highest mark, beyond its document's, that what holds values of
    /// unstriped counter `name` outside its document may have reached
    /// (none: nothing does), or why the counter cannot be striped now.
    fn unstriped_floor<'a>(
        database: &'a Database,
        name: &'a CounterName,
    ) -> impl Future<Output = Result<Option<i64>, SequenceError>> + Send + 'a {
        let _ = (database, name);
        async { Ok(None) }
    }

    /// Keeps what tells counter `name`'s IDs apart (a snowflake counter's
    /// tag) from every other counter of `database`, under `incarnation`:
    /// none when it is kept (or the kind has nothing so), else that tag
    /// and the counter that has it.
    fn keep_tag<'a>(
        of: &'a Self::Of,
        database: &'a Database,
        name: &'a CounterName,
        incarnation: Option<&'a Incarnation>,
        unmarked_are_its_own: bool,
    ) -> impl Future<Output = Result<Option<(u32, String)>, SequenceError>> + Send + 'a {
        let _ = (of, database, name, incarnation, unmarked_are_its_own);
        async { Ok(None) }
    }
}

/// `, values above BASE[ in PERIOD (from 1 in later periods)] (unique, not
/// increasing)`: how most kinds' generations are said.
pub fn values_above(base: u64, base_period: Option<&str>) -> String {
    let period = match base_period {
        Some(period) => format!(" in {period} (from 1 in later periods)"),
        None => String::new(),
    };
    format!(", values above {base}{period} (unique, not increasing)")
}

/// Where a lane stands against its ceiling (`striping/counting.rs`'s
/// `CEILING`), in what the ceiling bounds (a counting lane's values, a
/// cyclic lane's timestamps): its take stays at or below the ceiling,
/// a raise puts it a chunk above `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CeilingReach {
    /// Where the lane is now.
    pub now: u64,
    /// The most the take moves it to.
    pub after: u64,
}

/// How large the runs a buffered taker ([`Takes::Buffered`]) takes from
/// its lanes are, and when it takes the next: its kind's rule (a segment
/// counter's adaptive step, `kinds/segment/step.rs`).
pub trait RunSizing: Debug + Send + Sync {
    /// The fewest values a take from a lane asks for (the lane's kind
    /// enforces no floor itself: a run is what the taker asks).
    fn at_least(&self) -> u64;
    /// The size of the next run after one of `size` values lasted
    /// `lifetime` (from its take to the next take), between
    /// [`RunSizing::at_least`] and the kind's ceiling.
    fn next(&self, size: u64, lifetime: Duration) -> u64;
    /// The share of a run (0.0 to 1.0) handed out at which the next run is
    /// taken in the background.
    fn prefetch_at(&self) -> f64;
    /// The most values the taker will hand out in all, when it knows: it
    /// then takes no run it cannot use.
    fn wants(&self) -> Option<u64>;
}

/// How a striped counter's takes are made.
pub enum Takes {
    /// Each take takes its values from one lane.
    Values,
    /// Each take from a lane takes a run of values, handed out from the
    /// taker's memory (values it took and did not hand out are a gap),
    /// sized as the kind says.
    Buffered(Box<dyn RunSizing>),
    /// Values come from a lease the taker holds in one lane.
    Leased(Box<dyn LaneLeaser>),
}

impl Debug for Takes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Takes::Values => f.write_str("Values"),
            Takes::Buffered(sizing) => write!(f, "Buffered({sizing:?})"),
            Takes::Leased(leaser) => write!(f, "Leased({leaser:?})"),
        }
    }
}

/// The lane a lease is held in: the filter that matches it while it is
/// live (`_id` included), its residue and its generation's modulus and
/// base, and, for a lane with a ceiling, what raises it.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveLane {
    /// The filter of the lane while it is live.
    pub live: Document,
    /// Its residue.
    pub residue: u64,
    /// Its generation's number of lanes.
    pub modulus: u64,
    /// Its generation's base.
    pub floor: u64,
    /// What raises its ceiling (`striping/counting.rs`'s `CEILING`),
    /// recording it first in another deployment; none: the lane has none
    /// (a counter in one deployment, or written before ceilings).
    pub ceiling: Option<LaneCeiling>,
}

/// What leases a lane for a taker ([`Takes::Leased`]).
pub trait LaneLeaser: Debug + Send + Sync {
    /// Leases what counter `name`'s values come from in `lane`, in
    /// `database`; [`SequenceError::Striped`]: the lane is sealed or of
    /// another generation.
    fn lease<'a>(
        &'a self,
        database: &'a Database,
        name: &'a CounterName,
        lane: LiveLane,
    ) -> Boxed<'a, Result<Box<dyn LaneLease>, SequenceError>>;
}

/// A lease held in one lane ([`LaneLeaser::lease`]).
pub trait LaneLease: Debug + Send + Sync {
    /// Takes `count` values, in the order issued;
    /// [`SequenceError::Striped`]: the lane was sealed.
    fn take(&self, count: u64) -> Boxed<'_, Result<Vec<Stamp>, SequenceError>>;

    /// `count` values the lease can issue now, with no await; `None`: not
    /// now, with nothing taken ([`LaneLease::take`] then takes them, or
    /// says why not).
    fn take_held(&self, _count: u64) -> Option<Stamps> {
        None
    }

    /// Lets the lease go.
    fn close(&self) -> Boxed<'_, Result<(), SequenceError>>;
}

/// A kind's lanes, whatever the kind: what `striping/` asks of a kind it
/// knows by name only.
pub trait KindLanes: Send + Sync {
    /// The kind's name.
    fn name(&self) -> &'static str;
    /// The lanes of a counter whose own fields are `fields`, or what is
    /// wrong with them.
    fn of(&self, fields: &Document) -> Result<LaneOf, String>;
    /// See the kind's `Stripable::read_local`.
    fn read_local(
        &self,
        document: &Document,
        place: &Document,
        lane: Lane,
    ) -> Result<(Local, u64), String>;
    /// See the kind's `Stripable::guard_terms`.
    fn guard_terms(&self) -> Vec<Bson>;
    /// Reads `document`, an unstriped counter of the kind, as the kind
    /// reads it: what is wrong with it, if anything.
    fn read_unstriped(&self, name: &CounterName, document: &Document) -> Result<(), SequenceError>;
    /// The guard of an unstriped counter of the kind, which a change of
    /// stripes seals.
    fn unstriped_guard(&self) -> Document;
    /// See the kind's `Stripable::base_of_unstriped`.
    fn base_of_unstriped(&self) -> Bson;
    /// See the kind's `Stripable::base_period_of_unstriped`.
    fn base_period_of_unstriped(&self) -> Option<Bson>;
    /// See the kind's `Stripable::CEILINGS`.
    fn has_ceilings(&self) -> bool;
    /// See the kind's `Stripable::HOW_TO_READ`.
    fn how_to_read(&self) -> &'static str;
    /// See the kind's `Stripable::NO_COMMAND`.
    fn no_command(&self) -> Option<&'static str>;
    /// See the kind's `Stripable::describe_generation`.
    fn describe_generation(&self, base: u64, base_period: Option<&str>) -> String;
    /// See the kind's `Stripable::unstriped_floor`.
    fn unstriped_floor<'a>(
        &self,
        database: &'a Database,
        name: &'a CounterName,
    ) -> Boxed<'a, Result<Option<i64>, SequenceError>>;
}

/// Kind `K`'s lanes as [`KindLanes`].
struct LanesOfKind<K>(PhantomData<fn() -> K>);

impl<K: Stripable> LanesOfKind<K> {
    /// Kind `K`'s lanes.
    const LANES: &'static LanesOfKind<K> = &LanesOfKind(PhantomData);
}

impl<K: Stripable> KindLanes for LanesOfKind<K> {
    fn name(&self) -> &'static str {
        K::NAME
    }

    fn of(&self, fields: &Document) -> Result<LaneOf, String> {
        Ok(LaneOf {
            kind: Self::LANES,
            of: Arc::new(OfKind::<K>(K::of(fields)?)),
        })
    }

    fn read_local(
        &self,
        document: &Document,
        place: &Document,
        lane: Lane,
    ) -> Result<(Local, u64), String> {
        let (local, last) = K::read_local(document, place, lane)?;
        Ok((Local(Arc::new(LocalOfKind::<K>(local))), last))
    }

    fn guard_terms(&self) -> Vec<Bson> {
        K::guard_terms()
    }

    fn read_unstriped(&self, name: &CounterName, document: &Document) -> Result<(), SequenceError> {
        read::<K>(name, document).map(drop)
    }

    fn unstriped_guard(&self) -> Document {
        well_formed::<K>()
    }

    fn base_of_unstriped(&self) -> Bson {
        K::base_of_unstriped()
    }

    fn base_period_of_unstriped(&self) -> Option<Bson> {
        K::base_period_of_unstriped()
    }

    fn has_ceilings(&self) -> bool {
        K::CEILINGS
    }

    fn how_to_read(&self) -> &'static str {
        K::HOW_TO_READ
    }

    fn no_command(&self) -> Option<&'static str> {
        K::NO_COMMAND
    }

    fn describe_generation(&self, base: u64, base_period: Option<&str>) -> String {
        K::describe_generation(base, base_period)
    }

    fn unstriped_floor<'a>(
        &self,
        database: &'a Database,
        name: &'a CounterName,
    ) -> Boxed<'a, Result<Option<i64>, SequenceError>> {
        Box::pin(K::unstriped_floor(database, name))
    }
}

/// What the lanes of a counter are made of: its kind's lanes, and what a
/// new lane of that kind needs to know of the counter. Cheap to clone.
#[derive(Clone)]
pub struct LaneOf {
    kind: &'static dyn KindLanes,
    of: Arc<dyn OfCounter>,
}

impl Debug for LaneOf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LaneOf({}: {:?})", self.kind.name(), self.of)
    }
}

impl PartialEq for LaneOf {
    fn eq(&self, other: &Self) -> bool {
        self.kind.name() == other.kind.name() && self.of.same(other.of.as_any())
    }
}

impl LaneOf {
    /// The counter's kind.
    pub fn kind(&self) -> &'static str {
        self.kind.name()
    }

    /// The kind's lanes.
    pub fn lanes(&self) -> &'static dyn KindLanes {
        self.kind
    }

    /// See the kind's `Stripable::check_lanes`.
    pub(crate) fn check_lanes(&self, lanes: u64) -> Result<(), StripingError> {
        self.of.check_lanes(lanes)
    }

    /// See the kind's `Stripable::lane_take`.
    pub(crate) fn take_command(
        &self,
        lane_id: &str,
        count: u64,
        client_micros: Bson,
        guard: Document,
    ) -> (Document, Vec<Document>) {
        self.of.take_command(lane_id, count, client_micros, guard)
    }

    /// See the kind's `Stripable::new_lane`.
    pub(crate) fn new_lane(
        &self,
        lane: Lane,
        base_period: Option<&str>,
        place: &mut Document,
    ) -> Document {
        self.of.new_lane(lane, base_period, place)
    }

    /// See the kind's `Stripable::map_fields`.
    pub(crate) fn map_fields(&self, base: &Mark) -> Document {
        self.of.map_fields(base)
    }

    /// See the kind's `Stripable::ceiling_chunk`.
    pub(crate) fn ceiling_chunk(&self, count: u64, modulus: u64) -> u64 {
        self.of.ceiling_chunk(count, modulus)
    }

    /// See the kind's `Stripable::first_ceiling`.
    pub(crate) fn first_ceiling(&self, base: u64, modulus: u64, clock_micros: u64) -> u64 {
        self.of.first_ceiling(base, modulus, clock_micros)
    }

    /// See the kind's `Stripable::ceiling_period`.
    pub(crate) fn ceiling_period(&self) -> Option<Document> {
        self.of.ceiling_period()
    }

    /// How a taker opened with `options` (the kind's own open options,
    /// `OpenOptions`' field of the kind) across `deployments` takes.
    pub(crate) fn takes(&self, options: &dyn Any, deployments: Option<&Deployments>) -> Takes {
        self.of.takes(options, deployments)
    }

    /// See the kind's `Stripable::keep_tag`.
    pub(crate) fn keep_tag<'a>(
        &'a self,
        database: &'a Database,
        name: &'a CounterName,
        incarnation: Option<&'a Incarnation>,
        unmarked_are_its_own: bool,
    ) -> Boxed<'a, Result<Option<(u32, String)>, SequenceError>> {
        self.of
            .keep_tag(database, name, incarnation, unmarked_are_its_own)
    }
}

/// A counter's [`Stripable::Of`], whatever its kind.
trait OfCounter: Debug + Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn same(&self, other: &dyn Any) -> bool;
    fn check_lanes(&self, lanes: u64) -> Result<(), StripingError>;
    fn take_command(
        &self,
        lane_id: &str,
        count: u64,
        client_micros: Bson,
        guard: Document,
    ) -> (Document, Vec<Document>);
    fn new_lane(&self, lane: Lane, base_period: Option<&str>, place: &mut Document) -> Document;
    fn map_fields(&self, base: &Mark) -> Document;
    fn ceiling_chunk(&self, count: u64, modulus: u64) -> u64;
    fn first_ceiling(&self, base: u64, modulus: u64, clock_micros: u64) -> u64;
    fn ceiling_period(&self) -> Option<Document>;
    fn takes(&self, options: &dyn Any, deployments: Option<&Deployments>) -> Takes;
    fn keep_tag<'a>(
        &'a self,
        database: &'a Database,
        name: &'a CounterName,
        incarnation: Option<&'a Incarnation>,
        unmarked_are_its_own: bool,
    ) -> Boxed<'a, Result<Option<(u32, String)>, SequenceError>>;
}

struct OfKind<K: Stripable>(K::Of);

impl<K: Stripable> Debug for OfKind<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<K: Stripable> OfCounter for OfKind<K> {
    fn as_any(&self) -> &dyn Any {
        &self.0
    }

    fn same(&self, other: &dyn Any) -> bool {
        other.downcast_ref::<K::Of>() == Some(&self.0)
    }

    fn check_lanes(&self, lanes: u64) -> Result<(), StripingError> {
        K::check_lanes(&self.0, lanes)
    }

    fn take_command(
        &self,
        lane_id: &str,
        count: u64,
        client_micros: Bson,
        guard: Document,
    ) -> (Document, Vec<Document>) {
        K::lane_take(lane_id, &self.0, count, client_micros, guard)
    }

    fn new_lane(&self, lane: Lane, base_period: Option<&str>, place: &mut Document) -> Document {
        K::new_lane(&self.0, lane, base_period, place)
    }

    fn map_fields(&self, base: &Mark) -> Document {
        K::map_fields(&self.0, base)
    }

    fn ceiling_chunk(&self, count: u64, modulus: u64) -> u64 {
        K::ceiling_chunk(&self.0, count, modulus)
    }

    fn first_ceiling(&self, base: u64, modulus: u64, clock_micros: u64) -> u64 {
        K::first_ceiling(&self.0, base, modulus, clock_micros)
    }

    fn ceiling_period(&self) -> Option<Document> {
        K::ceiling_period(&self.0)
    }

    fn takes(&self, options: &dyn Any, deployments: Option<&Deployments>) -> Takes {
        let default;
        let options = match options.downcast_ref::<K::Options>() {
            Some(options) => options,
            None => {
                default = K::Options::default();
                &default
            }
        };
        K::takes(&self.0, options, deployments)
    }

    fn keep_tag<'a>(
        &'a self,
        database: &'a Database,
        name: &'a CounterName,
        incarnation: Option<&'a Incarnation>,
        unmarked_are_its_own: bool,
    ) -> Boxed<'a, Result<Option<(u32, String)>, SequenceError>> {
        Box::pin(K::keep_tag(
            &self.0,
            database,
            name,
            incarnation,
            unmarked_are_its_own,
        ))
    }
}

/// A lane's local counter, whatever its kind. Cheap to clone.
#[derive(Clone)]
pub struct Local(Arc<dyn LocalCounter>);

impl Debug for Local {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl PartialEq for Local {
    fn eq(&self, other: &Self) -> bool {
        self.0.same(other.0.as_any())
    }
}

impl Eq for Local {}

impl Local {
    /// The kind's local counter, if the lane is of kind `K`.
    pub fn of<K: Stripable>(&self) -> Option<&K::Local> {
        self.0.as_any().downcast_ref()
    }

    /// See the kind's `Stripable::local_value`.
    pub fn value(&self) -> u64 {
        self.0.value()
    }

    /// See the kind's `Stripable::untouched`.
    pub(crate) fn untouched(&self, lane: Lane) -> bool {
        self.0.untouched(lane)
    }

    /// See the kind's `Stripable::describe`.
    pub(crate) fn describe(&self, lane: Lane, last: u64) -> String {
        self.0.describe(lane, last)
    }

    /// See the kind's `Stripable::high_water`.
    pub(crate) fn high_water(&self, last: u64) -> Mark {
        self.0.high_water(last)
    }

    /// See the kind's `Stripable::taken`.
    pub(crate) fn taken(
        &self,
        lane: Lane,
        last: u64,
        count: u64,
        client_micros: u64,
    ) -> Vec<Stamp> {
        self.0.taken(lane, last, count, client_micros)
    }

    /// See the kind's `Stripable::room`.
    pub(crate) fn room(&self, lane: Lane, last: u64) -> Option<u64> {
        self.0.room(lane, last)
    }

    /// See the kind's `Stripable::fixed_fields`.
    pub(crate) fn fixed_fields(&self, document: &Document) -> Option<Document> {
        self.0.fixed_fields(document)
    }

    /// See the kind's `Stripable::short_filter`.
    pub(crate) fn short_filter(
        &self,
        lane: Lane,
        ceiling: Option<u64>,
        count: u64,
        client_micros: u64,
        filter: &mut Document,
    ) -> Option<()> {
        self.0
            .short_filter(lane, ceiling, count, client_micros, filter)
    }

    /// See the kind's `Stripable::ceiling_reach`.
    pub(crate) fn ceiling_reach(
        &self,
        lane: Lane,
        last: u64,
        count: u64,
        client_micros: u64,
    ) -> CeilingReach {
        self.0.ceiling_reach(lane, last, count, client_micros)
    }
}

trait LocalCounter: Debug + Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn same(&self, other: &dyn Any) -> bool;
    fn value(&self) -> u64;
    fn untouched(&self, lane: Lane) -> bool;
    fn describe(&self, lane: Lane, last: u64) -> String;
    fn high_water(&self, last: u64) -> Mark;
    fn taken(&self, lane: Lane, last: u64, count: u64, client_micros: u64) -> Vec<Stamp>;
    fn room(&self, lane: Lane, last: u64) -> Option<u64>;
    fn fixed_fields(&self, document: &Document) -> Option<Document>;
    fn short_filter(
        &self,
        lane: Lane,
        ceiling: Option<u64>,
        count: u64,
        client_micros: u64,
        filter: &mut Document,
    ) -> Option<()>;
    fn ceiling_reach(&self, lane: Lane, last: u64, count: u64, client_micros: u64) -> CeilingReach;
}

struct LocalOfKind<K: Stripable>(K::Local);

impl<K: Stripable> Debug for LocalOfKind<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<K: Stripable> LocalCounter for LocalOfKind<K> {
    fn as_any(&self) -> &dyn Any {
        &self.0
    }

    fn same(&self, other: &dyn Any) -> bool {
        other.downcast_ref::<K::Local>() == Some(&self.0)
    }

    fn value(&self) -> u64 {
        K::local_value(&self.0)
    }

    fn untouched(&self, lane: Lane) -> bool {
        K::untouched(&self.0, lane)
    }

    fn describe(&self, lane: Lane, last: u64) -> String {
        K::describe(&self.0, lane, last)
    }

    fn high_water(&self, last: u64) -> Mark {
        K::high_water(&self.0, last)
    }

    fn taken(&self, lane: Lane, last: u64, count: u64, client_micros: u64) -> Vec<Stamp> {
        K::taken(&self.0, lane, last, count, client_micros)
    }

    fn room(&self, lane: Lane, last: u64) -> Option<u64> {
        K::room(&self.0, lane, last)
    }

    fn fixed_fields(&self, document: &Document) -> Option<Document> {
        K::fixed_fields(document, &self.0)
    }

    fn short_filter(
        &self,
        lane: Lane,
        ceiling: Option<u64>,
        count: u64,
        client_micros: u64,
        filter: &mut Document,
    ) -> Option<()> {
        K::short_filter(&self.0, lane, ceiling, count, client_micros, filter)
    }

    fn ceiling_reach(&self, lane: Lane, last: u64, count: u64, client_micros: u64) -> CeilingReach {
        K::ceiling_reach(&self.0, lane, last, count, client_micros)
    }
}

/// Asks whether kind `K` is [`Stripable`], in a place that names `K`
/// (`kinds/mod.rs`): see [`stripable!`](crate::sequence::lane_kind::stripable).
pub struct Probe<K>(pub PhantomData<fn() -> K>);

/// The answer for a [`Stripable`] kind: its lanes.
pub trait IsStripable {
    /// The kind's lanes.
    fn lanes(&self) -> Option<&'static dyn KindLanes>;
}

impl<K: Stripable> IsStripable for &Probe<K> {
    fn lanes(&self) -> Option<&'static dyn KindLanes> {
        Some(LanesOfKind::<K>::LANES)
    }
}

/// The answer for any other kind: none. (Every kind is stripable today,
/// so no build calls it; a kind whose folder does not implement
/// [`Stripable`] would.)
#[allow(dead_code)]
pub trait NotStripable {
    /// None: the kind's counters cannot be striped.
    fn lanes(&self) -> Option<&'static dyn KindLanes> {
        None
    }
}

impl<K> NotStripable for Probe<K> {}

/// The lanes of kind `$kind` if it implements [`Stripable`], else none:
/// method resolution takes [`IsStripable`]'s `lanes` (on `&Probe`) when it
/// applies, [`NotStripable`]'s (on `Probe`, one reference further) when it
/// does not. Both traits must be in scope where it is used.
macro_rules! stripable {
    ($kind:ty) => {
        (&&$crate::sequence::lane_kind::Probe::<$kind>(::std::marker::PhantomData)).lanes()
    };
}

pub(crate) use stripable;
