//! Taking the next number of a series inside a transaction.
//!
//! [`Series::next_in`] makes two writes in the caller's transaction: `last`
//! of the series document moves up by one, and the number's record is
//! inserted, confirmed with the caller's reference. If the transaction
//! aborts, neither happened and the number was never used; if it commits,
//! both did. Two transactions on one series write the same document, so
//! the second fails with a write conflict that the server labels
//! `TransientTransactionError`: it is run again whole
//! ([`SeriesError::is_transient`]), and takes the next number then, since
//! the first one's `$inc` is either committed or gone. [`Series::take`]
//! runs such a transaction of its own, with its retries, for callers with
//! no business write to make beside it (the CLI).
//!
//! Commits take majority and journal (the transaction's write concern:
//! [`Series::take`] sets it; an app's own transaction must, see
//! docs/gap-free.md), so a number whose commit was acknowledged is never
//! taken again after a failover.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use mongodb::bson::{doc, Document};
use mongodb::error::{ErrorKind, UNKNOWN_TRANSACTION_COMMIT_RESULT};
use mongodb::options::{ReadConcern, ReturnDocument};
use mongodb::{ClientSession, Collection, Database};

use super::document::{
    read_series, series_collection, take_update, takes_filter, SeriesPeriod, SeriesState,
};
use super::error::SeriesError;
use super::record::confirmed;
use crate::lease::host_name;
use crate::mongo::collections::SERIES_NUMBERS;
use crate::mongo::durable_write_concern;
use crate::random::fraction;
use crate::sequence::{CounterName, MAX_VALUE};

/// The longest reference a number is confirmed with, in characters
/// (Unicode code points, as JSON Schema's `maxLength` counts).
pub const MAX_REFERENCE_CHARS: usize = 512;

/// How long [`Series::take`] runs its transaction again after transient
/// errors before it gives up (the driver's own `with_transaction` allows
/// 120 s; a CLI call wants less).
const RETRY_FOR: Duration = Duration::from_secs(30);

/// A gap-free series, opened (see the module docs).
#[derive(Debug, Clone)]
pub struct Series {
    database: Database,
    name: CounterName,
    by: String,
    period: String,
    /// The series' period, once a take learnt it (it never changes).
    shape: Arc<OnceLock<Option<SeriesPeriod>>>,
}

/// A number taken by [`Series::take`], and how many times its transaction
/// ran (more than once: a transient error, a write conflict with another
/// transaction on the series, made it run again).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Taken {
    /// The number.
    pub number: u64,
    /// Its period's label (empty for a series without periods).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub period: String,
    /// The runs of the transaction it took.
    pub attempts: u32,
}

impl Series {
    /// Series `name` of `database`; its records say they were taken by
    /// this process (`host:pid`) unless [`Series::by`] says otherwise.
    pub fn new(database: &Database, name: CounterName) -> Self {
        Self {
            database: database.clone(),
            by: format!("{}:{}", host_name(), std::process::id()),
            name,
            period: String::new(),
            shape: Arc::default(),
        }
    }

    /// The period whose numbers [`Series::confirm`] and [`Series::void`]
    /// settle: the label a reservation answered (`2026`), for a series
    /// numbered per period; none (`""`, the default) for the others.
    pub fn in_period(mut self, period: impl Into<String>) -> Self {
        self.period = period.into();
        self
    }

    /// The period it settles numbers of.
    pub fn period(&self) -> &str {
        &self.period
    }

    /// Who its records say took their numbers (a token's name, an app's).
    pub fn by(mut self, by: impl Into<String>) -> Self {
        self.by = by.into();
        self
    }

    /// Who its records say took their numbers.
    pub fn by_name(&self) -> &str {
        &self.by
    }

    /// The series' name.
    pub fn name(&self) -> &CounterName {
        &self.name
    }

    /// The database it is in.
    pub fn database(&self) -> &Database {
        &self.database
    }

