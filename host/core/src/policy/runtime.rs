//! Loading and calling policies: [`PolicyRuntime`] and [`Policy`].
//!
//! Each wasmtime object lives as long as what it stands for (wasmtime's
//! "Example Architecture"): one [`Engine`] and [`Linker`] per process, in the
//! `PolicyRuntime`; one compiled [`Component`] per policy hash, cached by the
//! runtime; one pre-linked instance per loaded `Policy`, made with
//! `instantiate_pre` so that imports and exports are type-checked at load,
//! not at the first ID, and bound to the newest contract version the
//! component implements (`contract.rs`: 0.4.0, else 0.3.0, else 0.2.0),
//! whose adapter makes every call; and a fresh `Store` (`sandbox.rs`) per
//! call, so that calls share nothing and a trap cannot poison the next one.
//! Both handles are `Arc`s, so hot-swapping a policy only replaces an `Arc`.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::checksum::sha256_hex;
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::compile_cache::CompileCache;
use super::contract::{self, Call, Contract};
use super::error::PolicyError;
use super::fit_memo::FitMemo;
use super::sandbox::{CallState, PolicyLimits, EPOCH_TICK};
use super::types::{InvalidId, PolicyInfo};
use super::{DEFAULT_POLICY_ORIGIN, DEFAULT_POLICY_WASM};
use crate::parts::Layout;
use crate::parts::{IdParts, Stamp};

/// Loads policies. One per process: it holds the [`Engine`] and the
/// [`Linker`] (WASI 0.2, empty context) that every policy shares.
///
/// Clone is cheap (an `Arc`).
#[derive(Clone)]
pub struct PolicyRuntime {
    inner: Arc<RuntimeInner>,
}

struct RuntimeInner {
    engine: Engine,
    linker: Linker<CallState>,
    limits: PolicyLimits,
    /// Compiled components by the SHA-256 of their bytes, so that reloading an
    /// unchanged policy (a hot swap to the same file) does not compile again.
    components: Mutex<HashMap<String, Component>>,
    /// Where compiled components are kept between processes.
    cache: CompileCache,
    /// wasmtime's cache over it, if it could be opened.
    disk_cache: Option<wasmtime::Cache>,
    /// Why the cache could not be opened.
    cache_problem: Option<String>,
    /// Components compiled by this process.
    compiled: AtomicUsize,
    /// Components this process loaded compiled from the cache.
    loaded_compiled: AtomicUsize,
}

impl PolicyRuntime {
    /// A runtime with the default [`PolicyLimits`].
    pub fn new() -> Result<Self, PolicyError> {
        Self::with_limits(PolicyLimits::default())
    }

    /// A runtime whose policy calls are bounded by `limits`, keeping
    /// compiled policies where the environment says
    /// ([`CompileCache::from_env`]).
    pub fn with_limits(limits: PolicyLimits) -> Result<Self, PolicyError> {
        Self::with_cache(limits, CompileCache::from_env())
    }

