//! What is listed of the snowflake counters: the worker leases of one
//! (`idmint workers`, the monitor) and the layout lifetime of each
//! (`idmint status`).

use mongodb::Database;

use super::lease::{Leases, WorkerLease};
use super::SnowflakeKind;
use crate::mongo::collections::COUNTERS;
use crate::parts::snowflake::date;
use crate::sequence::counter::document::{find_with, read, Registered};
use crate::sequence::error::SequenceError;
use crate::sequence::kind_trait::Kind;
use crate::sequence::name::CounterName;

/// A snowflake counter's layout lifetime, for `idmint status`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Lifetime {
    /// The counter.
    pub counter: String,
    /// Its kind's name (`status` shows it beside the counter).
    #[serde(skip)]
    pub kind: &'static str,
    /// When its time bits run out, `YYYY-MM-DD`.
    pub runs_out_on: String,
    /// A warning once fewer than two years are left.
    pub warning: Option<String>,
}

/// The layout lifetime of every snowflake counter in `database`, by name
/// (a corrupt counter is skipped: `counter show` names what is wrong).
pub async fn lifetimes(database: &Database, now_ms: u64) -> Result<Vec<Lifetime>, SequenceError> {
    let documents = crate::sequence::counter::document::find_counters(
        database,
        mongodb::bson::doc! { "kind": SnowflakeKind::NAME },
        mongodb::bson::doc! {},
    )
    .await?;
    Ok(documents
        .iter()
        .filter_map(|document| {
            let name = CounterName::new(document.get_str("_id").ok()?).ok()?;
            let bits = read::<SnowflakeKind>(&name, document).ok()?.kind.layout;
            Some(Lifetime {
                counter: name.to_string(),
                kind: SnowflakeKind::NAME,
                runs_out_on: date(bits.runs_out_at_ms()),
                warning: bits.lifetime_warning(now_ms),
            })
        })
        .collect())
}

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
