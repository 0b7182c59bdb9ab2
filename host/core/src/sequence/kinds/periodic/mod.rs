//! The periodic kind: values that restart at 1 at each period boundary (a
//! day, a month or a year, in a time zone the counter names), as
//! accountants expect of invoice numbers (`INV-2026-000000001`).
//!
//! The document is `{_id, kind: "periodic", period, zone, current, seq,
//! prefix?}`: `period` is `day`, `month` or `year`; `zone` an IANA time zone
//! (`Europe/Paris`) or `UTC`; `current` the label of the period the last
//! value belongs to (`2026`, `2026-11`, `2026-11-23`; empty before the first
//! value); `seq` the last value handed out in it.
//!
//! **The server's clock decides the period.** One `findOneAndUpdate` per
//! block of `n` values computes the label of `$$NOW` in the counter's zone
//! (`$dateToString`) and, from the same old document:
//!
//! ```text
//! now > current ?  current = now, seq = n          (a new period: 1..=n)
//!               :  seq = seq + n                   (the same period)
//! ```
//!
//! Labels sort as periods do, so a server clock that is frozen or stepped
//! back leaves `current` where it is and `seq` grows: no value is handed out
//! twice within a period, whatever any clock does. (A clock stepped back
//! across a boundary keeps issuing in the later period until the clock
//! passes it again; the values stay unique.) The update applies only to a
//! well-formed counter of the period and zone the caller read; anything else
//! is left exactly as it was and read again to say why, or (period or zone
//! changed by hand) taken again with the new ones. Writes are majority with
//! journal, like every kind's.
//!
//! The command `idmint pipeline` prints ([`Kind::take_command`]) has the same
//! update, and the guard, period and zone in its filter as well, so that a
//! counter it does not apply to matches nothing (`value: null`) instead of
//! coming back unchanged to an application that would reuse its `seq`.
//! The JavaScript twin is `mongo-js/getNextPeriodic.js`, which sends that
//! command; `tests/conformance.rs` holds the two equal. This kind owns
//! nothing outside its folder.

mod lanes;

use mongodb::bson::{doc, Bson, Document};
use mongodb::options::WriteConcern;
use mongodb::{Collection, Database};
use serde::Serialize;

use crate::mongo::collections::COUNTERS as COUNTERS_COLLECTION;
use crate::mongo::durable_write_concern;
use crate::parts::{Period, PeriodUnit, Stamp};
use crate::sequence::advance::{advance, Unmatched};
use crate::sequence::counter::document::{find, read};
use crate::sequence::counter::fields::database_of;
use crate::sequence::counter::fields::{integer_in, read_integer, read_string, well_formed};
use crate::sequence::error::SequenceError;
use crate::sequence::headroom::Headroom;
use crate::sequence::kind_trait::{
    CommandOptions, Fact, Handle, Kind, Repeats, ValueShape, MAX_VALUE,
};
use crate::sequence::name::CounterName;
use crate::sequence::settings::{Setting, Settings};

/// The zone of a counter created without `--zone`.
pub use crate::sequence::kind_trait::DEFAULT_ZONE;

/// What a zone's name may be made of (checked here and on the server): an
/// IANA name (`America/Argentina/Buenos_Aires`), `UTC`, or an offset
/// (`+05:30`). Whether the server knows it is asked when the counter is
/// created.
pub(crate) const ZONE_PATTERN: &str = "^[A-Za-z0-9_+/:-]{1,64}$";

/// The periodic kind (see the module docs).
#[derive(Debug)]
pub struct PeriodicKind;

/// A periodic counter's fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PeriodicState {
    /// How long a period lasts.
    pub period: PeriodUnit,
    /// The time zone periods are counted in.
    pub zone: String,
    /// The period of the last value handed out; `None` before the first.
    pub current: Option<Period>,
    /// The last value handed out in `current` (0: none yet).
    pub seq: u64,
}