    /// Takes the next number of the series in the transaction in progress
    /// on `session`, confirmed with `reference` (the business record's,
    /// e.g. the invoice's id: 1 to [`MAX_REFERENCE_CHARS`] characters, none a
    /// control character): its
    /// record and the series' `last` are written in that transaction, and
    /// are kept only if it commits. A session with no transaction in
    /// progress is refused ([`SeriesError::NotInTransaction`]) and nothing
    /// is written. An error for which [`SeriesError::is_transient`] holds
    /// means: abort, and run the whole transaction again.
    ///
    /// ```no_run
    /// use idmint::mongo::durable_write_concern;
    /// use idmint::series::Series;
    /// use mongodb::bson::Document;
    ///
    /// async fn number_invoice(
    ///     db: &mongodb::Database,
    ///     series: &Series,
    ///     invoice: Document,
    /// ) -> Result<u64, Box<dyn std::error::Error>> {
    ///     let mut session = db.client().start_session().await?;
    ///     loop {
    ///         session.start_transaction().write_concern(durable_write_concern()).await?;
    ///         let id = invoice.get_str("_id")?.to_string();
    ///         let number = match series.next_in(&mut session, &id).await {
    ///             Ok(number) => number,
    ///             Err(error) if error.is_transient() => {
    ///                 session.abort_transaction().await?;
    ///                 continue;
    ///             }
    ///             Err(error) => return Err(error.into()),
    ///         };
    ///         let mut invoice = invoice.clone();
    ///         invoice.insert("number", number as i64);
    ///         db.collection("invoices").insert_one(invoice).session(&mut session).await?;
    ///         match session.commit_transaction().await {
    ///             Ok(()) => return Ok(number),
    ///             Err(error) if error.contains_label("TransientTransactionError") => continue,
    ///             Err(error) => return Err(error.into()),
    ///         }
    ///     }
    /// }
    /// ```
    pub async fn next_in(
        &self,
        session: &mut ClientSession,
        reference: &str,
    ) -> Result<u64, SeriesError> {
        self.next_in_period(session, reference)
            .await
            .map(|(number, _)| number)
    }

    /// [`Series::next_in`], with the label of the number's period (empty
    /// for a series without periods).
    pub async fn next_in_period(
        &self,
        session: &mut ClientSession,
        reference: &str,
    ) -> Result<(u64, String), SeriesError> {
        self.check_reference(reference)?;
        self.refuse_outside_transaction(session).await?;
        let taken = self.take_in(session).await?;
        let number = taken.last;
        self.records()
            .insert_one(confirmed(
                &self.name,
                &taken.current,
                number,
                reference,
                &self.by,
            ))
            .session(&mut *session)
            .await
            .map_err(|error| SeriesError::database(&self.name, "record the number", error))?;
        Ok((number, taken.current))
    }

    /// Takes the next number in a transaction of its own, confirmed with
    /// `reference`: [`Series::number_with`] with no business write, on a
    /// session of its own.
    pub async fn take(&self, reference: &str) -> Result<Taken, SeriesError> {
        self.check_reference(reference)?;
        let mut session = self
            .database
            .client()
            .start_session()
            .await
            .map_err(|error| SeriesError::database(&self.name, "start a session", error))?;
        self.number_with(&mut session, reference, |_, _| Box::pin(async { Ok(()) }))
            .await
    }

