//! One lease primitive for everything idmint leases: a lock ([`crate::lock`])
//! and a snowflake worker id (`sequence`'s snowflake kind). What each adds
//! stays its own: the fencing token and re-entrancy of a lock, the time a
//! worker lease reserves (`floor`, `last_time`).
//!
//! A lease is a document that names its holder (an owner token, random per
//! holder) and when it ends (a date). The rules, the same for both:
//!
//! - **The server's clock decides.** Every condition compares the end with
//!   `$$NOW`: no TTL index (its monitor runs once a minute), no client clock,
//!   so a client whose clock runs ahead cannot take a live lease.
//! - **Acquire and take over in one write.** One `findOneAndUpdate` with
//!   `upsert` whose pipeline takes the document when it is free or ended
//!   ([`LeaseFields::live`] false), re-enters when this owner holds it (if
//!   the user allows re-entry; never shortening it), and leaves a live lease
//!   of another owner, or a malformed document, exactly as it was.
//! - **Renew and release only while holding it.** Both match the owner (and
//!   whatever else identifies the holding, such as a fencing token) *and* a
//!   live lease by the server's clock, so a holder whose lease ended (paused,
//!   partitioned) can neither extend nor release the next holder's, and a
//!   second release changes nothing. A renewal never shortens the lease.
//! - **Renew every third of the TTL** ([`keep_renewed`]), and after a failed
//!   attempt again at once (with a short backoff), each attempt bounded.
//! - **Fail closed on a local deadline** ([`Deadline`]). A holder trusts its
//!   lease until the moment the last acquire or renewal that was
//!   *acknowledged* was *sent*, plus the TTL, less a safety margin
//!   (`deadline.rs`: a tenth of the TTL), on the monotonic clock. The server set the end at least a
//!   TTL after it received that write, which was after it was sent, so the
//!   local deadline comes first whatever the network or the driver does
//!   (a lost answer, a partition, a stall): measuring from the answer instead
//!   would count the time the request took twice. The margin covers the two
//!   clocks running at slightly different rates.
//!
//! Every write uses [`crate::mongo::durable_write_concern`].

use std::time::{Duration, Instant};

use mongodb::bson::{doc, Bson, DateTime, Document};
use mongodb::options::{ReturnDocument, WriteConcern};
use mongodb::Collection;

use crate::mongo::{self, describe_value, durable_write_concern, server_now_plus};

mod deadline;
mod renewal;

pub(crate) use deadline::{deadline_after, proved_for, Deadline};
pub(crate) use renewal::{keep_renewed, Renewal};

/// This machine's host name (empty if unknown): what worker leases and the
/// monitor page name a process by.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_default()
}

/// How a kind of lease document names its two fields.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LeaseFields {
    /// The holder's owner token (a string while held).
    pub owner: &'static str,
    /// When the lease ends, by the server's clock (a date while held).
    pub expires: &'static str,
}

impl LeaseFields {
    fn path(field: &str) -> String {
        format!("${field}")
    }

    /// True (on the server) while the lease is held by someone: an owner and
    /// an end that `$$NOW` has not reached.
    pub fn live(&self) -> Document {
        let (owner, expires) = (Self::path(self.owner), Self::path(self.expires));
        doc! { "$and": [
            { "$eq": [{ "$type": &owner }, "string"] },
            { "$eq": [{ "$type": &expires }, "date"] },
            { "$gt": [&expires, "$$NOW"] },
        ]}
    }

    /// The end of a lease acquired now for `ttl`, by the server's clock.
    pub fn expires_after(&self, ttl: Duration) -> Document {
        server_now_plus(ttl_ms(ttl))
    }

    /// The end after a renewal or re-entry for `ttl`: `$$NOW + ttl`, or the
    /// current end if that is later, so that a shorter TTL never shortens a
    /// lease someone holds for longer.
    pub fn extended(&self, ttl: Duration) -> Document {
        doc! { "$max": [Self::path(self.expires), self.expires_after(ttl)] }
    }
}

fn ttl_ms(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX)
}

