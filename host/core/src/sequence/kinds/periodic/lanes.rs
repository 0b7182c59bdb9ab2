//! A periodic counter's lanes: each a counting lane that starts again in
//! each period of its counter (`period` and `zone`, as the counter's),
//! decided by its own server's clock as a periodic counter's is:
//!
//! ```text
//! { _id: "invoices#2", kind: "lane",
//!   lane: { kind: "periodic", generation: 1, b: 41, m: 4, r: 2,
//!           period: "year", zone: "UTC", base_period: "2026" },
//!   current: "2026", seq: 3, last: 52, sealed: null, prefixes: [] }
//! ```
//!
//! `current` is the period of its last value, `seq` the local value in
//! it. In `base_period`, the period its generation started in, its values
//! are above `b` as a counting lane's are; in every later one they start
//! again above 0: `last` is `(seq - 1) * m + r + 1`, plus `b` while
//! `current` is `base_period`. So the lanes of a generation hand out
//! disjoint values in every period, and a generation starts above the
//! highest (period, value) its lanes handed out, ordered by period first.

use mongodb::bson::{doc, Bson, Document};

use super::{
    label_regex_of, now_label, read_label, zone_is_well_formed, PeriodicKind, ZONE_PATTERN,
};
use crate::parts::{Period, PeriodUnit, Stamp};
use crate::sequence::counter::fields::{integer_in, read_integer, read_string};
use crate::sequence::kind_trait::{Kind, MAX_VALUE};
use crate::sequence::lane_kind::{values_above, Stripable};
use crate::sequence::striping::counting::{self, CEILING, CEILING_PERIOD};
use crate::sequence::striping::{Generation, Lane, Mark};

/// What a periodic counter's lanes know of it: its periods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeriodicLanes {
    /// How long a period lasts.
    pub unit: PeriodUnit,
    /// The time zone periods are counted in.
    pub zone: String,
}

/// A periodic lane's local counter: a counting lane's local value in
/// `current`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Periodic {
    /// Its last local value in `current` (0: none yet).
    pub seq: u64,
    /// The period of its last value (none: it never handed one out and nor
    /// did the counter before it).
    pub current: Option<Period>,
    /// The period its generation's base counts in (none: no value was
    /// handed out before it): its values are above the base there, above 0
    /// in every later period.
    pub base_period: Option<Period>,
}

/// The take's term that keeps a periodic lane at or below its ceiling
/// (true when it has none): the period of the take (`now`, the label of
/// the server's clock, or the lane's `current` if later) at or before its
/// `ceiling_period`, and the take's last value at or below its `ceiling`
/// (in a later period than `current`, values start again above 0).
pub(crate) fn under_period_ceiling(count: i64, now: Document) -> Document {
    doc! { "$or": [
        { "$eq": [{ "$type": format!("${CEILING}") }, "missing"] },
        { "$and": [
            { "$lte": [{ "$max": [now.clone(), "$current"] }, format!("${CEILING_PERIOD}")] },
            { "$lte": [
                { "$cond": [
                    { "$gt": [now, "$current"] },
                    { "$add": [{ "$multiply": [count - 1, "$lane.m"] }, "$lane.r", 1_i64] },
                    { "$add": ["$last", { "$multiply": [count, "$lane.m"] }] },
                ]},
                format!("${CEILING}"),
            ]},
        ]},
    ]}
}

impl Stripable for PeriodicKind {
    type Of = PeriodicLanes;
    type Local = Periodic;

    /// A ceiling of a value and a period: a lane's takes stay at or below
    /// its `ceiling` in a period at or before its `ceiling_period`.
    const CEILINGS: bool = true;

    /// The label of the recording server's clock, in the counter's zone.
    fn ceiling_period(of: &PeriodicLanes) -> Option<Document> {
        Some(now_label(of.unit, &of.zone))
    }

    const HOW_TO_READ: &'static str =
        "the value is `value.last`, of the period `value.current` (with --count N, the N \
         values `value.lane.m` apart up to it)";

    fn of(fields: &Document) -> Result<PeriodicLanes, String> {
        let state = <PeriodicKind as Kind>::read(fields)?;
        Ok(PeriodicLanes {
            unit: state.period,
            zone: state.zone,
        })
    }

    fn read_local(
        document: &Document,
        place: &Document,
        lane: Lane,
    ) -> Result<(Periodic, u64), String> {
        read_periodic(document, place, lane).map_err(|reason| {
            if reason.starts_with("period") || reason.starts_with("zone") {
                format!("lane.{reason}")
            } else {
                reason
            }
        })
    }

