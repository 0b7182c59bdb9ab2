//! Points where a test holds takers of a striped counter mid-take, so that
//! a change of stripes runs while they are in flight: [`Point::BeforeTake`]
//! (the map read and a lane chosen, the take not sent) and
//! [`Point::AfterTake`] (the take applied by the server, its answer not
//! used yet); and a change of stripes between its seals and its writing
//! of the new lanes ([`Point::AfterSeals`], [`Point::BeforeLaneWrites`]),
//! so that another change runs meanwhile, or the change is slow, or in a
//! heartbeat ([`Point::AfterHeartbeat`]), so that its writes are slow; and a snowflake counter's tag between its draw and its
//! claim ([`Point::AfterTagDrawn`]) or between its claim and the new
//! counter's document ([`Point::AfterTagClaimed`]), so that a counter of
//! another deployment brings the same tag meanwhile. Only in builds with
//! the `test-hooks` feature (the test suite's); elsewhere the taker passes
//! them without a pause.

/// Where a taker is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// The map read and a lane chosen; the take not sent.
    BeforeTake,
    /// The take applied by the server; its answer not used yet.
    AfterTake,
    /// A change of stripes: its lanes sealed (and its progress said), their
    /// ceilings not recorded.
    AfterSeals,
    /// A change of stripes: its lanes sealed, the new ones not written.
    BeforeLaneWrites,
    /// A change of stripes' heartbeat: the write that says it is at work
    /// applied, its answer not used yet (held, a write slow to answer).
    AfterHeartbeat,
    /// A snowflake counter's tag drawn (the `$inc` of the tags document
    /// done), its claim not written yet.
    AfterTagDrawn,
    /// A new snowflake counter's tag drawn and claimed, its document not
    /// written yet.
    AfterTagClaimed,
}

#[cfg(feature = "test-hooks")]
pub use held::{hold, Hold};

#[cfg(feature = "test-hooks")]
mod held {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use tokio::sync::Barrier;

    use super::Point;

    /// The takes held at one point of one counter.
    #[derive(Debug)]
    struct Held {
        counter: String,
        point: Point,
        takers: usize,
        passed: AtomicUsize,
        arrived: Barrier,
        go: Barrier,
    }

    static HELD: Mutex<Vec<Arc<Held>>> = Mutex::new(Vec::new());

    /// The first `takers` takes of counter `counter` (`database.name`)
    /// that reach `point` wait there until [`Hold::release`]; later ones
    /// pass, or wait at another hold of the point made meanwhile. Dropping
    /// the hold ends it.
    pub fn hold(database: &str, counter: &str, point: Point, takers: usize) -> Hold {
        let held = Arc::new(Held {
            counter: format!("{database}.{counter}"),
            point,
            takers,
            passed: AtomicUsize::new(0),
            arrived: Barrier::new(takers + 1),
            go: Barrier::new(takers + 1),
        });
        HELD.lock().unwrap().push(held.clone());
        Hold { held }
    }

    /// Takes held at a point (see [`hold`]).
    #[derive(Debug)]
    pub struct Hold {
        held: Arc<Held>,
    }

    impl Hold {
        /// Returns once every taker held has reached the point.
        pub async fn arrived(&self) {
            self.held.arrived.wait().await;
        }

        /// Lets the takers held go on.
        pub async fn release(&self) {
            self.held.go.wait().await;
        }
    }

    impl Drop for Hold {
        fn drop(&mut self) {
            HELD.lock()
                .unwrap()
                .retain(|held| !Arc::ptr_eq(held, &self.held));
        }
    }

    /// Holds this take at `point` if a test asked for it.
    pub(crate) async fn pass(database: &str, counter: &str, point: Point) {
        let key = format!("{database}.{counter}");
        let held = HELD
            .lock()
            .unwrap()
            .iter()
            // The first hold of the point with takes still to hold: a test
            // holds one take, then the next, with two holds.
            .find(|held| {
                held.counter == key
                    && held.point == point
                    && held.passed.load(Ordering::SeqCst) < held.takers
            })
            .cloned();
        if let Some(held) = held {
            if held.passed.fetch_add(1, Ordering::SeqCst) < held.takers {
                held.arrived.wait().await;
                held.go.wait().await;
            }
        }
    }
}

/// Holds this take at `point` if a test asked for it (test builds only).
#[cfg(feature = "test-hooks")]
pub(crate) use held::pass;

/// Holds this take at `point` if a test asked for it (test builds only).
#[cfg(not(feature = "test-hooks"))]
pub(crate) async fn pass(_database: &str, _counter: &str, _point: Point) {}
