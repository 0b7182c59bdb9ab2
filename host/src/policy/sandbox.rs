//! What a policy runs inside: the per-call [`Store`] state and its limits.
//!
//! Every policy call gets a fresh `Store` (see `runtime.rs`), so nothing a
//! policy does survives the call, and the state below is all a policy can
//! reach. WASI 0.2 is linked because a `wasm32-wasip2` guest imports it even
//! when unused, but with an empty context: no preopened directories, no
//! environment, no arguments, no network, stdin closed and stdout/stderr
//! discarded. Limits are enforced by [`StoreLimits`]; the deadline and fuel
//! limits planned next belong in [`PolicyLimits`] and [`new_store`] too.

use wasmtime::component::ResourceTable;
use wasmtime::{Engine, Store, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// The default cap on a policy's linear memory: 64 MiB.
pub const DEFAULT_MAX_MEMORY_BYTES: usize = 64 << 20;

/// Resource limits applied to every policy call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PolicyLimits {
    /// The largest size any one linear memory of the policy may have, in
    /// bytes. A policy that declares more initial memory, or grows past it,
    /// fails the call with [`super::PolicyError::Runtime`].
    pub max_memory_bytes: usize,
}

impl Default for PolicyLimits {
    fn default() -> Self {
        PolicyLimits {
            max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES,
        }
    }
}

impl PolicyLimits {
    /// Sets [`PolicyLimits::max_memory_bytes`]; the default is 64 MiB.
    pub fn max_memory_bytes(mut self, bytes: usize) -> Self {
        self.max_memory_bytes = bytes;
        self
    }
}

/// The data of a policy call's `Store`.
pub(crate) struct CallState {
    /// The empty WASI context.
    wasi: WasiCtx,
    /// WASI's resource handles (streams, ...), empty unless the guest opens one.
    table: ResourceTable,
    /// Enforces [`PolicyLimits`]; wired up with `Store::limiter`.
    limits: StoreLimits,
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// A fresh store for one policy call, with an empty WASI context and `limits`.
pub(crate) fn new_store(engine: &Engine, limits: &PolicyLimits) -> Store<CallState> {
    // The builder's defaults already give nothing: no preopens, env or args,
    // closed stdin, discarding stdout/stderr, no socket address allowed. The
    // network is switched off explicitly so that a change of default cannot
    // open it.
    let wasi = WasiCtxBuilder::new()
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .build();
    let state = CallState {
        wasi,
        table: ResourceTable::new(),
        limits: StoreLimitsBuilder::new()
            .memory_size(limits.max_memory_bytes)
            // Fail the call at the `memory.grow` itself, naming the size
            // asked for, rather than let the guest's allocator abort with a
            // bare `unreachable` trap.
            .trap_on_grow_failure(true)
            .build(),
    };
    let mut store = Store::new(engine, state);
    store.limiter(|state| &mut state.limits);
    store
}
