//! The registry: the one place that lists the kinds of counter. Adding a
//! kind is its folder under `kinds/` and one line in `kinds!`'s
//! invocation at the end of this file.
//!
//! From that list the macro makes the types every caller uses, each one
//! dispatching to the kind (`kind.rs`'s [`Kind`] and [`Handle`]):
//!
//! - [`CounterKind`]: which kind, by name;
//! - [`KindState`] and [`CounterState`]: a counter document, read;
//! - [`Sequence`]: an opened counter, whatever its kind: the seam every ID
//!   path serves over;
//! - [`OpenOptions`]: how each kind is opened.

use std::fmt;
use std::ops::Range;
use std::str::FromStr;

use mongodb::bson::{doc, Bson, Document};
use mongodb::{Collection, Database};
use serde::Serialize;

use super::claims::{self, Claimant};
use super::document::{read_kind, read_prefixes, well_formed, DEFAULT_KIND};
use super::kind::{
    check_block, CommandOptions, Fact, GiveBack, Handle, Headroom, Held, Kind, Setting, ValueShape,
};
use super::settings::Settings;
use super::{kinds, Clock, CounterName, SequenceError};
use crate::parts::{Layout, Stamp};

/// A `kind` that idmint does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown counter kind {0:?}: idmint knows {known}", known = CounterKind::names())]
pub struct UnknownKind(pub String);

