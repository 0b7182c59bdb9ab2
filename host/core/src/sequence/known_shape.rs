//! The short guard of a hot counter: once a take has shown a counter well
//! formed, the next takes through the same handle check only that the
//! counter is still that document.
//!
//! The full guard ([`well_formed`](super::counter::fields::well_formed)) restates
//! every reading rule on the server (60 operators and field paths for a
//! cyclic counter), and the server parses all of them on every take. Between two takes of a hot counter
//! nothing but its moving fields (a cyclic counter's `val` and `ts`)
//! changes, so a take may instead require, on the server and in the same
//! write:
//!
//! - each *fixed* field (the ones the rules read: `kind`, `prefix`,
//!   `prefixes`, and the kind's settings such as `maxval`) of exactly the
//!   BSON type and value it had in the document last read as well formed,
//!   missing if it was missing, each element of an array a string if every
//!   element was;
//! - each *moving* field a BSON long, at least 0.
//!
//! A document that passes is well formed by the kind's rules whenever no
//! rule ties a moving field to another field (true of the cyclic and the
//! auto-increment kinds): its fixed fields passed them already, and a
//! non-negative long passes every moving field's. So the short guard never
//! lets a malformed counter be modified, which the full guard promises, in
//! about half as many operators and field paths (26 for a cyclic counter
//! with one prefix).
//!
//! A document that fails (someone changed the counter meanwhile) is left
//! as it was, as with the full guard. The take cannot tell that from the
//! document returned alone, so [`KnownShape::holds_for`] tests the returned
//! document in Rust: it holds exactly when the server's test held, because
//! a take changes no fixed field, and writes moving fields that pass, while
//! a document left as it was fails again. Its comparison is exact equality
//! of BSON values, no looser than the server's (same type name, then equal
//! values), so it never takes an untouched document for an advanced one. A
//! miss is taken again with the full guard, which says what is wrong, or
//! learns the counter's new shape.

use std::future::Future;
use std::sync::{Arc, Mutex};

use mongodb::bson::{doc, Bson, Document};

use super::SequenceError;

/// What a handle (and its clones) last learnt of its counter's shape, and
/// the one way its takes use it ([`ShapeCache::take`]).
#[derive(Debug, Clone)]
pub(crate) struct ShapeCache {
    fixed: &'static [&'static str],
    moving: &'static [&'static str],
    known: Arc<Mutex<Option<Arc<KnownShape>>>>,
}

