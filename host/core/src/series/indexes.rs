//! The indexes of the series' records (`series_numbers`), installed by
//! `idmint install` and made again (idempotent) by `series create`:
//!
//! - [`client_keys_model`]: unique on `(series, client_key)` where a record
//!   has a client key, so that two reserves with one key (a retry racing
//!   the call it retries) take one number between them;
//! - [`open_reservations_model`]: the records still `reserved`, by series
//!   and deadline, which the sweep of expired reservations reads (a partial
//!   index: it holds only the few open ones, however long the series).

use mongodb::bson::doc;
use mongodb::options::IndexOptions;
use mongodb::{Database, IndexModel};

use super::error::SeriesError;
use super::record::NumberState;
use crate::mongo::collections::SERIES_NUMBERS;
use crate::sequence::CounterName;

/// The name of the unique index on the records' client keys.
pub const CLIENT_KEYS_INDEX: &str = "idmint_series_client_keys";

/// The name of the index of open reservations.
pub const OPEN_RESERVATIONS_INDEX: &str = "idmint_series_open_reservations";

/// The unique index on `(series, client_key)` (see the module docs).
pub fn client_keys_model() -> IndexModel {
    IndexModel::builder()
        .keys(doc! { "series": 1, "client_key": 1 })
        .options(
            IndexOptions::builder()
                .name(CLIENT_KEYS_INDEX.to_string())
                .unique(true)
                .partial_filter_expression(doc! { "client_key": { "$exists": true } })
                .build(),
        )
        .build()
}

/// The index of open reservations (see the module docs).
pub fn open_reservations_model() -> IndexModel {
    IndexModel::builder()
        .keys(doc! { "series": 1, "deadline": 1 })
        .options(
            IndexOptions::builder()
                .name(OPEN_RESERVATIONS_INDEX.to_string())
                .partial_filter_expression(doc! { "state": NumberState::Reserved.as_str() })
                .build(),
        )
        .build()
}

/// Makes both indexes if they are missing (idempotent), in one command.
pub(crate) async fn ensure_indexes(
    database: &Database,
    name: &CounterName,
) -> Result<(), SeriesError> {
    database
        .collection::<mongodb::bson::Document>(SERIES_NUMBERS)
        .create_indexes([client_keys_model(), open_reservations_model()])
        .await
        .map(drop)
        .map_err(|error| SeriesError::database(name, "index the records", error))
}
