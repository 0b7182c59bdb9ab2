//! What a kind of counter is: the [`Kind`] trait each kind's folder
//! (`kinds/<kind>/`) implements, the [`Handle`] trait of an opened counter,
//! and the plain types they answer with.
//!
//! A kind owns everything about itself: how its document is read and
//! guarded on the server ([`Kind::read`], [`Kind::guard`]), the fields a new
//! counter gets ([`Kind::fields`]), the command an application in another
//! language sends ([`Kind::take_command`]), how it is opened and taken from
//! ([`Kind::open`], [`Handle`]), and how it describes itself
//! ([`Kind::shape`], [`Kind::facts`]). The registry (`registry.rs`)
//! dispatches to the kinds it lists, so that the CLI, the service, the
//! policy's fit check and the benchmarks ask a counter what they need
//! instead of matching on its kind.

use std::fmt::Debug;
use std::ops::Range;

use mongodb::bson::{doc, Bson, Document};
use mongodb::Database;
use serde::Serialize;

use super::error::SequenceError;
use super::headroom::Headroom;
use super::identity::Incarnation;
use super::name::CounterName;
use super::settings::{Setting, Settings};
use crate::parts::{Stamp, Stamps};

/// One kind of counter (see the module docs). Implemented by a unit type in
/// the kind's folder; the registry names each kind once. Public so that the
/// registry's types can name a kind's own types; nothing outside idmint
/// implements it or needs to call it.
// Dispatch is static (the registry's enums), so no caller ever needs `Send`
// bounds on these futures: each one is a concrete type.
#[allow(async_fn_in_trait)]
pub trait Kind: 'static {
    /// The document's `kind` field, and the kind's name everywhere.
    const NAME: &'static str;
    /// One line saying what it is, for help texts.
    const SUMMARY: &'static str;
    /// The `counter create` settings this kind takes; any other is refused.
    const SETTINGS: &'static [Setting];
    /// Whether it hands out runs of consecutive values
    /// ([`Handle::take_ranges`]), for clients that hand them out themselves.
    const RUNS: bool;
    /// What a policy that cannot hold this kind's values should be replaced
    /// with, said to the user.
    const FIT_ADVICE: &'static str;
    /// Whether the kind's take command reads a client clock (the
    /// `client` of [`CommandOptions`]); none but those that say so.
    const READS_CLIENT_CLOCK: bool = false;

    /// The kind's own fields of a counter document.
    type State: Debug + Clone + PartialEq + Eq + Serialize + Send + Sync + 'static;
    /// How a counter of this kind is opened (`()` when there is no choice).
    type Options: Debug + Clone + Default + Send + Sync + 'static;
    /// An opened counter of this kind.
    type Handle: Handle + Debug + Clone + Send + Sync + 'static;

    /// Reads the kind's fields, or says what is wrong with them (the reason
    /// goes into [`SequenceError::CorruptCounter`]).
    fn read(document: &Document) -> Result<Self::State, String>;

    /// The server-side twin of [`Kind::read`]: aggregation terms, all true
    /// only while the kind's fields are well formed. The common terms (the
    /// kind itself, the prefix) are added by `document::well_formed`; an
    /// update that advances a counter applies only under them, so a malformed
    /// document is never modified. `tests/cyclic.rs` holds the two to the
    /// same verdict.
    fn guard() -> Vec<Bson>;

    /// The kind's fields of a new counter, from the settings given (only
    /// those in [`Kind::SETTINGS`] reach here), or why they are refused.
    /// `now_ms` is the time of the creation.
    fn fields(settings: &Settings, now_ms: u64) -> Result<Document, SequenceError>;

    /// Fields a new counter `name` of `incarnation` gets from `database`
    /// itself, asked once its settings are accepted, just before its
    /// document is written (a snowflake counter's tag, claimed under its
    /// incarnation); none for most kinds.
    async fn drawn_fields(
        database: &Database,
        name: &CounterName,
        incarnation: &Incarnation,
    ) -> Result<Document, SequenceError> {
        let _ = (database, name, incarnation);
        Ok(Document::new())
    }

    /// An expression the server must be able to evaluate before a new
    /// counter with `fields` is written (e.g. that it knows a time zone),
    /// with what to say if it cannot; `None`: nothing to ask.
    fn creation_check(fields: &Document) -> Option<(Document, String)> {
        let _ = fields;
        None
    }

    /// What a policy must know about the counter's values.
    fn shape(state: &Self::State) -> ValueShape;

    /// What `counter show` says of the counter, in order, at `now_ms`.
    fn facts(state: &Self::State, now_ms: u64) -> Vec<Fact>;

    /// How much of what the counter can hand out is used at `now_ms`, for
    /// a kind that can run out or run short (`None`: it never does).
    fn headroom(_state: &Self::State, _now_ms: u64) -> Option<Headroom> {
        None
    }

    /// The filter and update that take `count` values in one
    /// `findAndModify` (what `idmint pipeline` prints), or why this kind has
    /// no such command.
    fn take_command(
        name: &CounterName,
        count: u64,
        options: &CommandOptions,
    ) -> Result<(Document, Vec<Document>), SequenceError>;

    /// Opens counter `name`, whose fields are `state`, for taking values.
    async fn open(
        database: &Database,
        name: CounterName,
        state: &Self::State,
        options: &Self::Options,
    ) -> Result<Self::Handle, SequenceError>;
}