impl Kind for PeriodicKind {
    const NAME: &'static str = "periodic";
    const SUMMARY: &'static str = "values that restart at 1 each day, month or year (in the \
         counter's time zone), decided by the server's clock";
    const SETTINGS: &'static [Setting] = &[Setting::Period, Setting::Zone];
    const RUNS: bool = false;
    const FIT_ADVICE: &'static str = "use a policy that writes the period and holds 2^53 values, \
         such as the built-in decimal policy (--policy builtin:decimal)";
    type State = PeriodicState;
    type Options = ();
    type Handle = PeriodicCounter;

    fn read(document: &Document) -> Result<PeriodicState, String> {
        let period = read_string(document, "period")?;
        let period: PeriodUnit = period
            .parse()
            .map_err(|reason| format!("period: {reason}"))?;
        let zone = read_string(document, "zone")?;
        if !zone_is_well_formed(zone) {
            return Err(format!(
                "zone {zone:?} is not a time zone name (letters, digits, _ + / : -, 1 to 64)"
            ));
        }
        let label = read_string(document, "current")?;
        let current = if label.is_empty() {
            None
        } else {
            Some(read_label(period, label).ok_or_else(|| {
                format!(
                    "current {label:?} is not a {period} label ({})",
                    period.label_format()
                )
            })?)
        };
        Ok(PeriodicState {
            period,
            zone: zone.to_string(),
            current,
            seq: read_integer(document, "seq", 0, MAX_VALUE)?,
        })
    }

    fn guard() -> Vec<Bson> {
        let string = |field: &str| doc! { "$eq": [{ "$type": format!("${field}") }, "string"] };
        let label_regex = label_regex_of("$period");
        vec![
            Bson::Document(
                doc! { "$in": ["$period", PeriodUnit::ALL.map(PeriodUnit::as_str).to_vec()] },
            ),
            Bson::Document(doc! { "$and": [
                string("zone"),
                { "$regexMatch": { "input": "$zone", "regex": ZONE_PATTERN } },
            ]}),
            Bson::Document(doc! { "$and": [
                string("current"),
                { "$regexMatch": { "input": "$current", "regex": label_regex } },
            ]}),
            integer_in("seq", 0, MAX_VALUE),
        ]
    }

    fn fields(settings: &Settings, _now_ms: u64) -> Result<Document, SequenceError> {
        let period = settings.period.unwrap_or(PeriodUnit::Year);
        let zone = settings.zone.as_deref().unwrap_or(DEFAULT_ZONE);
        check_zone(zone)?;
        Ok(doc! { "period": period.as_str(), "zone": zone, "current": "", "seq": 0_i64 })
    }

    fn creation_check(fields: &Document) -> Option<(Document, String)> {
        let zone = fields.get_str("zone").ok()?;
        Some((
            doc! { "$dateToString": { "date": "$$NOW", "timezone": zone } },
            format!("zone {zone:?} is not a time zone the server knows"),
        ))
    }

    fn shape(_state: &PeriodicState) -> ValueShape {
        ValueShape {
            largest_value: MAX_VALUE,
            repeats: Repeats::EachPeriod,
            server_timestamp: false,
        }
    }

    fn facts(state: &PeriodicState, _now_ms: u64) -> Vec<Fact> {
        let current = match &state.current {
            Some(period) => format!(
                "{period} (seq {}: the next value is {})",
                state.seq,
                state.seq + 1
            ),
            None => "none yet (the first value is 1)".to_string(),
        };
        vec![
            Fact::text("period", format!("{}, in {}", state.period, state.zone)),
            Fact::text("current", current),
        ]
    }

    /// The values of the current period (a new period starts again at 1).
    fn headroom(state: &PeriodicState, _now_ms: u64) -> Option<Headroom> {
        Some(Headroom::of_values(state.seq, MAX_VALUE))
    }

    fn take_command(
        name: &CounterName,
        count: u64,
        options: &CommandOptions,
    ) -> Result<(Document, Vec<Document>), SequenceError> {
        let (unit, zone) = (options.period, options.zone.as_str());
        // Checked here, not only at creation: the zone is written into the
        // command, and a `$` string there would be read as a field path.
        check_zone(zone)?;
        // The command applies only to a counter of the period and zone it
        // was printed for: any other matches nothing (`value: null`) rather
        // than coming back unchanged, as the update's guard leaves it.
        let filter = doc! {
            "_id": name.as_str(),
            "$expr": { "$and": [
                { "$eq": ["$period", unit.as_str()] },
                { "$eq": ["$zone", zone] },
                room(count, unit, zone),
            ]},
        };
        Ok((filter, take_pipeline(count, unit, zone)))
    }

    async fn open(
        database: &Database,
        name: CounterName,
        state: &PeriodicState,
        _options: &(),
    ) -> Result<PeriodicCounter, SequenceError> {
        Ok(PeriodicCounter {
            collection: database.collection(COUNTERS_COLLECTION),
            name,
            write_concern: durable_write_concern(),
            read: std::sync::Mutex::new((state.period, state.zone.clone())).into(),
        })
    }
}