/// What an acquisition sets besides the owner and the end.
#[derive(Debug, Clone, Default)]
pub(crate) struct Acquire {
    /// True (on the server) while the document is one the lease's user can
    /// read; a malformed document is left as it was. An upsert starts from
    /// `{_id}`, so a missing document must pass it.
    pub well_formed: Document,
    /// The fields a fresh acquisition (free, ended or new) sets, computed
    /// from the old document (a fencing token, a time reservation).
    pub fresh: Document,
    /// The fields a re-entry by the same owner sets (a hold count); `None`:
    /// no re-entry, an owner's live lease is left as it is.
    pub again: Option<Document>,
    /// Variables (`$let`) every expression below may use as `$$name`.
    pub vars: Option<Document>,
    /// True when this very call already holds the lease (it was handed to
    /// it while it waited): not re-entered, but its end is extended as a
    /// renewal's would be, so that this acquire's send time may start the
    /// local deadline (the handover started the lease earlier, at a time
    /// this call may not know).
    pub claimed: Option<Document>,
    /// True when a free or ended lease may be taken by this call now (a
    /// lock's waiting line: when nobody waits ahead of it); absent: always.
    /// An ended lease this call may not take is cleared (see
    /// [`acquire_pipeline`]).
    pub turn: Option<Document>,
    /// What an ended lease that is not taken (not this call's turn) is set
    /// to besides its owner and end, both cleared: the rest of a freed
    /// document (a lock's ticket and hold count).
    pub ended: Document,
    /// The document when the lease is not taken (held by another, or not
    /// this call's turn), e.g. with this call added to a waiting line;
    /// absent: unchanged.
    pub busy: Option<Document>,
}

/// The acquire pipeline: free or ended → taken by `owner` for `ttl`; held
/// live by `owner` → `again` (with the end extended, never shortened);
/// held live by another, or malformed → unchanged.
///
/// With a `turn`, an ended lease may be left untaken (someone else's turn):
/// it is then freed in the same write (no owner, no end), so that the
/// answer never names the owner of a lease that ended. Otherwise a call of
/// that owner (the next acquire of a process whose lease lapsed) would
/// read the document as held by itself, and trust a lease that the server
/// gives the next in line.
pub(crate) fn acquire_pipeline(
    fields: &LeaseFields,
    owner: &str,
    ttl: Duration,
    acquire: &Acquire,
) -> Vec<Document> {
    let live = fields.live();
    let mut fresh = doc! { fields.owner: owner };
    fresh.extend(acquire.fresh.clone());
    fresh.insert(fields.expires, fields.expires_after(ttl));
    let fresh = doc! { "$mergeObjects": ["$$ROOT", fresh] };
    let busy = match &acquire.busy {
        Some(busy) => Bson::Document(busy.clone()),
        None => Bson::String("$$ROOT".into()),
    };
    let (not_taken, busy) = match &acquire.turn {
        Some(turn) => {
            let mut freed = doc! { fields.owner: Bson::Null, fields.expires: Bson::Null };
            freed.extend(acquire.ended.clone());
            let ended = doc! { "$mergeObjects": [busy.clone(), freed] };
            (
                doc! { "$or": [live.clone(), { "$not": [turn.clone()] }] },
                Bson::Document(doc! { "$cond": [live.clone(), busy, ended] }),
            )
        }
        // Not taken only while live.
        None => (live.clone(), busy),
    };
    let mut taken_or_kept = doc! { "$cond": [not_taken, busy, fresh] };
    if let Some(again) = &acquire.again {
        let mine =
            doc! { "$and": [live.clone(), { "$eq": [LeaseFields::path(fields.owner), owner] }] };
        let mut again = again.clone();
        again.insert(fields.expires, fields.extended(ttl));
        let again = doc! { "$mergeObjects": ["$$ROOT", again] };
        taken_or_kept = doc! { "$cond": [mine, again, taken_or_kept] };
    }
    if let Some(claimed) = &acquire.claimed {
        let claimed = doc! { "$and": [live.clone(), claimed.clone()] };
        let extended =
            doc! { "$mergeObjects": ["$$ROOT", { fields.expires: fields.extended(ttl) }] };
        taken_or_kept = doc! { "$cond": [claimed, extended, taken_or_kept] };
    }
    if let Some(vars) = &acquire.vars {
        taken_or_kept = doc! { "$let": { "vars": vars.clone(), "in": taken_or_kept } };
    }
    vec![doc! { "$replaceWith": { "$cond": [
        acquire.well_formed.clone(),
        taken_or_kept,
        "$$ROOT",
    ]}}]
}