macro_rules! kinds {
    ($($field:ident: $variant:ident => $kind:ty,)+) => {
        /// The kinds of counter idmint knows. A document without a `kind`
        /// field is the first one, cyclic, so the seed's `{_id, val,
        /// maxval}` keeps working.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        #[serde(rename_all = "lowercase")]
        pub enum CounterKind {
            $(
                #[doc = concat!("A ", stringify!($field), " counter (`kinds/", stringify!($field), "/`).")]
                $variant,
            )+
        }

        impl CounterKind {
            /// Every kind, in the order the documentation lists them.
            pub const ALL: &'static [CounterKind] = &[$(Self::$variant),+];

            /// The kind's name: the value of the document's `kind` field.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => <$kind as Kind>::NAME,)+
                }
            }

            /// One line saying what the kind is.
            pub fn summary(self) -> &'static str {
                match self {
                    $(Self::$variant => <$kind as Kind>::SUMMARY,)+
                }
            }

            /// Whether counters of this kind hand out runs of consecutive
            /// values ([`Sequence::take_ranges`]).
            pub fn hands_out_runs(self) -> bool {
                match self {
                    $(Self::$variant => <$kind as Kind>::RUNS,)+
                }
            }

            /// The settings `counter create` takes for this kind.
            pub fn settings(self) -> &'static [Setting] {
                match self {
                    $(Self::$variant => <$kind as Kind>::SETTINGS,)+
                }
            }

            /// What to use instead of a policy that cannot hold this kind's values.
            pub fn fit_advice(self) -> &'static str {
                match self {
                    $(Self::$variant => <$kind as Kind>::FIT_ADVICE,)+
                }
            }

            /// The kind's fields of a new counter from `settings`.
            fn fields(self, settings: &Settings, now_ms: u64) -> Result<Document, SequenceError> {
                match self {
                    $(Self::$variant => <$kind as Kind>::fields(settings, now_ms),)+
                }
            }

            /// What the server must be able to evaluate before a new
            /// counter of this kind with `fields` is written.
            fn creation_check(self, fields: &Document) -> Option<(Document, String)> {
                match self {
                    $(Self::$variant => <$kind as Kind>::creation_check(fields),)+
                }
            }

            /// The filter and update that take `count` values of counter
            /// `name` of this kind in one `findAndModify`, the kind's guard
            /// in the filter ([`guarded`]).
            pub(crate) fn take_command(
                self,
                name: &CounterName,
                count: u64,
                options: &CommandOptions,
            ) -> Result<(Document, Vec<Document>), SequenceError> {
                match self {
                    $(Self::$variant => <$kind as Kind>::take_command(name, count, options)
                        .map(|(filter, update)| (guarded(filter, well_formed::<$kind>()), update)),)+
                }
            }

            /// Reads the kind's fields of a counter document.
            fn read(self, document: &Document) -> Result<KindState, String> {
                Ok(match self {
                    $(Self::$variant => KindState::$variant(<$kind as Kind>::read(document)?),)+
                })
            }
        }

        /// The fields of each kind of counter, as read.
        #[derive(Debug, Clone, PartialEq, Eq, Serialize)]
        #[serde(tag = "kind", rename_all = "lowercase")]
        pub enum KindState {
            $(
                #[doc = concat!("The fields of a ", stringify!($field), " counter.")]
                $variant(<$kind as Kind>::State),
            )+
        }

        impl KindState {
            /// The kind.
            pub fn kind(&self) -> CounterKind {
                match self {
                    $(Self::$variant(_) => CounterKind::$variant,)+
                }
            }

            /// What a policy must know about the counter's values.
            pub fn shape(&self) -> ValueShape {
                match self {
                    $(Self::$variant(state) => <$kind as Kind>::shape(state),)+
                }
            }

            /// What the counter says about itself at `now_ms`.
            pub fn facts(&self, now_ms: u64) -> Vec<Fact> {
                match self {
                    $(Self::$variant(state) => <$kind as Kind>::facts(state, now_ms),)+
                }
            }

            /// How much of what the counter can hand out is used at `now_ms`
            /// (`None`: it never runs out).
            pub fn headroom(&self, now_ms: u64) -> Option<Headroom> {
                match self {
                    $(Self::$variant(state) => <$kind as Kind>::headroom(state, now_ms),)+
                }
            }
        }

        /// How each kind of counter is opened.
        #[derive(Debug, Clone, Default)]
        #[non_exhaustive]
        pub struct OpenOptions {
            $(
                #[doc = concat!("How a ", stringify!($field), " counter is opened.")]
                pub $field: <$kind as Kind>::Options,
            )+
        }

        /// One opened counter, whatever its kind: the seam every ID path
        /// serves over. Cheap to clone: clones share what the counter holds.
        #[derive(Debug, Clone)]
        pub enum Sequence {
            $(
                #[doc = concat!("An opened ", stringify!($field), " counter.")]
                $variant(<$kind as Kind>::Handle),
            )+
        }

        $(
            impl From<<$kind as Kind>::Handle> for Sequence {
                fn from(handle: <$kind as Kind>::Handle) -> Self {
                    Sequence::$variant(handle)
                }
            }
        )+

        impl Sequence {
            /// Opens counter `name`, of whatever kind its document says,
            /// with the state it has now. An unknown, corrupt or
            /// unknown-kind counter is an error, and nothing is modified.
            pub async fn open(
                database: &Database,
                name: CounterName,
                options: &OpenOptions,
            ) -> Result<(Self, CounterState), SequenceError> {
                let state = super::state(database, &name).await?;
                let sequence = Self::open_read(database, name, &state, options).await?;
                Ok((sequence, state))
            }

            /// Opens counter `name` whose document was just read as `state`.
            pub async fn open_read(
                database: &Database,
                name: CounterName,
                state: &CounterState,
                options: &OpenOptions,
            ) -> Result<Self, SequenceError> {
                Ok(match &state.kind {
                    $(KindState::$variant(fields) => Sequence::$variant(
                        <$kind as Kind>::open(database, name, fields, &options.$field).await?,
                    ),)+
                })
            }

            /// The counter's name.
            pub fn name(&self) -> &CounterName {
                match self {
                    $(Self::$variant(handle) => Handle::name(handle),)+
                }
            }

            /// The counter's kind.
            pub fn kind(&self) -> CounterKind {
                match self {
                    $(Self::$variant(_) => CounterKind::$variant,)+
                }
            }

            /// The database the counter is in.
            pub fn database(&self) -> Database {
                match self {
                    $(Self::$variant(handle) => Handle::database(handle),)+
                }
            }

            /// Reserves `count` values, 1 to [`MAX_BLOCK`](super::MAX_BLOCK), in one
            /// round trip (segment and snowflake counters: from memory), and
            /// returns them in the order issued, each a [`Stamp`] ready for
            /// a policy. `client_micros` is the caller's clock: the floor of
            /// a cyclic counter's timestamps, and the timestamp given to the
            /// values of the kinds whose values carry no time of their own.
            pub async fn take(
                &self,
                count: usize,
                client_micros: u64,
            ) -> Result<Vec<Stamp>, SequenceError> {
                check_block(self.name(), count)?;
                match self {
                    $(Self::$variant(handle) => Handle::take(handle, count, client_micros).await,)+
                }
            }

            /// Reserves `count` values (any number) as runs of consecutive
            /// values, for callers that hand them out themselves (kinds
            /// that [hand out runs](CounterKind::hands_out_runs)). For the
            /// others: [`SequenceError::NoRuns`], and nothing is taken.
            pub async fn take_ranges(&self, count: u64) -> Result<Vec<Range<u64>>, SequenceError> {
                if !self.kind().hands_out_runs() {
                    return Err(SequenceError::NoRuns {
                        name: self.name().clone(),
                        kind: self.kind().as_str(),
                    });
                }
                match self {
                    $(Self::$variant(handle) => Handle::take_ranges(handle, count).await,)+
                }
            }

            /// Gives back runs taken with [`Sequence::take_ranges`] that
            /// could not be handed out, where no later value has been taken
            /// since (see [`Handle::give_back`]); returns how many values
            /// were given back.
            pub async fn give_back(&self, runs: &[Range<u64>]) -> Result<u64, SequenceError> {
                match self {
                    $(Self::$variant(handle) => Handle::give_back(handle, runs).await,)+
                }
            }

            /// Ends the use of the counter: what this process holds is given
            /// back (a segment's unused tail) or released (a worker lease).
            pub async fn close(&self) -> Result<GiveBack, SequenceError> {
                match self {
                    $(Self::$variant(handle) => Handle::close(handle).await,)+
                }
            }

            /// Passes `result` through; if it is an error, closes the
            /// sequence first (its close error, if any, is dropped: the
            /// first error is the one to report). For a caller that opened
            /// a counter and then failed before using it: a snowflake
            /// counter's worker lease is released at once rather than left
            /// live until it expires.
            pub async fn close_on_error<T, E>(&self, result: Result<T, E>) -> Result<T, E> {
                if result.is_err() {
                    let _ = self.close().await;
                }
                result
            }

            /// Reads the counter as it is now.
            pub async fn state(&self) -> Result<CounterState, SequenceError> {
                match self {
                    $(Self::$variant(handle) => Handle::state(handle).await,)+
                }
            }

            /// What this process holds of the counter (buffers, a lease).
            pub fn held(&self) -> Held {
                match self {
                    $(Self::$variant(handle) => Handle::held(handle),)+
                }
            }
        }
    };
}