/// The regular expression a label of the unit whose name is at field path
/// `unit` matches, as a server expression (`^$` for no unit).
pub(crate) fn label_regex_of(unit: &str) -> Document {
    doc! { "$switch": {
        "branches": PeriodUnit::ALL.map(|each| doc! {
            "case": { "$eq": [unit, each.as_str()] },
            "then": label_regex(each),
        }).to_vec(),
        "default": "^$",
    }}
}

/// Fails unless `zone` has the shape of a time zone name ([`ZONE_PATTERN`]).
fn check_zone(zone: &str) -> Result<(), SequenceError> {
    if zone_is_well_formed(zone) {
        return Ok(());
    }
    Err(SequenceError::InvalidSpec(format!(
        "zone {zone:?} is not a time zone name: use an IANA name such as Europe/Paris, \
         UTC, or an offset such as +05:30"
    )))
}

pub(crate) use crate::parts::zone_is_well_formed;

/// The regular expression a label of `unit` matches (empty: none yet).
fn label_regex(unit: PeriodUnit) -> &'static str {
    match unit {
        PeriodUnit::Year => "^$|^[0-9]{4}$",
        PeriodUnit::Month => "^$|^[0-9]{4}-(0[1-9]|1[0-2])$",
        PeriodUnit::Day => "^$|^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$",
    }
}

/// Reads a non-empty label of `unit` exactly as [`label_regex`] accepts it.
pub(crate) fn read_label(unit: PeriodUnit, label: &str) -> Option<Period> {
    let fields: Vec<&str> = label.split('-').collect();
    let digits = |text: &str, width: usize| {
        (text.len() == width && text.bytes().all(|b| b.is_ascii_digit()))
            .then(|| text.parse::<u16>().ok())
            .flatten()
    };
    let year = digits(fields.first()?, 4)?;
    let (month, day) = match (unit, fields.len()) {
        (PeriodUnit::Year, 1) => (1, 1),
        (PeriodUnit::Month, 2) => (digits(fields[1], 2)?, 1),
        (PeriodUnit::Day, 3) => (digits(fields[1], 2)?, digits(fields[2], 2)?),
        _ => return None,
    };
    ((1..=12).contains(&month) && (1..=31).contains(&day)).then_some(Period {
        unit,
        year,
        month: month as u8,
        day: day as u8,
    })
}

/// The label of `$$NOW` in `zone`, for periods of `unit`.
pub(crate) fn now_label(unit: PeriodUnit, zone: &str) -> Document {
    doc! { "$dateToString": { "format": unit.label_format(), "date": "$$NOW", "timezone": zone } }
}

/// Matches the counter if it can take `count` values now: a new period
/// starts (the label of now is after `current`), or the current one has
/// them left. A non-string `current` compares above nothing, so a corrupt
/// counter matches and is left unchanged by the update's guard.
pub(crate) fn take_filter(
    name: &CounterName,
    count: u64,
    unit: PeriodUnit,
    zone: &str,
) -> Document {
    doc! { "_id": name.as_str(), "$expr": room(count, unit, zone) }
}

/// True while the counter can take `count` values now (see [`take_filter`]).
fn room(count: u64, unit: PeriodUnit, zone: &str) -> Document {
    doc! { "$or": [
        { "$gt": [now_label(unit, zone), "$current"] },
        { "$lte": ["$seq", MAX_VALUE.saturating_sub(count) as i64] },
    ]}
}

/// The update that takes `count` values (see the module docs), for a counter
/// read with periods of `unit` in `zone`; any other document is left as it is.
pub(crate) fn take_pipeline(count: u64, unit: PeriodUnit, zone: &str) -> Vec<Document> {
    let count = count as i64;
    let advanced = doc! { "$let": {
        "vars": { "now": now_label(unit, zone) },
        "in": { "$cond": [
            { "$gt": ["$$now", "$current"] },
            { "$mergeObjects": ["$$ROOT", { "current": "$$now", "seq": { "$toLong": count } }] },
            { "$mergeObjects": ["$$ROOT", { "seq": { "$toLong": { "$add": ["$seq", count] } } }] },
        ]},
    }};
    vec![doc! { "$replaceWith": {
        "$cond": [
            { "$and": [
                well_formed::<PeriodicKind>(),
                { "$eq": ["$period", unit.as_str()] },
                { "$eq": ["$zone", zone] },
            ]},
            advanced,
            "$$ROOT",
        ],
    }}]
}

