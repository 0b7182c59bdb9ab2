//! What every opened counter can do whatever its kind, given once for all
//! of them rather than by each kind's handle: read its counter as it is
//! now, and create it.

use super::error::{with_article, SequenceError};
use super::kind_trait::{Handle, Kind};
use super::registry::{read_state, CounterState};
use super::spec::{create_in, CounterSpec};

/// What every opened counter can do (see the module docs); implemented for
/// every kind's handle.
#[allow(async_fn_in_trait)]
pub trait OpenedCounter: Handle {
    /// Reads the counter as it is now.
    async fn state(&self) -> Result<CounterState, SequenceError>;

    /// Creates the counter as `spec` says, which must be of the handle's
    /// kind (write concern majority with journal); see
    /// [`create`](crate::sequence::create).
    async fn create(&self, spec: &CounterSpec) -> Result<CounterState, SequenceError>;
}

impl<H: Handle> OpenedCounter for H {
    async fn state(&self) -> Result<CounterState, SequenceError> {
        read_state(&counters(self), self.name()).await
    }

    async fn create(&self, spec: &CounterSpec) -> Result<CounterState, SequenceError> {
        let kind = <H::Of as Kind>::NAME;
        if spec.kind.as_str() != kind {
            return Err(SequenceError::InvalidSpec(format!(
                "a {} spec given to {} counter handle",
                spec.kind,
                with_article(kind)
            )));
        }
        let write_concern = crate::mongo::durable_write_concern();
        create_in(&counters(self), self.name(), spec, &write_concern).await
    }
}

/// The counters collection of `handle`'s database.
fn counters(handle: &impl Handle) -> mongodb::Collection<mongodb::bson::Document> {
    handle
        .database()
        .collection(crate::mongo::collections::COUNTERS)
}
