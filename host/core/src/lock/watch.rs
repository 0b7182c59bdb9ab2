//! One change stream per lock name per [`Locks`](super::Locks), shared by
//! every waiter on that lock that the `Locks` made (Redisson does the same
//! with one subscription per lock name per client).
//!
//! A stream of its own per waiting call would cost the server a cursor on
//! the oplog per waiter, every event sent once per waiter of the process,
//! and an `aggregate` and a `killCursors` per acquisition. The shared stream
//! is opened by the first waiter and forwarded to every waiter subscribed
//! at the time of the event (a broadcast channel). It stays open [`LINGER`]
//! after its last waiter left, so a process that takes the same lock again
//! and again does not reopen it each time, and is closed then (or when the
//! `Locks` and every lock handle made from it are dropped).
//!
//! A waiter subscribes before its first attempt, so every event of a write
//! after that attempt reaches it. One that falls behind (the channel is
//! bounded) is told so and attempts at once; when the stream fails for
//! good, its waiters are told the channel closed and poll.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures_util::StreamExt;
use mongodb::bson::{doc, Document};
use mongodb::change_stream::event::ChangeStreamEvent;
use mongodb::Collection;
use tokio::sync::broadcast;
use tokio::task::AbortHandle;
use tokio::time::Instant;

/// How long a lock's stream stays open after its last waiter left.
pub const LINGER: Duration = Duration::from_secs(30);

/// How many lock names are kept before closed ones are forgotten.
const PRUNE_FROM: usize = 64;

/// Events a waiter may fall behind by before it is told it lagged.
const BACKLOG: usize = 256;

/// One event on a lock's document, as every waiter receives it.
pub(crate) type Notice = Arc<ChangeStreamEvent<Document>>;

/// The receiving end a waiting call holds.
pub(crate) type Subscription = broadcast::Receiver<Notice>;

/// The shared streams of one `Locks`, by lock name.
#[derive(Default)]
pub(crate) struct Watchers {
    by_name: Mutex<HashMap<String, Arc<Watch>>>,
}

/// The stream of one lock name: the sender waiters subscribe to while it
/// runs, and the task that forwards the stream's events.
#[derive(Default)]
struct Watch {
    running: Mutex<Option<Running>>,
    /// Held while the stream is being opened, so one waiter opens it.
    opening: tokio::sync::Mutex<()>,
}

struct Running {
    sender: broadcast::Sender<Notice>,
    task: AbortHandle,
}

impl std::fmt::Debug for Watchers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = self.by_name.lock().map(|m| m.len()).unwrap_or_default();
        f.debug_struct("Watchers").field("names", &names).finish()
    }
}

impl Watchers {
    /// A subscription to the events on lock document `name` of
    /// `collection`, the stream opened first if it is not running; `None`
    /// when it cannot be opened (the server has no change streams): poll.
    pub async fn subscribe(
        &self,
        collection: &Collection<Document>,
        name: &str,
    ) -> Option<Subscription> {
        let watch = {
            let mut by_name = self.by_name.lock().unwrap();
            if !by_name.contains_key(name) && by_name.len() >= PRUNE_FROM {
                // Forget the names whose stream has closed and that nobody
                // is opening: a process that waits on ever new names keeps
                // only those of the last LINGER.
                by_name.retain(|_, watch| {
                    Arc::strong_count(watch) > 1 || watch.running.lock().unwrap().is_some()
                });
            }
            by_name.entry(name.to_string()).or_default().clone()
        };
        if let Some(subscription) = watch.subscribe() {
            return Some(subscription);
        }
        let _opening = watch.opening.lock().await;
        if let Some(subscription) = watch.subscribe() {
            return Some(subscription);
        }
        let stream = collection
            .watch()
            .pipeline([doc! { "$match": { "documentKey._id": name } }])
            .await
            .ok()?;
        let (sender, subscription) = broadcast::channel(BACKLOG);
        let task = tokio::spawn(forward(stream, sender.clone(), Arc::downgrade(&watch)));
        *watch.running.lock().unwrap() = Some(Running {
            sender,
            task: task.abort_handle(),
        });
        Some(subscription)
    }
}

impl Watch {
    /// A subscription to the running stream, if one runs. A forwarding task
    /// that ended without saying so (its runtime shut down) counts as none.
    fn subscribe(&self) -> Option<Subscription> {
        let mut running = self.running.lock().unwrap();
        if running.as_ref().is_some_and(|r| r.task.is_finished()) {
            running.take();
        }
        running.as_ref().map(|running| running.sender.subscribe())
    }
}

impl Drop for Watchers {
    fn drop(&mut self) {
        let Ok(by_name) = self.by_name.get_mut() else {
            return;
        };
        for watch in by_name.values() {
            if let Some(running) = watch.running.lock().unwrap().take() {
                running.task.abort();
            }
        }
    }
}

/// Forwards the stream's events to the subscribers until the stream fails
/// or nobody has subscribed for [`LINGER`]; then stops accepting
/// subscriptions (under the same mutex as they are taken, so no waiter
/// subscribes to a stream that is closing) and ends, which closes the
/// channel for anyone still subscribed.
async fn forward(
    mut stream: mongodb::change_stream::ChangeStream<ChangeStreamEvent<Document>>,
    sender: broadcast::Sender<Notice>,
    watch: Weak<Watch>,
) {
    let mut last_waiter = Instant::now();
    loop {
        tokio::select! {
            event = stream.next() => match event {
                Some(Ok(event)) => {
                    let _ = sender.send(Arc::new(event));
                }
                _ => break,
            },
            _ = tokio::time::sleep(LINGER / 4) => {}
        }
        if sender.receiver_count() > 0 {
            last_waiter = Instant::now();
            continue;
        }
        if last_waiter.elapsed() < LINGER {
            continue;
        }
        let Some(watch) = watch.upgrade() else { return };
        let mut running = watch.running.lock().unwrap();
        if sender.receiver_count() == 0 {
            running.take();
            return;
        }
    }
    if let Some(watch) = watch.upgrade() {
        let mut running = watch.running.lock().unwrap();
        if running
            .as_ref()
            .is_some_and(|running| running.sender.same_channel(&sender))
        {
            running.take();
        }
    }
}
