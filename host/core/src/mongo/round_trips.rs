//! The round trips to the database that one piece of work made (a request
//! of `serve`, a command of the CLI), and the servers they went to: counted
//! from the driver's command events, for the spans of the logs. Work run
//! outside [`counting`] (a segment fetched ahead in the background, a lease
//! renewed) is not counted: it belongs to no request. The driver's handler
//! is set only when debug lines can be logged (`ConnectOptions::connect`):
//! it costs each command a copy of itself and its reply.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::future::Future;

use mongodb::event::command::CommandEvent;
use mongodb::event::EventHandler;

tokio::task_local! {
    static TRIPS: RefCell<RoundTrips>;
}

/// The round trips made, and to which servers (`host:port`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoundTrips {
    /// Commands sent.
    pub count: u64,
    /// The servers they were sent to.
    pub servers: BTreeSet<String>,
}

impl RoundTrips {
    /// The servers, comma-separated, for a log field.
    pub fn servers_text(&self) -> String {
        self.servers.iter().cloned().collect::<Vec<_>>().join(",")
    }
}

/// Runs `future`, counting the round trips it makes (its own task's: those
/// of tasks it spawns are theirs).
pub async fn counting<F: Future>(future: F) -> (F::Output, RoundTrips) {
    TRIPS
        .scope(RefCell::new(RoundTrips::default()), async {
            let output = future.await;
            let trips = TRIPS.with(|trips| trips.borrow().clone());
            (output, trips)
        })
        .await
}

/// The driver's command event handler that counts: a command started is a
/// round trip of the task that sent it (the driver sends it from the
/// caller's task and calls a callback handler there).
pub(crate) fn handler() -> EventHandler<CommandEvent> {
    EventHandler::callback(|event: CommandEvent| {
        if let CommandEvent::Started(started) = event {
            let _ = TRIPS.try_with(|trips| {
                let mut trips = trips.borrow_mut();
                trips.count += 1;
                trips.servers.insert(started.connection.address.to_string());
            });
        }
    })
}