kinds! {
    cyclic: Cyclic => kinds::cyclic::Cyclic,
    autoinc: Autoinc => kinds::autoinc::Autoinc,
    segment: Segment => kinds::segment::Segment,
    snowflake: Snowflake => kinds::snowflake::SnowflakeKind,
    periodic: Periodic => kinds::periodic::Periodic,
}

impl CounterKind {
    /// The kinds' names as a sentence: `cyclic, autoinc, ... and periodic`.
    pub fn names() -> String {
        let names: Vec<&str> = Self::ALL.iter().map(|kind| kind.as_str()).collect();
        match names.split_last() {
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
            None => String::new(),
        }
    }

    /// The kinds whose settings include `setting`, as a sentence.
    fn taking(setting: Setting) -> String {
        let names: Vec<&str> = Self::ALL
            .iter()
            .filter(|kind| kind.settings().contains(&setting))
            .map(|kind| kind.as_str())
            .collect();
        match names.split_last() {
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
            None => "no".to_string(),
        }
    }
}

impl fmt::Display for CounterKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CounterKind {
    type Err = UnknownKind;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .iter()
            .copied()
            .find(|kind| kind.as_str() == text)
            .ok_or_else(|| UnknownKind(text.to_string()))
    }
}

/// A well-formed counter, as read from the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CounterState {
    /// The counter's name (`_id`).
    pub name: String,
    /// The kind and its fields.
    #[serde(flatten)]
    pub kind: KindState,
    /// The counter's default ID prefix, if it has one (`None`: the empty
    /// prefix, or none at all for a counter that owns none).
    pub prefix: Option<String>,
    /// The prefixes the counter owns, the default first: the only ones its
    /// formatted IDs may use. Empty: it hands out raw values only.
    pub prefixes: Vec<String>,
    /// Whether the document declares its prefixes (so that the unique index
    /// keeps other counters from them), or they are derived from an older
    /// document's `prefix` (see `document.rs`).
    #[serde(skip_serializing_if = "is_true")]
    pub prefixes_declared: bool,
}