    /// A runtime whose policy calls are bounded by `limits`, keeping
    /// compiled policies in `cache`. A cache that cannot be used (a
    /// directory that cannot be made) is left out: policies are compiled
    /// in the process, and [`PolicyRuntime::cache_problem`] says why.
    pub fn with_cache(limits: PolicyLimits, cache: CompileCache) -> Result<Self, PolicyError> {
        let engine_error = |e: wasmtime::Error| PolicyError::Engine {
            reason: format!("{e:#}"),
        };
        // Epoch interruption bounds each call's CPU time at a cost of a few
        // percent; fuel would be deterministic but costs more per instruction
        // and a deadline in time is what a caller waiting for an ID needs.
        let (disk_cache, cache_problem) = match cache.wasmtime_cache() {
            Ok(disk_cache) => (disk_cache, None),
            Err(problem) => (None, Some(problem)),
        };
        let mut config = Config::new();
        config.cache(disk_cache.clone());
        config.epoch_interruption(true);
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling()));
        let engine = Engine::new(&config).map_err(engine_error)?;
        start_ticker(&engine).map_err(|e| PolicyError::Engine {
            reason: format!("cannot start the epoch ticker thread: {e}"),
        })?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(engine_error)?;
        Ok(PolicyRuntime {
            inner: Arc::new(RuntimeInner {
                engine,
                linker,
                limits,
                components: Mutex::new(HashMap::new()),
                cache,
                disk_cache,
                cache_problem,
                compiled: AtomicUsize::new(0),
                loaded_compiled: AtomicUsize::new(0),
            }),
        })
    }

    /// The limits applied to every call of the policies this runtime loads.
    pub fn limits(&self) -> &PolicyLimits {
        &self.inner.limits
    }

    /// Loads the built-in default policy ([`DEFAULT_POLICY_WASM`]).
    pub fn load_default(&self) -> Result<Policy, PolicyError> {
        self.load_bytes(DEFAULT_POLICY_WASM, DEFAULT_POLICY_ORIGIN)
    }

    /// Loads a built-in policy by name ([`BUILTIN_POLICIES`](super::BUILTIN_POLICIES));
    /// its origin is "built-in NAME".
    pub fn load_builtin(&self, name: &str) -> Result<Policy, PolicyError> {
        if name == "default" {
            return self.load_default();
        }
        match super::BUILTIN_POLICIES
            .iter()
            .find(|(builtin, _)| *builtin == name)
        {
            Some((_, bytes)) => self.load_bytes(bytes, &format!("built-in {name}")),
            None => Err(PolicyError::UnknownBuiltin {
                name: name.to_string(),
                known: super::BUILTIN_POLICIES
                    .iter()
                    .map(|(builtin, _)| *builtin)
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    /// Loads a policy component from a file; its origin is the path.
    pub fn load_file(&self, path: &Path) -> Result<Policy, PolicyError> {
        let bytes = std::fs::read(path).map_err(|source| PolicyError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        self.load_bytes(&bytes, &path.display().to_string())
    }

    /// Loads a policy component from its bytes. `origin` names it in errors
    /// and in [`Policy::origin`].
    ///
    /// The component is compiled (or taken from the cache by hash),
    /// pre-linked and type-checked against the contract, then instantiated
    /// once to call `describe`.
    pub fn load_bytes(&self, bytes: &[u8], origin: &str) -> Result<Policy, PolicyError> {
        let sha256 = sha256_hex(bytes);
        let component = self.compile(bytes, &sha256, origin)?;
        let wrong_interface = |e: wasmtime::Error| PolicyError::WrongInterface {
            origin: origin.to_string(),
            reason: format!("{e:#}"),
        };
        // Type-checks every import against the linker (WASI 0.2 only) ...
        let instance_pre = self
            .inner
            .linker
            .instantiate_pre(&component)
            .map_err(wrong_interface)?;
        // ... and every export against the world of each contract version,
        // the newest first.
        let contract = contract::bind(&instance_pre, origin)?;
        let limits = self.inner.limits.clone();
        let info = contract.describe(&Call {
            limits: &limits,
            origin,
        })?;
        Ok(Policy {
            inner: Arc::new(PolicyInner {
                contract,
                limits,
                info,
                sha256,
                origin: origin.to_string(),
                fits: FitMemo::default(),
            }),
        })
    }

    /// Where compiled policies are kept between processes.
    pub fn compile_cache(&self) -> &CompileCache {
        &self.inner.cache
    }

    /// Why compiled policies are not kept between processes, when the
    /// cache asked for could not be opened.
    pub fn cache_problem(&self) -> Option<&str> {
        self.inner.cache_problem.as_deref()
    }

    /// How this process came by the components it loaded: compiled here,
    /// or loaded compiled from the cache.
    pub fn compilations(&self) -> Compilations {
        Compilations {
            compiled: self.inner.compiled.load(Ordering::Relaxed),
            loaded_compiled: self.inner.loaded_compiled.load(Ordering::Relaxed),
        }
    }

    /// How many distinct components are compiled and cached.
    #[cfg(test)]
    pub(crate) fn cached_components(&self) -> usize {
        self.inner
            .components
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Compiles `bytes`, or returns the component already compiled from them.
    fn compile(&self, bytes: &[u8], sha256: &str, origin: &str) -> Result<Component, PolicyError> {
        // A poisoned cache is still a valid cache: a panic cannot leave a
        // half-inserted entry in a HashMap.
        let cached = self
            .inner
            .components
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(sha256)
            .cloned();
        if let Some(component) = cached {
            return Ok(component);
        }
        if is_core_module(bytes) {
            return Err(PolicyError::WrongInterface {
                origin: origin.to_string(),
                reason: "this is a core WebAssembly module, not a component; build the policy \
                         for wasm32-wasip2 (or wrap it with `wasm-tools component new`)"
                    .to_string(),
            });
        }
        // Compile (or load compiled from the disk cache) outside the lock:
        // it takes a while and other loads may proceed.
        let hits = self.disk_cache_hits();
        let component = Component::new(&self.inner.engine, bytes).map_err(|e| {
            // Without the binary header wasmtime tries the text format, and
            // its parse error ("expected `(`") would hide what is wrong.
            let reason = if bytes.starts_with(b"\0asm") {
                format!("{e:#}")
            } else {
                format!("no WebAssembly binary header, and not WebAssembly text either: {e:#}")
            };
            PolicyError::Compile {
                origin: origin.to_string(),
                reason,
            }
        })?;
        let counter = if self.disk_cache_hits() > hits {
            &self.inner.loaded_compiled
        } else {
            &self.inner.compiled
        };
        counter.fetch_add(1, Ordering::Relaxed);
        self.inner
            .components
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(sha256.to_string(), component.clone());
        Ok(component)
    }

    /// How many components the disk cache has handed this process.
    fn disk_cache_hits(&self) -> usize {
        self.inner
            .disk_cache
            .as_ref()
            .map_or(0, wasmtime::Cache::cache_hits)
    }
}

/// How a process came by the policy components it loaded
/// ([`PolicyRuntime::compilations`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Compilations {
    /// Compiled in the process.
    pub compiled: usize,
    /// Loaded compiled from the cache ([`CompileCache`]).
    pub loaded_compiled: usize,
}

impl fmt::Debug for PolicyRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolicyRuntime")
            .field("limits", &self.inner.limits)
            .finish_non_exhaustive()
    }
}

/// A loaded policy: compiled, pre-linked against WASI and type-checked
/// against the contract, with its `describe` answer.
///
/// Clone is cheap (an `Arc`). Each call runs in a fresh, isolated store.
#[derive(Clone)]
pub struct Policy {
    inner: Arc<PolicyInner>,
}

struct PolicyInner {
    /// The adapter of the contract version the policy implements.
    contract: Box<dyn Contract>,
    limits: PolicyLimits,
    info: PolicyInfo,
    sha256: String,
    origin: String,
    /// The fits this policy accepted (`fit.rs`, [`check_serves`](super::fit::check_serves)).
    fits: FitMemo,
}

impl Policy {
    /// The version of the contract (`guest/wit/`) the policy implements:
    /// `"0.5.0"`, or an earlier one the host still runs (`"0.4.0"`, before
    /// counter tags; `"0.3.0"`, before periods; `"0.2.0"`, before snowflake
    /// fields).
    pub fn contract(&self) -> &'static str {
        self.inner.contract.version()
    }

    /// Whether the policy receives a snowflake counter's tag and salt
    /// (contract 0.5.0 and later): only such a policy needs them.
    pub fn receives_counter_tag(&self) -> bool {
        !matches!(self.contract(), "0.2.0" | "0.3.0" | "0.4.0")
    }

    /// What the policy said about itself when it was loaded.
    pub fn info(&self) -> &PolicyInfo {
        &self.inner.info
    }

    /// The SHA-256 of the component's bytes, in lowercase hex.
    pub fn sha256(&self) -> &str {
        &self.inner.sha256
    }

    /// Where the policy came from: [`DEFAULT_POLICY_ORIGIN`] or the file path.
    pub fn origin(&self) -> &str {
        &self.inner.origin
    }

    /// The fits this policy accepted.
    pub(crate) fn fits(&self) -> &FitMemo {
        &self.inner.fits
    }

    /// Formats one ID.
    ///
    /// A refusal by the policy (bad prefix, value out of range) is
    /// [`PolicyError::Format`].
    pub fn format(&self, parts: &IdParts) -> Result<String, PolicyError> {
        Ok(self.inner.contract.format(&self.call(), parts)??)
    }

    /// Formats one ID per stamp, all with `prefix`, in one call into the policy.
    ///
    /// The result has one ID per stamp, in order. If the policy refuses any
    /// stamp, the whole batch fails with [`PolicyError::Format`].
    pub fn format_batch(&self, prefix: &str, stamps: &[Stamp]) -> Result<Vec<String>, PolicyError> {
        let packed = self.call_format_batch(prefix, stamps)?;
        split_ids(&packed, stamps.len()).ok_or_else(|| self.bad_batch(&packed, stamps.len()))
    }

    /// [`Policy::format_batch`] without splitting: the IDs as the policy wrote
    /// them, each followed by `'\n'`. The cheapest way to print a batch.
    ///
    /// The text is checked to hold exactly one line per stamp; anything else
    /// is [`PolicyError::BadOutput`].
    pub fn format_batch_packed(
        &self,
        prefix: &str,
        stamps: &[Stamp],
    ) -> Result<String, PolicyError> {
        let packed = self.call_format_batch(prefix, stamps)?;
        let lines = bytecount_newlines(packed.as_bytes());
        if lines != stamps.len() || !(packed.is_empty() || packed.ends_with('\n')) {
            return Err(self.bad_batch(&packed, stamps.len()));
        }
        Ok(packed)
    }

    /// The policy's `format-batch` answer, unchecked.
    fn call_format_batch(&self, prefix: &str, stamps: &[Stamp]) -> Result<String, PolicyError> {
        Ok(self
            .inner
            .contract
            .format_batch(&self.call(), prefix, stamps)??)
    }

    /// Why `packed`, a `format-batch` answer for `stamps` stamps, is not
    /// one newline-terminated ID per stamp.
    fn bad_batch(&self, packed: &str, stamps: usize) -> PolicyError {
        let lines = bytecount_newlines(packed.as_bytes());
        let unterminated = if packed.is_empty() || packed.ends_with('\n') {
            ""
        } else {
            " and text after the last"
        };
        PolicyError::BadOutput {
            origin: self.inner.origin.clone(),
            reason: format!(
                "format-batch returned {lines} newline-terminated IDs{unterminated} for {stamps} stamps"
            ),
        }
    }

    /// Reads an ID back into its parts.
    ///
    /// The outer `Result` is about the policy (it trapped, ...); the inner one
    /// is the answer: the parts, or precisely why `id` is not valid. With
    /// `expected_prefix`, an ID with another prefix is [`InvalidId::BadPrefix`].
    /// With `layout`, the ID is read as a snowflake ID of that layout: a
    /// policy that can read one returns its fields in
    /// [`IdParts::snowflake`]; one that cannot (contract 0.2.0, or a policy
    /// that ignores the layout) returns `None` there. A policy that writes
    /// periods (contract 0.4.0) returns the ID's in [`IdParts::period`]; a
    /// period that does not exist is [`PolicyError::BadOutput`].
    pub fn validate(
        &self,
        id: &str,
        expected_prefix: Option<&str>,
        layout: Option<&Layout>,
    ) -> Result<Result<IdParts, InvalidId>, PolicyError> {
        let mut answers = self.validate_each(&[id], expected_prefix, layout)?;
        Ok(answers.pop().expect("one ID, one answer"))
    }

    /// [`Policy::validate`] for many IDs, in one store and one instance, which
    /// is much cheaper than a call each. The answers are in the order of `ids`.
    pub fn validate_many(
        &self,
        ids: &[String],
        expected_prefix: Option<&str>,
        layout: Option<&Layout>,
    ) -> Result<Vec<Result<IdParts, InvalidId>>, PolicyError> {
        self.validate_each(ids, expected_prefix, layout)
    }

    fn validate_each(
        &self,
        ids: &[impl AsRef<str>],
        expected_prefix: Option<&str>,
        layout: Option<&Layout>,
    ) -> Result<Vec<Result<IdParts, InvalidId>>, PolicyError> {
        let ids: Vec<&str> = ids.iter().map(AsRef::as_ref).collect();
        let answers = self
            .inner
            .contract
            .validate(&self.call(), &ids, expected_prefix, layout)?;
        // A period read back must be one the host could have handed out:
        // anything else is a broken policy, not an answer about the ID.
        for (id, answer) in ids.iter().zip(&answers) {
            if let Ok(IdParts {
                period: Some(period),
                ..
            }) = answer
            {
                period.check().map_err(|reason| PolicyError::BadOutput {
                    origin: self.inner.origin.clone(),
                    reason: format!(
                        "validate read {id:?} back with an impossible period: {reason}"
                    ),
                })?;
            }
        }
        Ok(answers)
    }

    /// What each call of this policy runs with.
    fn call(&self) -> Call<'_> {
        Call {
            limits: &self.inner.limits,
            origin: &self.inner.origin,
        }
    }
}

