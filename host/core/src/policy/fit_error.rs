//! [`FitError`]: a policy cannot serve a counter (`fit.rs` finds it). Its
//! one home: a [`PolicyError::Fit`](super::PolicyError::Fit) carries it
//! everywhere else.

use crate::sequence::{list_words, CounterKind, CounterName, CounterSpec, CounterState, Repeats};

/// A policy cannot serve a counter.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FitError {
    /// The policy's sequence field cannot hold every value of the counter.
    #[error(
        "policy '{policy}' holds {capacity} sequence values (0 to {}), but {} \
         hands out values up to {largest}: {advice}",
        capacity - 1,
        counter_phrase(*kind, counter)
    )]
    Capacity {
        /// The policy's name.
        policy: String,
        /// The policy's sequence capacity.
        capacity: u64,
        /// The counter's name; empty for a counter described only by its
        /// shape (`policy check --maxval N`).
        counter: String,
        /// The counter's kind.
        kind: CounterKind,
        /// The largest value the counter can hand out.
        largest: u64,
        /// What to do about it.
        advice: &'static str,
    },
    /// The policy does not write the period, and the counter's values
    /// restart in each period.
    #[error(
        "policy '{policy}' does not write the period into its IDs, and {} is \
         {kind}: its values restart at 1 in each period, so its IDs would repeat; use a \
         policy that writes the period, such as the built-in decimal policy (--policy builtin:decimal)",
        named(counter)
    )]
    NeedsPeriod {
        /// The policy's name.
        policy: String,
        /// The counter's name.
        counter: String,
        /// The counter's kind.
        kind: CounterKind,
    },
    /// The policy does not write the time, and the counter's values repeat.
    #[error(
        "policy '{policy}' does not write the time into its IDs, and {} is {kind}: \
         its values repeat, so its IDs would repeat too; use {} counter with \
         this policy, or a policy that writes the time",
        named(counter),
        never_repeating()
    )]
    NeedsTime {
        /// The policy's name.
        policy: String,
        /// The counter's name.
        counter: String,
        /// The counter's kind.
        kind: CounterKind,
    },
    /// The policy formats snowflake IDs only (a standard ID: UUIDv7,
    /// ULID), and the counter is not a snowflake counter.
    #[error(
        "policy '{policy}' formats snowflake IDs only (it writes their worker id and sequence \
         to keep IDs unique), and {} is {kind}: use a snowflake counter \
         (idmint counter create NAME --kind snowflake)",
        named(counter)
    )]
    NeedsSnowflake {
        /// The policy's name.
        policy: String,
        /// The counter's name.
        counter: String,
        /// The counter's kind.
        kind: CounterKind,
    },
    /// The policy does not read the prefix back alone out of an ID it
    /// formats for the counter: another counter's prefix could then make
    /// the same ID.
    #[error(
        "policy '{policy}' formats {id:?} for {} with prefix {prefix:?}, but reads it back {}: \
         another counter's IDs could be the same; choose a prefix that does not end with what \
         the policy writes after one (digits, a period's label and its dash)",
        named(counter),
        match read { Some(read) => format!("with prefix {read:?}"), None => "as invalid".to_string() }
    )]
    PrefixNotReadBack {
        /// The policy's name.
        policy: String,
        /// The counter's name.
        counter: String,
        /// The prefix.
        prefix: String,
        /// The ID the policy formatted.
        id: String,
        /// The prefix the policy read back, if it read the ID at all.
        read: Option<String>,
    },
    /// A counter formats IDs without owning the empty prefix, which only a
    /// policy that writes the counter's tag into every ID may do, and this
    /// policy does not read the tag back out of one of them.
    #[error(
        "{} owns no empty prefix, so its IDs without a prefix are kept apart from other \
         counters' by its tag ({tag}) alone, and policy '{policy}' formats {id:?} for it but \
         reads it back {}: use a policy that writes the counter's tag (builtin:uuidv7, \
         builtin:ulid), or a prefix the counter owns",
        named(counter),
        match read { Some(read) => format!("with tag {read}"), None => "as invalid".to_string() }
    )]
    TagNotReadBack {
        /// The policy's name.
        policy: String,
        /// The counter's name.
        counter: String,
        /// The counter's tag.
        tag: u32,
        /// The ID the policy formatted.
        id: String,
        /// The tag the policy read back, if it read the ID at all.
        read: Option<u32>,
    },
}

/// "autoinc counter 'invoices'", or "an autoinc counter" for a counter with
/// no name (one described only by its shape).
fn counter_phrase(kind: CounterKind, counter: &str) -> String {
    if counter.is_empty() {
        format!("{} counter", with_article(kind.as_str()))
    } else {
        format!("{kind} counter '{counter}'")
    }
}

/// The kinds whose values never repeat (with their default settings), with
/// an article, as a choice: "an autoinc or segment". Only they serve a
/// policy that writes nothing to tell repeated values apart.
fn never_repeating() -> String {
    let name = CounterName::new("probe").expect("a valid name");
    let names: Vec<&str> = CounterKind::ALL
        .iter()
        .copied()
        .filter(|kind| {
            CounterSpec::of(*kind)
                .document(&name, 0)
                .and_then(|document| CounterState::from_document(&name, &document))
                .is_ok_and(|state| state.shape().repeats == Repeats::Never)
        })
        .map(CounterKind::as_str)
        .collect();
    list_words(&names, "or").map_or_else(|| "a".to_string(), |names| with_article(&names))
}

/// A kind's name (or the first of several) with its article: "an autoinc".
fn with_article(kind: &str) -> String {
    let an = kind.starts_with(['a', 'e', 'i', 'o', 'u']);
    format!("{} {kind}", if an { "an" } else { "a" })
}

/// "counter 'orders'", or "the counter" for a counter with no name.
fn named(counter: &str) -> String {
    if counter.is_empty() {
        "the counter".to_string()
    } else {
        format!("counter '{counter}'")
    }
}

impl FitError {
    /// The counter the policy cannot serve.
    pub fn counter(&self) -> &str {
        match self {
            FitError::Capacity { counter, .. }
            | FitError::NeedsTime { counter, .. }
            | FitError::NeedsPeriod { counter, .. }
            | FitError::NeedsSnowflake { counter, .. }
            | FitError::PrefixNotReadBack { counter, .. }
            | FitError::TagNotReadBack { counter, .. } => counter,
        }
    }
}
