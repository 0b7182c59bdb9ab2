//! The rules every counter document shares, stated twice on purpose: as a
//! server-side aggregation expression ([`well_formed`]), so that an atomic
//! update leaves a malformed counter exactly as it is, and in Rust (the
//! readers here and each kind's [`Kind::read`]), to say precisely what is
//! wrong with one. `tests/cyclic.rs` holds the two to the same verdict on
//! every corrupt case.
//!
//! Every counter is `{_id: name, kind?, prefix?, prefixes?, ...}`:
//! - `kind`: a kind's name (`registry.rs` lists them); absent (or null)
//!   means [`DEFAULT_KIND`], the seed's document;
//! - `prefixes`, an array of distinct strings: the prefixes the counter
//!   *owns*, the only ones its formatted IDs may use. A unique index on it
//!   (`PREFIXES_INDEX`) keeps two counters from owning one prefix, the empty
//!   one included, so that the formatted IDs of two counters never collide.
//!   An empty array: the counter hands out raw values only. Absent (a
//!   document made before idmint knew owners, or by hand): the counter owns
//!   its `prefix`, or the empty prefix, *undeclared*: no index protects it,
//!   so that a collision is reported (`status`, `install`, and before any
//!   ID is formatted) and never silently resolved;
//! - `prefix`, a string, optional: the default prefix; with `prefixes`, one
//!   of them (absent: the first);
//!
//! and then the kind's own fields (`kinds/<kind>/`).

use mongodb::bson::{doc, Bson, Document};

use crate::mongo::describe_value;
use crate::sequence::kind_trait::Kind;

/// The fields every counter's rules read, whatever its kind.
#[cfg(test)]
pub(crate) const SHARED_FIELDS: &[&str] = &["kind", "prefix", "prefixes"];

/// The kind of a document without a `kind` field: the seed's cyclic counter.
pub(crate) const DEFAULT_KIND: &str = "cyclic";

/// The server-side twin of reading a counter of kind `K`: an aggregation
/// expression that is true only while the document is a well-formed counter
/// of that kind. `$and` stops at the first false term, so `$trunc` never
/// sees a non-number.
pub(crate) fn well_formed<K: Kind>() -> Document {
    // Each term is written with as few operators as its verdict allows: the
    // server parses the whole expression on every take, and on the test
    // server that parse is most of what the guard costs (docs/BENCHMARKS.md,
    // "the per-value guard").
    let mut terms = vec![
        Bson::Document(doc! { "$eq": [{ "$ifNull": ["$kind", DEFAULT_KIND] }, K::NAME] }),
        // `prefix`: missing, null or a string.
        Bson::Document(doc! { "$eq": [{ "$type": { "$ifNull": ["$prefix", ""] } }, "string"] }),
        // The twin of `read_prefixes`: `prefixes` is missing, or an array of
        // strings, none twice, the default among them. Its strings without
        // duplicates are as many as its elements only when every element is
        // a string and none is there twice; and a default (`prefix`, a
        // string) must be one of them. Two tests, not one count over both:
        // a count would let a non-string and a missing default cancel out.
        Bson::Document(doc! { "$cond": [
            { "$isArray": "$prefixes" },
            { "$and": [
                { "$eq": [
                    { "$size": { "$setUnion": [{ "$filter": {
                        "input": "$prefixes",
                        "cond": { "$eq": [{ "$type": "$$this" }, "string"] },
                    }}] }},
                    { "$size": "$prefixes" },
                ]},
                { "$or": [
                    { "$eq": [{ "$ifNull": ["$prefix", null] }, null] },
                    { "$in": ["$prefix", "$prefixes"] },
                ]},
            ]},
            { "$eq": [{ "$type": "$prefixes" }, "missing"] },
        ]}),
    ];
    terms.extend(K::guard());
    doc! { "$and": terms }
}

/// A guard term: `field` is an integer in `min..=max` (`max` of `u64::MAX`:
/// no upper bound), the twin of [`read_integer`].
pub(crate) fn integer_in(field: &str, min: u64, max: u64) -> Bson {
    let path = format!("${field}");
    let mut terms = vec![
        // The types `read_integer` takes: `$isNumber` would let a decimal
        // through.
        Bson::Document(doc! { "$in": [{ "$type": &path }, ["int", "long", "double"]] }),
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

/// Reads a sub-document field, or says what is wrong with it.
pub(crate) fn read_document<'a>(doc: &'a Document, field: &str) -> Result<&'a Document, String> {
    match doc.get(field) {
        Some(Bson::Document(inner)) => Ok(inner),
        Some(other) => Err(format!(
            "{field} is {}, not a document",
            describe_value(other)
        )),
        None => Err(format!("{field} is missing")),
    }
}

/// Reads an array field, or says what is wrong with it.
pub(crate) fn read_array<'a>(doc: &'a Document, field: &str) -> Result<&'a Vec<Bson>, String> {
    match doc.get(field) {
        Some(Bson::Array(items)) => Ok(items),
        Some(other) => Err(format!(
            "{field} is {}, not an array",
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

/// The prefixes a counter owns, as read ([`read_prefixes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Owned {
    /// The prefixes, the default first.
    pub prefixes: Vec<String>,
    /// Whether the document declares them (`prefixes`), so that the unique
    /// index protects them; otherwise they are derived from `prefix`.
    pub declared: bool,
}

/// Reads the prefixes a counter owns and its default prefix, or says what is
/// wrong with them (see the module docs): a `prefixes` that is not an array
/// of distinct strings holding the default is corrupt, as `well_formed`'s
/// twin terms say on the server.
pub(crate) fn read_prefixes(doc: &Document) -> Result<Owned, String> {
    let default = read_prefix(doc)?;
    match doc.get("prefixes") {
        None => Ok(Owned {
            prefixes: vec![default.unwrap_or_default()],
            declared: false,
        }),
        Some(Bson::Array(values)) => {
            let mut prefixes = Vec::with_capacity(values.len());
            for value in values {
                match value {
                    Bson::String(prefix) if prefixes.contains(prefix) => {
                        return Err(format!("prefixes holds {prefix:?} twice"));
                    }
                    Bson::String(prefix) => prefixes.push(prefix.clone()),
                    other => {
                        return Err(format!(
                            "prefixes holds {}, not only strings",
                            describe_value(other)
                        ))
                    }
                }
            }
            if let Some(default) = default {
                match prefixes.iter().position(|prefix| *prefix == default) {
                    Some(at) => {
                        let default = prefixes.remove(at);
                        prefixes.insert(0, default);
                    }
                    None => {
                        return Err(format!(
                            "prefix {default:?} is not one of its prefixes {prefixes:?}"
                        ))
                    }
                }
            }
            Ok(Owned {
                prefixes,
                declared: true,
            })
        }
        Some(other) => Err(format!(
            "prefixes is {}, not an array",
            describe_value(other)
        )),
    }
}

/// The database a collection is in.
pub(crate) fn database_of(collection: &mongodb::Collection<Document>) -> mongodb::Database {
    collection.client().database(&collection.namespace().db)
}

/// Reads the `kind` field's text: `None` for the default kind.
pub(crate) fn read_kind(doc: &Document) -> Result<Option<&str>, String> {
    match doc.get("kind") {
        None | Some(Bson::Null) => Ok(None),
        Some(Bson::String(text)) => Ok(Some(text)),
        Some(other) => Err(format!("kind is {}, not a string", describe_value(other))),
    }
}
