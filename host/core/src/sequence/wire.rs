//! The exact command each kind of counter sends to take values, as a
//! `runCommand` document: what `idmint pipeline` prints for applications in
//! other languages, built by the same functions the library sends
//! (`tests/strategies.rs` holds the two equal).

use mongodb::bson::{doc, Bson, Document};

use super::kind::CounterKind;
use super::{autoinc, cyclic, segment, CounterName, SequenceError, COUNTERS_COLLECTION};

/// The clock a cyclic counter's timestamps are floored at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientTime {
    /// The caller's clock reading, microseconds since the epoch (what
    /// idmint sends).
    Micros(u64),
    /// The server's clock, `$$NOW` in microseconds (milliseconds times
    /// 1,000): for an application that would rather not read its own.
    ServerNow,
}

impl ClientTime {
    fn expression(self) -> Bson {
        match self {
            Self::Micros(micros) => Bson::Int64(i64::try_from(micros).unwrap_or(i64::MAX)),
            Self::ServerNow => {
                Bson::Document(doc! { "$multiply": [{ "$toLong": "$$NOW" }, 1000_i64] })
            }
        }
    }
}

/// The `findAndModify` command that takes `count` values of counter `name`
/// of `kind` (a segment counter: one segment of at least `step` values),
/// with `new: true` and write concern majority with journal. Run it with
/// any driver's `runCommand`; the document in `value` is the counter after
/// the update (see README, "Calling it from another language").
pub fn take_command(
    kind: CounterKind,
    name: &CounterName,
    count: u64,
    step: u64,
    client: ClientTime,
) -> Result<Document, SequenceError> {
    let (query, update) = match kind {
        CounterKind::Cyclic => {
            cyclic::check_block(name, usize::try_from(count).unwrap_or(usize::MAX))?;
            (
                doc! { "_id": name.as_str() },
                cyclic::block_pipeline(count as i64, client.expression()),
            )
        }
        CounterKind::Autoinc => (
            autoinc::take_filter(name, count),
            autoinc::advance_pipeline(count),
        ),
        CounterKind::Segment => (
            segment::counter::fits_filter(name, step),
            segment::counter::take_pipeline(step),
        ),
        CounterKind::Snowflake => {
            return Err(SequenceError::InvalidSpec(
                "snowflake IDs are made in the process that leases a worker id; \
                 no single command takes them"
                    .into(),
            ))
        }
    };
    let update: Vec<Bson> = update.into_iter().map(Bson::Document).collect();
    Ok(doc! {
        "findAndModify": COUNTERS_COLLECTION,
        "query": query,
        "update": update,
        "new": true,
        "writeConcern": { "w": "majority", "j": true },
    })
}
