//! A cyclic counter's lanes: each a cyclic counter over its residue class
//! of its counter's cycle `0..=top`:
//!
//! ```text
//! { _id: "serial#2", kind: "lane",
//!   lane: { kind: "cyclic", generation: 1, b: 1764000000000000, m: 4, r: 2, top: 99 },
//!   val: 3, maxval: 24, ts: 1764000000000123, last: 14, sealed: null, prefixes: [] }
//! ```
//!
//! Its local values `val` cycle `0..=maxval`, `maxval` being
//! `floor((top - r) / m)`, and stand for `last = r + val * m`: the lanes of
//! a generation hand out disjoint values, together the whole cycle. Its
//! `ts` moves as a cyclic counter's does, from `b`, the highest timestamp
//! the lanes it follows issued (a new lane's `val` is its `maxval`, so its
//! first take wraps and moves `ts` above `b`): each lane's (timestamp,
//! value) pairs strictly increase, and every pair of a generation is above
//! every pair of the one before.

use mongodb::bson::{doc, Bson, Document};

use super::{closed_form, one_value, unfold_block, CyclicKind, MAX_MAXVAL};
use crate::parts::Stamp;
use crate::sequence::counter::fields::{integer_in, read_integer};
use crate::sequence::lane_kind::{CeilingReach, Stripable};
use crate::sequence::striping::counting::CEILING;
use crate::sequence::striping::{Lane, Mark, StripingError, MAX_LANES};

/// A cyclic lane's local counter (`Cyclic { val, maxval, ts, top }`, as
/// `tests/striped_twin.rs` holds the stored reader's to it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cyclic {
    /// Its last local value, `0..=maxval`.
    pub val: u64,
    /// Its cycle's last local value, `floor((top - r) / m)`.
    pub maxval: u64,
    /// The timestamp issued with `val` (`b`, the lane's floor, until its
    /// first take).
    pub ts: u64,
    /// The counter's cycle's last value.
    pub top: u64,
}

/// The last local value of a cyclic lane `residue` of `modulus` over the
/// cycle `0..=top`, if it has one.
pub(crate) fn cyclic_maxval(top: u64, modulus: u64, residue: u64) -> Option<u64> {
    top.checked_sub(residue).map(|room| room / modulus)
}

/// How far above its timestamps a raise of a cyclic lane's ceiling puts
/// it: five minutes. While no other deployment answers, a lane of a
/// counter across deployments hands out for 2.5 to 5 minutes after its
/// last raise, then nothing; a forget starts its timestamps up to that
/// far ahead of the clock of the lost deployment's last raise
/// (`docs/design/striped-counters.md`).
pub const CEILING_CHUNK_MICROS: u64 = 300_000_000;

/// The take's term that keeps a cyclic lane's timestamps at or below its
/// ceiling (true when it has none): a take of `count` at `client_micros`
/// (an expression) moves them to `max(client_micros, ts) + count + 1` at
/// most (see [`CyclicKind::ceiling_reach`]).
pub(crate) fn under_time_ceiling(count: u64, client_micros: Bson) -> Document {
    doc! { "$lte": [
        { "$add": [{ "$max": [client_micros, "$ts"] }, count.saturating_add(1) as i64] },
        { "$ifNull": [format!("${CEILING}"), i64::MAX] },
    ]}
}

impl Stripable for CyclicKind {
    /// The counter's `maxval`, the top of its cycle.
    type Of = u64;
    type Local = Cyclic;

    /// Time ceilings: a lane's timestamps stay at or below its ceiling.
    const CEILINGS: bool = true;

    const HOW_TO_READ: &'static str =
        "the value is `value.last`, issued with the timestamp `value.ts` (with --count N, \
         the block unfolds back from local value `value.val` as a cyclic counter's does, \
         each local value k standing for `value.lane.r` + k * `value.lane.m`)";

    fn of(fields: &Document) -> Result<u64, String> {
        read_integer(fields, "maxval", 1, MAX_MAXVAL)
    }

    /// Each lane must have a value of its own: the cycle is `top + 1`
    /// values.
    fn check_lanes(top: &u64, lanes: u64) -> Result<(), StripingError> {
        let most = MAX_LANES.min(top.saturating_add(1));
        if lanes > most {
            return Err(StripingError::CycleTooShort {
                maxval: *top,
                most,
                lanes,
            });
        }
        Ok(())
    }

