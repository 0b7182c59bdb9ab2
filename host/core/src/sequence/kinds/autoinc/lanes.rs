//! An autoinc counter's lanes: counting lanes (`striping/counting.rs`),
//! each take from one lane, with a ceiling when the counter spans
//! deployments.

use mongodb::bson::{doc, Bson, Document};

use super::AutoincKind;
use crate::parts::Stamp;
use crate::sequence::kind_trait::MAX_VALUE;
use crate::sequence::lane_kind::Stripable;
use crate::sequence::striping::counting;
use crate::sequence::striping::{Lane, Mark};

/// An autoinc lane's local counter: its last local value (0: none yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Autoinc {
    /// That value.
    pub seq: u64,
}

impl Stripable for AutoincKind {
    type Of = ();
    type Local = Autoinc;

    const CEILINGS: bool = true;

    fn of(_fields: &Document) -> Result<(), String> {
        Ok(())
    }

    fn read_local(
        document: &Document,
        _place: &Document,
        lane: Lane,
    ) -> Result<(Autoinc, u64), String> {
        let (seq, last) = counting::read(document, lane)?;
        Ok((Autoinc { seq }, last))
    }

    fn guard_terms() -> Vec<Bson> {
        counting::guard_terms()
    }

    fn local_value(local: &Autoinc) -> u64 {
        local.seq
    }

    fn untouched(seq: &Autoinc, _lane: Lane) -> bool {
        seq.seq == 0
    }

    fn describe(seq: &Autoinc, _lane: Lane, last: u64) -> String {
        counting::describe(seq.seq, last)
    }

    fn taken(_seq: &Autoinc, lane: Lane, last: u64, count: u64, client_micros: u64) -> Vec<Stamp> {
        counting::taken(lane, last, count, client_micros)
    }

    fn room(_seq: &Autoinc, lane: Lane, last: u64) -> Option<u64> {
        Some(counting::room(lane, last, MAX_VALUE))
    }

    fn short_filter(
        _seq: &Autoinc,
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
        counting::take_command(lane_id, count, guard, MAX_VALUE)
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
        doc! { "seq": base.value as i64 }
    }

    /// Its last value.
    fn base_of_unstriped() -> Bson {
        Bson::Document(doc! { "$toLong": "$seq" })
    }
}
