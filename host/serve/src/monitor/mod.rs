//! The monitor page: what an operator of the service looks at (Leaf's
//! `/cache` and `/db` pages, in one): every counter and what is left of it,
//! this instance's segment buffers and its rates over the last minutes, the
//! worker leases of every instance, the locks held, and the policy in
//! service with its activation history.
//!
//! Server-rendered HTML with no build chain: the tables are plain HTML, the
//! chart an inline SVG drawn here, and the page reloads itself (a `<meta>`
//! refresh), so that all of it works without JavaScript. It is served on the
//! admin listener, behind the admin token like the other operator routes,
//! and shows no lock's owner token (a fingerprint of it instead).
//!
//! `snapshot` reads what the page shows (from the database through the
//! library, and from this instance); `rates` keeps the per-second history;
//! `page` renders a snapshot. Nothing here writes.

mod page;
mod rates;
mod snapshot;

pub use page::render;
pub use rates::{RateHistory, RatePoint, RATE_WINDOW};
pub use snapshot::{
    holder_fingerprint, BufferRow, CounterRow, Instance, LockRow, PolicyRow, PolicyView, Snapshot,
    WorkerRow,
};

/// This instance's name on the page: `host:pid`.
pub fn instance_name() -> String {
    let host = Some(idmint::host_name())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".to_string());
    format!("{host}:{}", std::process::id())
}
