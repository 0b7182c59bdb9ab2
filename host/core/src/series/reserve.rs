//! Reservations, for apps that cannot hold a transaction open around their
//! business write (over HTTP, from a shell): **reserve** the next number
//! with a time to live, then **confirm** it with the business reference or
//! **void** it with a reason.
//!
//! - [`Series::reserve`] is one transaction: the series' `last` moves up by
//!   one and the number's record is inserted `reserved`, with its deadline
//!   (the server's clock plus the time to live, read by the same write that
//!   takes the number). Given a client key, a reserve that was answered
//!   before (its answer lost, the call retried) finds its record by the
//!   key and answers the same number, taking none: the unique index on
//!   `(series, client_key)` holds that even for two retries at once.
//! - [`Series::confirm`] and [`Series::void`] are one conditional update of
//!   the record each, decided by the server: a confirm only while the
//!   record is `reserved` and its deadline is after the server's now; a
//!   void only while it is `reserved`. Done twice with the same reference
//!   (or on a number already voided), they answer the same again.
//! - A reservation past its deadline is voided with the reason
//!   [`EXPIRED`] ([`void_expired`]), never handed to anyone else, so the
//!   numbers stay in the order they were reserved. Every reserve and every
//!   audit void the expired ones of their series first, and `idmint serve`
//!   voids those of every series once a second, so expiry does not depend
//!   on a server running.
//!
//! Every write is majority and journal.

use std::time::Duration;

use futures_util::future::BoxFuture;
use mongodb::bson::{doc, Bson, DateTime, Document};
use mongodb::options::ReturnDocument;
use mongodb::{ClientSession, Collection, Database};
use serde::Serialize;

use super::error::SeriesError;
use super::next::{Attempt, Series};
use super::record::{read as read_record, record_id, NumberState};
use crate::mongo::collections::SERIES_NUMBERS;
use crate::mongo::{durable_write_concern, is_duplicate_key};
use crate::parts::rfc3339_millis;
use crate::sequence::CounterName;

/// The reason of a reservation voided at its deadline.
pub const EXPIRED: &str = "expired";

/// Who voided an expired reservation, in its record's `by`.
const EXPIRY: &str = "idmint (expiry)";

/// The shortest time to live of a reservation.
pub const MIN_TTL: Duration = Duration::from_secs(1);

/// The longest time to live of a reservation (a week).
pub const MAX_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// The longest client key, in characters.
pub const MAX_CLIENT_KEY_CHARS: usize = 128;

/// The longest reason a number is voided with, in characters.
pub const MAX_REASON_CHARS: usize = 512;

/// A number reserved by [`Series::reserve`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reservation {
    /// The series.
    pub series: String,
    /// The label of its period (`2026`; empty for a series without
    /// periods): what confirms and voids name it by, with the number
    /// ([`Series::in_period`]).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub period: String,
    /// The number.
    pub number: u64,
    /// Its state now: `reserved`, unless a reserve with the same client key
    /// was answered before and its number was confirmed or voided since
    /// (expired, say) — a new client key reserves a new number.
    pub state: NumberState,
    /// Until when it may be confirmed (server time; RFC 3339 in JSON).
    #[serde(serialize_with = "rfc3339")]
    pub deadline: DateTime,
    /// Whether the number was reserved by an earlier call with the same
    /// client key (nothing was taken by this one).
    pub reused: bool,
}

impl Reservation {
    /// Its deadline as RFC 3339, to the millisecond (as the server keeps
    /// it): `2026-11-29T08:40:51.286Z`.
    pub fn deadline_rfc3339(&self) -> String {
        rfc3339_millis(self.deadline.timestamp_millis())
    }
}

/// A number confirmed or voided by [`Series::confirm`] or
/// [`Series::void`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Settled {
    /// The series.
    pub series: String,
    /// The label of its period (empty for a series without periods).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub period: String,
    /// The number.
    pub number: u64,
    /// `confirmed` or `voided`.
    pub state: NumberState,
    /// The reference it is confirmed with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// Why it was voided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Whether it was so already (a retried call): nothing was written.
    pub already: bool,
}

