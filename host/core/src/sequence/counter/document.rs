//! A counter document, read: the fields every counter shares and its
//! kind's own ([`CounterDocument`]). A kind reads its own counters with
//! [`read`] and [`find`], which check the document's `kind` once: a
//! document of another kind is refused as the registry reads it
//! ([`Registered::refuse`]: an unknown kind, another kind's malformed
//! document, or [`SequenceError::WrongKind`]), and the kind's own fields are
//! read only then. The registry reads a counter of any kind
//! ([`CounterState`](crate::sequence::CounterState)) with the same
//! [`CounterDocument::read_with`].

use mongodb::bson::{doc, Document};
use mongodb::{Collection, Database};
use serde::Serialize;

use super::fields::{read_kind, read_prefixes, DEFAULT_KIND};
use crate::sequence::error::SequenceError;
use crate::sequence::identity::Incarnation;
use crate::sequence::kind_trait::Kind;
use crate::sequence::name::CounterName;
use crate::sequence::settings::Settings;

/// A well-formed counter, as read from the server: `S` is its kind's
/// fields (one kind's state, or the registry's `KindState` for any kind),
/// `M` what a striped counter's map is read as (the registry's reader
/// only: a kind's own reader reads no map, [`Unstriped`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CounterDocument<S, M = Unstriped> {
    /// The counter's name (`_id`).
    pub name: String,
    /// The kind and its fields.
    #[serde(flatten)]
    pub kind: S,
    /// The counter's default ID prefix, if it has one (`None`: the empty
    /// prefix, or none at all for a counter that owns none).
    pub prefix: Option<String>,
    /// The prefixes the counter owns, the default first: the only ones its
    /// formatted IDs may use. Empty: it hands out raw values only.
    pub prefixes: Vec<String>,
    /// Whether the document declares its prefixes (so that the unique index
    /// keeps other counters from them), or they are derived from an older
    /// document's `prefix` (see `fields.rs`).
    #[serde(skip_serializing_if = "is_true")]
    pub prefixes_declared: bool,
    /// A striped counter's map (its document's `kind` is `striped`; the
    /// kind above is its lanes'), `None` for an unstriped counter. Only the
    /// registry's reader of any kind reads a map; a kind's own reader
    /// refuses it ([`SequenceError::Striped`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub striped: Option<M>,
    /// The counter's identity (`identity.rs`): none for a counter made
    /// before incarnations.
    #[serde(skip)]
    pub incarnation: Option<Incarnation>,
}

/// The map of a counter read by a kind's own reader, which refuses a
/// striped counter: there is none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Unstriped {}

fn is_true(value: &bool) -> bool {
    *value
}

impl<S, M> CounterDocument<S, M> {
    /// Reads `document`, counter `name`: its kind's fields with
    /// `read_fields`, given the kind's name (the default kind's for a
    /// document without one), and the shared fields; or what is wrong.
    pub(crate) fn read_with(
        name: &CounterName,
        document: &Document,
        read_fields: impl FnOnce(&str) -> Result<S, SequenceError>,
    ) -> Result<Self, SequenceError> {
        let kind = read_kind(document).map_err(|reason| corrupt(name, reason))?;
        let kind = read_fields(kind.unwrap_or(DEFAULT_KIND))?;
        let owned = read_prefixes(document).map_err(|reason| corrupt(name, reason))?;
        let incarnation = Incarnation::read(document).map_err(|reason| corrupt(name, reason))?;
        Ok(Self {
            name: name.to_string(),
            kind,
            prefix: owned.prefixes.first().filter(|p| !p.is_empty()).cloned(),
            prefixes: owned.prefixes,
            prefixes_declared: owned.declared,
            striped: None,
            incarnation,
        })
    }

    /// Whether the counter owns `prefix`: whether its formatted IDs may use it.
    pub fn owns(&self, prefix: &str) -> bool {
        self.prefixes.iter().any(|owned| owned == prefix)
    }

