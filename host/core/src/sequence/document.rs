//! The rules every counter document shares, stated twice on purpose: as a
//! server-side aggregation expression ([`well_formed`]), so that an atomic
//! update leaves a malformed counter exactly as it is, and in Rust (the
//! readers here and each kind's [`Kind::read`]), to say precisely what is
//! wrong with one. `tests/sequence.rs` holds the two to the same verdict on
//! every corrupt case.
//!
//! Every counter is `{_id: name, kind?, prefix?, ...}`:
//! - `kind`: a kind's name (`registry.rs` lists them); absent (or null)
//!   means [`DEFAULT_KIND`], the seed's document;
//! - `prefix`, a string, optional: the prefix formatted IDs of this counter
//!   use unless the caller names another;
//!
//! and then the kind's own fields (`kinds/<kind>/`).

use mongodb::bson::{doc, Bson, Document};

use super::kind::Kind;
use crate::mongo::describe_value;

/// The kind of a document without a `kind` field: the seed's cyclic counter.
pub(crate) const DEFAULT_KIND: &str = "cyclic";

/// The server-side twin of reading a counter of kind `K`: an aggregation
/// expression that is true only while the document is a well-formed counter
/// of that kind. `$and` stops at the first false term, so `$trunc` never
/// sees a non-number.
pub(crate) fn well_formed<K: Kind>() -> Document {
    let mut terms = vec![
        Bson::Document(doc! { "$eq": [{ "$ifNull": ["$kind", DEFAULT_KIND] }, K::NAME] }),
        Bson::Document(doc! { "$in": [{ "$type": "$prefix" }, ["missing", "null", "string"]] }),
    ];
    terms.extend(K::guard());
    doc! { "$and": terms }
}

/// A guard term: `field` is an integer in `min..=max` (`max` of `u64::MAX`:
/// no upper bound), the twin of [`read_integer`].
pub(crate) fn integer_in(field: &str, min: u64, max: u64) -> Bson {
    let path = format!("${field}");
    let mut terms = vec![
        Bson::Document(doc! { "$isNumber": &path }),
        Bson::Document(doc! { "$eq": [&path, { "$trunc": &path }] }),
        Bson::Document(doc! { "$gte": [&path, min as i64] }),
    ];
    if max < u64::MAX {
        terms.push(Bson::Document(doc! { "$lte": [&path, max as i64] }));
    }
    Bson::Document(doc! { "$and": terms })
}

/// Reads an integer field in `min..=max` (BSON int32, int64, or a double
/// holding an integer), or says what is wrong with it.
pub(crate) fn read_integer(doc: &Document, field: &str, min: u64, max: u64) -> Result<u64, String> {
    let value = doc
        .get(field)
        .ok_or_else(|| format!("{field} is missing"))?;
    let number = match value {
        Bson::Int32(n) => i64::from(*n),
        Bson::Int64(n) => *n,
        Bson::Double(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => *x as i64,
        Bson::Double(x) => return Err(format!("{field} is {x}, not an integer")),
        other => {
            return Err(format!(
                "{field} is {}, not a number",
                describe_value(other)
            ))
        }
    };
    let number = u64::try_from(number)
        .map_err(|_| format!("{field} is {number}, it must not be negative"))?;
    if number < min {
        return Err(format!("{field} is {number}, it must be at least {min}"));
    }
    if number > max {
        return Err(format!("{field} is {number}, it must be at most {max}"));
    }
    Ok(number)
}

/// Reads a string field, or says what is wrong with it.
pub(crate) fn read_string<'a>(doc: &'a Document, field: &str) -> Result<&'a str, String> {
    match doc.get(field) {
        Some(Bson::String(text)) => Ok(text),
        Some(other) => Err(format!(
            "{field} is {}, not a string",
            describe_value(other)
        )),
        None => Err(format!("{field} is missing")),
    }
}

/// Reads the optional `prefix`.
pub(crate) fn read_prefix(doc: &Document) -> Result<Option<String>, String> {
    match doc.get("prefix") {
        None | Some(Bson::Null) => Ok(None),
        Some(Bson::String(prefix)) => Ok(Some(prefix.clone())),
        Some(other) => Err(format!("prefix is {}, not a string", describe_value(other))),
    }
}

/// Reads the `kind` field's text: `None` for the default kind.
pub(crate) fn read_kind(doc: &Document) -> Result<Option<&str>, String> {
    match doc.get("kind") {
        None | Some(Bson::Null) => Ok(None),
        Some(Bson::String(text)) => Ok(Some(text)),
        Some(other) => Err(format!("kind is {}, not a string", describe_value(other))),
    }
}
