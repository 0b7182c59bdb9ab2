//! [`Frozen`]: what a counter's handle holds in memory, under its lock,
//! while the takes that go without the lock are stopped, published to them
//! again when the lock is let go. Both cursors that hand out values with
//! one compare-and-swap work this way: a segment counter's
//! (`kinds/segment/buffers.rs`) and a striped counter's runs
//! (`striping/run_cursor.rs`).

use std::ops::{Deref, DerefMut};

/// The state behind `guard` (a lock's guard), taken after the cursor was
/// frozen so that the state is exact; `publish` lets takers at it again
/// when it is dropped, also while unwinding: the lock holder never leaves
/// takers frozen.
pub(crate) struct Frozen<G, P>
where
    G: DerefMut,
    P: FnMut(&mut G::Target),
{
    guard: G,
    publish: P,
}

impl<G, P> Frozen<G, P>
where
    G: DerefMut,
    P: FnMut(&mut G::Target),
{
    /// `guard`'s state, to be published by `publish` when let go.
    pub(crate) fn new(guard: G, publish: P) -> Self {
        Self { guard, publish }
    }
}

impl<G, P> Deref for Frozen<G, P>
where
    G: DerefMut,
    P: FnMut(&mut G::Target),
{
    type Target = G::Target;

    fn deref(&self) -> &G::Target {
        &self.guard
    }
}

impl<G, P> DerefMut for Frozen<G, P>
where
    G: DerefMut,
    P: FnMut(&mut G::Target),
{
    fn deref_mut(&mut self) -> &mut G::Target {
        &mut self.guard
    }
}

impl<G, P> Drop for Frozen<G, P>
where
    G: DerefMut,
    P: FnMut(&mut G::Target),
{
    fn drop(&mut self) {
        (self.publish)(&mut self.guard);
    }
}
