//! A change of stripes that sees itself through: [`set_layout_and_finish`],
//! what `idmint counter stripes --set` runs. A deployment that dies after
//! the change claimed the counter's map leaves it half way (no live lane);
//! instead of handing that to the next taker, the command goes on finishing
//! its own change ([`resume_change`]) while the deployment comes back, for up to
//! [`FINISH_PATIENCE`]. Past that it fails as before, named
//! ([`StripingError::StoppedHalfWay`]), and takers finish the change once
//! every deployment it needs answers.

use std::time::Duration;

use tokio::time::Instant;

use mongodb::Database;

use super::deployments::Deployments;
use super::error::StripingError;
use super::layout::Layout;
use super::map::StripeMap;
use super::restripe::{latest_copy, resume_change, set_layout, Restriped};
use crate::error_class::ErrorClass;
use crate::sequence::clock::{Clock, SystemClock};
use crate::sequence::error::SequenceError;
use crate::sequence::name::CounterName;

/// How long a change of stripes that a deployment's failure stopped half
/// way goes on trying to finish itself before its command gives up
/// (a killed and restarted MongoDB server answers again within seconds).
pub const FINISH_PATIENCE: Duration = Duration::from_secs(30);

/// The first pause between two tries to finish; doubled each time, to
/// [`LONGEST_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(250);
const LONGEST_PAUSE: Duration = Duration::from_secs(2);

/// [`set_layout`], which, when a deployment's failure stops the change half
/// way, finishes it (the layout its claim recorded) once the deployments
/// answer again, within `patience`. Finished by another process meanwhile
/// (a taker, `counter show`): the map as it is then, no lanes sealed by
/// this call. Refused at its start: the same error as [`set_layout`]'s.
///
/// It tries again at once while the change is where it stopped (no other
/// process claimed it since); one that another process took over is left
/// to that process while it is at work, and finished here only once it
/// made no progress for its patience ([`PendingChange::patience`](super::PendingChange::patience)), as a
/// taker would.
pub async fn set_layout_and_finish(
    database: &Database,
    deployments: Option<&Deployments>,
    name: &CounterName,
    layout: &Layout,
    patience: Duration,
) -> Result<Restriped, SequenceError> {
    let (mut stopped, mut own_claim) = match set_layout(database, deployments, name, layout).await {
        Err(error) => match stopped_at(&error) {
            Some(generation) => (error, generation),
            None => return Err(error),
        },
        done => return done,
    };
    let deadline = Instant::now() + patience;
    let mut pause = FIRST_PAUSE;
    // The claim last seen (generation, `since`) and since when.
    let mut watch: Option<((u64, u64), Instant)> = None;
    loop {
        if Instant::now() + pause > deadline {
            return Err(stopped);
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(LONGEST_PAUSE);
        let map = match latest_copy(database, deployments, name).await {
            Ok(map) => map,
            Err(error) if worth_another_try(&error) => continue,
            Err(error) => return Err(error),
        };
        let Some(change) = map.change.as_ref().filter(|_| !map.live) else {
            return Ok(Restriped {
                map,
                sealed: Vec::new(),
            });
        };
        let now = Instant::now();
        let claim = (map.generation, change.since_ms);
        let seen_since = match watch {
            Some((seen, since)) if seen == claim => since,
            _ => watch.insert((claim, now)).1,
        };
        let still_ours = map.generation == own_claim;
        if !still_ours && now.duration_since(seen_since) < change.patience() {
            continue;
        }
        match resume_change(database, deployments, name, &map).await {
            Ok(restriped) => return Ok(restriped),
            Err(error) => match stopped_at(&error) {
                Some(generation) => (stopped, own_claim) = (error, generation),
                None if worth_another_try(&error) => {}
                None => return Err(error),
            },
        }
    }
}

/// The generation a change claimed if `error` says it stopped half way.
fn stopped_at(error: &SequenceError) -> Option<u64> {
    match error {
        SequenceError::Striping {
            source: StripingError::StoppedHalfWay { generation, .. },
            ..
        } => Some(*generation),
        _ => None,
    }
}

/// A deployment still not answering, or another process finishing the
/// same change at the same time: the next try may finish it.
fn worth_another_try(error: &SequenceError) -> bool {
    error.class() == ErrorClass::Unavailable
        || matches!(
            error,
            SequenceError::Striping {
                source: StripingError::Concurrent,
                ..
            }
        )
}

/// What `counter show` does before it shows counter `name`, whose map it
/// read as `map`: a change of stripes that looks stalled by this process's
/// clock ([`PendingChange::stalled_at`](super::PendingChange::stalled_at))
/// is watched for [`PendingChange::seen_still`](super::PendingChange::seen_still) (the claimant's clock may be behind this
/// one's; a change at work says so every second), and finished if it made
/// no progress meanwhile. Whether it was finished here.
pub async fn finish_if_stalled(
    database: &Database,
    deployments: Option<&Deployments>,
    name: &CounterName,
    map: &StripeMap,
) -> Result<bool, SequenceError> {
    let now_ms = SystemClock.now_micros() / 1000;
    let Some(change) = map.change.as_ref().filter(|_| !map.live) else {
        return Ok(false);
    };
    if !change.stalled_at(now_ms) {
        return Ok(false);
    }
    tokio::time::sleep(change.seen_still()).await;
    let again = latest_copy(database, deployments, name).await?;
    let still = again.generation == map.generation
        && again
            .change
            .as_ref()
            .filter(|_| !again.live)
            .is_some_and(|later| later.since_ms == change.since_ms);
    if !still {
        return Ok(false);
    }
    resume_change(database, deployments, name, &again).await?;
    Ok(true)
}
