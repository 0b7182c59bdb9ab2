//! The two commands an app in another language runs in its own
//! transaction to take a number of a series, as `runCommand` documents:
//! what `idmint series pipeline` prints. They are the writes
//! [`Series::next_in`](super::Series::next_in) makes (a test runs them and
//! holds the documents they leave equal to next_in's).
//!
//! 1. `take`: a `findAndModify` on the series that moves `last` up by one
//!    (from `first` again in a new period) and returns the series after it:
//!    `value.last` is the number, `value.current` its period's label (empty
//!    for a series without periods); a `value` of null means nothing was
//!    taken (no such series, or a malformed one: `idmint series audit NAME`
//!    says which).
//! 2. `record`: the insert of the number's record, whose placeholders the
//!    app fills: [`NUMBER`] with the number's digits (in `$numberLong`, so
//!    that the driver writes a long), [`PADDED`] (in the `_id`) with them
//!    zero-padded to 19, [`PERIOD`] (in the `_id` and `period`) with the
//!    period's label, [`REFERENCE`] with the business record's
//!    reference, [`NOW`] with the time (in `$date`, ISO 8601), [`BY`] with
//!    who took it.
//!
//! Both in one transaction, committed with `w: "majority", j: true`, and
//! run again whole after an error labelled `TransientTransactionError`.

use mongodb::bson::{doc, Bson, Document};
use mongodb::options::UpdateModifications;
use serde::Serialize;

use super::document::{take_update, takes_filter, SeriesPeriod};
use super::record::confirmed_with;
use crate::mongo::collections::{SERIES, SERIES_NUMBERS};
use crate::sequence::CounterName;

/// The placeholder of the number's digits in the record (in `$numberLong`).
pub const NUMBER: &str = "<number>";
/// The placeholder of the number in 19 digits, zero-padded, in the
/// record's `_id`.
pub const PADDED: &str = "<number in 19 digits>";
/// The placeholder of the period's label (`value.current` of the take; an
/// empty string for a series without periods), in the `_id` and `period`.
pub const PERIOD: &str = "<period>";
/// The placeholder of the business reference.
pub const REFERENCE: &str = "<reference>";
/// The placeholder of the time the number was taken (in `$date`, ISO 8601).
pub const NOW: &str = "<now>";
/// The placeholder of who took it.
pub const BY: &str = "<by>";

/// The commands that take a number of a series (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesCommands {
    /// The `findAndModify` that takes the number.
    pub take: Document,
    /// The insert of its record, with placeholders.
    pub record: Document,
}

/// The commands that take a number of series `name`, numbered per `period`
/// (`None`: none). The take matches the series only if it is numbered so:
/// one made otherwise answers `value` null, and nothing is taken.
pub fn commands(name: &CounterName, period: Option<&SeriesPeriod>) -> SeriesCommands {
    let record = confirmed_with(
        name,
        Bson::from(format!("{}/{PERIOD}/{PADDED}", name.as_str())),
        Bson::from(PERIOD),
        // Typed in extended JSON, so that a driver parsing the filled
        // command writes a long and a date, as next_in does.
        Bson::Document(doc! { "$numberLong": NUMBER }),
        Bson::from(REFERENCE),
        Bson::Document(doc! { "$date": NOW }),
        Bson::from(BY),
    );
    SeriesCommands {
        take: doc! {
            "findAndModify": SERIES,
            "query": takes_filter(name, period),
            "update": match take_update(period) {
                UpdateModifications::Pipeline(stages) => Bson::from(stages),
                UpdateModifications::Document(update) => Bson::Document(update),
                _ => unreachable!("a take is a document or a pipeline"),
            },
            "new": true,
        },
        record: doc! { "insert": SERIES_NUMBERS, "documents": [record] },
    }
}
