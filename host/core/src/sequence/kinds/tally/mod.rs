//! The tally counter, a kind compiled only with the `test-kind` feature: it
//! is not for users. It exists to prove the kind seam (issue 32): a kind is
//! this folder and one line of the registry, and the CLI, the service, the
//! policies' fit check and the benchmarks take its values without naming it.
//! `tests/test_kind.rs` drives it through a CLI built with the feature.
//!
//! `{_id, kind: "tally", n}` hands out even numbers, 2, 4, 6, ...: each take
//! of `count` values adds `2 * count` to `n` in one `findOneAndUpdate`,
//! under the kind's guard, and returns the document after it. Its values are
//! not runs of consecutive numbers, so it serves no ranges.

mod lanes;

use mongodb::bson::{doc, Bson, Document};
use mongodb::options::WriteConcern;
use mongodb::{Collection, Database};
use serde::Serialize;

use crate::mongo::collections::COUNTERS as COUNTERS_COLLECTION;
use crate::mongo::durable_write_concern;
use crate::parts::Stamp;
use crate::sequence::advance::{advance, Unmatched};
use crate::sequence::counter::document::read;
use crate::sequence::counter::fields::{database_of, integer_in, read_integer, well_formed};
use crate::sequence::error::SequenceError;
use crate::sequence::headroom::Headroom;
use crate::sequence::kind_trait::{
    CommandOptions, Fact, Handle, Kind, Repeats, ValueShape, MAX_VALUE,
};
use crate::sequence::name::CounterName;
use crate::sequence::settings::{Setting, Settings};

/// The largest `n`: the last even number below [`MAX_VALUE`].
const LARGEST: u64 = MAX_VALUE - 1;

/// The tally kind (see the module docs).
#[derive(Debug)]
pub struct TallyKind;

/// A tally counter's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TallyState {
    /// The last value handed out (0: none yet).
    pub n: u64,
}

impl Kind for TallyKind {
    const NAME: &'static str = "tally";
    const SUMMARY: &'static str = "even numbers 2, 4, 6, ... (a kind for tests only)";
    const SETTINGS: &'static [Setting] = &[];
    const RUNS: bool = false;
    const FIT_ADVICE: &'static str = "use a policy that holds 2^53 values, such as the built-in \
         decimal policy (--policy builtin:decimal)";
    type State = TallyState;
    type Options = ();
    type Handle = TallyCounter;

    fn read(document: &Document) -> Result<TallyState, String> {
        let n = read_integer(document, "n", 0, LARGEST)?;
        if n % 2 == 1 {
            return Err(format!("n is {n}, it must be even"));
        }
        Ok(TallyState { n })
    }

    fn guard() -> Vec<Bson> {
        vec![
            integer_in("n", 0, LARGEST),
            doc! { "$eq": [{ "$mod": ["$n", 2] }, 0] }.into(),
        ]
    }

    fn fields(_settings: &Settings, _now_ms: u64) -> Result<Document, SequenceError> {
        Ok(doc! { "n": 0_i64 })
    }

    fn shape(_state: &TallyState) -> ValueShape {
        ValueShape {
            largest_value: LARGEST,
            repeats: Repeats::Never,
            server_timestamp: false,
        }
    }

    fn facts(state: &TallyState, _now_ms: u64) -> Vec<Fact> {
        vec![Fact::text(
            "n",
            format!("{} (the next value is {})", state.n, state.n + 2),
        )]
    }

    fn headroom(state: &TallyState, _now_ms: u64) -> Option<Headroom> {
        Some(Headroom::of_values(state.n / 2, LARGEST / 2))
    }

    fn take_command(
        name: &CounterName,
        count: u64,
        _options: &CommandOptions,
    ) -> Result<(Document, Vec<Document>), SequenceError> {
        Ok((take_filter(name, count), take_pipeline(count)))
    }

    async fn open(
        database: &Database,
        name: CounterName,
        _state: &TallyState,
        _options: &(),
    ) -> Result<TallyCounter, SequenceError> {
        Ok(TallyCounter {
            collection: database.collection(COUNTERS_COLLECTION),
            name,
            write_concern: durable_write_concern(),
        })
    }
}

/// The filter of a take of `count` values: the counter, if it has them left.
fn take_filter(name: &CounterName, count: u64) -> Document {
    doc! { "_id": name.as_str(), "n": { "$lte": LARGEST.saturating_sub(2 * count) as i64 } }
}

/// The update that takes `count` values: `n` grows by `2 * count` if the
/// counter is a well-formed tally counter, else it is left as it was.
fn take_pipeline(count: u64) -> Vec<Document> {
    vec![doc! { "$replaceWith": { "$cond": [
        well_formed::<TallyKind>(),
        { "$mergeObjects": ["$$ROOT", { "n": { "$toLong": { "$add": ["$n", 2 * count as i64] } } }] },
        "$$ROOT",
    ]}}]
}

/// An opened tally counter in `<db>.counters`.
#[derive(Debug, Clone)]
pub struct TallyCounter {
    collection: Collection<Document>,
    name: CounterName,
    write_concern: WriteConcern,
}

impl Handle for TallyCounter {
    type Of = TallyKind;

    fn name(&self) -> &CounterName {
        &self.name
    }

    fn database(&self) -> Database {
        database_of(&self.collection)
    }

    async fn take(&self, count: usize, client_micros: u64) -> Result<Vec<Stamp>, SequenceError> {
        let count = count as u64;
        let unmatched = |state: &TallyState| {
            if state.n + 2 * count > LARGEST {
                Unmatched::Fail(SequenceError::Exhausted {
                    name: self.name.clone(),
                    requested: count,
                    limit: LARGEST,
                })
            } else {
                Unmatched::Retry
            }
        };
        let after = advance::<TallyKind>(
            &self.collection,
            &self.name,
            &self.write_concern,
            take_filter(&self.name, count),
            take_pipeline(count),
            unmatched,
        )
        .await?;
        let last = read::<TallyKind>(&self.name, &after)?.kind.n;
        let first = last
            .checked_sub(2 * (count - 1))
            .filter(|first| *first >= 2)
            .ok_or_else(|| SequenceError::CorruptCounter {
                name: self.name.clone(),
                reason: format!("n is {last} after a take of {count}"),
            })?;
        Ok((0..count)
            .map(|index| Stamp::new(client_micros, first + 2 * index))
            .collect())
    }
}
