//! A counter's identity: its **incarnation**, 128 random bits written once,
//! when the counter is created, into its document (`incarnation: "9f3c..."`,
//! 32 hex digits), and copied into everything written on its behalf: the
//! copies of a striped counter's map in other deployments, its lanes
//! (`lane.incarnation`), its prefix claims and its tag claims.
//!
//! A name says which counter an application asks for; it does not say
//! which counter a document belongs to. Two deployments can each hold an
//! `orders` that never met, and a counter deleted and made again under its
//! name is another counter whose values start again. Wherever idmint decides
//! "this is the same counter" (a map copy, a lane, a prefix or tag claim),
//! it compares incarnations: a document of the same name with another
//! incarnation is another counter's.
//!
//! Counters made before idmint wrote incarnations have none. Such a
//! counter keeps working as before in one deployment; the first change of
//! stripes that spans deployments gives it one (`adopt`), before anything
//! is claimed in its name elsewhere.

use std::fmt;

use mongodb::bson::{doc, Bson, Document};
use mongodb::Collection;

use crate::mongo::{describe_value, durable_write_concern};
use crate::sequence::error::SequenceError;
use crate::sequence::name::CounterName;

/// The document field that holds a counter's incarnation.
pub const INCARNATION_FIELD: &str = "incarnation";

/// How many hex digits an incarnation has.
const DIGITS: usize = 32;

/// A counter's incarnation (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct Incarnation(String);

impl Incarnation {
    /// A fresh incarnation: 128 bits from the OS's random source.
    pub fn new() -> Self {
        Incarnation(crate::random::random_token())
    }

    /// The incarnation `text` says, if it is 32 lowercase hex digits.
    pub fn parse(text: &str) -> Option<Self> {
        let well_formed = text.len() == DIGITS
            && text
                .bytes()
                .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte));
        well_formed.then(|| Incarnation(text.to_string()))
    }

    /// The 32 hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The incarnation `field` of `document`: none where it has none (a
    /// counter made before incarnations), or what is wrong with it.
    pub(crate) fn read_field(document: &Document, field: &str) -> Result<Option<Self>, String> {
        match document.get(field) {
            None | Some(Bson::Null) => Ok(None),
            Some(Bson::String(text)) => Self::parse(text)
                .map(Some)
                .ok_or_else(|| format!("{field} {text:?} is not {DIGITS} lowercase hex digits")),
            Some(other) => Err(format!(
                "{field} is {}, not a string",
                describe_value(other)
            )),
        }
    }

    /// A counter document's incarnation (see [`Incarnation::read_field`]).
    pub(crate) fn read(document: &Document) -> Result<Option<Self>, String> {
        Self::read_field(document, INCARNATION_FIELD)
    }
}

impl Default for Incarnation {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for Incarnation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&Incarnation> for Bson {
    fn from(incarnation: &Incarnation) -> Self {
        Bson::String(incarnation.0.clone())
    }
}

/// What a filter asks of the incarnation of a document written for counter
/// `incarnation`: that incarnation, or none (a document written before
/// incarnations, which a counter given its incarnation late still has until
/// it writes them again); none matches only documents without one.
pub(crate) fn its_own_or_unmarked(incarnation: Option<&Incarnation>) -> Bson {
    match incarnation {
        Some(incarnation) => Bson::Document(doc! { "$in": [Bson::from(incarnation), Bson::Null] }),
        None => Bson::Null,
    }
}

/// What a filter asks of the incarnation of a document that counter
/// `incarnation` wrote itself: exactly that one (none: none).
pub(crate) fn filter_value(incarnation: Option<&Incarnation>) -> Bson {
    incarnation.map_or(Bson::Null, Bson::from)
}

/// How an incarnation is said in messages: its first 8 hex digits, or
/// "none" for a counter made before incarnations.
pub fn describe(incarnation: Option<&Incarnation>) -> String {
    incarnation.map_or_else(
        || "none (made before incarnations)".to_string(),
        |incarnation| incarnation.as_str()[..8].to_string(),
    )
}

/// The incarnation of counter `name`, whose document in `collection` is
/// `document`: its own, or, for a counter made before incarnations, a new
/// one written into it now (durably, only where it still has none, so that
/// of two processes adopting at once the first one's stands).
pub(crate) async fn adopt(
    collection: &Collection<Document>,
    name: &CounterName,
    document: &Document,
) -> Result<Incarnation, SequenceError> {
    let corrupt = |reason: String| SequenceError::CorruptCounter {
        name: name.clone(),
        reason,
    };
    if let Some(incarnation) = Incarnation::read(document).map_err(corrupt)? {
        return Ok(incarnation);
    }
    collection
        .update_one(
            doc! { "_id": name.as_str(), INCARNATION_FIELD: { "$exists": false } },
            doc! { "$set": { INCARNATION_FIELD: &Incarnation::new() } },
        )
        .write_concern(durable_write_concern())
        .await
        .map_err(|source| {
            SequenceError::from_database(name, "give an identity to", "update", source)
        })?;
    let after = collection
        .find_one(doc! { "_id": name.as_str() })
        .await
        .map_err(|source| SequenceError::from_database(name, "read", "find", source))?
        .ok_or_else(|| SequenceError::UnknownCounter(name.clone()))?;
    Incarnation::read(&after).map_err(corrupt)?.ok_or_else(|| {
        corrupt(format!(
            "{INCARNATION_FIELD} is missing after it was written"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_incarnations_differ_and_read_back() {
        let (one, two) = (Incarnation::new(), Incarnation::new());
        assert_ne!(one, two);
        let document = doc! { INCARNATION_FIELD: &one };
        assert_eq!(Incarnation::read(&document), Ok(Some(one)));
        assert_eq!(Incarnation::read(&doc! {}), Ok(None));
    }

    #[test]
    fn names_what_is_wrong() {
        for (value, needle) in [
            (Bson::Int32(1), "is the number 1, not a string"),
            (Bson::String("xyz".into()), "not 32 lowercase hex digits"),
            (
                Bson::String("ABCDEF0123456789ABCDEF0123456789".into()),
                "not 32 lowercase hex digits",
            ),
        ] {
            let error = Incarnation::read(&doc! { INCARNATION_FIELD: value }).unwrap_err();
            assert!(error.contains(needle), "{error}");
        }
    }
}
