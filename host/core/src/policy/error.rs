//! [`PolicyError`]: everything that can go wrong loading or running an ID policy.
//!
//! Loading fails in stages, each with its own variant so that a hot swap can
//! say precisely why the new policy was refused (and keep the old one):
//! reading the file ([`PolicyError::Read`]), compiling it
//! ([`PolicyError::Compile`]), matching it against the contract
//! ([`PolicyError::WrongInterface`]). Running fails by trapping
//! ([`PolicyError::Trap`]), running past its deadline
//! ([`PolicyError::Timeout`]), growing past its memory cap
//! ([`PolicyError::MemoryLimit`]) or another host-side failure
//! ([`PolicyError::Runtime`]). A policy that loads but fails the activation
//! check (`activation.rs`) is [`PolicyError::Activation`] or
//! [`PolicyError::Fit`]. A policy that runs fine but refuses a value
//! returns [`PolicyError::Format`]; an ID it finds invalid is not an error at
//! all but data (`Ok(Err(InvalidId))` from `Policy::validate`).

use std::io;
use std::path::PathBuf;

use super::fit_error::FitError;
use super::types::FormatError;

/// Why an ID policy could not be loaded or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The WebAssembly engine or the WASI linker could not be set up.
    #[error("cannot set up the WebAssembly runtime for policies: {reason}")]
    Engine {
        /// The engine's explanation.
        reason: String,
    },

    /// The policy file could not be read.
    #[error("cannot read policy file {}: {source}", path.display())]
    Read {
        /// The file named.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },

    /// The bytes are not a valid WebAssembly component, so they do not compile.
    #[error("policy {origin} is not a valid WebAssembly component: {reason}")]
    Compile {
        /// Where the policy came from: a file path or `"built-in default"`.
        origin: String,
        /// The compiler's explanation.
        reason: String,
    },

    /// The component is valid WebAssembly but does not implement the
    /// `idmint:policy` `id-policy` world: it is a core module, it imports
    /// something the host does not offer (the host offers WASI 0.2 only), or
    /// an export is missing or has the wrong type.
    #[error("policy {origin} does not implement the idmint:policy/id-policy contract: {reason}")]
    WrongInterface {
        /// Where the policy came from.
        origin: String,
        /// What does not match.
        reason: String,
    },

    /// The policy trapped: a panic in the guest, `unreachable`, an
    /// out-of-bounds access, a division by zero, ...
    #[error("policy {origin} trapped: {reason}")]
    Trap {
        /// Where the policy came from.
        origin: String,
        /// The trap and the guest backtrace, as wasmtime reports them.
        reason: String,
    },

    /// A call ran past [`PolicyLimits::timeout`](super::PolicyLimits) and was
    /// interrupted (an endless loop, or far too much work).
    #[error("policy {origin} ran past its {timeout_ms} ms time limit and was stopped{}",
        if stopped_in.is_empty() { String::new() } else { format!(" in:\n{stopped_in}") })]
    Timeout {
        /// Where the policy came from.
        origin: String,
        /// The limit, in milliseconds.
        timeout_ms: u128,
        /// The guest's backtrace where it was stopped (the function that
        /// would not end first), or empty when wasmtime captured none.
        stopped_in: String,
    },

    /// The policy declared or grew a linear memory past
    /// [`PolicyLimits::max_memory_bytes`](super::PolicyLimits).
    #[error("policy {origin} exceeded its memory limit of {limit} bytes (it asked for {requested} bytes)")]
    MemoryLimit {
        /// Where the policy came from.
        origin: String,
        /// The cap, in bytes.
        limit: usize,
        /// The size asked for, in bytes.
        requested: usize,
    },

    /// The policy runs, but failed its activation check: an ID it formatted
    /// from sample parts did not read back to the same parts with its own
    /// validator, or it refused parts it must accept.
    #[error("policy {origin} failed its activation check: {reason}")]
    Activation {
        /// Where the policy came from.
        origin: String,
        /// Which sample failed, and how.
        reason: String,
    },

    /// The policy cannot serve a counter it would serve: too small a
    /// sequence, or no time for a counter whose values repeat.
    /// (Boxed: it is the largest variant, and errors travel by value.)
    #[error(transparent)]
    Fit(Box<FitError>),

    /// Instantiating or calling the policy failed without a trap, for a
    /// reason other than the limits above.
    #[error("policy {origin} failed to run: {reason}")]
    Runtime {
        /// Where the policy came from.
        origin: String,
        /// Wasmtime's explanation.
        reason: String,
    },

    /// The policy answered, but broke the contract in a way the types cannot
    /// express, e.g. `format-batch` returned a different number of IDs than
    /// stamps it was given.
    #[error("policy {origin} broke the contract: {reason}")]
    BadOutput {
        /// Where the policy came from.
        origin: String,
        /// What was wrong with the answer.
        reason: String,
    },

    /// `builtin:NAME` names no built-in policy.
    #[error("there is no built-in policy {name:?}; the built-in policies are {known}")]
    UnknownBuiltin {
        /// The name given.
        name: String,
        /// The built-in policies' names.
        known: String,
    },

    /// The policy refused to format the parts it was given.
    #[error("the policy refused to format: {0}")]
    Format(#[from] FormatError),
}