/// How many calls of one runtime's policies may run at once; one more fails
/// to instantiate (a `PolicyError::Runtime` naming the pool). A call takes
/// microseconds, so this bounds threads inside a policy at the same instant,
/// not requests in flight. Each memory slot (two per call) reserves, but does
/// not commit, a 4 GiB range of address space, so that the guest needs no
/// bounds checks: 64 calls are ~0.5 TiB of the 128 TiB a process has.
pub const MAX_CONCURRENT_CALLS: u32 = 64;

/// The instance pool. A fresh store per call means a fresh linear memory per
/// call; with the default (on-demand) allocator each one is an `mmap`, page
/// faults on every page the call touches and an `munmap`, which cost more
/// than formatting a batch. The pool reuses memory slots and resets up to
/// [`KEEP_RESIDENT`] bytes with `memset` instead of `madvise`, so a call
/// touches pages that are already mapped.
///
/// Where Linux has the `PAGEMAP_SCAN` ioctl (6.7 and later), the pool asks
/// the kernel which pages of the slot the call wrote and resets only those
/// to the module's initial image: a call that formats one ID dirties a few
/// pages, and a `memset` of the whole 256 KiB was the largest single cost
/// of such a call (profile in docs/BENCHMARKS.md, "idmint serve"). Elsewhere
/// (`Enabled::Auto`) the pool falls back to the `memset`. Either way the next
/// call finds the memory as the module's image has it: nothing carries over.
fn pooling() -> PoolingAllocationConfig {
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(MAX_CONCURRENT_CALLS)
        // A wasm32-wasip2 guest is a handful of core instances (the program,
        // the WASI adapter, shims), each with at most a memory or two.
        .total_core_instances(MAX_CONCURRENT_CALLS * 8)
        .total_memories(MAX_CONCURRENT_CALLS * 2)
        .total_tables(MAX_CONCURRENT_CALLS * 8)
        // Calls are synchronous (no async support in the engine), so no
        // fiber stack is ever taken from the pool; the default thousand,
        // each set up with a guard page, cost a process that formats one
        // ID about a third of its CPU time (profile in docs/BENCHMARKS.md).
        .total_stacks(0)
        .linear_memory_keep_resident(KEEP_RESIDENT)
        .table_keep_resident(64 << 10)
        .pagemap_scan(Enabled::Auto);
    pool
}

