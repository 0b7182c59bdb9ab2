//! The generator: hands out snowflake IDs from one atomic word, shared by
//! every thread and task of the process, and fails closed.
//!
//! The word holds the next ID to issue (time, worker, sequence composed), so
//! a compare-and-swap both takes an ID and proves the worker id it carries
//! is still the one the word was set up with: a re-lease stores a new word,
//! and a taker that read the old one fails its swap and reads again. Before
//! each ID the taker checks, in this order:
//!
//! 1. the lease: its local deadline (the lease primitive's
//!    `crate::lease::Deadline`: from the moment the last acknowledged claim
//!    or renewal was *sent*, plus the lease's time to live, less a margin)
//!    not passed; a process paused past it (SIGSTOP, a stall) issues
//!    nothing;
//! 2. the clock: the next ID's time unit against the wall clock. Ahead of
//!    the clock by at most [`RollbackOptions::tolerance`] (a sequence used
//!    up within one unit, or a small step back), the taker waits; further
//!    ahead (a large step back), it either keeps issuing from the last time,
//!    borrowing the future while the sequence lasts, or refuses, as
//!    configured; never a duplicate;
//! 3. the reservation: the next ID's time unit is within the time the lease
//!    reserved in the database, so that whoever takes the worker id over
//!    starts after it.
//!
//! Each attempt reads the monotonic clock once: the lease's deadline is
//! checked against that reading, and the wall clock is read through it
//! ([`SteadyWall`]): the system clock itself once per millisecond, the
//! wall time in between the last reading moved on by the monotonic clock.
//! A step of the system clock is so seen within a millisecond; the checks
//! that keep IDs unique and within the lease do not depend on it.
//!
//! A new lease is installed by first swapping the word for [`POISON`], which
//! no ID comes from: a taker that read the old word fails its swap, and one
//! that reads the poison waits, so no taker can pair the old word (its
//! worker id) with the new lease's reservation.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::lease::Deadline;
use crate::parts::{Layout, SnowflakeParts, TimeUnit};
use crate::sequence::Clock;

/// The word while no lease is installed (before the first, during a
/// re-lease, after the close): not a 63-bit ID, so no ID comes from it.
pub(crate) const POISON: u64 = u64::MAX;

/// What to do when the clock is behind the last issued time by more than
/// the tolerance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnRollback {
    /// Keep issuing from the last time, borrowing the future while the
    /// sequence and the lease's reservation last.
    Borrow,
    /// Refuse (the clock is behind) until the clock catches up.
    Refuse,
}

/// How the generator treats a clock behind its last issued time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RollbackOptions {
    /// Steps back up to this long are waited out. Default: 5 ms.
    pub tolerance: Duration,
    /// What larger steps do. Default: borrow.
    pub on_rollback: OnRollback,
}

impl Default for RollbackOptions {
    fn default() -> Self {
        Self {
            tolerance: Duration::from_millis(5),
            on_rollback: OnRollback::Borrow,
        }
    }
}

/// Why no ID was issued just now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stall {
    /// The lease cannot be proved valid (expired deadline, lost, closed).
    Lease,
    /// The next time unit is past the lease's reservation.
    Reservation,
    /// The next time unit is ahead of the clock by this long (within the
    /// tolerance): wait that long.
    Wait(Duration),
    /// The clock is behind the last issued time by this long, beyond the
    /// tolerance, and the generator refuses.
    ClockBehind(Duration),
    /// The time bits are used up.
    TimeExhausted,
}

/// A word on its own cache line, so that the hot word and the rarely
/// written ones do not share one.
#[repr(align(128))]
#[derive(Debug, Default)]
struct Padded<T>(T);