impl Series {
    /// Reserves the next number for `ttl` (from [`MIN_TTL`] to
    /// [`MAX_TTL`]), with an optional client key (1 to
    /// [`MAX_CLIENT_KEY_CHARS`] characters) that makes a retried call answer the
    /// same number (see the module docs). The reservations of the series
    /// that are past their deadline are voided first.
    pub async fn reserve(
        &self,
        ttl: Duration,
        client_key: Option<&str>,
    ) -> Result<Reservation, SeriesError> {
        if !(MIN_TTL..=MAX_TTL).contains(&ttl) {
            return Err(self.bad_input(format!(
                "the time to live is {} ms, not {} s to {} s",
                ttl.as_millis(),
                MIN_TTL.as_secs(),
                MAX_TTL.as_secs()
            )));
        }
        if let Some(key) = client_key {
            self.check_text("client key", key, MAX_CLIENT_KEY_CHARS)?;
        }
        void_expired(self.database(), Some(self.name())).await?;
        if let Some(key) = client_key {
            if let Some(reserved) = self.reserved_with(key).await? {
                return Ok(reserved);
            }
        }
        let mut session = self
            .database()
            .client()
            .start_session()
            .await
            .map_err(|error| self.database_error("start a session", error))?;
        let ttl_ms = ttl.as_millis() as i64;
        let reserving = Reserving {
            series: self,
            ttl_ms,
            client_key,
        };
        let taken = self.in_transactions(&mut session, reserving).await;
        match taken {
            Ok((reservation, _)) => Ok(reservation),
            // Another call with the same key reserved between the look-up
            // above and this one's insert: its number is the answer.
            Err(SeriesError::Database { source, .. }) if is_duplicate_key(&source) => {
                match client_key {
                    Some(key) => match self.reserved_with(key).await? {
                        Some(reserved) => Ok(reserved),
                        None => Err(self.corrupt(
                            "a record is in the way of the next number (written by hand?)",
                        )),
                    },
                    None => Err(self
                        .corrupt("a record is in the way of the next number (written by hand?)")),
                }
            }
            Err(error) => Err(error),
        }
    }

    /// The writes of one reserve, in `session`'s transaction.
    async fn reserve_in(
        &self,
        session: &mut ClientSession,
        ttl_ms: i64,
        client_key: Option<&str>,
    ) -> Result<Reservation, SeriesError> {
        // The server's clock (`taken_at`) is read by the write that takes
        // the number.
        let taken = self.take_in(session).await?;
        let (number, period) = (taken.last, taken.current);
        let now = taken
            .taken_at
            .ok_or_else(|| self.corrupt("the server did not write taken_at with $$NOW"))?;
        let deadline = DateTime::from_millis(now.timestamp_millis().saturating_add(ttl_ms));
        let mut record = doc! {
            "_id": record_id(self.name(), &period, number),
            "series": self.name().as_str(),
            "period": &period,
            "number": number as i64,
            "state": NumberState::Reserved.as_str(),
            "reserved_at": now,
            "deadline": deadline,
            "reserved_by": self.by_name(),
            "at": now,
            "by": self.by_name(),
        };
        if let Some(key) = client_key {
            record.insert("client_key", key);
        }
        self.records()
            .insert_one(record)
            .session(&mut *session)
            .await
            .map_err(|error| self.database_error("record the reservation", error))?;
        Ok(Reservation {
            series: self.name().to_string(),
            period,
            number,
            state: NumberState::Reserved,
            deadline,
            reused: false,
        })
    }

    /// The reservation an earlier reserve with client key `key` made, if
    /// one did.
    async fn reserved_with(&self, key: &str) -> Result<Option<Reservation>, SeriesError> {
        let found = self
            .records()
            .find_one(doc! { "series": self.name().as_str(), "client_key": key })
            .await
            .map_err(|error| self.database_error("look up the client key", error))?;
        let Some(document) = found else {
            return Ok(None);
        };
        let record = read_record(self.name(), &document).map_err(|reason| self.corrupt(&reason))?;
        let deadline = document
            .get_datetime("deadline")
            .copied()
            .map_err(|_| self.corrupt("a reservation's record has no deadline"))?;
        Ok(Some(Reservation {
            series: self.name().to_string(),
            period: record.period.clone(),
            number: record.number,
            state: record.state,
            deadline,
            reused: true,
        }))
    }