/// Bytes of each pooled linear memory reset with `memset` rather than
/// returned to the kernel: the shipped policies' stack (64 KiB, see
/// `build.rs`), data and the heap of a batch of a thousand IDs.
const KEEP_RESIDENT: usize = 256 << 10;

/// Starts the thread that advances `engine`'s epoch every [`EPOCH_TICK`],
/// which is what makes per-call deadlines fire. It holds only a weak
/// reference, so it ends on its first tick after the engine is dropped.
fn start_ticker(engine: &Engine) -> std::io::Result<()> {
    let weak = engine.weak();
    std::thread::Builder::new()
        .name("idmint-policy-epoch".to_string())
        .spawn(move || loop {
            std::thread::sleep(EPOCH_TICK);
            match weak.upgrade() {
                Some(engine) => engine.increment_epoch(),
                None => break,
            }
        })?;
    Ok(())
}

impl fmt::Debug for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policy")
            .field("origin", &self.inner.origin)
            .field("sha256", &self.inner.sha256)
            .field("info", &self.inner.info)
            .finish_non_exhaustive()
    }
}

/// How many `'\n'` bytes `bytes` holds.
/// `packed` split into its `count` newline-terminated IDs, in one pass;
/// `None` if it does not hold exactly that many, the last terminated.
fn split_ids(packed: &str, count: usize) -> Option<Vec<String>> {
    let mut ids = Vec::with_capacity(count);
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', packed.as_bytes()) {
        if ids.len() == count {
            return None;
        }
        // As `str::lines`: a line may end in "\r\n". (A newline is ASCII:
        // both ends are character boundaries.)
        let id = &packed[start..end];
        ids.push(id.strip_suffix('\r').unwrap_or(id).to_owned());
        start = end + 1;
    }
    (start == packed.len() && ids.len() == count).then_some(ids)
}

