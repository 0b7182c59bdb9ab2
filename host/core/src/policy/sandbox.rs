//! What a policy runs inside: the per-call [`Store`] state and its limits.
//!
//! Every policy call gets a fresh `Store` (see `runtime.rs`), so nothing a
//! policy does survives the call, and the state below is all a policy can
//! reach. WASI 0.2 is linked because a `wasm32-wasip2` guest imports it even
//! when unused, but with an empty context: no preopened directories, no
//! environment, no arguments, no network, stdin closed and stdout/stderr
//! discarded. Memory is bounded by [`MemoryCap`] (a [`StoreLimits`] that also
//! records what was asked for, so the error can say so) and CPU time by an
//! epoch deadline: the runtime's ticker thread (`runtime.rs`) bumps the
//! engine's epoch every [`EPOCH_TICK`], and when a store's deadline comes,
//! the CPU time the calling thread has spent since the call began is read:
//! past [`PolicyLimits::timeout`], the call traps with `Trap::Interrupt`;
//! short of it (the thread was descheduled: a loaded machine), the deadline
//! moves on by what is left. So the limit is the policy's own CPU time, and
//! a busy machine does not fail calls that did nothing wrong.

use std::time::Duration;

use wasmtime::component::ResourceTable;
use wasmtime::{
    Engine, ResourceLimiter, Store, StoreLimits, StoreLimitsBuilder, Trap, UpdateDeadline,
};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// The default cap on a policy's linear memory: 64 MiB.
pub const DEFAULT_MAX_MEMORY_BYTES: usize = 64 << 20;

/// The default CPU time bound of one policy call: 100 ms.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(100);

/// How often the runtime's ticker thread advances the engine's epoch; the
/// granularity of [`PolicyLimits::timeout`].
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Resource limits applied to every policy call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PolicyLimits {
    /// The largest size any one linear memory of the policy may have, in
    /// bytes. A policy that declares more initial memory, or grows past it,
    /// fails the call with [`super::PolicyError::Runtime`].
    pub max_memory_bytes: usize,
    /// How long one call into the policy (one instantiation plus one export
    /// call, or one batch) may run before it is interrupted and fails with
    /// [`super::PolicyError::Timeout`]. Rounded up to a multiple of
    /// [`EPOCH_TICK`]; the call may overrun it by up to one tick.
    pub timeout: Duration,
}

impl Default for PolicyLimits {
    fn default() -> Self {
        PolicyLimits {
            max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

impl PolicyLimits {
    /// Sets [`PolicyLimits::max_memory_bytes`]; the default is 64 MiB.
    pub fn max_memory_bytes(mut self, bytes: usize) -> Self {
        self.max_memory_bytes = bytes;
        self
    }

    /// Sets [`PolicyLimits::timeout`]; the default is 100 ms.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The timeout in epoch ticks, at least one, plus one because the
    /// current tick may be nearly over when the call starts.
    pub(crate) fn deadline_ticks(&self) -> u64 {
        ticks(self.timeout)
    }
}

/// `time` in epoch ticks, at least one, plus one because the current tick
/// may be nearly over.
fn ticks(time: Duration) -> u64 {
    let tick = EPOCH_TICK.as_nanos().max(1);
    let ticks = time.as_nanos().div_ceil(tick).max(1);
    u64::try_from(ticks).unwrap_or(u64::MAX / 2) + 1
}

/// The CPU time the calling thread has used so far.
#[cfg(unix)]
fn thread_cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec to write to, and
    // CLOCK_THREAD_CPUTIME_ID is a clock every supported Unix provides.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    if status != 0 {
        return Duration::MAX;
    }
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or(0),
        u32::try_from(now.tv_nsec).unwrap_or(0),
    )
}

/// Without a per-thread CPU clock, elapsed time stands in for it.
#[cfg(not(unix))]
fn thread_cpu_time() -> Duration {
    use std::sync::OnceLock;
    use std::time::Instant;
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed()
}

/// A [`StoreLimits`] that remembers the memory size a refused growth asked
/// for, so that the call's error can name the cap instead of a bare trap.
pub(crate) struct MemoryCap {
    /// Enforces the cap.
    limits: StoreLimits,
    /// The cap, in bytes.
    max: usize,
    /// The size, in bytes, of the first growth the cap refused, if any.
    pub(crate) refused: Option<usize>,
}

impl ResourceLimiter for MemoryCap {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max && self.refused.is_none() {
            self.refused = Some(desired);
        }
        self.limits.memory_growing(current, desired, maximum)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.memory_grow_failed(error)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.limits.table_growing(current, desired, maximum)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.table_grow_failed(error)
    }
}

/// The data of a policy call's `Store`.
pub(crate) struct CallState {
    /// The empty WASI context, made on the guest's first WASI call: most
    /// calls make none (formatting an ID needs no WASI), and building one
    /// (random generators seeded from the OS, clocks, streams) was a
    /// noticeable part of a one-ID call. Each store still gets its own.
    wasi: Option<WasiCtx>,
    /// WASI's resource handles (streams, ...), empty unless the guest opens one.
    table: ResourceTable,
    /// Enforces [`PolicyLimits::max_memory_bytes`]; wired up with `Store::limiter`.
    pub(crate) memory: MemoryCap,
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: self.wasi.get_or_insert_with(empty_wasi),
            table: &mut self.table,
        }
    }
}

/// The WASI context of every store: nothing in it.
fn empty_wasi() -> WasiCtx {
    // The builder's defaults already give nothing: no preopens, env or args,
    // closed stdin, discarding stdout/stderr, no socket address allowed. The
    // network is switched off explicitly so that a change of default cannot
    // open it.
    WasiCtxBuilder::new()
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .build()
}

/// A fresh store for one policy call, with an empty WASI context and `limits`.
pub(crate) fn new_store(engine: &Engine, limits: &PolicyLimits) -> Store<CallState> {
    let state = CallState {
        wasi: None,
        table: ResourceTable::new(),
        memory: MemoryCap {
            limits: StoreLimitsBuilder::new()
                .memory_size(limits.max_memory_bytes)
                // Fail the call at the `memory.grow` itself, naming the size
                // asked for, rather than let the guest's allocator abort with a
                // bare `unreachable` trap.
                .trap_on_grow_failure(true)
                .build(),
            max: limits.max_memory_bytes,
            refused: None,
        },
    };
    let mut store = Store::new(engine, state);
    store.limiter(|state| &mut state.memory);
    // Trap (`Trap::Interrupt`) rather than yield: calls are synchronous.
    // The deadline is checked against the thread's CPU time (module docs).
    let budget = limits.timeout;
    let started = thread_cpu_time();
    store.set_epoch_deadline(limits.deadline_ticks());
    store.epoch_deadline_callback(move |_| {
        let used = thread_cpu_time().saturating_sub(started);
        if used >= budget {
            return Err(Trap::Interrupt.into());
        }
        Ok(UpdateDeadline::Continue(ticks(budget - used)))
    });
    store
}