/// An opened counter of one kind.
#[allow(async_fn_in_trait)]
pub trait Handle {
    /// The kind it is a handle of.
    type Of: Kind;

    /// The counter's name.
    fn name(&self) -> &CounterName;

    /// The database the counter is in.
    fn database(&self) -> Database;

    /// Takes `count` values, 1 to [`MAX_BLOCK`], in one round trip (or from
    /// memory), in the order issued. `client_micros` is the caller's clock.
    async fn take(&self, count: usize, client_micros: u64) -> Result<Vec<Stamp>, SequenceError>;

    /// Takes `count` values (1 to [`MAX_BLOCK`]) from what the handle holds
    /// in memory, if it holds that many now: no await, and no lock held
    /// beyond moving them out. `None`, with nothing taken, when it cannot
    /// (too few held, closed, a kind that holds none): the caller then
    /// takes the ordinary way ([`Handle::take`]), which waits or fails.
    fn take_held(&self, count: usize, client_micros: u64) -> Option<Stamps> {
        let _ = (count, client_micros);
        None
    }

    /// Takes `count` values as runs of consecutive values (kinds with
    /// [`Kind::RUNS`] only; the registry refuses the others first).
    async fn take_ranges(&self, count: u64) -> Result<Vec<Range<u64>>, SequenceError> {
        let _ = count;
        unreachable!("the registry refuses ranges of a kind without runs")
    }

    /// Gives back `runs` this process took ([`Handle::take_ranges`]) and
    /// could not hand out (a request that timed out or failed after taking
    /// them), where that is still possible: each run only if no value after
    /// it has been taken since, so that values stay unique and increasing.
    /// Returns how many values were given back; the others are gaps.
    async fn give_back(&self, runs: &[Range<u64>]) -> Result<u64, SequenceError> {
        let _ = runs;
        Ok(0)
    }

    /// Ends the use of the counter: what the process holds is given back or
    /// released.
    async fn close(&self) -> Result<GiveBack, SequenceError> {
        Ok(GiveBack::default())
    }

    /// What this process holds of the counter (buffers, a lease).
    fn held(&self) -> Held {
        Held::default()
    }
}

/// The most values one take reserves: one round trip never hands out more.
/// Larger requests are split by the caller.
pub const MAX_BLOCK: usize = 1000;

/// The largest value a numeric kind hands out: 2^53 - 1, the last integer a
/// JavaScript number (and so the stored functions and every JSON client)
/// holds exactly.
pub const MAX_VALUE: u64 = (1 << 53) - 1;

/// Fails unless `count` is a block size one request takes: 1 to [`MAX_BLOCK`].
pub(crate) fn check_block(name: &CounterName, count: usize) -> Result<(), SequenceError> {
    if (1..=MAX_BLOCK).contains(&count) {
        Ok(())
    } else {
        Err(SequenceError::TooMany {
            name: name.clone(),
            requested: count,
            max: MAX_BLOCK,
        })
    }
}