    fn guard_terms() -> Vec<Bson> {
        let string = |field: &str| doc! { "$eq": [{ "$type": format!("${field}") }, "string"] };
        let label = |field: &str| {
            Bson::Document(doc! { "$and": [
                string(field),
                { "$regexMatch": { "input": format!("${field}"), "regex": label_regex_of("$lane.period") } },
            ]})
        };
        vec![
            Bson::Document(
                doc! { "$in": ["$lane.period", PeriodUnit::ALL.map(PeriodUnit::as_str).to_vec()] },
            ),
            Bson::Document(doc! { "$and": [
                string("lane.zone"),
                { "$regexMatch": { "input": "$lane.zone", "regex": ZONE_PATTERN } },
            ]}),
            label("lane.base_period"),
            label("current"),
            Bson::Document(doc! { "$gte": ["$current", "$lane.base_period"] }),
            integer_in("seq", 0, MAX_VALUE),
            // A later period than the base's has a value.
            Bson::Document(doc! { "$or": [
                { "$eq": ["$current", "$lane.base_period"] },
                { "$gte": ["$seq", 1] },
            ]}),
            Bson::Document(doc! { "$eq": ["$last", periodic_last("$seq")] }),
        ]
    }

    fn local_value(local: &Periodic) -> u64 {
        local.seq
    }

    fn untouched(local: &Periodic, _lane: Lane) -> bool {
        local.seq == 0
    }

    fn describe(local: &Periodic, _lane: Lane, last: u64) -> String {
        format!(
            "local value {} in {}, last value {last}",
            local.seq,
            local
                .current
                .map_or_else(String::new, |period| period.to_string()),
        )
    }

    /// Its last value in its current period.
    fn high_water(local: &Periodic, last: u64) -> Mark {
        Mark {
            period: local.current.map(|period| period.to_string()),
            value: last,
        }
    }

    /// Each value with `client_micros`, in its current period.
    fn taken(
        local: &Periodic,
        lane: Lane,
        last: u64,
        count: u64,
        client_micros: u64,
    ) -> Vec<Stamp> {
        counting::values(lane, last, count)
            .map(|value| {
                let stamp = Stamp::new(client_micros, value);
                match local.current {
                    Some(period) => stamp.in_period(period),
                    None => stamp,
                }
            })
            .collect()
    }

    /// In its current period.
    fn room(_local: &Periodic, lane: Lane, last: u64) -> Option<u64> {
        Some(counting::room(lane, last, MAX_VALUE))
    }

    /// Its values up to local value seq + count exist in its base period,
    /// where it has the fewest: in a later one, a take that matches
    /// nothing is sent again with the full guard. A lane with a ceiling is
    /// taken with the full guard only (its period's ceiling is the
    /// server's to judge).
    fn short_filter(
        _local: &Periodic,
        lane: Lane,
        ceiling: Option<u64>,
        count: u64,
        _client_micros: u64,
        filter: &mut Document,
    ) -> Option<()> {
        if ceiling.is_some() {
            return None;
        }
        filter.insert(CEILING, doc! { "$exists": false });
        let most = lane.capacity().checked_sub(count)?;
        filter.insert(
            "seq",
            doc! { "$type": "long", "$gte": 0_i64, "$lte": most as i64 },
        );
        filter.insert("current", doc! { "$type": "string" });
        Some(())
    }

    /// A new period by this server's clock starts again at local value
    /// `count`; the same period goes on, if it has `count` values left.
    /// The period and zone are the command's own (a server's
    /// `$dateToString` may take its zone from a constant only), and the
    /// lane's must be them.
    fn lane_take(
        lane_id: &str,
        of: &PeriodicLanes,
        count: u64,
        _client_micros: Bson,
        guard: Document,
    ) -> (Document, Vec<Document>) {
        let count = count as i64;
        let PeriodicLanes { unit, zone } = of;
        let now = now_label(*unit, zone);
        let filter = doc! {
            "_id": lane_id,
            "$expr": { "$and": [
                guard,
                { "$eq": ["$lane.period", unit.as_str()] },
                { "$eq": ["$lane.zone", zone] },
                { "$or": [
                    { "$gt": [now.clone(), "$current"] },
                    { "$lte": ["$last", { "$subtract": [MAX_VALUE as i64, { "$multiply": [count, "$lane.m"] }] }] },
                ]},
                under_period_ceiling(count, now.clone()),
            ]},
        };
        let update = vec![
            doc! { "$replaceWith": { "$mergeObjects": ["$$ROOT", { "$let": {
                "vars": { "now": now },
                "in": { "$cond": [
                    { "$gt": ["$$now", "$current"] },
                    { "current": "$$now", "seq": { "$toLong": count } },
                    { "seq": { "$toLong": { "$add": ["$seq", count] } } },
                ]},
            }}]}},
            doc! { "$set": { "last": { "$toLong": periodic_last("$seq") } } },
        ];
        (filter, update)
    }

