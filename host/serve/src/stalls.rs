//! The connections whose writes are blocked on a client that does not read,
//! oldest first: what a listener sheds when every slot is taken, so that
//! a client that reads gets in while those that do not hold on. Envoy's
//! overload manager shrinks timeouts as connections run short; shedding the
//! longest stalled one at once is the same idea taken to its end.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// The blocked connections of one listener.
#[derive(Default)]
pub(crate) struct Stalls {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    /// By when the connection's writes were first blocked, then its id:
    /// told to close through its `Notify`.
    blocked: BTreeMap<(Instant, u64), Arc<Notify>>,
}

/// One connection's place in [`Stalls`]: noted blocked or moving by its
/// writes, and told to close when shed.
pub(crate) struct Stall {
    stalls: Arc<Stalls>,
    id: u64,
    shed: Arc<Notify>,
    since: Option<Instant>,
}

impl Stalls {
    /// A new connection's place, not blocked.
    pub(crate) fn register(self: &Arc<Self>) -> Stall {
        let mut inner = self
            .inner
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        inner.next_id += 1;
        Stall {
            stalls: self.clone(),
            id: inner.next_id,
            shed: Arc::new(Notify::new()),
            since: None,
        }
    }

    /// Tells the connection blocked longest, if for at least `at_least`, to
    /// close; whether one was.
    pub(crate) fn shed_oldest(&self, at_least: Duration) -> bool {
        let mut inner = self
            .inner
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let Some(entry) = inner.blocked.first_entry() else {
            return false;
        };
        if entry.key().0.elapsed() < at_least {
            return false;
        }
        entry.remove().notify_one();
        true
    }

    fn set(&self, id: u64, since: Option<Instant>, was: Option<Instant>, shed: &Arc<Notify>) {
        let mut inner = self
            .inner
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if let Some(was) = was {
            inner.blocked.remove(&(was, id));
        }
        if let Some(since) = since {
            inner.blocked.insert((since, id), shed.clone());
        }
    }
}

impl Stall {
    /// What tells this connection to close once it is shed.
    pub(crate) fn shed_signal(&self) -> Arc<Notify> {
        self.shed.clone()
    }

    /// A write found the client's window full (from now, unless it was
    /// already).
    pub(crate) fn blocked(&mut self) {
        if self.since.is_none() {
            let now = Instant::now();
            self.stalls.set(self.id, Some(now), None, &self.shed);
            self.since = Some(now);
        }
    }

    /// A write went through: no longer a candidate.
    pub(crate) fn moved(&mut self) {
        if let Some(was) = self.since.take() {
            self.stalls.set(self.id, None, Some(was), &self.shed);
        }
    }
}

impl Drop for Stall {
    fn drop(&mut self) {
        self.moved();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connection_blocked_longest_is_shed_first_and_only_once_blocked_long_enough() {
        let stalls = Arc::new(Stalls::default());
        let mut first = stalls.register();
        let mut second = stalls.register();
        let mut moving = stalls.register();
        first.blocked();
        second.blocked();
        moving.blocked();
        moving.moved();
        assert!(
            !stalls.shed_oldest(Duration::from_secs(3600)),
            "not blocked that long"
        );
        assert!(stalls.shed_oldest(Duration::ZERO));
        // The first was told (a permit waits for it), the second not.
        let told = |stall: &Stall| {
            let notified = stall.shed_signal();
            let future = notified.notified();
            tokio::pin!(future);
            future.as_mut().enable()
        };
        assert!(told(&first));
        assert!(!told(&second));
        drop(second);
        assert!(
            !stalls.shed_oldest(Duration::ZERO),
            "the moving one is no candidate"
        );
    }
}