/// The shared generator of one process (see the module docs).
pub(crate) struct Generator {
    layout: Layout,
    rollback: RollbackOptions,
    /// The next ID to issue, or [`POISON`].
    next: Padded<AtomicU64>,
    /// The last time unit the lease reserved.
    reserved: Padded<AtomicU64>,
    /// The lease's local deadline.
    deadline: Deadline,
    /// The worker id of the lease installed last.
    worker: AtomicU64,
    /// Test hook: called at named points, so that a test can interleave a
    /// taker with an install for certain.
    #[cfg(test)]
    pause: Option<std::sync::Arc<dyn Fn(&'static str) + Send + Sync>>,
}

impl std::fmt::Debug for Generator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generator")
            .field("layout", &self.layout)
            .field("next", &self.next.0)
            .field("reserved", &self.reserved.0)
            .field("deadline", &self.deadline.at())
            .finish()
    }
}

impl Generator {
    pub fn new(layout: Layout, rollback: RollbackOptions) -> Self {
        Self {
            layout,
            rollback,
            next: Padded(AtomicU64::new(POISON)),
            reserved: Padded(AtomicU64::new(0)),
            deadline: Deadline::default(),
            worker: AtomicU64::new(0),
            #[cfg(test)]
            pause: None,
        }
    }

    #[cfg(test)]
    fn at(&self, point: &'static str) {
        if let Some(pause) = &self.pause {
            pause(point);
        }
    }

