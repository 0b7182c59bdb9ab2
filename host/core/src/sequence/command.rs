//! The command an application in another language takes values with: one
//! `findAndModify`, what `idmint pipeline` prints.

use mongodb::bson::{doc, Bson, Document};

use crate::sequence::error::SequenceError;
use crate::sequence::kind_trait::CommandOptions;
use crate::sequence::name::CounterName;
use crate::sequence::registry::CounterKind;

/// The `findAndModify` command that takes `count` values of counter `name`
/// of `kind` (a segment counter: one segment of at least `step` values),
/// with `new: true` and write concern majority with journal: what `idmint
/// pipeline` prints for applications in other languages. Its update is the
/// one the library sends (`tests/kinds.rs` holds the two equal); its
/// filter is the library's with the kind's guard added (`guarded`).
/// Run it with any driver's `runCommand`: the document in `value` is the
/// counter after the update, and a `value` of null means that nothing was
/// taken (the counter is missing, malformed, of another kind or settings,
/// or has no values left), never a value to use.
pub fn take_command(
    kind: CounterKind,
    name: &CounterName,
    count: u64,
    options: &CommandOptions,
) -> Result<Document, SequenceError> {
    let (filter, update) = kind.take_command(name, count, options)?;
    Ok(find_and_modify(guarded(filter, kind.well_formed()), update))
}

/// The `findAndModify` on the counters collection with `query` and the
/// pipeline `update`, returning the document after it, written with
/// majority and journal: the shape of every command `idmint pipeline`
/// prints (a counter's here, a striped counter's lane in
/// `striping::lane_take_command`).
pub(crate) fn find_and_modify(query: Document, update: Vec<Document>) -> Document {
    let update: Vec<Bson> = update.into_iter().map(Bson::Document).collect();
    doc! {
        "findAndModify": crate::mongo::collections::COUNTERS,
        "query": query,
        "update": update,
        "new": true,
        "writeConcern": { "w": "majority", "j": true },
    }
}

/// Whether the command of `kind` takes as many values as it is asked for
/// (`idmint pipeline --count`): asked for one value and for two, it differs.
/// False for a kind whose command takes what the counter decides (a
/// segment of at least its step), or that has no command.
pub fn command_takes_count(kind: CounterKind) -> bool {
    let name = CounterName::new("c").expect("a valid counter name");
    let options = CommandOptions::default();
    let command = |count| take_command(kind, &name, count, &options).ok();
    let one = command(1);
    one.is_some() && one != command(2)
}

/// `filter` with `guard` (the kind's `well_formed`) added to its `$expr`,
/// first, so that the filter's own terms only see a well-formed counter.
///
/// The library's takes keep the guard in the update, which leaves a
/// malformed counter as it is and returns it, and read the returned document
/// to tell that from a take (a filter guard cost about a third of the
/// throughput, docs/BENCHMARKS.md). An application in another language would
/// not: it would use the unchanged document's value again. The exported
/// command's filter matches nothing instead, so that the application gets
/// `value: null`, never an untouched counter it could take for a result.
fn guarded(mut filter: Document, guard: Document) -> Document {
    let expression = match filter.remove("$expr") {
        Some(own) => doc! { "$and": [guard, own] },
        None => guard,
    };
    filter.insert("$expr", expression);
    filter
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_takes_the_count_unless_the_counter_decides_or_there_is_none() {
        for kind in [
            CounterKind::Cyclic,
            CounterKind::Autoinc,
            CounterKind::Periodic,
        ] {
            assert!(command_takes_count(kind), "{kind}");
        }
        // A segment of the counter's step; no command at all.
        for kind in [CounterKind::Segment, CounterKind::Snowflake] {
            assert!(!command_takes_count(kind), "{kind}");
        }
    }
}