    /// Confirms reserved number `number` with `reference` (1 to
    /// [`MAX_REFERENCE_CHARS`](super::MAX_REFERENCE_CHARS) characters), if it is
    /// still reserved and before its deadline (server time). Confirmed
    /// already with the same reference: the same answer, `already`. Refused
    /// ([`SeriesError::Settled`]) when it was confirmed with another
    /// reference, voided, or its deadline passed (it is then voided
    /// [`EXPIRED`]); [`SeriesError::NotReserved`] when it has no record.
    pub async fn confirm(&self, number: u64, reference: &str) -> Result<Settled, SeriesError> {
        self.check_reference(reference)?;
        // One write, decided by the server: the record is matched while
        // reserved, and confirmed only if its deadline is after the
        // server's now (else left as it was, and voided below).
        let filter = doc! {
            "_id": record_id(self.name(), self.period(), number),
            "state": NumberState::Reserved.as_str(),
        };
        let update = settle(
            NumberState::Confirmed,
            "reference",
            reference,
            self.by_name(),
            Some(doc! { "$gt": ["$deadline", "$$NOW"] }),
        );
        let after = self
            .records()
            .find_one_and_update(filter, update)
            .return_document(ReturnDocument::After)
            .write_concern(durable_write_concern())
            .await
            .map_err(|error| self.database_error("confirm", error))?;
        if let Some(after) = after {
            if after.get_str("state") == Ok(NumberState::Confirmed.as_str()) {
                return Ok(self.settled(number, NumberState::Confirmed, reference, false));
            }
        }
        let record = self.record(number).await?;
        match record.state {
            NumberState::Confirmed if record.reference.as_deref() == Some(reference) => {
                Ok(self.settled(number, NumberState::Confirmed, reference, true))
            }
            NumberState::Confirmed => Err(self.settled_error(
                number,
                format!(
                    "is confirmed with reference {:?} already, not {reference:?}",
                    record.reference.unwrap_or_default()
                ),
            )),
            NumberState::Voided => Err(self.settled_error(
                number,
                format!(
                    "is voided ({:?}), and a voided number is never confirmed",
                    record.reason.unwrap_or_default()
                ),
            )),
            NumberState::Reserved => {
                // Past its deadline: voided now, as the sweep would.
                void_expired(self.database(), Some(self.name())).await?;
                Err(self.settled_error(
                    number,
                    format!(
                        "was reserved until a deadline that has passed, so it is voided \
                         \"{EXPIRED}\" and never confirmed"
                    ),
                ))
            }
        }
    }

    /// Voids reserved number `number` with `reason` (1 to
    /// [`MAX_REASON_CHARS`] characters). Voided already: the answer says so
    /// (`already`, with the reason it has). Refused
    /// ([`SeriesError::Settled`]) when it is confirmed;
    /// [`SeriesError::NotReserved`] when it has no record.
    pub async fn void(&self, number: u64, reason: &str) -> Result<Settled, SeriesError> {
        self.check_text("reason", reason, MAX_REASON_CHARS)?;
        let filter = doc! {
            "_id": record_id(self.name(), self.period(), number),
            "state": NumberState::Reserved.as_str(),
        };
        let update = settle(NumberState::Voided, "reason", reason, self.by_name(), None);
        if self.settle_one(filter, update, "void").await? {
            return Ok(self.settled(number, NumberState::Voided, reason, false));
        }
        let record = self.record(number).await?;
        match record.state {
            NumberState::Voided => Ok(self.settled(
                number,
                NumberState::Voided,
                record.reason.as_deref().unwrap_or_default(),
                true,
            )),
            NumberState::Confirmed => Err(self.settled_error(
                number,
                format!(
                    "is confirmed with reference {:?}, and a confirmed number is never voided",
                    record.reference.unwrap_or_default()
                ),
            )),
            NumberState::Reserved => Err(self.corrupt(&format!(
                "number {number} reads reserved but did not match its void"
            ))),
        }
    }

    /// One conditional update of a record, durable: whether it matched.
    async fn settle_one(
        &self,
        filter: Document,
        update: Vec<Document>,
        action: &'static str,
    ) -> Result<bool, SeriesError> {
        let result = self
            .records()
            .update_one(filter, update)
            .write_concern(durable_write_concern())
            .await
            .map_err(|error| self.database_error(action, error))?;
        Ok(result.matched_count == 1)
    }

    /// The record of number `number`, or [`SeriesError::NotReserved`].
    async fn record(&self, number: u64) -> Result<super::NumberRecord, SeriesError> {
        let found = self
            .records()
            .find_one(doc! { "_id": record_id(self.name(), self.period(), number) })
            .await
            .map_err(|error| self.database_error("read the record", error))?;
        match found {
            Some(document) => {
                read_record(self.name(), &document).map_err(|reason| self.corrupt(&reason))
            }
            None => Err(SeriesError::NotReserved {
                name: self.name().clone(),
                number,
            }),
        }
    }

    fn settled(&self, number: u64, state: NumberState, text: &str, already: bool) -> Settled {
        let text = Some(text.to_string());
        let (reference, reason) = match state {
            NumberState::Confirmed => (text, None),
            _ => (None, text),
        };
        Settled {
            series: self.name().to_string(),
            period: self.period().to_string(),
            number,
            state,
            reference,
            reason,
            already,
        }
    }

