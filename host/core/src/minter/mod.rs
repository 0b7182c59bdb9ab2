//! The runner: turns sequence values into formatted IDs with a policy.
//!
//! [`Minter::prepare`] checks everything that can be checked before a value is
//! consumed: the counter exists and is well formed, it owns the prefix and
//! no other counter does ([`prefixes::check_use`]), the policy can serve it
//! ([`check_fit`](crate::policy::check_fit): capacity, and the time or the
//! period for counters whose values repeat), and the prefix is one the
//! policy accepts and reads back alone out of the counter's IDs (so no
//! other counter's prefix can make the same ID:
//! [`check_prefix_reads_back`](crate::policy::check_prefix_reads_back));
//! the policy's checks run once per prefix and counter shape
//! ([`check_serves`]). Only then does
//! [`Minter::next_ids`] take values, so bad input never burns any.
//!
//! A snowflake counter's stamps carry its tag and salt to a policy that
//! receives them (contract 0.5.0: the standard IDs); a counter made before
//! tags is given them when such a policy is prepared for it
//! ([`ensure_tag`]). With such a policy, a snowflake counter that does
//! not own the empty prefix may format IDs without one: its tag keeps them
//! apart ([`Namespace`]).
//!
//! A long-running process serves through a [`LiveMinter`] (`live.rs`): the
//! same checks, a policy swapped live from a file or the policies
//! collection, and a clean shutdown.

mod live;
mod namespace;

use std::sync::Arc;

use crate::policy::{check_serves, check_tag_reads_back, Policy, Stamp};
use crate::sequence::{
    ensure_tag, prefixes, Clock, CounterState, CounterTag, GiveBack, KindState, Sequence, MAX_BLOCK,
};
use crate::Error;

pub use live::{LiveMinter, LiveOptions};
pub use namespace::Namespace;

/// Makes formatted IDs from one counter.
pub struct Minter {
    sequence: Sequence,
    state: CounterState,
    policy: Policy,
    clock: Arc<dyn Clock>,
    prefix: String,
    /// The snowflake counter's tag and salt the stamps carry.
    tag: Option<CounterTag>,
}

impl Minter {
    /// Checks the counter, the prefix and the policy (see the module docs).
    /// `prefix` overrides the counter's default; it must be one the counter
    /// owns.
    pub async fn prepare(
        sequence: impl Into<Sequence>,
        policy: Policy,
        prefix: Option<String>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, Error> {
        let sequence = sequence.into();
        let state = sequence.state().await?;
        Self::prepare_opened(sequence, state, policy, prefix, clock).await
    }

    /// [`Minter::prepare`] for a sequence whose state was just read (by
    /// [`Sequence::open`]), without reading it again.
    pub async fn prepare_opened(
        sequence: Sequence,
        state: CounterState,
        policy: Policy,
        prefix: Option<String>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, Error> {
        let prefix = prefix.unwrap_or_else(|| state.default_prefix().to_string());
        if Namespace::of(&policy, &state, &prefix) == Namespace::Prefix {
            prefixes::check_use(&sequence.database(), &state, &prefix).await?;
        }
        let state = tagged(&sequence, state, &policy).await?;
        Self::checked(sequence, state, policy, prefix, clock)
    }

    /// The policy's checks of [`Minter::prepare`] alone, for a caller that
    /// has just run [`prefixes::check_use`] for `prefix` itself (unless its
    /// [`Namespace`] is the tag: then the policy must read the tag back).
    pub fn checked(
        sequence: Sequence,
        state: CounterState,
        policy: Policy,
        prefix: String,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, Error> {
        check_serves(&policy, &state, &prefix, clock.now_micros())?;
        if Namespace::of(&policy, &state, &prefix) == Namespace::Tag {
            check_tag_reads_back(&policy, &state)?;
        }
        let tag = match &state.kind {
            KindState::Snowflake(snowflake) if policy.receives_counter_tag() => snowflake.tag,
            _ => None,
        };
        Ok(Self {
            sequence,
            state,
            policy,
            clock,
            prefix,
            tag,
        })
    }

    /// The prefix in use.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The policy in use.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The counter as it was when the minter was prepared.
    pub fn counter(&self) -> &CounterState {
        &self.state
    }

    /// The sequence values come from.
    pub fn sequence(&self) -> &Sequence {
        &self.sequence
    }

    /// Takes `count` values, in blocks of at most [`MAX_BLOCK`] per round
    /// trip, in the order issued, as the stamps a policy formats.
    pub async fn next_stamps(&self, count: usize) -> Result<Vec<Stamp>, Error> {
        let mut stamps = Vec::with_capacity(count);
        while stamps.len() < count {
            let block = (count - stamps.len()).min(MAX_BLOCK);
            stamps.extend(self.sequence.take(block, self.clock.now_micros()).await?);
        }
        if let Some(tag) = self.tag {
            for fields in stamps
                .iter_mut()
                .filter_map(|stamp| stamp.snowflake.as_mut())
            {
                fields.tag = tag.tag;
                fields.salt = tag.salt;
            }
        }
        Ok(stamps)
    }

    /// Takes `count` values and formats them in one policy call. IDs come out
    /// in the order they were issued.
    pub async fn next_ids(&self, count: usize) -> Result<Vec<String>, Error> {
        let stamps = self.next_stamps(count).await?;
        Ok(self.policy.format_batch(&self.prefix, &stamps)?)
    }

    /// Ends the use of the counter (a segment counter gives its unused
    /// values back).
    pub async fn close(&self) -> Result<GiveBack, Error> {
        Ok(self.sequence.close().await?)
    }
}

/// `state`, a snowflake counter without a tag given one now ([`ensure_tag`])
/// when `policy` receives it; any other counter as it is. [`Minter::prepare`]
/// runs it; a caller of [`Minter::checked`] runs it first.
pub async fn tagged(
    sequence: &Sequence,
    mut state: CounterState,
    policy: &Policy,
) -> Result<CounterState, Error> {
    if let KindState::Snowflake(snowflake) = &mut state.kind {
        if snowflake.tag.is_none() && policy.receives_counter_tag() {
            snowflake.tag = Some(ensure_tag(&sequence.database(), sequence.name()).await?);
        }
    }
    Ok(state)
}
