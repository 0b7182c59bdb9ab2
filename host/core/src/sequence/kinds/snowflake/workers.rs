//! What is listed of the snowflake counters: the worker leases of one
//! (`idmint workers`, the monitor) and the layout lifetime of each
//! (`idmint status`).

use mongodb::Database;

use super::lease::{Leases, WorkerLease};
use super::SnowflakeKind;
use crate::mongo::collections::COUNTERS;
use crate::sequence::counter::document::{find_with, read, Registered};
use crate::sequence::error::SequenceError;
use crate::sequence::kind_trait::Kind;
use crate::sequence::name::CounterName;

/// Every worker lease of counter `name` in `database`, by worker id, with
/// the server's time now (ms since 1970): what `idmint workers` lists (a
/// striped counter's: those of its lanes in this deployment). Only a
/// snowflake counter has worker leases: another counter is
/// [`SequenceError::WrongKind`], a missing one [`SequenceError::UnknownCounter`].
pub async fn workers(
    database: &Database,
    name: &CounterName,
) -> Result<(Vec<WorkerLease>, i64), SequenceError> {
    // One read of the document: a striped counter's kind is its lanes',
    // read from the same document.
    let counters = database.collection(COUNTERS);
    find_with(&counters, name, |name, document| {
        match read::<SnowflakeKind>(name, document) {
            Ok(_) => Ok(()),
            Err(SequenceError::Striped { .. }) => match SnowflakeKind::kind_of(name, document)? {
                SnowflakeKind::NAME => Ok(()),
                found => Err(SequenceError::WrongKind {
                    name: name.clone(),
                    expected: SnowflakeKind::NAME,
                    found,
                }),
            },
            Err(error) => Err(error),
        }
    })
    .await?;
    Leases::new(database, name.clone(), super::gate::Gate::Counter)
        .list()
        .await
}