    fn settled_error(&self, number: u64, why: String) -> SeriesError {
        SeriesError::Settled {
            name: self.name().clone(),
            number,
            why,
        }
    }

    pub(super) fn check_text(
        &self,
        what: &str,
        text: &str,
        limit: usize,
    ) -> Result<(), SeriesError> {
        if text.is_empty() {
            Err(self.bad_input(format!("the {what} is empty")))
        } else if text.chars().count() > limit {
            Err(self.bad_input(format!(
                "the {what} is {} characters long, the limit is {limit}",
                text.chars().count()
            )))
        } else if text.chars().any(char::is_control) {
            Err(self.bad_input(format!("the {what} holds a control character")))
        } else {
            Ok(())
        }
    }

    fn bad_input(&self, reason: String) -> SeriesError {
        SeriesError::BadInput {
            name: self.name().clone(),
            reason,
        }
    }

    fn corrupt(&self, reason: &str) -> SeriesError {
        SeriesError::Corrupt {
            name: self.name().clone(),
            reason: reason.to_string(),
        }
    }

    fn database_error(&self, action: &'static str, error: mongodb::error::Error) -> SeriesError {
        SeriesError::database(self.name(), action, error)
    }
}

/// [`Series::reserve`]'s run: the number and its record, reserved.
struct Reserving<'a> {
    series: &'a Series,
    ttl_ms: i64,
    client_key: Option<&'a str>,
}

impl Attempt for Reserving<'_> {
    type Output = Reservation;

    fn run<'s>(
        &'s mut self,
        session: &'s mut ClientSession,
    ) -> BoxFuture<'s, Result<Reservation, SeriesError>> {
        Box::pin(
            self.series
                .reserve_in(session, self.ttl_ms, self.client_key),
        )
    }
}

/// The update that settles a reserved record: `state`, its `field` (the
/// reference or the reason) set to `text`, when and by whom (the server's
/// clock). Every string is a `$literal`: a reference that begins with `$`
/// is not a field path.
///
/// Given `when` (an expression of the record: its deadline against the
/// server's now), each field changes only where it holds, and the record is
/// left as it was elsewhere. The condition is evaluated in the update, not
/// in the filter: a filter on `$expr` is a scan of the collection on some
/// servers, where the update's filter (`_id`, or the open reservations)
/// reads an index.
fn settle(
    state: NumberState,
    field: &str,
    text: &str,
    by: &str,
    when: Option<Document>,
) -> Vec<Document> {
    let Some(when) = when else {
        return vec![doc! { "$set": {
            "state": state.as_str(),
            field: { "$literal": text },
            "at": "$$NOW",
            "by": { "$literal": by },
        } }];
    };
    let either = |then: Bson, otherwise: &str| doc! { "$cond": ["$_when", then, otherwise] };
    vec![
        doc! { "$set": { "_when": when } },
        doc! { "$set": {
            "state": either(Bson::from(state.as_str()), "$state"),
            field: either(Bson::Document(doc! { "$literal": text }), &format!("${field}")),
            "at": either(Bson::from("$$NOW"), "$at"),
            "by": either(Bson::Document(doc! { "$literal": by }), "$by"),
        } },
        doc! { "$unset": "_when" },
    ]
}

/// A date as RFC 3339, to the millisecond (as the server keeps it).
fn rfc3339<S: serde::Serializer>(date: &DateTime, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&rfc3339_millis(date.timestamp_millis()))
}

/// Voids every reservation past its deadline (the server's clock) with the
/// reason [`EXPIRED`]: those of series `name`, or of every series. Returns
/// how many it voided. One durable `updateMany` of the open reservations
/// (the partial index of them), each voided only if its deadline is past.
pub async fn void_expired(
    database: &Database,
    name: Option<&CounterName>,
) -> Result<u64, SeriesError> {
    let mut filter = doc! { "state": NumberState::Reserved.as_str() };
    if let Some(name) = name {
        filter.insert("series", name.as_str());
    }
    let records: Collection<Document> = database.collection(SERIES_NUMBERS);
    let result = records
        .update_many(
            filter,
            settle(
                NumberState::Voided,
                "reason",
                EXPIRED,
                EXPIRY,
                Some(doc! { "$lte": ["$deadline", "$$NOW"] }),
            ),
        )
        .write_concern(durable_write_concern())
        .await
        .map_err(|error| match name {
            Some(name) => SeriesError::database(name, "void the expired reservations", error),
            None => SeriesError::EverySeries {
                action: "voiding the expired reservations",
                source: error,
            },
        })?;
    Ok(result.modified_count)
}