    /// In its base period, above the base.
    fn new_lane(
        of: &PeriodicLanes,
        lane: Lane,
        base_period: Option<&str>,
        place: &mut Document,
    ) -> Document {
        let base_period = base_period.unwrap_or_default();
        place.insert("period", of.unit.as_str());
        place.insert("zone", &of.zone);
        place.insert("base_period", base_period);
        doc! {
            "current": base_period,
            "seq": 0_i64,
            "last": lane.generation().base as i64,
        }
    }

    fn map_fields(of: &PeriodicLanes, base: &Mark) -> Document {
        doc! {
            "period": of.unit.as_str(),
            "zone": &of.zone,
            "current": base.period.clone().unwrap_or_default(),
            "seq": base.value as i64,
        }
    }

    /// Its last value in its current period.
    fn base_of_unstriped() -> Bson {
        Bson::Document(doc! { "$toLong": "$seq" })
    }

    /// Its current period (empty: none yet).
    fn base_period_of_unstriped() -> Option<Bson> {
        Some(Bson::String("$current".to_string()))
    }

    fn describe_generation(base: u64, base_period: Option<&str>) -> String {
        match base_period {
            None => ", values from 1 in each period (unique, not increasing)".to_string(),
            Some(_) => values_above(base, base_period),
        }
    }
}

/// Reads a periodic lane's local counter and the value its `seq` stands
/// for, or says what is wrong.
fn read_periodic(
    document: &Document,
    place: &Document,
    lane: Lane,
) -> Result<(Periodic, u64), String> {
    let unit: PeriodUnit = read_string(place, "period")?
        .parse()
        .map_err(|reason| format!("period: {reason}"))?;
    let zone = read_string(place, "zone")?;
    if !zone_is_well_formed(zone) {
        return Err(format!("zone {zone:?} is not a time zone name"));
    }
    let label = |document: &Document, key: &str| -> Result<Option<Period>, String> {
        let text = read_string(document, key)?;
        if text.is_empty() {
            return Ok(None);
        }
        read_label(unit, text).map(Some).ok_or_else(|| {
            format!(
                "{key} {text:?} is not a {unit} label ({})",
                unit.label_format()
            )
        })
    };
    let base_period = label(place, "base_period").map_err(|reason| format!("lane.{reason}"))?;
    let current = label(document, "current")?;
    if current < base_period {
        return Err(format!(
            "current is {}, before lane.base_period {}",
            describe_label(current),
            describe_label(base_period)
        ));
    }
    // Above the base in its period, above 0 in every later one.
    let in_period = if current == base_period {
        lane
    } else {
        Generation::new(0, lane.generation().modulus)
            .and_then(|generation| generation.lane(lane.residue()))
            .map_err(|error| format!("lane: {error}"))?
    };
    let least = u64::from(current != base_period);
    let seq = read_integer(document, "seq", least, in_period.capacity())?;
    Ok((
        Periodic {
            seq,
            current,
            base_period,
        },
        in_period.high_water(seq),
    ))
}

/// A period's label as an error says it (`""`: none).
fn describe_label(period: Option<Period>) -> String {
    period.map_or_else(
        || "\"\"".to_string(),
        |period| format!("{:?}", period.to_string()),
    )
}

/// The value a periodic lane's local value `seq` (an expression) stands
/// for in its `current` period: `b` or 0 (the base of `current`) for none,
/// else that base plus `(seq - 1) * m + r + 1`.
fn periodic_last(seq: &str) -> Document {
    let base = doc! { "$cond": [{ "$eq": ["$current", "$lane.base_period"] }, "$lane.b", 0_i64] };
    doc! { "$cond": [
        { "$eq": [seq, 0] },
        base.clone(),
        { "$add": [base, { "$multiply": [{ "$subtract": [seq, 1] }, "$lane.m"] }, "$lane.r", 1] },
    ]}
}
