//! The shared holdings of a lock document (`shared.rs` takes them): how
//! they are read and checked, which are live, and the writes that renew and
//! release one. Below the handles, which renew and release through it.

use std::time::{Duration, Instant};

use mongodb::bson::{doc, Bson, Document};
use mongodb::Collection;

use super::{LockError, LockName};
use crate::mongo::{date_plus, durable_write_concern, server_now_plus};

/// Who holds a shared holding: the lock's collection and name, and the
/// owner token of the handle.
pub(crate) struct Holding<'a> {
    pub collection: &'a Collection<Document>,
    pub name: &'a LockName,
    pub owner: &'a str,
}

/// The `$let` variable of the live shared leases: `s`.
pub(crate) fn live() -> Document {
    doc! { "$filter": {
        "input": { "$cond": [{ "$isArray": "$shared" }, "$shared", []] },
        "cond": { "$gt": ["$$this.expiresAt", "$$NOW"] },
    }}
}

/// True (with `s` bound) when no shared lease is live.
pub(crate) fn none_live() -> Document {
    doc! { "$eq": [{ "$size": "$$s" }, 0] }
}

/// The server-side check of `shared` (missing, or an array of holdings),
/// the twin of [`read_holders`].
pub(crate) fn well_formed_term() -> Document {
    doc! { "$or": [
        { "$eq": [{ "$type": "$shared" }, "missing"] },
        { "$and": [
            { "$isArray": "$shared" },
            { "$allElementsTrue": [{ "$map": { "input": "$shared", "in": { "$and": [
                { "$eq": [{ "$type": "$$this.owner" }, "string"] },
                { "$eq": [{ "$type": "$$this.ticket" }, "string"] },
                { "$in": [{ "$type": "$$this.token" }, ["int", "long"]] },
                { "$eq": [{ "$type": "$$this.expiresAt" }, "date"] },
            ]}}}] },
        ]},
    ]}
}

/// A shared holding as read back.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SharedHolder {
    /// Its owner token.
    pub owner: String,
    /// Its fencing token.
    pub token: i64,
    /// Milliseconds left on its lease by the server's clock, when read with
    /// the server's time (`status`).
    pub expires_in_ms: Option<i64>,
    #[serde(skip)]
    pub(crate) ticket: String,
}

/// The shared holdings of `document` (lapsed ones included), or what is
/// wrong with them; `server_now_ms`: the server's time when read.
pub(crate) fn read_holders(
    document: &Document,
    server_now_ms: Option<i64>,
) -> Result<Vec<SharedHolder>, String> {
    let entries = match document.get("shared") {
        None => return Ok(Vec::new()),
        Some(Bson::Array(entries)) => entries,
        Some(other) => {
            return Err(format!(
                "shared is {}, not an array",
                crate::mongo::describe_value(other)
            ))
        }
    };
    entries
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            let bad =
                || format!("shared[{index}] is not a holding {{owner, ticket, token, expiresAt}}");
            let entry = entry.as_document().ok_or_else(bad)?;
            let owner = entry.get_str("owner").map_err(|_| bad())?;
            let ticket = entry.get_str("ticket").map_err(|_| bad())?;
            let token = match entry.get("token") {
                Some(Bson::Int64(token)) => *token,
                Some(Bson::Int32(token)) => i64::from(*token),
                _ => return Err(bad()),
            };
            let expires_at = entry.get_datetime("expiresAt").map_err(|_| bad())?;
            Ok(SharedHolder {
                owner: owner.to_string(),
                token,
                expires_in_ms: server_now_ms.map(|now| expires_at.timestamp_millis() - now),
                ticket: ticket.to_string(),
            })
        })
        .collect()
}

/// True (in a filter's `$expr`) while `owner`'s shared holding `token` is
/// live.
fn held_live(owner: &str, token: i64) -> Document {
    doc! { "$anyElementTrue": [{ "$map": {
        "input": { "$cond": [{ "$isArray": "$shared" }, "$shared", []] },
        "in": { "$and": [
            { "$eq": ["$$this.owner", owner] },
            { "$eq": ["$$this.token", token] },
            { "$gt": ["$$this.expiresAt", "$$NOW"] },
        ]},
    }}]}
}

/// Renews `lock`'s shared holding `token` for `ttl` (never shortening it);
/// the send time of the acknowledged write, or `None` once it is no longer
/// live.
pub(crate) async fn renew(
    lock: &Holding<'_>,
    token: i64,
    ttl: Duration,
) -> Result<Option<Instant>, LockError> {
    let ttl_ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
    let owner = lock.owner;
    let update = vec![
        doc! { "$set": { "shared": { "$map": { "input": "$shared", "in": { "$cond": [
            { "$and": [{ "$eq": ["$$this.owner", owner] }, { "$eq": ["$$this.token", token] }] },
            { "$mergeObjects": ["$$this", { "expiresAt": { "$max": ["$$this.expiresAt", server_now_plus(ttl_ms)] } }] },
            "$$this",
        ]}}}}},
    ];
    let sent = Instant::now();
    Ok(update_holding(lock, token, update).await?.then_some(sent))
}

/// Releases `lock`'s shared holding `token` (dropping lapsed ones too);
/// false when it was no longer live (nothing changed). A holding taken
/// with an `at_least` (a scheduled job's) released before that has passed
/// since its `acquiredAt` stays, its lease ending then: its place is taken
/// until then, by the server's clock.
pub(crate) async fn release(
    lock: &Holding<'_>,
    token: i64,
    at_least: Duration,
) -> Result<bool, LockError> {
    let owner = lock.owner;
    let at_least_ms = i64::try_from(at_least.as_millis()).unwrap_or(i64::MAX);
    // From when it was had; a holding without its time (none is written
    // so) from now, which holds it no shorter.
    let acquired = doc! { "$cond": [
        { "$eq": [{ "$type": "$$this.acquiredAt" }, "date"] },
        "$$this.acquiredAt",
        "$$NOW",
    ]};
    let ended = doc! { "$cond": [
        { "$and": [{ "$eq": ["$$this.owner", owner] }, { "$eq": ["$$this.token", token] }] },
        { "$mergeObjects": ["$$this", { "expiresAt": { "$min": [
            "$$this.expiresAt", date_plus(acquired, at_least_ms),
        ]}}]},
        "$$this",
    ]};
    let update = vec![doc! { "$set": { "shared": { "$filter": {
        "input": { "$map": { "input": "$shared", "in": ended } },
        "cond": { "$gt": ["$$this.expiresAt", "$$NOW"] },
    }}}}];
    update_holding(lock, token, update).await
}

/// Applies `update` to `lock` while its owner's shared holding `token` is
/// live; false when it was not (nothing changed).
async fn update_holding(
    lock: &Holding<'_>,
    token: i64,
    update: Vec<Document>,
) -> Result<bool, LockError> {
    let result = lock
        .collection
        .update_one(
            doc! { "_id": lock.name.as_str(), "$expr": held_live(lock.owner, token) },
            update,
        )
        .write_concern(durable_write_concern())
        .await
        .map_err(|error| LockError::database(lock.name, error))?;
    Ok(result.matched_count == 1)
}