fn is_true(value: &bool) -> bool {
    *value
}

impl CounterState {
    /// Reads a counter document, or says what is wrong with it.
    pub fn from_document(name: &CounterName, document: &Document) -> Result<Self, SequenceError> {
        let corrupt = |reason: String| SequenceError::CorruptCounter {
            name: name.clone(),
            reason,
        };
        let kind = match read_kind(document).map_err(corrupt)? {
            None => DEFAULT_KIND
                .parse()
                .expect("the default kind is registered"),
            Some(text) => text.parse().map_err(|_| SequenceError::UnknownKind {
                name: name.clone(),
                kind: text.to_string(),
                known: CounterKind::names(),
            })?,
        };
        let kind = CounterKind::read(kind, document).map_err(corrupt)?;
        let owned = read_prefixes(document).map_err(corrupt)?;
        Ok(Self {
            name: name.to_string(),
            kind,
            prefix: owned.prefixes.first().filter(|p| !p.is_empty()).cloned(),
            prefixes: owned.prefixes,
            prefixes_declared: owned.declared,
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

    /// The counter's kind.
    pub fn kind(&self) -> CounterKind {
        self.kind.kind()
    }

    /// What a policy must know about this counter's values.
    pub fn shape(&self) -> ValueShape {
        self.kind.shape()
    }

    /// What the counter says about itself at `now_ms`, in order.
    pub fn facts(&self, now_ms: u64) -> Vec<Fact> {
        self.kind.facts(now_ms)
    }

    /// How much of what the counter can hand out is used at `now_ms`
    /// (`None`: it never runs out).
    pub fn headroom(&self, now_ms: u64) -> Option<Headroom> {
        self.kind.headroom(now_ms)
    }

    /// The cyclic fields, if this is a cyclic counter.
    pub fn cyclic(&self) -> Option<&kinds::cyclic::CyclicState> {
        match &self.kind {
            KindState::Cyclic(state) => Some(state),
            _ => None,
        }
    }

    /// The layout its IDs are read with, if this is a snowflake counter.
    pub fn snowflake_layout(&self) -> Option<&Layout> {
        match &self.kind {
            KindState::Snowflake(state) => Some(&state.layout),
            _ => None,
        }
    }
}

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
}

/// The most prefixes one counter owns.
pub const MAX_PREFIXES: usize = 32;

/// The longest prefix a counter owns, in bytes (each policy has its own,
/// usually shorter, limit).
pub const MAX_PREFIX_BYTES: usize = 128;

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
        }
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
                CounterKind::taking(setting)
            )));
        }
        check_prefixes(&self.prefixes)?;
        let mut document = doc! { "_id": name.as_str(), "kind": kind.as_str() };
        document.extend(kind.fields(&self.settings, now_ms)?);
        if let Some(prefix) = self.prefixes.first().filter(|p| !p.is_empty()) {
            document.insert("prefix", prefix.as_str());
        }
        document.insert("prefixes", &self.prefixes);
        Ok(document)
    }
}