impl ShapeCache {
    /// An empty cache for counters whose takes never change `fixed` and
    /// always write `moving`.
    pub fn new(fixed: &'static [&'static str], moving: &'static [&'static str]) -> Self {
        Self {
            fixed,
            moving,
            known: Arc::default(),
        }
    }

    /// One take: with the short update `short` makes for the known shape
    /// (if a shape is known and `short` makes one), else, or if the counter
    /// changed since, with the update `full` makes (only then). `send` runs an update and
    /// returns the counter after it; `read` reads the take from that, or
    /// says why the counter is refused. The shape is learnt from a counter
    /// `read` accepted, never from another.
    pub async fn take<T, Sent>(
        &self,
        short: impl FnOnce(&KnownShape) -> Option<Vec<Document>>,
        full: impl FnOnce() -> Vec<Document>,
        send: impl Fn(Vec<Document>) -> Sent,
        read: impl Fn(&Document) -> Result<T, SequenceError>,
    ) -> Result<T, SequenceError>
    where
        Sent: Future<Output = Result<Document, SequenceError>>,
    {
        let known = self.lock().clone();
        let short = known.and_then(|shape| short(&shape).map(|update| (shape, update)));
        if let Some((shape, update)) = short {
            let after = send(update).await?;
            if shape.holds_for(&after) {
                return read(&after);
            }
            // Changed since the last take, and left as it was: the full
            // guard says what it is now.
            *self.lock() = None;
        }
        let after = send(full()).await?;
        let taken = read(&after)?;
        *self.lock() = KnownShape::of(&after, self.fixed, self.moving).map(Arc::new);
        Ok(taken)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Arc<KnownShape>>> {
        // A panic while holding the lock cannot leave a half-written shape.
        self.known
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// What a take may assume of a counter last read as well formed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KnownShape {
    /// Each fixed field, with its value (`None`: missing).
    fixed: Vec<(&'static str, Option<Bson>)>,
    /// The moving fields: non-negative longs.
    moving: &'static [&'static str],
    /// The server's test, built once: a hot counter sends it on every take.
    expression: Document,
}

impl KnownShape {
    /// The shape of `document`, a counter just read as well formed. `None`
    /// when a fixed field holds a type this guard does not compare exactly
    /// (anything but null, a string, an array of strings or an int32, long
    /// or double) or a moving field is not a non-negative long: such a
    /// counter is always taken with the full guard.
    pub fn of(
        document: &Document,
        fixed: &'static [&'static str],
        moving: &'static [&'static str],
    ) -> Option<Self> {
        let fixed = fixed
            .iter()
            .map(|field| {
                let value = document.get(field);
                value
                    .is_none_or(comparable)
                    .then(|| (*field, value.cloned()))
            })
            .collect::<Option<Vec<_>>>()?;
        let moving_ok = moving
            .iter()
            .all(|field| matches!(document.get(field), Some(Bson::Int64(n)) if *n >= 0));
        if !moving_ok {
            return None;
        }
        let expression = expression(&fixed, moving);
        Some(Self {
            fixed,
            moving,
            expression,
        })
    }

    /// The server's test: an aggregation expression true only while the
    /// document has this shape: one `$eq` of the fields' types and values
    /// against literals, one of each array's element types, and one bound
    /// on the moving fields.
    pub fn expression(&self) -> &Document {
        &self.expression
    }

    /// The value of fixed field `field` (`None`: missing, or not fixed).
    pub fn fixed(&self, field: &str) -> Option<&Bson> {
        self.fixed
            .iter()
            .find(|(name, _)| *name == field)
            .and_then(|(_, value)| value.as_ref())
    }

    /// The Rust twin of [`KnownShape::expression`], on the document a take
    /// returned: true only if the server's test held for it.
    pub fn holds_for(&self, document: &Document) -> bool {
        self.fixed
            .iter()
            .all(|(field, value)| document.get(field) == value.as_ref())
            && self
                .moving
                .iter()
                .all(|field| matches!(document.get(field), Some(Bson::Int64(n)) if *n >= 0))
    }
}

