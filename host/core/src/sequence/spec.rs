//! The spec a new counter is made from ([`CounterSpec`]: its kind, the
//! kind's settings and the prefixes it owns), and its creation: the prefix
//! claims first, then one write that never replaces a counter.

use mongodb::bson::{doc, Bson, Document};
use mongodb::Collection;

use super::counter::fields::{database_of, DEFAULT_KIND};
use super::counter::prefixes::check_prefixes;
use crate::sequence::claims::{self, Claimant};
use crate::sequence::clock::{Clock, SystemClock};
use crate::sequence::error::SequenceError;
use crate::sequence::identity::{Incarnation, INCARNATION_FIELD};
use crate::sequence::name::CounterName;
use crate::sequence::registry::{CounterKind, CounterState};
use crate::sequence::settings::Settings;

/// Settings of a new counter: its kind, the kind's settings and the
/// prefixes it owns.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CounterSpec {
    /// The kind. Default: cyclic.
    pub kind: CounterKind,
    /// The kind's settings; a setting of another kind is refused.
    pub settings: Settings,
    /// The prefixes the counter owns, the default first. Default: the empty
    /// prefix (and so no other counter may own it); empty: raw values only.
    pub prefixes: Vec<String>,
    /// Whether the fields the kind draws from the database (a snowflake
    /// counter's tag and salt, `Kind::drawn_fields`) are drawn when the
    /// counter is created; if not, the first time they are needed. Default:
    /// true; false for a counter made for a few seconds (the bench's), so
    /// that it leaves the database's tags as they were.
    pub draw_fields: bool,
    /// The counter's identity (`identity.rs`): drawn afresh when none is
    /// given; given by a create that claimed something under it first.
    pub(crate) incarnation: Option<Incarnation>,
}

impl Default for CounterSpec {
    fn default() -> Self {
        Self::of(
            DEFAULT_KIND
                .parse()
                .expect("the default kind is registered"),
        )
    }
}

impl CounterSpec {
    /// A spec of `kind` with every setting at its default.
    pub fn of(kind: CounterKind) -> Self {
        Self {
            kind,
            settings: Settings::default(),
            prefixes: vec![String::new()],
            draw_fields: true,
            incarnation: None,
        }
    }

    /// Sets [`CounterSpec::draw_fields`].
    pub fn draw_fields(mut self, draw: bool) -> Self {
        self.draw_fields = draw;
        self
    }

    /// Sets maxval (cyclic).
    pub fn maxval(mut self, maxval: u64) -> Self {
        self.settings.maxval = Some(maxval);
        self
    }

    /// Sets the first value (autoinc, segment).
    pub fn start(mut self, start: u64) -> Self {
        self.settings.start = Some(start);
        self
    }

    /// Sets the step (segment).
    pub fn step(mut self, step: u64) -> Self {
        self.settings.step = Some(step);
        self
    }

    /// Sets the one prefix the counter owns (`None`: the empty prefix).
    pub fn prefix(mut self, prefix: Option<String>) -> Self {
        self.prefixes = vec![prefix.unwrap_or_default()];
        self
    }

    /// Sets the prefixes the counter owns, the default first; none: it hands
    /// out raw values only.
    pub fn prefixes(mut self, prefixes: Vec<String>) -> Self {
        self.prefixes = prefixes;
        self
    }

    /// Replaces the settings.
    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }

    /// The counter document this spec creates at `now_ms`, or what is wrong
    /// with the spec (a setting of another kind, a value out of range).
    pub fn document(&self, name: &CounterName, now_ms: u64) -> Result<Document, SequenceError> {
        let kind = self.kind;
        if let Some(setting) = self
            .settings
            .given()
            .into_iter()
            .find(|setting| !kind.settings().contains(setting))
        {
            return Err(SequenceError::InvalidSpec(format!(
                "{} applies to {} counters, not to {kind} ones",
                setting.as_str(),
                CounterKind::taking_names(setting)
            )));
        }
        check_prefixes(&self.prefixes)?;
        kind.new_document(name, &self.settings, &self.prefixes, now_ms)
    }
}

/// Creates counter `name` in `collection` as `spec` says; fails with
/// [`SequenceError::CounterExists`] if there is one already (of any kind),
/// and refuses a bad setting before anything is written.
pub(crate) async fn create_in(
    collection: &Collection<Document>,
    name: &CounterName,
    spec: &CounterSpec,
    write_concern: &mongodb::options::WriteConcern,
) -> Result<CounterState, SequenceError> {
    let now_ms = SystemClock.now_micros() / 1000;
    let mut document = spec.document(name, now_ms)?;
    let incarnation = spec.incarnation.clone().unwrap_or_default();
    document.insert(INCARNATION_FIELD, &incarnation);
    let database = database_of(collection);
    let mut claimed = Vec::new();
    if !spec.prefixes.is_empty() {
        crate::sequence::prefixes::ensure_index(collection, name).await?;
        // A counter of this name is refused as such, before its prefixes
        // (whose claims under its name would then be its own) are asked.
        let exists = collection
            .find_one(doc! { "_id": name.as_str() })
            .projection(doc! { "_id": 1 })
            .await
            .map_err(|source| SequenceError::from_database(name, "read", "find", source))?;
        if exists.is_some() {
            return Err(SequenceError::CounterExists(name.clone()));
        }
        claimed =
            claims::claim(&database, name, &spec.prefixes, Claimant::New(&incarnation)).await?;
    }
    let drawn = match spec.draw_fields {
        true => spec.kind.drawn_fields(&database, name, &incarnation).await,
        false => Ok(Document::new()),
    };
    let result = match drawn {
        Ok(drawn) => {
            let mut document = document;
            document.extend(drawn);
            insert_counter(collection, name, spec, &document, write_concern).await
        }
        Err(error) => Err(error),
    };
    // Only a create the server refused for its settings wrote nothing for
    // certain: after a counter of this name, or a write whose answer was
    // lost, the claims stand.
    if let Err(SequenceError::InvalidSpec(_)) = &result {
        claims::abandon(&database, name, &claimed).await;
    }
    result
}