fn bytecount_newlines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

/// Whether `bytes` start like a core WebAssembly module (version 1, layer 0)
/// rather than a component (layer 1).
fn is_core_module(bytes: &[u8]) -> bool {
    bytes.get(..8) == Some(b"\0asm\x01\x00\x00\x00".as_slice())
}

#[cfg(test)]
mod split_tests {
    use super::split_ids;

    #[test]
    fn a_batch_splits_into_exactly_its_ids() {
        assert_eq!(
            split_ids("A1\nA2\n", 2),
            Some(vec!["A1".into(), "A2".into()])
        );
        assert_eq!(split_ids("", 0), Some(vec![]));
        // As `str::lines` split it before: "\r\n" ends a line too.
        assert_eq!(
            split_ids("A1\r\nA2\n", 2),
            Some(vec!["A1".into(), "A2".into()])
        );
    }

    #[test]
    fn a_batch_of_another_count_or_unterminated_is_refused() {
        assert_eq!(split_ids("A1\n", 2), None);
        assert_eq!(split_ids("A1\nA2\nA3\n", 2), None);
        assert_eq!(split_ids("A1\nA2", 2), None);
        assert_eq!(split_ids("A1\nA2\nA3", 2), None);
        assert_eq!(split_ids("A1", 0), None);
    }
}
