//! [`Namespace`]: what keeps the IDs a minter formats apart from every other
//! counter's in the database.
//!
//! Normally the prefix: a counter formats IDs only with a prefix it owns,
//! alone (`sequence::prefixes`), and the policy reads that prefix back out
//! of them. A standard ID (UUIDv7, ULID) holds no prefix, and only one
//! counter can own the empty one; but it carries the counter's tag, which
//! is unique in the database, so a snowflake counter that does not own the
//! empty prefix may still format such IDs without one, provided the policy
//! reads its tag back out of every one ([`check_tag_reads_back`], run by
//! [`Minter::checked`](super::Minter::checked)). No prefix of another
//! counter is used, and no other counter's IDs can carry this tag.

use crate::policy::Policy;
use crate::sequence::CounterState;

#[cfg(doc)]
use crate::policy::check_tag_reads_back;

/// What keeps a minter's IDs apart from other counters' (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Namespace {
    /// The prefix, owned by the counter alone.
    Prefix,
    /// The counter's tag, written into every ID by the policy: IDs without
    /// a prefix, from a snowflake counter that does not own the empty one.
    Tag,
}

impl Namespace {
    /// The namespace of `counter`'s IDs formatted by `policy` with `prefix`:
    /// [`Namespace::Tag`] for the empty prefix from a snowflake counter
    /// that does not own it, with a policy that receives the counter's tag
    /// (contract 0.5.0); [`Namespace::Prefix`] otherwise, and then the
    /// prefix rules apply, as they do to a counter that owns the empty
    /// prefix.
    pub fn of(policy: &Policy, counter: &CounterState, prefix: &str) -> Self {
        let tag_keyed = prefix.is_empty()
            && !counter.owns(prefix)
            && counter.snowflake_layout().is_some()
            && policy.receives_counter_tag();
        if tag_keyed {
            Namespace::Tag
        } else {
            Namespace::Prefix
        }
    }
}