    fn read_local(
        document: &Document,
        place: &Document,
        lane: Lane,
    ) -> Result<(Cyclic, u64), String> {
        let (modulus, residue) = (lane.generation().modulus, lane.residue());
        let top =
            read_integer(place, "top", 1, MAX_MAXVAL).map_err(|reason| format!("lane.{reason}"))?;
        let Some(cycle) = cyclic_maxval(top, modulus, residue) else {
            return Err(format!(
                "lane.r is {residue}, above lane.top {top}: the lane has no value"
            ));
        };
        let maxval = read_integer(document, "maxval", 0, MAX_MAXVAL)?;
        if maxval != cycle {
            return Err(format!(
                "maxval is {maxval}, not {cycle}, the last local value of lane {residue} \
                 of {modulus} over 0..={top}"
            ));
        }
        let val = read_integer(document, "val", 0, maxval)?;
        let ts = read_integer(document, "ts", 0, i64::MAX as u64)?;
        Ok((
            Cyclic {
                val,
                maxval,
                ts,
                top,
            },
            residue + val * modulus,
        ))
    }

    fn guard_terms() -> Vec<Bson> {
        vec![
            integer_in("lane.top", 1, MAX_MAXVAL),
            integer_in("maxval", 0, MAX_MAXVAL),
            // maxval = floor((top - r) / m), in exact integer terms:
            // maxval * m + r <= top < (maxval + 1) * m + r.
            Bson::Document(doc! { "$lte": [
                { "$add": [{ "$multiply": ["$maxval", "$lane.m"] }, "$lane.r"] },
                "$lane.top",
            ]}),
            Bson::Document(doc! { "$lt": [
                "$lane.top",
                { "$add": [{ "$multiply": [{ "$add": ["$maxval", 1] }, "$lane.m"] }, "$lane.r"] },
            ]}),
            integer_in("val", 0, MAX_MAXVAL),
            Bson::Document(doc! { "$lte": ["$val", "$maxval"] }),
            integer_in("ts", 0, i64::MAX as u64),
            Bson::Document(doc! { "$eq": [
                "$last",
                { "$add": ["$lane.r", { "$multiply": ["$val", "$lane.m"] }] },
            ]}),
        ]
    }

    fn local_value(local: &Cyclic) -> u64 {
        local.val
    }

    fn untouched(local: &Cyclic, lane: Lane) -> bool {
        local.ts == lane.generation().base
    }

    fn describe(local: &Cyclic, _lane: Lane, last: u64) -> String {
        let Cyclic {
            val, maxval, ts, ..
        } = *local;
        format!(
            "local value {val} of 0..={maxval}, last value {last} at {}",
            crate::parts::rfc3339_micros(ts)
        )
    }

    /// Its last timestamp (its floor if none).
    fn high_water(local: &Cyclic, _last: u64) -> Mark {
        Mark::of(local.ts)
    }

    /// Each (timestamp, value) pair.
    fn taken(
        local: &Cyclic,
        lane: Lane,
        _last: u64,
        count: u64,
        _client_micros: u64,
    ) -> Vec<Stamp> {
        let modulus = lane.generation().modulus;
        unfold_block(local.ts, local.val, local.maxval, count as usize)
            .into_iter()
            .map(|taken| {
                Stamp::new(
                    taken.timestamp_micros,
                    lane.residue() + taken.sequence * modulus,
                )
            })
            .collect()
    }

    fn fixed_fields(document: &Document, _local: &Cyclic) -> Option<Document> {
        Some(doc! { "maxval": document.get_i64("maxval").ok()? })
    }

    /// The timestamps at or below its ceiling, if it has one: none when
    /// the take's own clock is past it already.
    fn short_filter(
        local: &Cyclic,
        _lane: Lane,
        ceiling: Option<u64>,
        count: u64,
        client_micros: u64,
        filter: &mut Document,
    ) -> Option<()> {
        filter.insert(
            "val",
            doc! { "$type": "long", "$gte": 0_i64, "$lte": local.maxval as i64 },
        );
        match ceiling {
            Some(ceiling) => {
                let highest = ceiling.checked_sub(count.saturating_add(1))?;
                if client_micros > highest {
                    return None;
                }
                filter.insert(CEILING, ceiling as i64);
                filter.insert(
                    "ts",
                    doc! { "$type": "long", "$gte": 0_i64, "$lte": highest as i64 },
                );
            }
            None => {
                filter.insert(CEILING, doc! { "$exists": false });
                filter.insert("ts", doc! { "$type": "long", "$gte": 0_i64 });
            }
        }
        Some(())
    }

    /// Five minutes of timestamps, or the take's reach if more.
    fn ceiling_chunk(_top: &u64, count: u64, _modulus: u64) -> u64 {
        CEILING_CHUNK_MICROS.max(count.saturating_add(1))
    }

    /// A chunk above the later of its base and the clock of the change
    /// that writes it: a lane that has not issued yet has a chunk of time
    /// to issue in before it needs another deployment.
    fn first_ceiling(top: &u64, base: u64, modulus: u64, clock_micros: u64) -> u64 {
        base.max(clock_micros)
            .saturating_add(Self::ceiling_chunk(top, 1, modulus))
            .min(i64::MAX as u64)
    }

