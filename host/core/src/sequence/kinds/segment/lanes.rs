//! A segment counter's lanes: counting lanes (`striping/counting.rs`)
//! whose takes are whole segments of at least the counter's `step`
//! values, handed out from the taking process's memory, with a ceiling
//! when the counter spans deployments.

use std::time::Duration;

use mongodb::bson::{doc, Bson, Document};

use super::step::next_step;
use super::{SegmentKind, SegmentOptions, MAX_STEP};
use crate::parts::Stamp;
use crate::sequence::counter::fields::read_integer;
use crate::sequence::kind_trait::MAX_VALUE;
use crate::sequence::lane_kind::{RunSizing, Stripable, Takes};
use crate::sequence::striping::counting;
use crate::sequence::striping::counting::CEILING_CHUNK;
use crate::sequence::striping::{Deployments, Lane, Mark};

/// A segment lane's local counter: its last local value (0: none yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// That value.
    pub seq: u64,
}

impl Stripable for SegmentKind {
    /// The counter's `step`.
    type Of = u64;
    type Local = Segment;

    const CEILINGS: bool = true;

    fn of(fields: &Document) -> Result<u64, String> {
        read_integer(fields, "step", 1, MAX_STEP)
    }

    fn read_local(
        document: &Document,
        _place: &Document,
        lane: Lane,
    ) -> Result<(Segment, u64), String> {
        let (seq, last) = counting::read(document, lane)?;
        Ok((Segment { seq }, last))
    }

    fn guard_terms() -> Vec<Bson> {
        counting::guard_terms()
    }

    fn local_value(local: &Segment) -> u64 {
        local.seq
    }

    fn untouched(seq: &Segment, _lane: Lane) -> bool {
        seq.seq == 0
    }

    fn describe(seq: &Segment, _lane: Lane, last: u64) -> String {
        counting::describe(seq.seq, last)
    }

    fn taken(_seq: &Segment, lane: Lane, last: u64, count: u64, client_micros: u64) -> Vec<Stamp> {
        counting::taken(lane, last, count, client_micros)
    }

    fn room(_seq: &Segment, lane: Lane, last: u64) -> Option<u64> {
        Some(counting::room(lane, last, MAX_VALUE))
    }

    fn short_filter(
        _seq: &Segment,
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
        _step: &u64,
        count: u64,
        _client_micros: Bson,
        guard: Document,
    ) -> (Document, Vec<Document>) {
        counting::take_command(lane_id, count, guard, MAX_VALUE)
    }

    fn new_lane(
        _step: &u64,
        lane: Lane,
        _base_period: Option<&str>,
        _place: &mut Document,
    ) -> Document {
        counting::new_lane(lane)
    }

    fn map_fields(step: &u64, base: &Mark) -> Document {
        doc! { "max": (base.value + 1) as i64, "step": *step as i64 }
    }

    /// Its last value taken: its `max` is the first one no process took.
    fn base_of_unstriped() -> Bson {
        Bson::Document(doc! { "$toLong": { "$subtract": ["$max", 1_i64] } })
    }

    /// 64 segments of `max(count, step)`, if more than the fewest.
    fn ceiling_chunk(step: &u64, count: u64, modulus: u64) -> u64 {
        count
            .max(*step)
            .saturating_mul(64)
            .max(CEILING_CHUNK)
            .saturating_mul(modulus)
    }

    /// In one deployment, runs sized and prefetched as segments are. Across
    /// deployments, runs of `step` taken when the last is used up, as
    /// before issue 51: there a run's take is bounded by the take's
    /// deadline (a taker waiting on a fetch in the background would wait
    /// past it) and the lanes' ceilings, which bound what a deployment hands
    /// out while the others are down, are sized by the step.
    fn takes(step: &u64, options: &SegmentOptions, deployments: Option<&Deployments>) -> Takes {
        let options = match deployments {
            Some(_) => options.clone().prefetch_at(1.0).max_step(*step),
            None => options.clone(),
        };
        Takes::Buffered(Box::new(LaneRuns {
            floor: *step,
            options,
        }))
    }
}

/// The runs a process takes from a segment counter's lanes: sized by the
/// adaptive step as its segments are (`step.rs`), between the counter's
/// `step` and the process's `max_step`, prefetched at the same share.
#[derive(Debug)]
struct LaneRuns {
    /// The counter's `step`.
    floor: u64,
    options: SegmentOptions,
}

impl RunSizing for LaneRuns {
    fn at_least(&self) -> u64 {
        self.floor
    }

    fn next(&self, size: u64, lifetime: Duration) -> u64 {
        next_step(
            size,
            lifetime,
            self.options.target_lifetime,
            self.floor,
            self.options.max_step.min(MAX_STEP),
        )
    }

    fn prefetch_at(&self) -> f64 {
        self.options.prefetch_at
    }

    fn wants(&self) -> Option<u64> {
        self.options.wants
    }
}
