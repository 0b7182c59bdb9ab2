//! A write or read across deployments, bounded by a take's deadline.

use std::time::{Duration, Instant};

/// The shortest share of a deadline a try is given.
pub(super) const SHORTEST_TRY: Duration = Duration::from_millis(50);

/// `future`'s output, unless `deadline` passes first (none: no limit); a
/// deadline past or near is given [`SHORTEST_TRY`] still.
pub(super) async fn within<F: std::future::IntoFuture>(
    deadline: Option<Instant>,
    future: F,
) -> Option<F::Output> {
    match deadline {
        None => Some(future.await),
        Some(deadline) => {
            let left = deadline
                .saturating_duration_since(Instant::now())
                .max(SHORTEST_TRY);
            tokio::time::timeout(left, future.into_future()).await.ok()
        }
    }
}