    /// Numbers a business record in a transaction it starts on `session`:
    /// takes the next number confirmed with `reference` ([`Series::next_in`]),
    /// runs `write` with the session and the number (the record's own
    /// writes, e.g. the invoice with its number, each `.session(session)`;
    /// a boxed future that owns what it needs, as the driver's
    /// `and_run` takes),
    /// and commits with majority and journal. A transient error (a write
    /// conflict with another transaction on the series, from the take,
    /// from `write` or from the commit) aborts and runs it all again after
    /// a pause that grows from 2 ms to 100 ms, with jitter, for up to 30 s;
    /// a commit whose result is unknown is committed again. Nothing is
    /// taken twice: an aborted run's number was never used, and the number
    /// of the run that committed is the one returned; a series held past
    /// the 30 s is [`SeriesError::Held`]. `write` must return
    /// the errors of its writes (a write that failed may have aborted the
    /// transaction on the server).
    ///
    /// ```no_run
    /// use futures_util::FutureExt;
    /// use idmint::series::{Series, SeriesError};
    /// use mongodb::bson::{doc, Document};
    ///
    /// async fn number_invoice(
    ///     db: &mongodb::Database,
    ///     series: &Series,
    ///     invoice_id: &str,
    /// ) -> Result<u64, SeriesError> {
    ///     let invoices = db.collection::<Document>("invoices");
    ///     let mut session = db.client().start_session().await.expect("a session");
    ///     let taken = series
    ///         .number_with(&mut session, invoice_id, |session, number| {
    ///             let invoice = doc! { "_id": invoice_id, "number": number as i64 };
    ///             let invoices = invoices.clone();
    ///             async move { invoices.insert_one(invoice).session(session).await.map(|_| ()) }
    ///                 .boxed()
    ///         })
    ///         .await?;
    ///     Ok(taken.number)
    /// }
    /// ```
    pub async fn number_with<F>(
        &self,
        session: &mut ClientSession,
        reference: &str,
        write: F,
    ) -> Result<Taken, SeriesError>
    where
        F: for<'s> FnMut(&'s mut ClientSession, u64) -> BoxFuture<'s, mongodb::error::Result<()>>
            + Send,
    {
        self.check_reference(reference)?;
        let numbering = Numbering {
            series: self,
            reference,
            write,
        };
        self.in_transactions(session, numbering)
            .await
            .map(|((number, period), attempts)| Taken {
                number,
                period,
                attempts,
            })
    }

    /// Runs `attempt` in a transaction on `session` and commits it with
    /// majority and journal, again after each transient error (see
    /// [`Series::number_with`]): what the committed run returned, and how
    /// many runs it took. A run that fails before its commit is aborted.
    pub(super) async fn in_transactions<T>(
        &self,
        session: &mut ClientSession,
        mut attempt: impl Attempt<Output = T>,
    ) -> Result<(T, u32), SeriesError> {
        let began = Instant::now();
        let mut pause = Duration::from_millis(2);
        let mut attempts = 0;
        loop {
            attempts += 1;
            match self.run_once(session, &mut attempt, began).await {
                Ok(done) => return Ok((done, attempts)),
                Err(error) if error.is_transient() && began.elapsed() < RETRY_FOR => {
                    // Apart, so that the writers a conflict aborted do not
                    // all meet again at once.
                    tokio::time::sleep(pause.mul_f64(0.5 + fraction())).await;
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                Err(error) if error.is_transient() => {
                    return Err(SeriesError::Held {
                        name: self.name.clone(),
                        waited_s: began.elapsed().as_secs(),
                        source: Box::new(error),
                    })
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// One run of [`Series::in_transactions`]; aborted if it fails before
    /// its commit.
    async fn run_once<T>(
        &self,
        session: &mut ClientSession,
        attempt: &mut impl Attempt<Output = T>,
        began: Instant,
    ) -> Result<T, SeriesError> {
        session
            .start_transaction()
            .read_concern(ReadConcern::majority())
            .write_concern(durable_write_concern())
            .await
            .map_err(|error| SeriesError::database(&self.name, "start a transaction", error))?;
        match attempt.run(session).await {
            Ok(done) => self.commit(session, began).await.map(|()| done),
            Err(error) => {
                let _ = session.abort_transaction().await;
                Err(error)
            }
        }
    }

    /// Commits the transaction on `session`, again while its result is
    /// unknown (the driver's rule: such a commit may be retried).
    async fn commit(&self, session: &mut ClientSession, began: Instant) -> Result<(), SeriesError> {
        loop {
            match session.commit_transaction().await {
                Ok(()) => return Ok(()),
                Err(error)
                    if error.contains_label(UNKNOWN_TRANSACTION_COMMIT_RESULT)
                        && began.elapsed() < RETRY_FOR =>
                {
                    continue
                }
                Err(error) => return Err(SeriesError::database(&self.name, "commit", error)),
            }
        }
    }

    pub(super) fn check_reference(&self, reference: &str) -> Result<(), SeriesError> {
        if reference.is_empty() {
            return Err(SeriesError::BadInput {
                name: self.name.clone(),
                reason: "the reference is empty: a number is confirmed with the business record's"
                    .to_string(),
            });
        }
        self.check_text("reference", reference, MAX_REFERENCE_CHARS)
    }

    /// Refuses `session` unless a transaction is in progress on it. The
    /// driver says so only one way: an operation that sets its own read
    /// concern inside a transaction is refused by the driver itself (the
    /// transactions specification), before anything is sent. Outside one,
    /// that read runs (one round trip) and the number is refused.
    async fn refuse_outside_transaction(
        &self,
        session: &mut ClientSession,
    ) -> Result<(), SeriesError> {
        let probe = series_collection(&self.database)
            .find_one(doc! { "_id": self.name.as_str() })
            .read_concern(ReadConcern::local())
            .session(&mut *session)
            .await;
        match probe {
            Err(error) if is_in_transaction_refusal(&error) => Ok(()),
            Err(error) => Err(SeriesError::database(&self.name, "read", error)),
            Ok(_) => Err(SeriesError::NotInTransaction(self.name.clone())),
        }
    }

    /// Takes the next number in `session`'s transaction: the series as
    /// the take left it (`last` is the number, `current` its period). The
    /// take is built for the series' period, which never changes once the
    /// series is made: learnt from the first take that did not match (no
    /// period guessed), then kept by this handle and its clones.
    pub(super) async fn take_in(
        &self,
        session: &mut ClientSession,
    ) -> Result<SeriesState, SeriesError> {
        let mut period = self.shape.get().cloned().flatten();
        let mut read_it = self.shape.get().is_some();
        loop {
            let after = series_collection(&self.database)
                .find_one_and_update(
                    takes_filter(&self.name, period.as_ref()),
                    take_update(period.as_ref()),
                )
                .return_document(ReturnDocument::After)
                .session(&mut *session)
                .await
                .map_err(|error| SeriesError::database(&self.name, "take a number", error))?;
            if let Some(after) = after {
                let _ = self.shape.set(period);
                return super::document::read(&after).map_err(|reason| SeriesError::Corrupt {
                    name: self.name.clone(),
                    reason,
                });
            }
            if read_it {
                return Err(self.why_untaken(session).await);
            }
            // The take matched nothing: the series has a period it did not
            // know, or cannot be taken from (the read says which).
            let state = read_series(&self.database, &self.name, Some(session)).await?;
            read_it = true;
            if state.period == period {
                return Err(self.why_untaken(session).await);
            }
            period = state.period;
        }
    }

    /// Why the take matched nothing: no such series, a malformed one, or
    /// one at its last number.
    async fn why_untaken(&self, session: &mut ClientSession) -> SeriesError {
        match read_series(&self.database, &self.name, Some(session)).await {
            Ok(state) if state.last >= MAX_VALUE => SeriesError::Exhausted(self.name.clone()),
            Ok(_) => SeriesError::Corrupt {
                name: self.name.clone(),
                reason: "it did not match a take although it reads well formed".to_string(),
            },
            Err(error) => error,
        }
    }

    pub(super) fn records(&self) -> Collection<Document> {
        self.database.collection(SERIES_NUMBERS)
    }
}

/// What one run of a transaction writes (boxed, so that its future is
/// `Send` for every lifetime of the session: a service runs it on its
/// threads).
pub(super) trait Attempt: Send {
    /// What a committed run returns.
    type Output;
    /// The writes of one run, in `session`'s transaction.
    fn run<'s>(
        &'s mut self,
        session: &'s mut ClientSession,
    ) -> BoxFuture<'s, Result<Self::Output, SeriesError>>;
}

/// [`Series::number_with`]'s run: the number, then the caller's writes.
struct Numbering<'a, F> {
    series: &'a Series,
    reference: &'a str,
    write: F,
}

impl<F> Attempt for Numbering<'_, F>
where
    F: for<'s> FnMut(&'s mut ClientSession, u64) -> BoxFuture<'s, mongodb::error::Result<()>>
        + Send,
{
    type Output = (u64, String);

    fn run<'s>(
        &'s mut self,
        session: &'s mut ClientSession,
    ) -> BoxFuture<'s, Result<(u64, String), SeriesError>> {
        Box::pin(async move {
            let (number, period) = self.series.next_in_period(session, self.reference).await?;
            (self.write)(session, number).await.map_err(|error| {
                SeriesError::database(&self.series.name, "write the record", error)
            })?;
            Ok((number, period))
        })
    }
}

/// Whether `error` is the driver's refusal of a read concern set inside a
/// transaction.
fn is_in_transaction_refusal(error: &mongodb::error::Error) -> bool {
    matches!(&*error.kind, ErrorKind::InvalidArgument { message, .. }
        if message.contains("read concern") && message.contains("transaction"))
}