impl From<FitError> for PolicyError {
    fn from(error: FitError) -> Self {
        PolicyError::Fit(Box::new(error))
    }
}

impl PolicyError {
    /// What kind of failure this is: the caller's input (a prefix the policy
    /// refuses, an unknown built-in name), a policy that cannot serve the
    /// counter, or the policy itself.
    pub fn class(&self) -> crate::error_class::ErrorClass {
        match self {
            PolicyError::Format(_) | PolicyError::UnknownBuiltin { .. } => {
                crate::error_class::ErrorClass::BadInput
            }
            PolicyError::Fit(_) => crate::error_class::ErrorClass::Unfit,
            _ => crate::error_class::ErrorClass::Policy,
        }
    }

    /// Whether the policy could not be loaded (read, compiled or matched to
    /// the contract); a hot swap that fails this way keeps the old policy.
    pub fn is_load(&self) -> bool {
        matches!(
            self,
            PolicyError::Read { .. }
                | PolicyError::UnknownBuiltin { .. }
                | PolicyError::Compile { .. }
                | PolicyError::WrongInterface { .. }
        )
    }

    /// Whether the policy was stopped at its time limit.
    pub fn is_timeout(&self) -> bool {
        matches!(self, PolicyError::Timeout { .. })
    }

    /// Whether the policy was stopped at its memory limit.
    pub fn is_memory_limit(&self) -> bool {
        matches!(self, PolicyError::MemoryLimit { .. })
    }

    /// Whether the policy loaded but failed its activation check (including
    /// the capacity check).
    pub fn is_activation(&self) -> bool {
        matches!(self, PolicyError::Activation { .. } | PolicyError::Fit(_))
    }

    /// Whether the policy trapped.
    pub fn is_trap(&self) -> bool {
        matches!(self, PolicyError::Trap { .. })
    }

    /// Whether the policy refused to format the parts it was given: the input
    /// is at fault, not the policy, so retrying the same input cannot help.
    pub fn is_format(&self) -> bool {
        matches!(self, PolicyError::Format(_))
    }

    /// Where the failing policy came from, when the error is about one.
    pub fn origin(&self) -> Option<&str> {
        match self {
            PolicyError::Compile { origin, .. }
            | PolicyError::WrongInterface { origin, .. }
            | PolicyError::Trap { origin, .. }
            | PolicyError::Runtime { origin, .. }
            | PolicyError::Timeout { origin, .. }
            | PolicyError::MemoryLimit { origin, .. }
            | PolicyError::Activation { origin, .. }
            | PolicyError::BadOutput { origin, .. } => Some(origin),
            PolicyError::Engine { .. }
            | PolicyError::Read { .. }
            | PolicyError::UnknownBuiltin { .. }
            | PolicyError::Format(_)
            | PolicyError::Fit(_) => None,
        }
    }

    /// Classifies a failure to instantiate or call a policy: an epoch
    /// interrupt is a [`PolicyError::Timeout`], a growth the memory cap
    /// refused (`refused_memory`, recorded by the store's limiter) a
    /// [`PolicyError::MemoryLimit`], any other wasm trap anywhere in the
    /// error chain a [`PolicyError::Trap`].
    pub(crate) fn from_call(
        origin: &str,
        error: wasmtime::Error,
        limits: &super::PolicyLimits,
        refused_memory: Option<usize>,
    ) -> Self {
        let origin = origin.to_string();
        if error.downcast_ref::<wasmtime::Trap>() == Some(&wasmtime::Trap::Interrupt) {
            return PolicyError::Timeout {
                origin,
                timeout_ms: limits.timeout.as_millis(),
                stopped_in: error
                    .downcast_ref::<wasmtime::WasmBacktrace>()
                    .map(|backtrace| backtrace.to_string())
                    .unwrap_or_default(),
            };
        }
        if let Some(requested) = refused_memory {
            return PolicyError::MemoryLimit {
                origin,
                limit: limits.max_memory_bytes,
                requested,
            };
        }
        // `{:#}` prints the whole chain: the trap, then the guest backtrace.
        let reason = format!("{error:#}");
        if error.is::<wasmtime::Trap>() {
            PolicyError::Trap { origin, reason }
        } else {
            PolicyError::Runtime { origin, reason }
        }
    }
}