/// What one acquire found.
#[derive(Debug)]
pub(crate) struct Acquisition {
    /// The document after the write.
    pub document: Document,
    /// Whether the owner asked for holds it now.
    pub held: bool,
    /// When the write that got it was sent: the start of its local deadline.
    pub sent: Instant,
}

/// The leases of one collection, whose documents name their fields as
/// [`LeaseFields`] says.
#[derive(Debug, Clone)]
pub(crate) struct LeaseStore {
    collection: Collection<Document>,
    fields: LeaseFields,
    write_concern: WriteConcern,
}

impl LeaseStore {
    pub fn new(collection: Collection<Document>, fields: LeaseFields) -> Self {
        Self {
            collection,
            fields,
            write_concern: durable_write_concern(),
        }
    }

    pub fn collection(&self) -> &Collection<Document> {
        &self.collection
    }

    /// The filter of every write on a held lease: document `id`, held by
    /// `holder` (the owner and whatever else identifies the holding), live
    /// by the server's clock.
    fn held_by(&self, id: &str, holder: &Document) -> Document {
        let mut filter = doc! { "_id": id };
        filter.extend(holder.clone());
        filter.insert("$expr", self.fields.live());
        filter
    }

    /// One acquire (see [`acquire_pipeline`]). An upsert that loses a race
    /// with another (a duplicate key, or no document back) is tried again;
    /// `None` if that kept happening.
    pub async fn acquire(
        &self,
        id: &str,
        owner: &str,
        ttl: Duration,
        acquire: &Acquire,
    ) -> mongodb::error::Result<Option<Acquisition>> {
        let pipeline = acquire_pipeline(&self.fields, owner, ttl, acquire);
        Ok(self.upsert(id, pipeline).await?.map(|(document, sent)| {
            let held = document.get(self.fields.owner) == Some(&Bson::from(owner));
            Acquisition {
                document,
                held,
                sent,
            }
        }))
    }

    /// Applies `pipeline` to document `id`, made if missing, and returns it
    /// after, with when the write was sent. An upsert that loses a race with
    /// another (a duplicate key, or no document back) is tried again; `None`
    /// if that kept happening.
    pub async fn upsert(
        &self,
        id: &str,
        pipeline: Vec<Document>,
    ) -> mongodb::error::Result<Option<(Document, Instant)>> {
        for _ in 0..10 {
            let sent = Instant::now();
            let result = self
                .collection
                .find_one_and_update(doc! { "_id": id }, pipeline.clone())
                .upsert(true)
                .return_document(ReturnDocument::After)
                .write_concern(self.write_concern.clone())
                .await;
            match result {
                Ok(Some(document)) => return Ok(Some((document, sent))),
                Ok(None) => continue,
                Err(error) if mongo::is_duplicate_key(&error) => continue,
                Err(error) => return Err(error),
            }
        }
        Ok(None)
    }

    /// Extends lease `id` to `ttl` from now (never shortening it), with
    /// `also` set in the same write, while `holder` holds it live. The
    /// document after, and when the write was sent; `None`: no longer held.
    pub async fn renew(
        &self,
        id: &str,
        holder: &Document,
        ttl: Duration,
        also: Document,
    ) -> mongodb::error::Result<Option<(Document, Instant)>> {
        let mut set = doc! { self.fields.expires: self.fields.extended(ttl) };
        set.extend(also);
        let sent = Instant::now();
        let document = self
            .collection
            .find_one_and_update(self.held_by(id, holder), vec![doc! { "$set": set }])
            .return_document(ReturnDocument::After)
            .write_concern(self.write_concern.clone())
            .await?;
        Ok(document.map(|document| (document, sent)))
    }