/// [`KnownShape::expression`], for `fixed` and `moving`.
fn expression(fixed: &[(&'static str, Option<Bson>)], moving: &[&str]) -> Document {
    let mut read = Vec::new();
    let mut expected = Vec::new();
    let mut element_types = Vec::new();
    for (field, value) in fixed {
        let path = format!("${field}");
        // An array equals only an array: its value says its type. Any
        // other value needs its type said too (an int equals a long of the
        // same value, a symbol the string it spells, and missing and null
        // both read as null here).
        if !matches!(value, Some(Bson::Array(_))) {
            read.push(Bson::Document(doc! { "$type": &path }));
            expected.push(Bson::String(type_name(value.as_ref()).to_string()));
        }
        match value {
            None | Some(Bson::Null) => {}
            Some(value) => {
                read.push(Bson::String(path.clone()));
                expected.push(value.clone());
            }
        }
        // A symbol equals the string it spells: the elements' types are
        // compared too, in a term of their own that `$and` reaches only
        // once the field is known to be an array (`$map` fails on
        // anything else).
        if let Some(Bson::Array(items)) = value {
            let strings: Vec<Bson> = items.iter().map(|_| Bson::from("string")).collect();
            element_types.push(Bson::Document(doc! { "$eq": [
                { "$map": { "input": &path, "in": { "$type": "$$this" } } },
                { "$literal": strings },
            ]}));
        }
    }
    let paths: Vec<Bson> = moving
        .iter()
        .map(|field| Bson::String(format!("${field}")))
        .collect();
    for path in &paths {
        read.push(Bson::Document(doc! { "$type": path.clone() }));
        expected.push(Bson::from("long"));
    }
    let mut terms = vec![Bson::Document(
        doc! { "$eq": [read, { "$literal": expected }] },
    )];
    terms.extend(element_types);
    terms.push(Bson::Document(doc! { "$gte": [{ "$min": paths }, 0_i64] }));
    doc! { "$and": terms }
}

/// Whether `value` is of a type whose server-side equality (same type name,
/// equal values) is Rust's exact equality.
fn comparable(value: &Bson) -> bool {
    match value {
        Bson::Null | Bson::String(_) | Bson::Int32(_) | Bson::Int64(_) => true,
        Bson::Double(x) => !x.is_nan(),
        Bson::Array(items) => items.iter().all(|item| matches!(item, Bson::String(_))),
        _ => false,
    }
}

/// The name `$type` gives a value of a comparable type other than an array
/// (`None`: missing).
fn type_name(value: Option<&Bson>) -> &'static str {
    match value {
        None => "missing",
        Some(Bson::Null) => "null",
        Some(Bson::String(_)) => "string",
        Some(Bson::Int32(_)) => "int",
        Some(Bson::Int64(_)) => "long",
        Some(Bson::Double(_)) => "double",
        Some(_) => unreachable!(
            "KnownShape::of keeps only comparable types; an array's value says its type"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXED: &[&str] = &["kind", "prefix", "prefixes", "maxval"];
    const MOVING: &[&str] = &["val", "ts"];

    fn counter() -> Document {
        doc! { "_id": "c", "kind": "cyclic", "prefixes": ["A-", ""], "maxval": 99_i64,
        "val": 5_i64, "ts": 17_i64 }
    }

    #[test]
    fn a_counter_holds_its_own_shape_and_a_take_keeps_it() {
        let shape = KnownShape::of(&counter(), FIXED, MOVING).unwrap();
        assert!(shape.holds_for(&counter()));
        let mut taken = counter();
        taken.insert("val", 6_i64);
        taken.insert("ts", 18_i64);
        taken.insert("note", "fields outside the shape do not matter");
        assert!(shape.holds_for(&taken));
    }

    #[test]
    fn any_change_to_a_fixed_field_or_a_moving_type_breaks_the_shape() {
        let shape = KnownShape::of(&counter(), FIXED, MOVING).unwrap();
        let changes = [
            ("kind", Some(Bson::Null)),
            ("prefix", Some(Bson::String("A-".into()))),
            ("prefixes", Some(Bson::Array(vec!["A-".into()]))),
            (
                "prefixes",
                Some(Bson::Array(vec!["A-".into(), Bson::Int32(0)])),
            ),
            ("maxval", Some(Bson::Int32(99))),
            ("maxval", Some(Bson::Double(99.0))),
            ("maxval", None),
            ("val", Some(Bson::Int32(6))),
            ("val", Some(Bson::Int64(-1))),
            ("ts", Some(Bson::Double(18.0))),
            ("ts", None),
        ];
        for (field, value) in changes {
            let mut changed = counter();
            match &value {
                Some(value) => changed.insert(field, value.clone()),
                None => changed.remove(field),
            };
            assert!(!shape.holds_for(&changed), "{field}: {value:?}");
        }
    }

    #[test]
    fn uncomparable_values_have_no_shape() {
        let mut with_date = counter();
        with_date.insert("maxval", Bson::DateTime(mongodb::bson::DateTime::now()));
        assert_eq!(KnownShape::of(&with_date, FIXED, MOVING), None);
        let mut with_int_val = counter();
        with_int_val.insert("val", 5_i32);
        assert_eq!(KnownShape::of(&with_int_val, FIXED, MOVING), None);
        let mut nan = counter();
        nan.insert("maxval", f64::NAN);
        assert_eq!(KnownShape::of(&nan, FIXED, MOVING), None);
    }

    #[test]
    fn the_expression_compares_types_values_and_element_types() {
        let shape = KnownShape::of(&counter(), FIXED, MOVING).unwrap();
        let expected = doc! { "$and": [
            { "$eq": [
                [
                    { "$type": "$kind" }, "$kind",
                    { "$type": "$prefix" },
                    "$prefixes",
                    { "$type": "$maxval" }, "$maxval",
                    { "$type": "$val" }, { "$type": "$ts" },
                ],
                { "$literal": [
                    "string", "cyclic", "missing", ["A-", ""], "long", 99_i64,
                    "long", "long",
                ]},
            ]},
            { "$eq": [
                { "$map": { "input": "$prefixes", "in": { "$type": "$$this" } } },
                { "$literal": ["string", "string"] },
            ]},
            { "$gte": [{ "$min": ["$val", "$ts"] }, 0_i64] },
        ]};
        assert_eq!(shape.expression(), &expected);
    }
}