/// What a policy must know about the values a counter hands out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ValueShape {
    /// The largest value the counter can ever hand out.
    pub largest_value: u64,
    /// Whether and how values come round again, and so what must be written
    /// into an ID besides the value to keep IDs unique.
    pub repeats: Repeats,
    /// Whether the timestamp issued with a value is decided by the server
    /// and increases with it (cyclic); otherwise it is the taking client's
    /// clock, informative only.
    pub server_timestamp: bool,
}

/// How a counter's values repeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Repeats {
    /// Never: the value alone makes the ID unique.
    Never,
    /// After a wrap (cyclic): only the timestamp issued with a value tells
    /// two IDs apart, so a policy must write the time.
    AfterWrap,
    /// In each period (periodic): only the period tells two IDs apart, so a
    /// policy must write the period.
    EachPeriod,
}

impl Repeats {
    /// What tells `stamp`'s value from the same value issued again, written
    /// before the value where a kind's values repeat: a periodic value's
    /// period (`2026 41`), a cyclic value's server-decided timestamp in
    /// microseconds (`1795425555000000 41`); nothing where the value alone
    /// is unique. `idmint seq` and the service's `text/plain` values print
    /// values so.
    pub fn qualifier(self, stamp: &Stamp) -> Option<String> {
        self.timestamp_of(stamp)
            .map(|micros| micros.to_string())
            .or_else(|| self.period_of(stamp))
    }

    /// The server-decided timestamp that tells `stamp`'s value apart, where
    /// the kind's values repeat after a wrap; `None` otherwise.
    pub fn timestamp_of(self, stamp: &Stamp) -> Option<u64> {
        (self == Repeats::AfterWrap).then_some(stamp.timestamp_micros)
    }

    /// The period that tells `stamp`'s value apart, where the kind's values
    /// repeat in each period; `None` otherwise.
    pub fn period_of(self, stamp: &Stamp) -> Option<String> {
        match self {
            Repeats::EachPeriod => stamp.period.map(|period| period.to_string()),
            Repeats::AfterWrap | Repeats::Never => None,
        }
    }
}

/// One line of what a counter says about itself ([`Kind::facts`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Fact {
    /// The label, e.g. `maxval`.
    pub label: &'static str,
    /// The text after it.
    pub text: String,
    /// Where the fact goes in JSON, beside the counter's fields (`None`:
    /// the fields already hold it).
    pub json: Option<(&'static str, serde_json::Value)>,
    /// Shown after the prefix line rather than before it.
    pub after_prefix: bool,
}

impl Fact {
    /// A fact shown as text only (the counter's fields hold it for JSON).
    pub(crate) fn text(label: &'static str, text: impl Into<String>) -> Self {
        Fact {
            label,
            text: text.into(),
            json: None,
            after_prefix: false,
        }
    }

    /// A fact that JSON shows too, under `key`.
    pub(crate) fn derived(
        label: &'static str,
        text: impl Into<String>,
        key: &'static str,
        value: serde_json::Value,
    ) -> Self {
        Fact {
            label,
            text: text.into(),
            json: Some((key, value)),
            after_prefix: false,
        }
    }

    /// This fact, shown after the prefix line.
    pub(crate) fn after_prefix(mut self) -> Self {
        self.after_prefix = true;
        self
    }
}

/// What a process holds of a counter it opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Held {
    /// Values buffered in memory (segment counters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffers: Option<BufferStats>,
    /// A lease held on the counter's behalf (snowflake worker ids).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease: Option<LeaseStats>,
}

impl Held {
    /// Whether the process holds nothing of the counter: dropping its handle
    /// loses nothing, and closing it gives nothing back.
    pub fn is_nothing(&self) -> bool {
        self.buffers.is_none() && self.lease.is_none()
    }
}