    #[cfg(not(test))]
    #[inline(always)]
    fn at(&self, _point: &'static str) {}

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Starts issuing with a (new) lease on `worker`, from time unit `floor`.
    pub fn install(&self, worker: u64, floor: u64, reserved: u64, deadline: Instant) {
        // Poison first: from here on no taker can swap the old word, so none
        // pairs it with the reservation stored next.
        self.next.0.swap(POISON, Ordering::SeqCst);
        self.reserved.0.store(reserved, Ordering::SeqCst);
        self.deadline.set(deadline);
        self.worker.store(worker, Ordering::SeqCst);
        self.at("install: reservation stored");
        let first = self.layout.compose(SnowflakeParts {
            time: floor.min(self.layout.max_time()),
            worker,
            seq: 0,
            ..SnowflakeParts::default()
        });
        self.next.0.store(first, Ordering::SeqCst);
    }

    /// A renewal landed: the lease is good until `deadline`, with time
    /// reserved up to `reserved`.
    pub fn renewed(&self, reserved: u64, deadline: Instant) {
        self.reserved.0.fetch_max(reserved, Ordering::SeqCst);
        self.deadline.extend(deadline);
    }

    /// Stops issuing (lease lost).
    pub fn invalidate(&self) {
        self.deadline.revoke();
    }

    /// Stops issuing for good and returns the last time unit issued: the
    /// word is swapped for [`POISON`], so that a taker racing with the close
    /// fails its swap instead of issuing past what the release records.
    /// `None` when no lease was installed.
    pub fn seal(&self) -> Option<i64> {
        self.deadline.revoke();
        // The next ID tells the last time issued: one with sequence 0
        // follows a whole unit, any other one an ID of its own unit (before
        // the first ID, that is the unit before the floor).
        let last = self.next.0.swap(POISON, Ordering::SeqCst);
        if last == POISON {
            return None;
        }
        self.layout
            .decompose(last)
            .map(|next| next.time as i64 - i64::from(next.seq == 0))
    }

    /// The worker id in use (or last used).
    pub fn worker(&self) -> u64 {
        self.worker.load(Ordering::Acquire)
    }

    /// Whether the lease is proved valid now: installed, not invalidated
    /// and before its local deadline. `try_next` issues nothing otherwise.
    pub fn holds_lease(&self) -> bool {
        self.deadline.is_live()
    }

    /// Whether the lease was proved valid at `now` (a reading of the
    /// monotonic clock): [`Generator::holds_lease`] without a clock read of
    /// its own.
    fn holds_lease_at(&self, now: Instant) -> bool {
        self.deadline.at().is_some_and(|deadline| now < deadline)
    }

    /// One ID, or why none can be issued now; `clock` is read for each
    /// attempt (a clock of the caller's, which tests step).
    pub fn try_next(&self, clock: &dyn Clock) -> Result<u64, Stall> {
        self.try_next_with(|_| clock.now_micros())
    }

    /// One ID, or why none can be issued now, the wall clock read through
    /// the monotonic one (see the module docs).
    pub fn try_next_steady(&self, wall: &SteadyWall) -> Result<u64, Stall> {
        self.try_next_with(|now| wall.unix_micros(now))
    }

    /// One ID: each attempt reads the monotonic clock once, and the wall
    /// clock, in microseconds since 1970, as `wall_micros` says at that
    /// reading.
    #[inline(always)]
    fn try_next_with(&self, wall_micros: impl Fn(Instant) -> u64) -> Result<u64, Stall> {
        let layout = &self.layout;
        loop {
            let monotonic = Instant::now();
            if !self.holds_lease_at(monotonic) {
                return Err(Stall::Lease);
            }
            let now = units_at(layout, wall_micros(monotonic) / 1000);
            let next = self.next.0.load(Ordering::Acquire);
            if next == POISON {
                // A lease being installed, or none: wait for it.
                return Err(Stall::Lease);
            }
            self.at("taker: word read");
            let Some(parts) = layout.decompose(next) else {
                return Err(Stall::TimeExhausted);
            };
            // Catch up with the clock: a new time unit restarts the sequence.
            let parts = if now > parts.time {
                SnowflakeParts {
                    time: now,
                    seq: 0,
                    ..parts
                }
            } else {
                parts
            };
            if parts.time > now {
                let ahead = Duration::from_millis((parts.time - now) * layout.unit.millis());
                if ahead
                    <= self
                        .rollback
                        .tolerance
                        .max(Duration::from_millis(layout.unit.millis()))
                {
                    return Err(Stall::Wait(ahead));
                }
                if self.rollback.on_rollback == OnRollback::Refuse {
                    return Err(Stall::ClockBehind(ahead));
                }
            }
            if parts.time > layout.max_time() {
                return Err(Stall::TimeExhausted);
            }
            if parts.time > self.reserved.0.load(Ordering::Acquire) {
                return Err(Stall::Reservation);
            }
            let following = if parts.seq < layout.max_seq() {
                SnowflakeParts {
                    seq: parts.seq + 1,
                    ..parts
                }
            } else {
                // The sequence is used up: the next ID is in the next unit.
                SnowflakeParts {
                    time: parts.time + 1,
                    seq: 0,
                    ..parts
                }
            };
            if self
                .next
                .0
                .compare_exchange_weak(
                    next,
                    layout.compose(following),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
            {
                return Ok(layout.compose(parts));
            }
        }
    }
}

/// Time units since the layout's epoch at `unix_ms` (0 before it):
/// [`Layout::time_at`], each unit's division by a constant.
#[inline(always)]
fn units_at(layout: &Layout, unix_ms: u64) -> u64 {
    let since = unix_ms.saturating_sub(layout.epoch_ms);
    match layout.unit {
        TimeUnit::Ms => since,
        TimeUnit::S => since / 1000,
    }
}

/// The system clock read through the monotonic one: read itself at most
/// once per millisecond of the monotonic clock, and in between taken as
/// the last reading plus the monotonic time since (see the module docs).
/// Shared by every taker of a generator.
pub(crate) struct SteadyWall {
    /// What the monotonic readings are counted from.
    base: Instant,
    /// The wall clock less the monotonic one, in microseconds, at the last
    /// reading of the wall clock.
    offset_micros: AtomicI64,
    /// The millisecond of the monotonic clock (since `base`) of that
    /// reading; `u64::MAX`: none yet.
    read_in_ms: AtomicU64,
    /// The wall clock.
    clock: Box<dyn Clock>,
}

impl std::fmt::Debug for SteadyWall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SteadyWall")
            .field("offset_micros", &self.offset_micros)
            .field("read_in_ms", &self.read_in_ms)
            .finish()
    }
}

