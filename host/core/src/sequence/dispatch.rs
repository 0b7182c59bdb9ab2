//! The dispatch the registry (`registry.rs`) is made of: from the list of
//! kinds, [`registry!`] makes the types every caller uses, each one
//! dispatching to the kind (`kind_trait.rs`'s [`Kind`](super::kind_trait::Kind)
//! and [`Handle`](super::kind_trait::Handle)):
//!
//! - `CounterKind`: which kind, by name;
//! - `KindState` and `CounterState`: a counter document, read;
//! - `Registered` for each kind: how a kind's reader refuses another kind;
//! - `Sequence`: an opened counter, whatever its kind: the seam every ID
//!   path serves over;
//! - `OpenOptions`: how each kind is opened.
//!
//! No kind is named here: only the list names them.

/// Makes the registry's types from the list of kinds: one
/// `field: Variant => KindType,` line per kind, the default kind first.
/// What the types are made of is imported where they are made, by the one
/// caller (`registry.rs`), so that its imports say what the registry
/// depends on.
macro_rules! registry {
    ($($(#[$meta:meta])* $field:ident: $variant:ident => $kind:ty,)+) => {
        /// A `kind` that idmint does not know.
        #[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
        #[error("unknown counter kind {0:?}: idmint knows {known}", known = CounterKind::names())]
        pub struct UnknownKind(pub String);

        /// The kinds of counter idmint knows. A document without a `kind`
        /// field is the first one, cyclic, so the seed's `{_id, val,
        /// maxval}` keeps working.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        #[serde(rename_all = "lowercase")]
        pub enum CounterKind {
            $(
                $(#[$meta])*
                #[doc = concat!("A ", stringify!($field), " counter (`kinds/", stringify!($field), "/`).")]
                $variant,
            )+
        }

        impl CounterKind {
            /// Every kind, in the order the documentation lists them.
            pub const ALL: &'static [CounterKind] = &[$($(#[$meta])* Self::$variant),+];

            /// The default kind, the registry's first: a document without a
            /// `kind` field is one.
            pub const DEFAULT: CounterKind = Self::ALL[0];

            /// The kind's name: the value of the document's `kind` field.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($(#[$meta])* Self::$variant => <$kind as Kind>::NAME,)+
                }
            }

            /// One line saying what the kind is.
            pub fn summary(self) -> &'static str {
                match self {
                    $($(#[$meta])* Self::$variant => <$kind as Kind>::SUMMARY,)+
                }
            }

            /// Whether counters of this kind hand out runs of consecutive
            /// values ([`Sequence::take_ranges`]).
            pub fn hands_out_runs(self) -> bool {
                match self {
                    $($(#[$meta])* Self::$variant => <$kind as Kind>::RUNS,)+
                }
            }

            /// The settings `counter create` takes for this kind.
            pub fn settings(self) -> &'static [Setting] {
                match self {
                    $($(#[$meta])* Self::$variant => <$kind as Kind>::SETTINGS,)+
                }
            }

            /// Whether the kind's take command reads a client clock
            /// (`idmint pipeline --client-micros`).
            pub fn reads_client_clock(self) -> bool {
                match self {
                    $($(#[$meta])* Self::$variant => <$kind as Kind>::READS_CLIENT_CLOCK,)+
                }
            }

            /// What to use instead of a policy that cannot hold this kind's values.
            pub fn fit_advice(self) -> &'static str {
                match self {
                    $($(#[$meta])* Self::$variant => <$kind as Kind>::FIT_ADVICE,)+
                }
            }

            /// The document of a new counter `name` of this kind made at
            /// `now_ms` from `settings` (only the kind's own), owning
            /// `prefixes` (already checked).
            pub(crate) fn new_document(
                self,
                name: &CounterName,
                settings: &Settings,
                prefixes: &[String],
                now_ms: u64,
            ) -> Result<Document, SequenceError> {
                match self {
                    $($(#[$meta])* Self::$variant => new_document::<$kind>(name, settings, prefixes, now_ms),)+
                }
            }

            /// The fields a new counter `name` of this kind and of
            /// `incarnation` gets from `database` itself
            /// ([`Kind::drawn_fields`]).
            pub(crate) async fn drawn_fields(
                self,
                database: &Database,
                name: &CounterName,
                incarnation: &Incarnation,
            ) -> Result<Document, SequenceError> {
                match self {
                    $($(#[$meta])* Self::$variant => <$kind as Kind>::drawn_fields(database, name, incarnation).await,)+
                }
            }

            /// What the server must be able to evaluate before a new
            /// counter of this kind with `fields` is written.
            pub(crate) fn creation_check(self, fields: &Document) -> Option<(Document, String)> {
                match self {
                    $($(#[$meta])* Self::$variant => <$kind as Kind>::creation_check(fields),)+
                }
            }

            /// The filter and update that take `count` values of counter
            /// `name` of this kind in one `findAndModify`.
            pub(crate) fn take_command(
                self,
                name: &CounterName,
                count: u64,
                options: &CommandOptions,
            ) -> Result<(Document, Vec<Document>), SequenceError> {
                match self {
                    $($(#[$meta])* Self::$variant => <$kind as Kind>::take_command(name, count, options),)+
                }
            }

            /// The server-side expression true only while a document is a
            /// well-formed counter of this kind.
            pub(crate) fn well_formed(self) -> Document {
                match self {
                    $($(#[$meta])* Self::$variant => well_formed::<$kind>(),)+
                }
            }

            /// Reads the kind's fields of a counter document.
            fn read(self, document: &Document) -> Result<KindState, String> {
                Ok(match self {
                    $($(#[$meta])* Self::$variant => KindState::$variant(<$kind as Kind>::read(document)?),)+
                })
            }
        }

        /// The fields of each kind of counter, as read.
        #[derive(Debug, Clone, PartialEq, Eq, Serialize)]
        #[serde(tag = "kind", rename_all = "lowercase")]
        pub enum KindState {
            $(
                $(#[$meta])*
                #[doc = concat!("The fields of a ", stringify!($field), " counter.")]
                $variant(<$kind as Kind>::State),
            )+
        }

        impl KindState {
            /// The kind.
            pub fn kind(&self) -> CounterKind {
                match self {
                    $($(#[$meta])* Self::$variant(_) => CounterKind::$variant,)+
                }
            }

            /// The kind's fields.
            fn fields(&self) -> &dyn std::any::Any {
                match self {
                    $($(#[$meta])* Self::$variant(state) => state,)+
                }
            }

            /// What a policy must know about the counter's values.
            pub fn shape(&self) -> ValueShape {
                match self {
                    $($(#[$meta])* Self::$variant(state) => <$kind as Kind>::shape(state),)+
                }
            }

            /// What the counter says about itself at `now_ms`.
            pub fn facts(&self, now_ms: u64) -> Vec<Fact> {
                match self {
                    $($(#[$meta])* Self::$variant(state) => <$kind as Kind>::facts(state, now_ms),)+
                }
            }

            /// How much of what the counter can hand out is used at `now_ms`
            /// (`None`: it never runs out).
            pub fn headroom(&self, now_ms: u64) -> Option<Headroom> {
                match self {
                    $($(#[$meta])* Self::$variant(state) => <$kind as Kind>::headroom(state, now_ms),)+
                }
            }
        }

        /// How each kind of counter is opened.
        #[derive(Debug, Clone, Default)]
        #[non_exhaustive]
        pub struct OpenOptions {
            $(
                $(#[$meta])*
                #[doc = concat!("How a ", stringify!($field), " counter is opened.")]
                pub $field: <$kind as Kind>::Options,
            )+
            /// The deployments a striped counter may span, the preferred
            /// first (none: only the database it is opened from).
            pub deployments: Option<Deployments>,
        }

        impl OpenOptions {
            /// How a counter of `kind` is opened: that kind's field.
            fn of_kind(&self, kind: CounterKind) -> &dyn std::any::Any {
                match kind {
                    $($(#[$meta])* CounterKind::$variant => &self.$field,)+
                }
            }
        }

        /// One opened counter, whatever its kind: the seam every ID path
        /// serves over. Cheap to clone: clones share what the counter holds.
        #[derive(Debug, Clone)]
        pub enum Sequence {
            $(
                $(#[$meta])*
                #[doc = concat!("An opened ", stringify!($field), " counter, and the")]
                /// deployments it was opened with (for its lanes, should
                /// it be striped across them meanwhile).
                $variant(<$kind as Kind>::Handle, Option<Deployments>),
            )+
            /// An opened striped counter: its values come from its lanes
            /// (`striping/`), each a counter of `kind`.
            Striped {
                /// The lanes' kind.
                kind: CounterKind,
                /// The counter.
                counter: StripedCounter,
            },
        }

        $(
            $(#[$meta])*
            impl From<<$kind as Kind>::Handle> for Sequence {
                fn from(handle: <$kind as Kind>::Handle) -> Self {
                    Sequence::$variant(handle, None)
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
                let (database, state) = Self::read_state(database, &name, options).await?;
                let sequence = Self::open_read(&database, name, &state, options).await?;
                Ok((sequence, state))
            }

            /// Reads counter `name`'s document from `database`; across
            /// deployments (`options.deployments`), from the preferred
            /// within its share of the deadline, else from a copy of a
            /// striped counter's map in another: the state, and the
            /// database it was read from.
            pub async fn read_state(
                database: &Database,
                name: &CounterName,
                options: &OpenOptions,
            ) -> Result<(Database, CounterState), SequenceError> {
                let collection = database.collection(COUNTERS_COLLECTION);
                let Some(deployments) = options.deployments.as_ref().filter(|d| d.list().len() > 1) else {
                    return Ok((database.clone(), read_state(&collection, name).await?));
                };
                read_from_any(
                    database,
                    deployments,
                    name,
                    |collection| async move { read_state(&collection, name).await },
                    |state: &CounterState| state.striped.as_ref().is_some_and(StripeMap::spans_deployments),
                )
                .await
            }

            /// Opens counter `name` whose document was just read as `state`.
            pub async fn open_read(
                database: &Database,
                name: CounterName,
                state: &CounterState,
                options: &OpenOptions,
            ) -> Result<Self, SequenceError> {
                // The work that opens it (a request, a command) names it in
                // its span, for its log lines.
                tracing::Span::current()
                    .record("counter", name.as_str())
                    .record("kind", state.kind().as_str());
                if let Some(map) = &state.striped {
                    return Ok(Sequence::Striped {
                        kind: state.kind(),
                        counter: StripedCounter::open(
                            database,
                            name,
                            map,
                            options.deployments.as_ref(),
                            options.of_kind(state.kind()),
                        )?,
                    });
                }
                Ok(match &state.kind {
                    $($(#[$meta])* KindState::$variant(fields) => Sequence::$variant(
                        <$kind as Kind>::open(database, name, fields, &options.$field).await?,
                        options.deployments.clone(),
                    ),)+
                })
            }

            /// The counter's name.
            pub fn name(&self) -> &CounterName {
                match self {
                    $($(#[$meta])* Self::$variant(handle, _) => Handle::name(handle),)+
                    Self::Striped { counter, .. } => counter.name(),
                }
            }

            /// The counter's kind.
            pub fn kind(&self) -> CounterKind {
                match self {
                    $($(#[$meta])* Self::$variant(..) => CounterKind::$variant,)+
                    Self::Striped { kind, .. } => *kind,
                }
            }

            /// The deployments it was opened with.
            fn deployments(&self) -> Option<Deployments> {
                match self {
                    $($(#[$meta])* Self::$variant(_, deployments) => deployments.clone(),)+
                    Self::Striped { counter, .. } => counter.deployments().cloned(),
                }
            }

            /// Whether the counter is striped.
            pub fn is_striped(&self) -> bool {
                matches!(self, Self::Striped { .. })
            }

            /// The database the counter is in.
            pub fn database(&self) -> Database {
                match self {
                    $($(#[$meta])* Self::$variant(handle, _) => Handle::database(handle),)+
                    Self::Striped { counter, .. } => counter.database(),
                }
            }

            /// Reserves `count` values, 1 to [`MAX_BLOCK`](crate::sequence::MAX_BLOCK), in one
            /// round trip (segment and snowflake counters: from memory), and
            /// returns them in the order issued, each a
            /// [`Stamp`](crate::parts::Stamp) ready for a policy (one is
            /// held inline: a take of one value allocates nothing).
            /// `client_micros` is the caller's clock: the floor of a cyclic
            /// counter's timestamps, and the timestamp given to the values
            /// of the kinds whose values carry no time of their own.
            ///
            /// Values the handle holds in memory are handed out at once,
            /// with no await ([`Handle::take_held`]; from a striped handle's
            /// lane lease, after one await that yields only when the task's
            /// budget is spent, [`StripedCounter::take_leased_now`]); only a
            /// take that must wait (a round trip, a fetch, a lease) goes the
            /// long way.
            pub async fn take(
                &self,
                count: usize,
                client_micros: u64,
            ) -> Result<Stamps, SequenceError> {
                check_block(self.name(), count)?;
                if let Some(stamps) = self.take_held(count, client_micros) {
                    return Ok(stamps);
                }
                if let Self::Striped { counter, .. } = self {
                    if let Some(stamps) = counter.take_leased_now(count).await {
                        return Ok(stamps);
                    }
                }
                // Boxed: the ways that wait are many and their state large;
                // a take served from memory does not carry it.
                Box::pin(self.take_waiting(count, client_micros)).await
            }

            /// `count` values from what the handle holds in memory, if it
            /// holds that many now.
            fn take_held(&self, count: usize, client_micros: u64) -> Option<Stamps> {
                match self {
                    $($(#[$meta])* Self::$variant(handle, _) => Handle::take_held(handle, count, client_micros),)+
                    Self::Striped { counter, .. } => counter.take_held(count, client_micros),
                }
            }

            /// [`Sequence::take`] when the values are not in memory.
            async fn take_waiting(
                &self,
                count: usize,
                client_micros: u64,
            ) -> Result<Stamps, SequenceError> {
                let striped = match self {
                    $($(#[$meta])* Self::$variant(handle, _) => match Handle::take(handle, count, client_micros).await {
                        // Striped since it was opened: its document is the
                        // map now, and it took nothing.
                        Err(SequenceError::Striped { .. }) => self.lanes_now().await?,
                        taken => return taken.map(Stamps::from),
                    },)+
                    Self::Striped { counter, .. } => {
                        return counter.take(count as u64, client_micros).await.map(Stamps::from)
                    }
                };
                // Opened for this take only: what it holds (a worker
                // lease) is let go at once.
                let taken = striped.take(count as u64, client_micros).await;
                let _ = striped.close().await;
                taken.map(Stamps::from)
            }

            /// The lanes of this counter, opened from its map as it is now:
            /// for a handle opened before the counter was striped, whose
            /// take found the map. (Each such take reads the map again;
            /// opening the counter again takes from the lanes directly.)
            async fn lanes_now(&self) -> Result<StripedCounter, SequenceError> {
                let state = self.state().await?;
                let database = self.database();
                // With the deployments it was opened with: the map may
                // span them now.
                let mut options = OpenOptions::default();
                options.deployments = self.deployments();
                match Self::open_read(&database, self.name().clone(), &state, &options).await? {
                    Sequence::Striped { counter, .. } => Ok(counter),
                    _ => Err(SequenceError::Striped { name: self.name().clone() }),
                }
            }

            /// Reserves `count` values (any number) as runs of consecutive
            /// values, for callers that hand them out themselves (kinds
            /// that [hand out runs](CounterKind::hands_out_runs)). For the
            /// others: [`SequenceError::NoRuns`], and nothing is taken.
            pub async fn take_ranges(&self, count: u64) -> Result<Vec<Range<u64>>, SequenceError> {
                // A striped counter's values are not runs: its lanes'
                // values step by their modulus.
                if !self.kind().hands_out_runs() || self.is_striped() {
                    return Err(SequenceError::NoRuns {
                        name: self.name().clone(),
                        kind: self.kind().as_str(),
                    });
                }
                match self {
                    $($(#[$meta])* Self::$variant(handle, _) => Handle::take_ranges(handle, count).await,)+
                    Self::Striped { .. } => unreachable!("refused above"),
                }
            }

            /// Gives back runs taken with [`Sequence::take_ranges`] that
            /// could not be handed out, where no later value has been taken
            /// since (see [`Handle::give_back`]); returns how many values
            /// were given back.
            pub async fn give_back(&self, runs: &[Range<u64>]) -> Result<u64, SequenceError> {
                match self {
                    $($(#[$meta])* Self::$variant(handle, _) => Handle::give_back(handle, runs).await,)+
                    Self::Striped { .. } => Ok(0),
                }
            }

            /// Ends the use of the counter: what this process holds is given
            /// back (a segment's unused tail) or released (a worker lease).
            pub async fn close(&self) -> Result<GiveBack, SequenceError> {
                match self {
                    $($(#[$meta])* Self::$variant(handle, _) => Handle::close(handle).await,)+
                    Self::Striped { counter, .. } => counter.close().await,
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
                read_state(&self.database().collection(COUNTERS_COLLECTION), self.name()).await
            }

            /// What this process holds of the counter (buffers, a lease).
            pub fn held(&self) -> Held {
                match self {
                    $($(#[$meta])* Self::$variant(handle, _) => Handle::held(handle),)+
                    Self::Striped { .. } => Held::default(),
                }
            }
        }

        impl CounterKind {
            /// The kinds' names as a sentence: `cyclic, autoinc, ... and periodic`.
            pub fn names() -> String {
                Self::names_where(|_| true)
            }

            /// The names of the kinds for which `keep` holds, as a sentence
            /// (`autoinc and segment`), or `no` when there are none.
            pub fn names_where(keep: impl Fn(CounterKind) -> bool) -> String {
                let names: Vec<&str> = Self::ALL
                    .iter()
                    .copied()
                    .filter(|kind| keep(*kind))
                    .map(CounterKind::as_str)
                    .collect();
                list_words(&names, "and").unwrap_or_else(|| "no".to_string())
            }

            /// The kinds whose settings include `setting`.
            pub fn taking(setting: Setting) -> impl Iterator<Item = CounterKind> {
                Self::ALL
                    .iter()
                    .copied()
                    .filter(move |kind| kind.settings().contains(&setting))
            }

            /// The kinds whose settings include `setting`, as a sentence.
            pub(crate) fn taking_names(setting: Setting) -> String {
                Self::names_where(|kind| kind.settings().contains(&setting))
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

        /// A well-formed counter of any kind, as read from the server.
        pub type CounterState = CounterDocument<KindState, StripeMap>;

        impl CounterDocument<KindState, StripeMap> {
            /// Reads a counter document, or says what is wrong with it.
            pub fn from_document(
                name: &CounterName,
                document: &Document,
            ) -> Result<Self, SequenceError> {
                let striping = |source| SequenceError::Striping { name: name.clone(), source };
                let mut striped: Option<StripeMap> = None;
                let mut state = Self::read_with(name, document, |text| {
                    // A map is read as its lanes' kind, the map beside; a
                    // lane is not a counter.
                    let text = match text {
                        STRIPED_KIND => StripeMap::read(document)
                            .map(|map| striped.insert(map).kind.clone())
                            .map_err(|reason| striping(StripingError::CorruptMap(reason)))?,
                        LANE_KIND => return Err(striping(StripingError::Lane)),
                        text => text.to_string(),
                    };
                    let kind: CounterKind =
                        text.parse().map_err(|_| SequenceError::UnknownKind {
                            name: name.clone(),
                            kind: text.clone(),
                            known: CounterKind::names(),
                        })?;
                    kind.read(document).map_err(|reason| corrupt(name, reason))
                })?;
                state.striped = striped;
                Ok(state)
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
            /// A striped counter's: its generation (its own fields are as
            /// at its last change of stripes; its lanes say the rest).
            pub fn facts(&self, now_ms: u64) -> Vec<Fact> {
                match &self.striped {
                    Some(map) => vec![Fact::text("striped", map.describe())],
                    None => self.kind.facts(now_ms),
                }
            }

            /// How much of what the counter can hand out is used at `now_ms`
            /// (`None`: it never runs out, or it is striped: its lanes say).
            pub fn headroom(&self, now_ms: u64) -> Option<Headroom> {
                match &self.striped {
                    Some(_) => None,
                    None => self.kind.headroom(now_ms),
                }
            }

            /// The fields of kind `K`, if this is a counter of that kind.
            pub fn of<K: Kind>(&self) -> Option<&K::State> {
                if self.kind().as_str() != K::NAME {
                    return None;
                }
                self.kind.fields().downcast_ref()
            }
        }

        /// Reads counter `name` from `collection` as it is now, whatever its kind.
        pub(crate) async fn read_state(
            collection: &Collection<Document>,
            name: &CounterName,
        ) -> Result<CounterState, SequenceError> {
            find_with(collection, name, CounterState::from_document).await
        }

        $(
            $(#[$meta])*
            impl Registered for $kind {
                fn refuse(name: &CounterName, document: &Document) -> SequenceError {
                    match CounterState::from_document(name, document) {
                        Err(error) => error,
                        Ok(state) if state.striped.is_some() => SequenceError::Striped {
                            name: name.clone(),
                        },
                        Ok(state) => SequenceError::WrongKind {
                            name: name.clone(),
                            expected: <$kind as Kind>::NAME,
                            found: state.kind().as_str(),
                        },
                    }
                }

                fn kind_of(
                    name: &CounterName,
                    document: &Document,
                ) -> Result<&'static str, SequenceError> {
                    CounterState::from_document(name, document).map(|state| state.kind().as_str())
                }
            }
        )+
    };
}

pub(crate) use registry;