/// Fails unless `prefixes` can be owned by one counter: distinct, at most
/// [`MAX_PREFIXES`], each at most [`MAX_PREFIX_BYTES`] and without control
/// characters (which characters a prefix may hold is each policy's to say).
pub(crate) fn check_prefixes(prefixes: &[String]) -> Result<(), SequenceError> {
    let bad = |reason: String| Err(SequenceError::InvalidSpec(reason));
    if prefixes.len() > MAX_PREFIXES {
        return bad(format!(
            "{} prefixes: a counter owns at most {MAX_PREFIXES}",
            prefixes.len()
        ));
    }
    for (at, prefix) in prefixes.iter().enumerate() {
        if prefixes[..at].contains(prefix) {
            return bad(format!("prefix {prefix:?} is given twice"));
        }
        if prefix.len() > MAX_PREFIX_BYTES {
            return bad(format!(
                "prefix {prefix:?} is {} bytes long, the limit is {MAX_PREFIX_BYTES}",
                prefix.len()
            ));
        }
        if prefix.chars().any(char::is_control) {
            return bad(format!("prefix {prefix:?} holds a control character"));
        }
    }
    Ok(())
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
    let now_ms = super::SystemClock.now_micros() / 1000;
    let document = spec.document(name, now_ms)?;
    let database = super::document::database_of(collection);
    let mut claimed = Vec::new();
    if !spec.prefixes.is_empty() {
        super::prefixes::ensure_index(collection, name).await?;
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
        claimed = claims::claim(&database, name, &spec.prefixes, Claimant::New).await?;
    }
    let result = insert_counter(collection, name, spec, &document, write_concern).await;
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
            Err(error) if crate::mongo::is_duplicate_key(&error) => {
                Err(super::prefixes::explain_duplicate(collection, name, &spec.prefixes).await)
            }
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
        Err(error) if crate::mongo::is_duplicate_key(&error) => {
            Err(super::prefixes::explain_duplicate(collection, name, &spec.prefixes).await)
        }
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

/// Reads counter `name` from `collection` as it is now.
pub(crate) async fn read_state(
    collection: &Collection<Document>,
    name: &CounterName,
) -> Result<CounterState, SequenceError> {
    match collection
        .find_one(doc! { "_id": name.as_str() })
        .await
        .map_err(|source| SequenceError::from_database(name, "read", "find", source))?
    {
        Some(document) => CounterState::from_document(name, &document),
        None => Err(SequenceError::UnknownCounter(name.clone())),
    }
}

/// The `findAndModify` command that takes `count` values of counter `name`
/// of `kind` (a segment counter: one segment of at least `step` values),
/// with `new: true` and write concern majority with journal: what `idmint
/// pipeline` prints for applications in other languages. Its update is the
/// one the library sends (`tests/strategies.rs` holds the two equal); its
/// filter is the library's with the kind's guard added (`guarded`).
/// Run it with any driver's `runCommand`: the document in `value` is the
/// counter after the update, and a `value` of null means that nothing was
/// taken (the counter is missing, malformed, of another kind or settings,
/// or has no values left), never a value to use.
pub fn take_command(
    kind: CounterKind,
    name: &CounterName,
    count: u64,
    options: &CommandOptions,
) -> Result<Document, SequenceError> {
    let (query, update) = kind.take_command(name, count, options)?;
    let update: Vec<Bson> = update.into_iter().map(Bson::Document).collect();
    Ok(doc! {
        "findAndModify": crate::mongo::collections::COUNTERS,
        "query": query,
        "update": update,
        "new": true,
        "writeConcern": { "w": "majority", "j": true },
    })
}

/// `filter` with `guard` (the kind's `well_formed`) added to its `$expr`,
/// first, so that the filter's own terms only see a well-formed counter.
///
/// The library's takes keep the guard in the update, which leaves a
/// malformed counter as it is and returns it, and read the returned document
/// to tell that from a take (a filter guard cost about a third of the
/// throughput, docs/BENCHMARKS.md). An application in another language would
/// not: it would use the unchanged document's value again. The exported
/// command's filter matches nothing instead, so that the application gets
/// `value: null`, never an untouched counter it could take for a result.
fn guarded(mut filter: Document, guard: Document) -> Document {
    let expression = match filter.remove("$expr") {
        Some(own) => doc! { "$and": [guard, own] },
        None => guard,
    };
    filter.insert("$expr", expression);
    filter
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
    fn reads_every_integer_representation() {
        let state = CounterState::from_document(
            &name(),
            &doc! { "_id": "c", "val": 5_i32, "maxval": 99_i64, "ts": 7.0_f64, "prefix": "P" },
        )
        .unwrap();
        assert_eq!(
            (state.cyclic().copied(), state.prefix.as_deref()),
            (
                Some(crate::sequence::CyclicState {
                    val: 5,
                    maxval: 99,
                    ts: 7
                }),
                Some("P")
            )
        );
        let fresh = CounterState::from_document(&name(), &doc! { "val": 0, "maxval": 1 }).unwrap();
        assert_eq!((fresh.cyclic().unwrap().ts, fresh.prefix), (0, None));
    }

    #[test]
    fn reads_each_kind() {
        let autoinc =
            CounterState::from_document(&name(), &doc! { "kind": "autoinc", "seq": 41_i64 })
                .unwrap();
        assert_eq!(
            autoinc.kind,
            KindState::Autoinc(crate::sequence::AutoincState { seq: 41 })
        );
        let segment = CounterState::from_document(
            &name(),
            &doc! { "kind": "segment", "max": 1, "step": 1000 },
        )
        .unwrap();
        assert_eq!(
            segment.kind,
            KindState::Segment(crate::sequence::SegmentState { max: 1, step: 1000 })
        );
        assert!(
            segment.shape().largest_value == crate::sequence::MAX_VALUE
                && segment.shape().repeats == crate::sequence::Repeats::Never
        );
        let json = serde_json::to_value(&segment).unwrap();
        assert_eq!(
            json,
            // An older document: it owns the empty prefix, undeclared.
            serde_json::json!({"name": "c", "kind": "segment", "max": 1, "step": 1000, "prefix": null, "prefixes": [""], "prefixes_declared": false})
        );
    }

    #[test]
    fn names_an_unknown_kind() {
        let error = CounterState::from_document(&name(), &doc! { "kind": "hilo" })
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "counter 'c' has kind \"hilo\", which this idmint does not know \
             (it knows cyclic, autoinc, segment, snowflake and periodic); it was left unchanged"
        );
    }

    #[test]
    fn names_what_is_corrupt() {
        for (doc, needle) in [
            (doc! { "maxval": 9 }, "val is missing"),
            (
                doc! { "val": "7", "maxval": 9 },
                "val is the string \"7\", not a number",
            ),
            (
                doc! { "val": 1.5, "maxval": 9 },
                "val is 1.5, not an integer",
            ),
            (
                doc! { "val": -1, "maxval": 9 },
                "val is -1, it must not be negative",
            ),
            (
                doc! { "val": 0, "maxval": 0 },
                "maxval is 0, it must be at least 1",
            ),
            (
                doc! { "val": 0, "maxval": 9, "ts": true },
                "ts is the boolean true",
            ),
            (
                doc! { "val": 0, "maxval": 9, "prefix": 3 },
                "prefix is the number 3, not a string",
            ),
            (doc! { "kind": 3 }, "kind is the number 3, not a string"),
            (doc! { "kind": "autoinc" }, "seq is missing"),
            (
                doc! { "kind": "autoinc", "seq": 9_007_199_254_740_992_i64 },
                "seq is 9007199254740992, it must be at most 9007199254740991",
            ),
            (
                doc! { "kind": "segment", "max": -5, "step": 10 },
                "max is -5, it must not be negative",
            ),
            (doc! { "kind": "segment", "max": 1 }, "step is missing"),
            (
                doc! { "kind": "segment", "max": 1, "step": 0 },
                "step is 0, it must be at least 1",
            ),
        ] {
            let err = CounterState::from_document(&name(), &doc)
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle), "{doc}: {err}");
            assert!(err.contains("counter 'c' is corrupt"), "{err}");
        }
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

    #[test]
    fn each_kind_is_named_once_and_the_default_is_cyclic() {
        for kind in CounterKind::ALL {
            assert_eq!(kind.as_str().parse::<CounterKind>(), Ok(*kind));
            // The serde name (the variant lowercased) is the kind's name.
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::json!(kind.as_str())
            );
        }
        assert_eq!(CounterKind::ALL[0].as_str(), DEFAULT_KIND);
        let error = "hilo".parse::<CounterKind>().unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown counter kind \"hilo\": idmint knows cyclic, autoinc, segment, snowflake and periodic"
        );
    }
}
