//! A tally counter's lanes: it is stripable by this file alone (its `mod`
//! line besides), the proof that a kind's lanes are its own folder's.
//!
//! A tally lane is a counting lane (`striping/counting.rs`) over half the
//! tally's values: local value `k` stands for the counting value
//! `v = b + (k - 1) * m + r + 1`, handed out as the even number `2 * v`,
//! so the lanes of a generation hand out disjoint even numbers above
//! `2 * b`, `b` being half the last `n` the counter (or the generation
//! before) handed out.

use mongodb::bson::{doc, Bson, Document};

use super::{TallyKind, LARGEST};
use crate::parts::Stamp;
use crate::sequence::lane_kind::Stripable;
use crate::sequence::striping::counting;
use crate::sequence::striping::{Lane, Mark};

/// A tally lane's local counter: its last local value (0: none yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// That value.
    pub seq: u64,
}

impl Stripable for TallyKind {
    type Of = ();
    type Local = Tally;

    const HOW_TO_READ: &'static str = "the value is 2 * `value.last` (with --count N, the N \
         values 2 * `value.lane.m` apart up to it)";

    fn of(_fields: &Document) -> Result<(), String> {
        Ok(())
    }

    fn read_local(
        document: &Document,
        _place: &Document,
        lane: Lane,
    ) -> Result<(Tally, u64), String> {
        let (seq, last) = counting::read(document, lane)?;
        Ok((Tally { seq }, last))
    }

    fn guard_terms() -> Vec<Bson> {
        counting::guard_terms()
    }

    fn local_value(local: &Tally) -> u64 {
        local.seq
    }

    fn untouched(seq: &Tally, _lane: Lane) -> bool {
        seq.seq == 0
    }

    fn describe(seq: &Tally, _lane: Lane, last: u64) -> String {
        format!("local value {}, last value {}", seq.seq, 2 * last)
    }

    fn taken(_seq: &Tally, lane: Lane, last: u64, count: u64, client_micros: u64) -> Vec<Stamp> {
        counting::values(lane, last, count)
            .map(|value| Stamp::new(client_micros, 2 * value))
            .collect()
    }

    fn room(_seq: &Tally, lane: Lane, last: u64) -> Option<u64> {
        Some(counting::room(lane, last, LARGEST / 2))
    }

    fn short_filter(
        _seq: &Tally,
        lane: Lane,
        ceiling: Option<u64>,
        count: u64,
        _client_micros: u64,
        filter: &mut Document,
    ) -> Option<()> {
        counting::short_filter(lane, ceiling, count, filter)
    }

    fn lane_take(
        lane_id: &str,
        _of: &(),
        count: u64,
        _client_micros: Bson,
        guard: Document,
    ) -> (Document, Vec<Document>) {
        counting::take_command(lane_id, count, guard, LARGEST / 2)
    }

    fn new_lane(
        _of: &(),
        lane: Lane,
        _base_period: Option<&str>,
        _place: &mut Document,
    ) -> Document {
        counting::new_lane(lane)
    }

    fn map_fields(_of: &(), base: &Mark) -> Document {
        doc! { "n": (2 * base.value) as i64 }
    }

    /// Half its last value.
    fn base_of_unstriped() -> Bson {
        Bson::Document(doc! { "$toLong": { "$divide": ["$n", 2] } })
    }
}
