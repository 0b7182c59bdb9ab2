//! The registry: the one place that lists the kinds of counter. Adding a
//! kind is its folder under `kinds/` and one line below (a line may carry a
//! `#[cfg]`, as the test-only kind's does); every type that
//! dispatches on a kind (`CounterKind`, `KindState`, `CounterState`,
//! `Sequence`, `OpenOptions`) is made from this list by `dispatch.rs`.

// What the registry's types are made of (see `dispatch.rs`).
use std::fmt;
use std::ops::Range;
use std::str::FromStr;

use mongodb::bson::Document;
use mongodb::{Collection, Database};
use serde::Serialize;

use crate::mongo::collections::COUNTERS as COUNTERS_COLLECTION;
use crate::parts::Stamps;
use crate::sequence::counter::document::{
    corrupt, find_with, new_document, CounterDocument, Registered,
};
use crate::sequence::counter::fields::well_formed;
use crate::sequence::error::SequenceError;
use crate::sequence::headroom::Headroom;
use crate::sequence::identity::Incarnation;
use crate::sequence::kind_trait::{
    check_block, CommandOptions, Fact, GiveBack, Handle, Held, Kind, ValueShape,
};
use crate::sequence::name::CounterName;
use crate::sequence::settings::{Setting, Settings};
use crate::sequence::striping::{
    read_from_any, Deployments, StripeMap, StripedCounter, StripingError, LANE_KIND, STRIPED_KIND,
};
use crate::sequence::words::list_words;

use super::dispatch::registry;
use super::kinds;

registry! {
    cyclic: Cyclic => kinds::cyclic::CyclicKind,
    autoinc: Autoinc => kinds::autoinc::AutoincKind,
    segment: Segment => kinds::segment::SegmentKind,
    snowflake: Snowflake => kinds::snowflake::SnowflakeKind,
    periodic: Periodic => kinds::periodic::PeriodicKind,
    #[cfg(feature = "test-kind")]
    tally: Tally => kinds::tally::TallyKind,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sequence::counter::fields::DEFAULT_KIND;
    use crate::sequence::CounterName;
    use mongodb::bson::doc;

    fn name() -> CounterName {
        CounterName::new("c").unwrap()
    }

    #[test]
    fn reads_every_integer_representation() {
        let state = CounterState::from_document(
            &name(),
            &doc! { "_id": "c", "val": 5_i32, "maxval": 99_i64, "ts": 7.0_f64, "prefix": "P" },
        )
        .unwrap();
        assert_eq!(
            (state.cyclic().copied(), state.prefix.as_deref()),
            (
                Some(crate::sequence::CyclicState {
                    val: 5,
                    maxval: 99,
                    ts: 7
                }),
                Some("P")
            )
        );
        let fresh = CounterState::from_document(&name(), &doc! { "val": 0, "maxval": 1 }).unwrap();
        assert_eq!((fresh.cyclic().unwrap().ts, fresh.prefix), (0, None));
    }

    #[test]
    fn reads_each_kind() {
        let autoinc =
            CounterState::from_document(&name(), &doc! { "kind": "autoinc", "seq": 41_i64 })
                .unwrap();
        assert_eq!(
            autoinc.kind,
            KindState::Autoinc(crate::sequence::AutoincState { seq: 41 })
        );
        let segment = CounterState::from_document(
            &name(),
            &doc! { "kind": "segment", "max": 1, "step": 1000 },
        )
        .unwrap();
        assert_eq!(
            segment.kind,
            KindState::Segment(crate::sequence::SegmentState { max: 1, step: 1000 })
        );
        assert!(
            segment.shape().largest_value == crate::sequence::MAX_VALUE
                && segment.shape().repeats == crate::sequence::Repeats::Never
        );
        let json = serde_json::to_value(&segment).unwrap();
        assert_eq!(
            json,
            // An older document: it owns the empty prefix, undeclared.
            serde_json::json!({"name": "c", "kind": "segment", "max": 1, "step": 1000, "prefix": null, "prefixes": [""], "prefixes_declared": false})
        );
    }

    #[test]
    fn names_an_unknown_kind() {
        let error = CounterState::from_document(&name(), &doc! { "kind": "hilo" })
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "counter 'c' has kind \"hilo\", which this idmint does not know \
             (it knows cyclic, autoinc, segment, snowflake and periodic); it was left unchanged"
        );
    }

    #[test]
    fn names_what_is_corrupt() {
        for (doc, needle) in [
            (doc! { "maxval": 9 }, "val is missing"),
            (
                doc! { "val": "7", "maxval": 9 },
                "val is the string \"7\", not a number",
            ),
            (
                doc! { "val": 1.5, "maxval": 9 },
                "val is 1.5, not an integer",
            ),
            (
                doc! { "val": -1, "maxval": 9 },
                "val is -1, it must not be negative",
            ),
            (
                doc! { "val": 0, "maxval": 0 },
                "maxval is 0, it must be at least 1",
            ),
            (
                doc! { "val": 0, "maxval": 9, "ts": true },
                "ts is the boolean true",
            ),
            (
                doc! { "val": 0, "maxval": 9, "prefix": 3 },
                "prefix is the number 3, not a string",
            ),
            (doc! { "kind": 3 }, "kind is the number 3, not a string"),
            (doc! { "kind": "autoinc" }, "seq is missing"),
            (
                doc! { "kind": "autoinc", "seq": 9_007_199_254_740_992_i64 },
                "seq is 9007199254740992, it must be at most 9007199254740991",
            ),
            (
                doc! { "kind": "segment", "max": -5, "step": 10 },
                "max is -5, it must not be negative",
            ),
            (doc! { "kind": "segment", "max": 1 }, "step is missing"),
            (
                doc! { "kind": "segment", "max": 1, "step": 0 },
                "step is 0, it must be at least 1",
            ),
        ] {
            let err = CounterState::from_document(&name(), &doc)
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle), "{doc}: {err}");
            assert!(err.contains("counter 'c' is corrupt"), "{err}");
        }
    }

    #[test]
    fn each_kind_is_named_once_and_the_default_is_cyclic() {
        for kind in CounterKind::ALL {
            assert_eq!(kind.as_str().parse::<CounterKind>(), Ok(*kind));
            // The serde name (the variant lowercased) is the kind's name.
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::json!(kind.as_str())
            );
        }
        assert_eq!(CounterKind::ALL[0].as_str(), DEFAULT_KIND);
        let error = "hilo".parse::<CounterKind>().unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown counter kind \"hilo\": idmint knows cyclic, autoinc, segment, snowflake and periodic"
        );
    }
}
