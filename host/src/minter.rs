//! The runner: turns counter values into formatted IDs with a policy.
//!
//! [`Minter::prepare`] checks everything that can be checked before a value is
//! consumed: the counter exists and is well formed, the policy can hold every
//! value of the counter's cycle, and the prefix is one the policy accepts. Only
//! then does [`Minter::next_ids`] take values, so bad input never burns any.

use std::sync::Arc;

use crate::policy::{IdParts, Policy, PolicyError, Stamp};
use crate::sequence::{Clock, CounterState, CyclicCounter, Issued};
use crate::Error;

/// Makes formatted IDs from one counter.
pub struct Minter {
    counter: CyclicCounter,
    policy: Policy,
    clock: Arc<dyn Clock>,
    prefix: String,
}

/// The policy's sequence field cannot hold every value of the counter.
#[derive(Debug, thiserror::Error)]
#[error(
    "policy '{policy}' holds {capacity} sequence values (0 to {}), but counter '{counter}' counts 0 to {maxval}: \
     use a counter with maxval below {capacity} or a policy with a larger sequence",
    capacity - 1
)]
pub struct CapacityError {
    /// The policy's name.
    pub policy: String,
    /// The policy's sequence capacity.
    pub capacity: u64,
    /// The counter's name.
    pub counter: String,
    /// The counter's maxval.
    pub maxval: u64,
}

impl Minter {
    /// Checks the counter, the policy and the prefix (see the module docs).
    /// `prefix` overrides the counter's own; with neither, the prefix is empty.
    pub async fn prepare(
        counter: CyclicCounter,
        policy: Policy,
        prefix: Option<String>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, Error> {
        let state = counter.state().await?;
        check_capacity(&policy, &state)?;
        let prefix = prefix.or(state.prefix).unwrap_or_default();
        check_prefix(&policy, &prefix, clock.now_micros())?;
        Ok(Self {
            counter,
            policy,
            clock,
            prefix,
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

    /// Takes one value from the counter (one round trip).
    pub async fn next_issued(&self) -> Result<Issued, Error> {
        Ok(self.counter.next(self.clock.now_micros()).await?)
    }

    /// Takes `count` values, one atomic round trip each, in the order issued,
    /// as the stamps a policy formats.
    pub async fn next_stamps(&self, count: usize) -> Result<Vec<Stamp>, Error> {
        let mut stamps = Vec::with_capacity(count);
        for _ in 0..count {
            let issued = self.next_issued().await?;
            stamps.push(Stamp {
                timestamp_micros: issued.timestamp_micros,
                sequence: issued.value,
            });
        }
        Ok(stamps)
    }

    /// Takes `count` values and formats them in one policy call. IDs come out
    /// in the order they were issued.
    pub async fn next_ids(&self, count: usize) -> Result<Vec<String>, Error> {
        let stamps = self.next_stamps(count).await?;
        Ok(self.policy.format_batch(&self.prefix, &stamps)?)
    }
}

/// Fails, with the policy's reason, unless the policy accepts `prefix`: it
/// formats a sample ID at `now_micros`, so nothing is consumed or written.
pub fn check_prefix(policy: &Policy, prefix: &str, now_micros: u64) -> Result<(), PolicyError> {
    policy
        .format(&IdParts {
            prefix: prefix.to_string(),
            timestamp_micros: now_micros,
            sequence: 0,
        })
        .map(drop)
}

/// Fails unless every value 0..=maxval fits the policy's sequence field.
pub fn check_capacity(policy: &Policy, counter: &CounterState) -> Result<(), CapacityError> {
    let capacity = policy.info().sequence_capacity;
    if counter.maxval >= capacity {
        return Err(CapacityError {
            policy: policy.info().name.clone(),
            capacity,
            counter: counter.name.clone(),
            maxval: counter.maxval,
        });
    }
    Ok(())
}
