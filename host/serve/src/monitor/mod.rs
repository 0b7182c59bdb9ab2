//! The monitor page: what an operator of the service looks at (Leaf's
//! `/cache` and `/db` pages, in one): the counters to look at first (near
//! their end, malformed, with a prefix owned twice or undeclared, the
//! busiest here) and a count of the rest, which a search by name and pages
//! reach; this instance's segment buffers and its rates over the last
//! minutes, the worker leases of every instance, the locks held, and the
//! policy in service with its activation history. It stays small and cheap
//! whatever the number of counters: the database's side is read once for
//! every viewer of a few seconds, and a page of counters is read from the
//! index on names.
//!
//! Server-rendered HTML with no build chain: the tables are plain HTML, the
//! chart an inline SVG drawn here, and the page reloads itself (a `<meta>`
//! refresh), so that all of it works without JavaScript. It is served on the
//! admin listener, behind the admin token like the other operator routes,
//! and shows no lock's owner token (a fingerprint of it instead).
//!
//! `query` says what is asked to be shown; `snapshot` reads it (from the
//! database through the library, and from this instance), `shared` shares
//! the database read among viewers, `counters` makes the counters' rows and
//! chooses the ones to look at first; `rates` keeps the per-second history
//! and each counter's values of the last minute; `page` renders a snapshot.
//! Nothing here writes.

mod counters;
mod page;
mod query;
mod rates;
mod shared;
mod snapshot;

pub use counters::{Attention, AttentionCounts, CounterRow, Triage, BUSIEST, SHOWN_PER_REASON};
pub use page::render;
pub use query::{
    InvalidQuery, MonitorQuery, PageRequest, View, DEFAULT_PER_PAGE, MAX_PAGE, MAX_PER_PAGE,
};
pub use rates::{CounterActivity, RateHistory, RatePoint, RATE_WINDOW};
pub use shared::SharedRead;
pub use snapshot::{
    holder_fingerprint, BufferRow, DatabaseRead, Deadline, Instance, LockRow, PageRead, Paging,
    PolicyRow, PolicyView, Snapshot, WorkerRow, ASSEMBLY_GRACE,
};

/// How long a read of the database's side is reused: shorter than the
/// page's reload, so one viewer sees a fresh read each time, while any
/// number of viewers cost one read per this.
pub const READ_REUSE: std::time::Duration = std::time::Duration::from_secs(2);

/// This instance's name on the page: `host:pid`.
pub fn instance_name() -> String {
    let host = Some(idmint::host_name())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".to_string());
    format!("{host}:{}", std::process::id())
}