impl SteadyWall {
    /// `clock` (the system's), read through the monotonic clock.
    pub fn new(clock: Box<dyn Clock>) -> Self {
        Self {
            base: Instant::now(),
            offset_micros: AtomicI64::new(0),
            read_in_ms: AtomicU64::new(u64::MAX),
            clock,
        }
    }

    /// The wall clock, microseconds since 1970, at `now` on the monotonic
    /// clock (a reading no earlier than `base`'s).
    #[inline(always)]
    pub fn unix_micros(&self, now: Instant) -> u64 {
        let since = now.saturating_duration_since(self.base);
        let micros = since.as_secs() * 1_000_000 + u64::from(since.subsec_micros());
        let ms = micros / 1000;
        // Acquire: the offset stored with this millisecond, or a later one.
        if self.read_in_ms.load(Ordering::Acquire) == ms {
            let offset = self.offset_micros.load(Ordering::Relaxed);
            return micros.saturating_add_signed(offset);
        }
        self.read(micros, ms)
    }

    /// Reads the wall clock, the first time in monotonic millisecond `ms`.
    #[cold]
    fn read(&self, micros: u64, ms: u64) -> u64 {
        let wall = self.clock.now_micros();
        let offset = wall as i64 - micros as i64;
        self.offset_micros.store(offset, Ordering::Relaxed);
        self.read_in_ms.store(ms, Ordering::Release);
        wall
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64 as Micros;

    struct FixedClock(Micros);
    impl Clock for FixedClock {
        fn now_micros(&self) -> u64 {
            self.0.load(Ordering::SeqCst)
        }
    }

    fn layout() -> Layout {
        Layout {
            time_bits: 51,
            worker_bits: 10,
            seq_bits: 2, // 4 IDs per unit: easy to use up
            ..Layout::default()
        }
    }

    fn generator(clock_ms: u64, rollback: RollbackOptions) -> (Generator, FixedClock) {
        let layout = layout();
        let generator = Generator::new(layout, rollback);
        let now = layout.time_at(clock_ms);
        generator.install(
            7,
            now,
            now + 10_000,
            Instant::now() + Duration::from_secs(60),
        );
        (generator, FixedClock(Micros::new(clock_ms * 1000)))
    }

    const T_MS: u64 = 1_795_317_297_123;

    #[test]
    fn issues_increasing_ids_with_its_worker_and_waits_when_the_unit_is_used_up() {
        let (generator, clock) = generator(T_MS, RollbackOptions::default());
        let ids: Vec<u64> = (0..4)
            .map(|_| generator.try_next(&clock).unwrap())
            .collect();
        assert!(ids.windows(2).all(|pair| pair[0] < pair[1]));
        let layout = generator.layout();
        assert!(ids
            .iter()
            .all(|&id| layout.decompose(id).unwrap().worker == 7));
        // Four per unit: the fifth waits for the next millisecond.
        assert_eq!(
            generator.try_next(&clock),
            Err(Stall::Wait(Duration::from_millis(1)))
        );
        clock.0.fetch_add(1000, Ordering::SeqCst);
        assert!(generator.try_next(&clock).unwrap() > ids[3]);
    }

    #[test]
    fn a_large_step_back_borrows_or_refuses_but_never_repeats() {
        for on_rollback in [OnRollback::Borrow, OnRollback::Refuse] {
            let rollback = RollbackOptions {
                on_rollback,
                ..RollbackOptions::default()
            };
            let (generator, clock) = generator(T_MS, rollback);
            let before = generator.try_next(&clock).unwrap();
            clock.0.fetch_sub(3_600_000_000, Ordering::SeqCst); // an hour back
            match on_rollback {
                OnRollback::Borrow => {
                    let after: Vec<u64> = (0..10)
                        .map(|_| generator.try_next(&clock).unwrap())
                        .collect();
                    assert!(after[0] > before && after.windows(2).all(|p| p[0] < p[1]));
                }
                OnRollback::Refuse => assert!(matches!(
                    generator.try_next(&clock),
                    Err(Stall::ClockBehind(_))
                )),
            }
        }
    }

    #[test]
    fn fails_closed_past_the_deadline_the_reservation_or_when_invalidated() {
        let (generator, clock) = generator(T_MS, RollbackOptions::default());
        let now = generator.layout().time_at(T_MS);
        generator.install(7, now, now + 10_000, Instant::now());
        assert_eq!(generator.try_next(&clock), Err(Stall::Lease));
        let (generator, clock) = generator_with_reservation(T_MS);
        clock.0.fetch_add(5_000, Ordering::SeqCst); // 5 ms past the reservation
        assert_eq!(generator.try_next(&clock), Err(Stall::Reservation));
        let (generator, clock) = self::generator(T_MS, RollbackOptions::default());
        generator.invalidate();
        assert_eq!(generator.try_next(&clock), Err(Stall::Lease));
    }

    fn generator_with_reservation(clock_ms: u64) -> (Generator, FixedClock) {
        let layout = layout();
        let generator = Generator::new(layout, RollbackOptions::default());
        let now = layout.time_at(clock_ms);
        generator.install(1, now, now + 2, Instant::now() + Duration::from_secs(60));
        (generator, FixedClock(Micros::new(clock_ms * 1000)))
    }

    #[test]
    fn a_re_lease_restarts_from_its_floor_with_its_worker() {
        let (generator, clock) = generator(T_MS, RollbackOptions::default());
        let old = generator.try_next(&clock).unwrap();
        let layout = *generator.layout();
        let floor = layout.decompose(old).unwrap().time + 100;
        generator.install(
            9,
            floor,
            floor + 1000,
            Instant::now() + Duration::from_secs(60),
        );
        clock.0.fetch_add(200_000, Ordering::SeqCst);
        let new = layout
            .decompose(generator.try_next(&clock).unwrap())
            .unwrap();
        assert_eq!(new.worker, 9);
        assert!(new.time >= floor);
    }

    /// A taker that read the old lease's word races a re-lease that has
    /// stored its new reservation but not yet its word: it must not issue
    /// the old worker id's ID within the new reservation (past the old one,
    /// where whoever takes the old worker id over would issue too). The
    /// hooks make the interleaving certain.
    #[test]
    fn a_taker_racing_a_re_lease_never_pairs_the_old_word_with_the_new_reservation() {
        use std::sync::atomic::AtomicBool;
        use std::sync::{mpsc, Arc, Mutex};

        let layout = layout();
        let old_time = layout.time_at(T_MS);
        let mut generator = Generator::new(layout, RollbackOptions::default());
        let far = Instant::now() + Duration::from_secs(3600);
        // The old lease of worker 7 reserved up to `old_time`.
        generator.install(7, old_time, old_time, far);
        // The clock is 5 units past it: the old word may issue nothing more.
        let clock = FixedClock(Micros::new((T_MS + 5) * 1000));

        let (arrived, arrivals) = mpsc::channel::<&'static str>();
        let (go_taker, taker_waits) = mpsc::channel::<()>();
        let (go_install, install_waits) = mpsc::channel::<()>();
        let (taker_waits, install_waits) = (Mutex::new(taker_waits), Mutex::new(install_waits));
        let taker_paused = AtomicBool::new(false);
        generator.pause = Some(Arc::new(move |point| {
            match point {
                // The taker pauses once, with the old word in hand.
                "taker: word read" if !taker_paused.swap(true, Ordering::SeqCst) => {
                    arrived.send(point).unwrap();
                    taker_waits.lock().unwrap().recv().unwrap();
                }
                "install: reservation stored" => {
                    arrived.send(point).unwrap();
                    install_waits.lock().unwrap().recv().unwrap();
                }
                _ => {}
            }
        }));
        let generator = Arc::new(generator);

        let taker = {
            let generator = generator.clone();
            std::thread::spawn(move || generator.try_next(&clock))
        };
        assert_eq!(arrivals.recv().unwrap(), "taker: word read");
        let installer = {
            let generator = generator.clone();
            std::thread::spawn(move || {
                generator.install(9, old_time + 1, old_time + 1000, far);
            })
        };
        assert_eq!(arrivals.recv().unwrap(), "install: reservation stored");
        // The new reservation is in, the new word not yet: the taker goes on.
        go_taker.send(()).unwrap();
        let taken = taker.join().unwrap();
        go_install.send(()).unwrap();
        installer.join().unwrap();

        if let Ok(id) = taken {
            let parts = layout.decompose(id).unwrap();
            assert!(
                parts.worker != 7 || parts.time <= old_time,
                "issued {parts:?} with the old worker id past its reservation ({old_time})"
            );
        }
        // Once installed, IDs come with the new worker id.
        let clock = FixedClock(Micros::new((T_MS + 5) * 1000));
        let id = generator.try_next(&clock).unwrap();
        assert_eq!(layout.decompose(id).unwrap().worker, 9);
    }

    /// A wall clock the test steps, shared with the [`SteadyWall`] reading it.
    #[derive(Clone)]
    struct SharedClock(std::sync::Arc<Micros>);
    impl Clock for SharedClock {
        fn now_micros(&self) -> u64 {
            self.0.load(Ordering::SeqCst)
        }
    }

    #[test]
    fn the_steady_wall_reads_the_clock_once_a_millisecond_and_follows_its_steps() {
        let clock = SharedClock(std::sync::Arc::new(Micros::new(T_MS * 1000)));
        let wall = SteadyWall::new(Box::new(clock.clone()));
        let start = wall.base;
        let at = |micros: u64| wall.unix_micros(start + Duration::from_micros(micros));
        // The first reading is the clock's; within its millisecond, the
        // wall moves on with the monotonic clock alone.
        assert_eq!(at(100), T_MS * 1000);
        clock.0.fetch_sub(3_600_000_000, Ordering::SeqCst); // an hour back
        assert_eq!(at(600), T_MS * 1000 + 500);
        // The next millisecond reads the clock again: the step is seen.
        assert_eq!(at(1_200), (T_MS - 3_600_000) * 1000);
        assert_eq!(at(1_700), (T_MS - 3_600_000) * 1000 + 500);
    }

    /// The generator reading the wall clock through the monotonic one
    /// issues what the one reading it for each ID would: increasing IDs,
    /// with its worker, in the unit of the clock.
    #[test]
    fn the_steady_generator_issues_increasing_ids_in_the_clocks_unit() {
        let (generator, _) = generator(T_MS, RollbackOptions::default());
        let now_ms = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis() as u64
        };
        let layout = *generator.layout();
        let now = layout.time_at(now_ms());
        generator.install(
            3,
            now,
            now + 10_000,
            Instant::now() + Duration::from_secs(60),
        );
        let wall = SteadyWall::new(Box::new(crate::sequence::SystemClock));
        let before = layout.time_at(now_ms());
        let ids: Vec<u64> = (0..100)
            .map(|_| loop {
                match generator.try_next_steady(&wall) {
                    Ok(id) => break id,
                    Err(Stall::Wait(_)) => std::thread::yield_now(),
                    Err(stall) => panic!("{stall:?}"),
                }
            })
            .collect();
        let after = layout.time_at(now_ms());
        assert!(ids.windows(2).all(|pair| pair[0] < pair[1]));
        for id in ids {
            let parts = layout.decompose(id).unwrap();
            assert_eq!(parts.worker, 3);
            assert!((before..=after).contains(&parts.time), "{parts:?}");
        }
    }

    #[test]
    fn the_steady_generator_fails_closed_past_the_deadline() {
        let (generator, _) = generator(T_MS, RollbackOptions::default());
        let now = generator.layout().time_at(T_MS);
        generator.install(7, now, now + 10_000, Instant::now());
        let wall = SteadyWall::new(Box::new(crate::sequence::SystemClock));
        assert_eq!(generator.try_next_steady(&wall), Err(Stall::Lease));
    }
}