/// Handle on one periodic counter in `<db>.counters`.
#[derive(Debug, Clone)]
pub struct PeriodicCounter {
    collection: Collection<Document>,
    name: CounterName,
    write_concern: WriteConcern,
    /// The period and zone the counter had when last read: the update is
    /// built for them and applies only while the document still has them.
    read: std::sync::Arc<std::sync::Mutex<(PeriodUnit, String)>>,
}

/// How many times a take is tried again when the counter's period or zone
/// was changed by hand between the read and the update.
const RETRIES: u32 = 10;

impl PeriodicCounter {
    /// A handle on periodic counter `name` in `database` (its period and
    /// zone are read on the first take).
    pub async fn open(database: &Database, name: CounterName) -> Result<Self, SequenceError> {
        let counters = database.collection(COUNTERS_COLLECTION);
        let fields = find::<PeriodicKind>(&counters, &name).await?.kind;
        PeriodicKind::open(database, name, &fields, &()).await
    }

    /// The counter's name.
    pub fn name(&self) -> &CounterName {
        &self.name
    }

    /// Takes the next `count` values of the period the server's clock is in
    /// (see the module docs), in one round trip: the values and their period.
    pub async fn take(&self, count: u64) -> Result<(Period, Vec<u64>), SequenceError> {
        if count == 0 || count > MAX_VALUE {
            return Err(SequenceError::InvalidCount {
                name: self.name.clone(),
                requested: count,
                max: MAX_VALUE,
            });
        }
        for _ in 0..RETRIES {
            let (unit, zone) = self
                .read
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone();
            let after = advance::<PeriodicKind>(
                &self.collection,
                &self.name,
                &self.write_concern,
                take_filter(&self.name, count, unit, &zone),
                take_pipeline(count, unit, &zone),
                |fields| {
                    if fields.seq + count > MAX_VALUE {
                        Unmatched::Fail(SequenceError::Exhausted {
                            name: self.name.clone(),
                            requested: count,
                            limit: MAX_VALUE,
                        })
                    } else {
                        Unmatched::Retry
                    }
                },
            )
            .await?;
            // A malformed counter came back as it was: the reader says
            // what is wrong with it.
            let fields = &read::<PeriodicKind>(&self.name, &after)?.kind;
            if fields.period != unit || fields.zone != zone {
                // Changed by hand since it was read: nothing was taken; take
                // again with the counter's new period and zone.
                *self
                    .read
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) =
                    (fields.period, fields.zone.clone());
                continue;
            }
            let period = fields
                .current
                .expect("a counter that handed out values has a current period");
            return Ok((period, (fields.seq + 1 - count..=fields.seq).collect()));
        }
        Err(SequenceError::Contended {
            name: self.name.clone(),
            attempts: RETRIES,
        })
    }
}

impl Handle for PeriodicCounter {
    type Of = PeriodicKind;

    fn name(&self) -> &CounterName {
        &self.name
    }

    fn database(&self) -> Database {
        database_of(&self.collection)
    }

    async fn take(&self, count: usize, client_micros: u64) -> Result<Vec<Stamp>, SequenceError> {
        let (period, values) = PeriodicCounter::take(self, count as u64).await?;
        Ok(values
            .into_iter()
            .map(|value| Stamp::new(client_micros, value).in_period(period))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_read_as_the_guard_accepts_them() {
        let read = |unit, label| read_label(unit, label).map(|p| p.to_string());
        assert_eq!(read(PeriodUnit::Year, "2026"), Some("2026".into()));
        assert_eq!(read(PeriodUnit::Month, "2026-11"), Some("2026-11".into()));
        assert_eq!(
            read(PeriodUnit::Day, "2026-11-23"),
            Some("2026-11-23".into())
        );
        for (unit, label) in [
            (PeriodUnit::Year, "2026-11"),
            (PeriodUnit::Month, "2026-13"),
            (PeriodUnit::Month, "2026-1"),
            (PeriodUnit::Day, "2026-11-32"),
            (PeriodUnit::Day, "20261123"),
        ] {
            assert_eq!(read_label(unit, label), None, "{unit} {label}");
        }
    }

    #[test]
    fn zones_are_names_or_offsets() {
        for zone in [
            "UTC",
            "Europe/Paris",
            "America/Argentina/Buenos_Aires",
            "+05:30",
            "Etc/GMT-14",
        ] {
            assert!(zone_is_well_formed(zone), "{zone}");
        }
        for zone in ["", "Europe Paris", "$zone", "Paris\n"] {
            assert!(!zone_is_well_formed(zone), "{zone:?}");
        }
    }
}