    /// Applies `update` (which ends or lessens the holding) to lease `id`
    /// while `holder` holds it live. The document after, and when the write
    /// was sent (the start of the local deadline of a lease the update
    /// passes on); `None`: it was not held (any more), and nothing changed,
    /// so a second release is a no-op.
    pub async fn release(
        &self,
        id: &str,
        holder: &Document,
        update: Vec<Document>,
    ) -> mongodb::error::Result<Option<(Document, Instant)>> {
        let sent = Instant::now();
        let document = self
            .collection
            .find_one_and_update(self.held_by(id, holder), update)
            .return_document(ReturnDocument::After)
            .write_concern(self.write_concern.clone())
            .await?;
        Ok(document.map(|document| (document, sent)))
    }
}

/// The one reader of lease documents' fields: each method says what is
/// wrong with a field in the words `describe_value` uses (the stored
/// JavaScript twins use the same), which serde's messages cannot.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fields<'a>(pub &'a Document);

impl Fields<'_> {
    /// A string, or `None` when missing or null.
    pub fn optional_string(&self, field: &str) -> Result<Option<String>, String> {
        match self.0.get(field) {
            None | Some(Bson::Null) => Ok(None),
            Some(Bson::String(text)) => Ok(Some(text.clone())),
            Some(other) => Err(format!(
                "{field} is {}, not a string",
                describe_value(other)
            )),
        }
    }

    /// A string that must be there.
    pub fn string(&self, field: &str) -> Result<String, String> {
        self.optional_string(field)?
            .ok_or_else(|| format!("{field} is missing"))
    }

    /// A date, or `None` when missing or null.
    pub fn optional_date(&self, field: &str) -> Result<Option<DateTime>, String> {
        match self.0.get(field) {
            None | Some(Bson::Null) => Ok(None),
            Some(Bson::DateTime(date)) => Ok(Some(*date)),
            Some(other) => Err(format!("{field} is {}, not a date", describe_value(other))),
        }
    }

    /// A date that must be there.
    pub fn date(&self, field: &str) -> Result<DateTime, String> {
        self.optional_date(field)?
            .ok_or_else(|| format!("{field} is missing"))
    }

    /// An integer of at least `min`, or `None` when missing.
    pub fn optional_integer(&self, field: &str, min: i64) -> Result<Option<i64>, String> {
        match self.0.get(field) {
            None => Ok(None),
            Some(Bson::Int64(n)) if *n >= min => Ok(Some(*n)),
            Some(Bson::Int32(n)) if i64::from(*n) >= min => Ok(Some(i64::from(*n))),
            Some(other) => Err(format!(
                "{field} is {}, not {}",
                describe_value(other),
                if min == 0 {
                    "a non-negative integer".to_string()
                } else {
                    format!("an integer >= {min}")
                }
            )),
        }
    }

    /// An integer of at least `min` that must be there.
    pub fn integer(&self, field: &str, min: i64) -> Result<i64, String> {
        self.optional_integer(field, min)?
            .ok_or_else(|| format!("{field} is missing"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reader_names_what_is_wrong() {
        let document = doc! { "owner": 42, "expires": "tomorrow", "n": -2_i64, "ok": 3 };
        let fields = Fields(&document);
        assert_eq!(
            fields.string("owner").unwrap_err(),
            "owner is the number 42, not a string"
        );
        assert_eq!(
            fields.date("expires").unwrap_err(),
            "expires is the string \"tomorrow\", not a date"
        );
        assert_eq!(
            fields.integer("n", -1).unwrap_err(),
            "n is the number -2, not an integer >= -1"
        );
        assert_eq!(fields.integer("ok", 0), Ok(3));
        assert_eq!(fields.date("gone").unwrap_err(), "gone is missing");
    }
}