    /// Its timestamps: from the later of its last one and the take's
    /// clock, a take of `count` moves it on by `count + 1` at most (a wrap
    /// moves it on by one, and a block wraps once per cycle at most, the
    /// first wrap perhaps at once).
    fn ceiling_reach(
        local: &Cyclic,
        _lane: Lane,
        _last: u64,
        count: u64,
        client_micros: u64,
    ) -> CeilingReach {
        let now = local.ts.max(client_micros);
        CeilingReach {
            now,
            after: now.saturating_add(count.saturating_add(1)),
        }
    }

    fn lane_take(
        lane_id: &str,
        _top: &u64,
        count: u64,
        client_micros: Bson,
        guard: Document,
    ) -> (Document, Vec<Document>) {
        let ceiling = under_time_ceiling(count, client_micros.clone());
        let advanced = if count == 1 {
            one_value(client_micros)
        } else {
            closed_form(count as i64, client_micros)
        };
        let filter = doc! { "_id": lane_id, "$expr": { "$and": [
            guard,
            ceiling,
        ]}};
        let update = vec![
            doc! { "$replaceWith": { "$mergeObjects": ["$$ROOT", advanced] } },
            doc! { "$set": { "last": { "$toLong": {
                "$add": ["$lane.r", { "$multiply": ["$val", "$lane.m"] }],
            }}}},
        ];
        (filter, update)
    }

    /// At the end of its cycle, at its floor: its first take wraps and
    /// moves its timestamp above every one before.
    fn new_lane(
        top: &u64,
        lane: Lane,
        _base_period: Option<&str>,
        place: &mut Document,
    ) -> Document {
        let top = *top;
        let modulus = lane.generation().modulus;
        place.insert("top", top as i64);
        let maxval = cyclic_maxval(top, modulus, lane.residue()).unwrap_or(0);
        doc! {
            "val": maxval as i64,
            "maxval": maxval as i64,
            "ts": lane.generation().base as i64,
            "last": (lane.residue() + maxval * modulus) as i64,
        }
    }

    fn map_fields(top: &u64, base: &Mark) -> Document {
        doc! { "val": 0_i64, "maxval": *top as i64, "ts": base.value as i64 }
    }

    /// Its last timestamp.
    fn base_of_unstriped() -> Bson {
        Bson::Document(doc! { "$toLong": { "$ifNull": ["$ts", 0_i64] } })
    }

    fn describe_generation(base: u64, _base_period: Option<&str>) -> String {
        if base == 0 {
            return " (pairs unique, not increasing)".to_string();
        }
        format!(
            ", timestamps after {} (pairs unique, not increasing)",
            crate::parts::rfc3339_micros(base)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sequence::striping::Generation;

    fn lane() -> Lane {
        Generation::new(1_000, 4).unwrap().lane(2).unwrap()
    }

    fn local(ts: u64) -> Cyclic {
        Cyclic {
            val: 3,
            maxval: 24,
            ts,
            top: 99,
        }
    }

    #[test]
    fn a_take_reaches_one_past_its_count_above_the_later_of_its_clock_and_its_timestamp() {
        let reach = |ts, client| CyclicKind::ceiling_reach(&local(ts), lane(), 14, 5, client);
        assert_eq!(
            reach(2_000, 1_500),
            CeilingReach {
                now: 2_000,
                after: 2_006
            }
        );
        assert_eq!(
            reach(2_000, 9_000),
            CeilingReach {
                now: 9_000,
                after: 9_006
            }
        );
    }

    #[test]
    fn the_short_filter_of_a_lane_with_a_ceiling_bounds_its_timestamp_or_gives_way() {
        let short = |ceiling, client| {
            let mut filter = Document::new();
            CyclicKind::short_filter(&local(2_000), lane(), ceiling, 5, client, &mut filter)
                .map(|()| filter)
        };
        let bounded = short(Some(3_000), 2_500).unwrap();
        assert_eq!(bounded.get_i64(CEILING).unwrap(), 3_000);
        assert_eq!(
            bounded.get_document("ts").unwrap().get_i64("$lte").unwrap(),
            2_994
        );
        // The take's own clock past what the ceiling allows: the full
        // guard decides (and refuses).
        assert!(short(Some(3_000), 2_995).is_none());
        assert!(short(Some(5), 0).is_none());
        // No ceiling: only lanes without one.
        let unbounded = short(None, 2_500).unwrap();
        assert_eq!(
            unbounded.get_document(CEILING).unwrap(),
            &doc! { "$exists": false }
        );
    }

    #[test]
    fn a_first_ceiling_is_a_chunk_above_the_later_of_the_base_and_the_clock() {
        assert_eq!(
            CyclicKind::first_ceiling(&99, 1_000, 4, 50_000),
            50_000 + CEILING_CHUNK_MICROS
        );
        assert_eq!(
            CyclicKind::first_ceiling(&99, 90_000, 4, 50_000),
            90_000 + CEILING_CHUNK_MICROS
        );
    }
}
