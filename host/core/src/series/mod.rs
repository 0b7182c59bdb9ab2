//! Gap-free series (issue 52): numbers for invoices, credit notes and
//! receipts with two promises, none twice and **none missing**. Each
//! number is taken inside the transaction that writes the business record
//! it numbers ([`Series::next_in`]), with a record of its own
//! (`series_numbers`) in the same transaction, so that a number exists
//! only with its record; [`audit()`] proves the series whole: every number
//! from the first to the last has exactly one record, confirmed with a
//! reference or voided with a reason. docs/design/gap-free-series.md has
//! the design; docs/gap-free.md how to use it.
//!
//! A series is its own document in `series`, not a counter: no path that
//! takes counter values (`seq`, `next`, `serve`, `pipeline`, the stored
//! functions) reaches it, so none can make a number with no record.

mod audit;
mod commands;
mod document;
mod error;
mod indexes;
mod next;
mod record;
mod reserve;
mod summary;

pub use audit::{audit, audit_with, Against, Audit, Finding, Reconciled, Row};
pub use commands::{commands, SeriesCommands, BY, NOW, NUMBER, PADDED, PERIOD, REFERENCE};
pub use document::{
    create_periodic_series, create_series, read_series, SeriesPeriod, SeriesState, SERIES_KIND,
};
pub use error::{SeriesError, TRANSIENT_TRANSACTION_ERROR};
pub use indexes::{
    client_keys_model, open_reservations_model, CLIENT_KEYS_INDEX, OPEN_RESERVATIONS_INDEX,
};
pub use next::{Series, Taken, MAX_REFERENCE_CHARS};
pub use record::{record_id, NumberRecord, NumberState};
pub use reserve::{
    void_expired, Reservation, Settled, EXPIRED, MAX_CLIENT_KEY_CHARS, MAX_REASON_CHARS, MAX_TTL,
    MIN_TTL,
};
pub use summary::{summaries, SeriesSummary};
