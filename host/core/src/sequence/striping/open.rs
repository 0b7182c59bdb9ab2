//! Reading a counter's document across deployments when it is opened: from
//! the preferred deployment, and, when that one has not answered after
//! [`HEDGE_AFTER`], from the copies of a striped counter's map in the
//! others too. The preferred deployment's answer wins whenever it comes
//! in time; another deployment's counts only if it is a copy of a map that
//! spans deployments (another deployment's own counter of the name is not
//! this one).

use std::future::Future;
use std::time::{Duration, Instant};

use mongodb::bson::Document;
use mongodb::{Collection, Database};

use super::deployments::Deployments;
use super::error::StripingError;
use super::taker::HEDGE_AFTER;
use crate::mongo::collections::COUNTERS;
use crate::sequence::error::SequenceError;
use crate::sequence::name::CounterName;

/// Counter `name`'s state read with `read` from the preferred of
/// `deployments` (`preferred`) or a copy in another, one that `spans`
/// says is a map spanning deployments (see the module docs), and the
/// database it was read from.
pub(crate) async fn read_from_any<T, F, R>(
    preferred: &Database,
    deployments: &Deployments,
    name: &CounterName,
    read: F,
    spans: impl Fn(&T) -> bool,
) -> Result<(Database, T), SequenceError>
where
    F: Fn(Collection<Document>) -> R,
    R: Future<Output = Result<T, SequenceError>>,
{
    let share = deployments.take_deadline() / deployments.list().len() as u32;
    let first = async {
        match tokio::time::timeout(share, read(preferred.collection(COUNTERS))).await {
            Ok(answer) => answer,
            Err(_) => Err(unanswered(name, deployments, share)),
        }
    };
    tokio::pin!(first);
    let mut failed = None;
    tokio::select! {
        answer = &mut first => match answer {
            Err(error) if unreachable(&error) => failed = Some(error),
            answer => return settle_preferred(preferred, deployments, answer),
        },
        () = tokio::time::sleep(HEDGE_AFTER.min(share)) => {}
    }
    let copies = async {
        for other in &deployments.list()[1..] {
            let Ok(Ok(state)) =
                tokio::time::timeout(share, read(other.database.collection(COUNTERS))).await
            else {
                continue;
            };
            if spans(&state) {
                return Some((other.database.clone(), state));
            }
        }
        None
    };
    tokio::pin!(copies);
    if let Some(error) = failed {
        deployments.failed(&deployments.preferred().name, Instant::now());
        return copies.await.ok_or(error);
    }
    tokio::select! {
        answer = &mut first => match answer {
            Err(error) if unreachable(&error) => {
                deployments.failed(&deployments.preferred().name, Instant::now());
                copies.await.ok_or(error)
            }
            answer => settle_preferred(preferred, deployments, answer),
        },
        copy = &mut copies => match copy {
            Some(copy) => {
                deployments.failed(&deployments.preferred().name, Instant::now());
                Ok(copy)
            }
            None => settle_preferred(preferred, deployments, first.await),
        },
    }
}

/// Whether `error` says the deployment did not answer (rather than what
/// its answer was).
fn unreachable(error: &SequenceError) -> bool {
    matches!(
        error,
        SequenceError::Database { .. }
            | SequenceError::Striping {
                source: StripingError::Unreachable { .. },
                ..
            }
    )
}

/// The preferred deployment's answer: its state, or its error (one that
/// says it did not answer sets it aside).
fn settle_preferred<T>(
    preferred: &Database,
    deployments: &Deployments,
    answer: Result<T, SequenceError>,
) -> Result<(Database, T), SequenceError> {
    match answer {
        Ok(state) => Ok((preferred.clone(), state)),
        Err(error) => {
            if unreachable(&error) {
                deployments.failed(&deployments.preferred().name, Instant::now());
            }
            Err(error)
        }
    }
}

/// The error of a preferred deployment that did not answer within `share`.
fn unanswered(name: &CounterName, deployments: &Deployments, share: Duration) -> SequenceError {
    let preferred = deployments.preferred().name.clone();
    SequenceError::Striping {
        name: name.clone(),
        source: StripingError::Unreachable {
            deadline_ms: share.as_millis() as u64,
            failures: vec![format!("{preferred}: no answer")],
            given: vec![preferred],
        },
    }
}
