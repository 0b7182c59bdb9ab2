//! Fencing: making a write to another collection conditional on the token,
//! the etcd way. The protected document keeps the highest token that wrote
//! it; a write carrying a lower token matches nothing and changes nothing.
//!
//! ```no_run
//! # async fn example(db: mongodb::Database, lease: idmint::lock::Lease) -> mongodb::error::Result<()> {
//! use idmint::lock::{fenced_filter, fenced_set};
//! use mongodb::bson::doc;
//! let mut filter = doc! { "_id": "report-2026-11" };
//! filter.extend(fenced_filter("lockToken", lease.token()));
//! let mut set = doc! { "status": "done" };
//! set.extend(fenced_set("lockToken", lease.token()));
//! let result = db.collection::<mongodb::bson::Document>("reports")
//!     .update_one(filter, doc! { "$set": set }).await?;
//! if result.matched_count == 0 { /* a newer holder wrote first: stop */ }
//! # Ok(()) }
//! ```

use mongodb::bson::{doc, Document};

/// The filter part: matches a document whose `field` is missing or not above
/// `token`, so a holder with an older token matches nothing.
pub fn fenced_filter(field: &str, token: i64) -> Document {
    doc! { field: { "$not": { "$gt": token } } }
}

/// The `$set` part: records `token` as the highest seen.
pub fn fenced_set(field: &str, token: i64) -> Document {
    doc! { field: token }
}