/// Writes `document`, counter `name` as `spec` makes it, unless a counter
/// of that name exists (see [`create_in`]).
async fn insert_counter(
    collection: &Collection<Document>,
    name: &CounterName,
    spec: &CounterSpec,
    document: &Document,
    write_concern: &mongodb::options::WriteConcern,
) -> Result<CounterState, SequenceError> {
    let Some((check, refusal)) = spec.kind.creation_check(document) else {
        return match collection
            .insert_one(document)
            .write_concern(write_concern.clone())
            .await
        {
            Ok(_) => CounterState::from_document(name, document),
            Err(error) if crate::mongo::is_duplicate_key(&error) => Err(
                crate::sequence::prefixes::explain_duplicate(collection, name, &spec.prefixes)
                    .await,
            ),
            Err(source) => Err(SequenceError::from_database(
                name, "create", "insert", source,
            )),
        };
    };
    // An upsert whose pipeline writes the document only if there was none
    // (an upserted document holds its `_id` alone) and only once the server
    // has evaluated `check`: a check the server refuses fails the write, and
    // nothing is written.
    let fresh = doc! { "$eq": [{ "$size": { "$objectToArray": "$$ROOT" } }, 1] };
    let before = collection
        .find_one_and_update(
            doc! { "_id": name.as_str() },
            vec![doc! { "$replaceWith": { "$cond": [
                { "$and": [fresh, { "$ne": [check, Bson::Null] }] },
                { "$literal": document },
                "$$ROOT",
            ]}}],
        )
        .upsert(true)
        .return_document(mongodb::options::ReturnDocument::Before)
        .write_concern(write_concern.clone())
        .await;
    match before {
        Ok(None) => CounterState::from_document(name, document),
        Ok(Some(_)) => Err(SequenceError::CounterExists(name.clone())),
        Err(error) if crate::mongo::is_duplicate_key(&error) => Err(
            crate::sequence::prefixes::explain_duplicate(collection, name, &spec.prefixes).await,
        ),
        Err(error) => match crate::mongo::server_message(&error) {
            Some(message) if !crate::mongo::is_unauthorized(&error) => {
                Err(SequenceError::InvalidSpec(format!("{refusal}: {message}")))
            }
            _ => Err(SequenceError::from_database(
                name, "create", "update", error,
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-22.
    const NOW_MS: u64 = 1_795_317_297_123;

    fn name() -> CounterName {
        CounterName::new("c").unwrap()
    }

    #[test]
    fn each_kind_writes_its_document() {
        assert_eq!(
            CounterSpec::default().document(&name(), NOW_MS).unwrap(),
            doc! { "_id": "c", "kind": "cyclic", "val": 0_i64, "maxval": 99_i64, "prefixes": [""] }
        );
        assert_eq!(
            CounterSpec::of(CounterKind::Autoinc)
                .start(100)
                .prefix(Some("INV-".into()))
                .document(&name(), NOW_MS)
                .unwrap(),
            doc! { "_id": "c", "kind": "autoinc", "seq": 99_i64, "prefix": "INV-", "prefixes": ["INV-"] }
        );
        assert_eq!(
            CounterSpec::of(CounterKind::Segment)
                .prefixes(Vec::new())
                .document(&name(), NOW_MS)
                .unwrap(),
            doc! { "_id": "c", "kind": "segment", "max": 1_i64, "step": 1000_i64, "prefixes": [] }
        );
    }

    #[test]
    fn refuses_a_setting_of_another_kind_or_out_of_range() {
        for (spec, message) in [
            (
                CounterSpec::default().step(10),
                "step applies to segment counters, not to cyclic ones",
            ),
            (
                CounterSpec::default().start(10),
                "start applies to autoinc and segment counters, not to cyclic ones",
            ),
            (
                CounterSpec::of(CounterKind::Autoinc).maxval(10),
                "maxval applies to cyclic counters, not to autoinc ones",
            ),
            (
                CounterSpec::of(CounterKind::Segment).step(0),
                "step 0 is out of range 1..=100000000",
            ),
            (
                CounterSpec::of(CounterKind::Autoinc).start(0),
                "start 0 is out of range 1..=9007199254740991",
            ),
            (
                CounterSpec::default().maxval(0),
                "maxval 0 is out of range 1..=9007199254740990",
            ),
        ] {
            let error = spec.document(&name(), NOW_MS).unwrap_err().to_string();
            assert_eq!(error, format!("invalid counter setting: {message}"));
        }
    }
}