    /// The prefix its formatted IDs use when the caller names none: the
    /// default, or the empty prefix.
    pub fn default_prefix(&self) -> &str {
        self.prefix.as_deref().unwrap_or_default()
    }
}

/// The error of counter `name`'s malformed document.
pub(crate) fn corrupt(name: &CounterName, reason: String) -> SequenceError {
    SequenceError::CorruptCounter {
        name: name.clone(),
        reason,
    }
}

/// A kind the registry lists. Implemented by the registry for each kind
/// (`dispatch.rs`), never by a kind itself: it is how a kind's reader knows
/// the other kinds without importing the registry.
pub trait Registered: Kind {
    /// Why `document`, counter `name`, whose `kind` is not this kind's,
    /// cannot be read as one: an unknown kind, what is wrong with the
    /// document of the kind it is, or [`SequenceError::WrongKind`].
    fn refuse(name: &CounterName, document: &Document) -> SequenceError;

    /// The kind of `document`, counter `name`, whatever it is (a striped
    /// counter's: its lanes'), or why it cannot be read.
    fn kind_of(name: &CounterName, document: &Document) -> Result<&'static str, SequenceError>;
}

/// Reads `document`, counter `name`, as a counter of kind `K`: a document
/// of another kind is refused ([`Registered::refuse`]), a malformed one is
/// [`SequenceError::CorruptCounter`].
pub(crate) fn read<K: Registered>(
    name: &CounterName,
    document: &Document,
) -> Result<CounterDocument<K::State>, SequenceError> {
    CounterDocument::read_with(name, document, |kind| {
        if kind != K::NAME {
            return Err(K::refuse(name, document));
        }
        K::read(document).map_err(|reason| corrupt(name, reason))
    })
}

/// Reads counter `name` from `collection` as it is now with `read`; a
/// missing counter is [`SequenceError::UnknownCounter`].
pub(crate) async fn find_with<T>(
    collection: &Collection<Document>,
    name: &CounterName,
    read: impl FnOnce(&CounterName, &Document) -> Result<T, SequenceError>,
) -> Result<T, SequenceError> {
    match collection
        .find_one(doc! { "_id": name.as_str() })
        .await
        .map_err(|source| SequenceError::from_database(name, "read", "find", source))?
    {
        Some(document) => read(name, &document),
        None => Err(SequenceError::UnknownCounter(name.clone())),
    }
}

/// Reads counter `name` of kind `K` from `collection` as it is now (see
/// [`read`]).
pub(crate) async fn find<K: Registered>(
    collection: &Collection<Document>,
    name: &CounterName,
) -> Result<CounterDocument<K::State>, SequenceError> {
    find_with(collection, name, read::<K>).await
}

/// The document of a new counter `name` of kind `K` made at `now_ms` from
/// `settings` (only the kind's own) that owns `prefixes` (already checked),
/// or why the kind refuses the settings.
pub(crate) fn new_document<K: Kind>(
    name: &CounterName,
    settings: &Settings,
    prefixes: &[String],
    now_ms: u64,
) -> Result<Document, SequenceError> {
    let mut document = doc! { "_id": name.as_str(), "kind": K::NAME };
    document.extend(K::fields(settings, now_ms)?);
    if let Some(prefix) = prefixes.first().filter(|p| !p.is_empty()) {
        document.insert("prefix", prefix.as_str());
    }
    document.insert("prefixes", prefixes);
    Ok(document)
}

/// The counter documents of `database` that match `filter`, by name, with
/// only the fields `projection` names (empty: whole).
pub(crate) async fn find_counters(
    database: &Database,
    filter: Document,
    projection: Document,
) -> Result<Vec<Document>, SequenceError> {
    use futures_util::TryStreamExt;
    database
        .collection::<Document>(crate::mongo::collections::COUNTERS)
        .find(filter)
        .projection(projection)
        .sort(mongodb::bson::doc! { "_id": 1 })
        .await
        .map_err(|source| SequenceError::ListCounters { source })?
        .try_collect()
        .await
        .map_err(|source| SequenceError::ListCounters { source })
}