/// What a counter that buffers values in memory has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct BufferStats {
    /// Ranges taken from the database.
    pub fetches: u64,
    /// Of those, taken in the background while values were left.
    pub background_fetches: u64,
    /// Fetches that failed (a background failure is retried by the next
    /// taker that needs values, which then reports the error).
    pub failed_fetches: u64,
    /// Requests that found the buffers empty and waited on the database.
    pub waits: u64,
    /// Values handed out.
    pub values: u64,
    /// The size of the next fetch.
    pub step: u64,
    /// How long the fetch in flight has been waiting for the database, in
    /// milliseconds (`None`: no fetch in flight). A fetch that waits long
    /// (a majority that does not answer) is what a readiness check reports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fetch_waiting_ms: Option<u64>,
    /// The buffers as they are now (`None`: nothing fetched yet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segments: Option<Segments>,
}

/// A segment counter's two buffers in one process, as Leaf's monitor shows
/// them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Segments {
    /// The segment values are handed out from, `[start, end)`.
    pub current: [u64; 2],
    /// The next value it hands out.
    pub position: u64,
    /// The segment fetched ahead, `[start, end)`, if any.
    pub following: Option<[u64; 2]>,
}

/// How a lease held on a counter's behalf is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LeaseStats {
    /// The worker id held (or last held).
    pub worker: u64,
    /// Whether the lease is proved valid now, so that values can be issued.
    pub holding: bool,
    /// Renewals that landed.
    pub renewals: u64,
    /// Renewals that failed (the database did not answer); retried at the
    /// next tick while the local deadline runs out.
    pub failed_renewals: u64,
    /// Leases found taken over at renewal (this process was paused past
    /// its expiry) and claimed again.
    pub losses: u64,
}

/// What closing a counter gave back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct GiveBack {
    /// How many values were given back (0: none left, or another process
    /// took a segment since this one's last).
    pub values: u64,
    /// The counter's `max` after the give-back, when there was one.
    pub max: Option<u64>,
}

/// Options of [`Kind::take_command`]: what the command cannot read from
/// the counter document itself.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommandOptions {
    /// A segment counter: the segment size asked for (at least the
    /// document's own step).
    pub step: u64,
    /// The clock a cyclic counter's timestamps are floored at.
    pub client: ClientTime,
    /// A periodic counter: its period.
    pub period: crate::parts::PeriodUnit,
    /// A periodic counter: its time zone.
    pub zone: String,
}

impl Default for CommandOptions {
    /// Step 0 (the document's own), the server's clock, a year in UTC.
    fn default() -> Self {
        CommandOptions {
            step: 0,
            client: ClientTime::ServerNow,
            period: crate::parts::PeriodUnit::Year,
            zone: DEFAULT_ZONE.to_string(),
        }
    }
}

impl CommandOptions {
    /// Sets [`CommandOptions::step`].
    pub fn step(mut self, step: u64) -> Self {
        self.step = step;
        self
    }

    /// Sets [`CommandOptions::client`].
    pub fn client(mut self, client: ClientTime) -> Self {
        self.client = client;
        self
    }

    /// Sets a periodic counter's [`period`](CommandOptions::period) and
    /// [`zone`](CommandOptions::zone).
    pub fn period(mut self, period: crate::parts::PeriodUnit, zone: impl Into<String>) -> Self {
        self.period = period;
        self.zone = zone.into();
        self
    }
}

/// The time zone a periodic counter counts its periods in unless told
/// otherwise.
pub const DEFAULT_ZONE: &str = "UTC";

/// The clock a cyclic counter's timestamps are floored at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientTime {
    /// The caller's clock reading, microseconds since the epoch (what
    /// idmint sends).
    Micros(u64),
    /// The server's clock, `$$NOW` in microseconds (milliseconds times
    /// 1,000): for an application that would rather not read its own.
    ServerNow,
}

impl ClientTime {
    /// The clock as a take's update reads it: a long (clamped to what a
    /// BSON long holds; 2^63 microseconds is year 294,247), or the
    /// server's `$$NOW` in microseconds.
    pub(crate) fn expression(self) -> Bson {
        match self {
            Self::Micros(micros) => Bson::Int64(i64::try_from(micros).unwrap_or(i64::MAX)),
            Self::ServerNow => {
                Bson::Document(doc! { "$multiply": [{ "$toLong": "$$NOW" }, 1000_i64] })
            }
        }
    }
}
