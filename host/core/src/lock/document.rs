//! The lock document: its checks on the server (inside the acquire pipeline)
//! and in Rust (every document read back).

use mongodb::bson::{doc, Bson, DateTime, Document};
use serde::Serialize;

use super::{LockError, LockName};
use crate::lease::{Fields, LeaseFields};

/// A lock document as read back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LockState {
    /// The lock's name.
    pub name: String,
    /// The holder's owner token; `None` when released.
    pub owner: Option<String>,
    /// The holder's label, for a handle made with
    /// [`Locks::lock_labelled`](super::Locks::lock_labelled): who leads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The fencing token of the latest acquisition (0: never acquired).
    pub token: i64,
    /// The hold count of the current owner (re-entrant acquisitions).
    pub count: i64,
    /// When the lease ends, by the server's clock; `None` when released.
    #[serde(serialize_with = "serialize_date")]
    pub expires_at: Option<DateTime>,
    /// Milliseconds left on the lease by the server's clock, when the
    /// document was read with the server's time (`status`); negative once
    /// expired.
    pub expires_in_ms: Option<i64>,
    /// Waiters in line (entries that lapsed included, until the next write
    /// drops them).
    pub waiters: usize,
    /// The shared holders (permits, readers: `shared.rs`), lapsed ones
    /// included until the next write drops them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shared: Vec<super::holders::SharedHolder>,
    /// The acquire call that holds it (internal: a handed-over lease is
    /// recognised by it).
    #[serde(skip)]
    pub(crate) ticket: Option<String>,
}

impl LockState {
    /// True when an owner holds a lease that had not ended when read.
    pub fn is_held(&self) -> bool {
        self.owner.is_some() && self.expires_in_ms.is_none_or(|ms| ms > 0)
    }

    /// The shared holdings (permits, readers) whose lease had not ended
    /// when read.
    pub fn live_shared(&self) -> impl Iterator<Item = &super::holders::SharedHolder> {
        self.shared
            .iter()
            .filter(|holder| holder.expires_in_ms.is_none_or(|ms| ms > 0))
    }

    /// True when acquire call `ticket` of handle owner `owner` holds it
    /// (handed over from the line, or passed on within the process).
    pub(crate) fn is_held_by_call(&self, owner: &str, ticket: &str) -> bool {
        self.owner.as_deref() == Some(owner) && self.ticket.as_deref() == Some(ticket)
    }
}

fn serialize_date<S: serde::Serializer>(date: &Option<DateTime>, s: S) -> Result<S::Ok, S::Error> {
    match date {
        Some(date) => s.serialize_str(&date.try_to_rfc3339_string().unwrap_or_default()),
        None => s.serialize_none(),
    }
}

impl LockState {
    /// Reads a lock document (through the lease reader, `crate::lease::Fields`),
    /// saying what is wrong with a malformed one.
    pub fn from_document(name: &LockName, document: &Document) -> Result<Self, LockError> {
        let corrupt = |reason: String| LockError::Corrupt {
            name: name.clone(),
            reason,
        };
        let fields = Fields(document);
        let owner = fields.optional_string(LOCK_FIELDS.owner).map_err(corrupt)?;
        let token = fields.optional_integer("token", 0).map_err(corrupt)?;
        let count = fields.optional_integer("count", 0).map_err(corrupt)?;
        let expires_at = fields.optional_date(LOCK_FIELDS.expires).map_err(corrupt)?;
        if owner.is_some() && expires_at.is_none() {
            return Err(corrupt("it has an owner but no expiresAt".into()));
        }
        let ticket = fields.optional_string("ticket").map_err(corrupt)?;
        let waiters = super::queue::read_waiters(document).map_err(corrupt)?;
        let server_now_ms = match document.get("serverNow") {
            Some(Bson::DateTime(now)) => Some(now.timestamp_millis()),
            _ => None,
        };
        let expires_in_ms = server_now_ms
            .zip(expires_at)
            .map(|(now, at)| at.timestamp_millis() - now);
        let shared = super::holders::read_holders(document, server_now_ms).map_err(corrupt)?;
        Ok(Self {
            name: name.to_string(),
            label: owner.as_deref().and_then(label_of).map(str::to_string),
            owner,
            token: token.unwrap_or(0),
            count: count.unwrap_or(0),
            expires_at,
            expires_in_ms,
            waiters,
            shared,
            ticket,
        })
    }
}

/// The longest label a holder may give.
const MAX_LABEL_CHARS: usize = 128;

/// Checks a holder's label: 1 to [`MAX_LABEL_CHARS`] printable characters.
pub(crate) fn check_label(label: &str) -> Result<(), LockError> {
    let chars = label.chars().count();
    if chars == 0 || chars > MAX_LABEL_CHARS || label.chars().any(char::is_control) {
        return Err(LockError::InvalidLabel {
            label: label.to_string(),
        });
    }
    Ok(())
}

/// The label of owner token `owner`: what comes before `/` and a random
/// token of 32 hex digits (see `Locks::lock_labelled`), if it has one.
pub(crate) fn label_of(owner: &str) -> Option<&str> {
    let (label, token) = owner.rsplit_once('/')?;
    let random = token.len() == 32 && token.bytes().all(|b| b.is_ascii_hexdigit());
    (random && !label.is_empty()).then_some(label)
}

/// How a lock document names its lease fields.
pub(crate) const LOCK_FIELDS: LeaseFields = LeaseFields {
    owner: "owner",
    expires: "expiresAt",
};

/// True (on the server) when the document is one idmint can take: the same
/// checks as [`LockState::from_document`], so a malformed document is never
/// modified by an acquire.
pub(crate) fn well_formed_expr() -> Document {
    let integer_or_missing = |field: &str| {
        let path = format!("${field}");
        doc! { "$or": [
            { "$eq": [{ "$type": &path }, "missing"] },
            { "$and": [
                { "$in": [{ "$type": &path }, ["int", "long"]] },
                { "$gte": [&path, 0] },
            ]},
        ]}
    };
    doc! { "$and": [
        { "$in": [{ "$type": "$owner" }, ["missing", "null", "string"]] },
        { "$in": [{ "$type": "$expiresAt" }, ["missing", "null", "date"]] },
        { "$in": [{ "$type": "$ticket" }, ["missing", "null", "string"]] },
        super::queue::well_formed_term(),
        super::holders::well_formed_term(),
        integer_or_missing("token"),
        integer_or_missing("count"),
        { "$or": [
            { "$in": [{ "$type": "$owner" }, ["missing", "null"]] },
            { "$eq": [{ "$type": "$expiresAt" }, "date"] },
        ]},
    ]}
}
