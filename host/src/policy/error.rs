//! [`PolicyError`]: everything that can go wrong loading or running an ID policy.
//!
//! Loading fails in stages, each with its own variant so that a hot swap can
//! say precisely why the new policy was refused (and keep the old one):
//! reading the file ([`PolicyError::Read`]), compiling it
//! ([`PolicyError::Compile`]), matching it against the contract
//! ([`PolicyError::WrongInterface`]). Running fails by trapping
//! ([`PolicyError::Trap`]) or hitting a host-side limit
//! ([`PolicyError::Runtime`]). A policy that runs fine but refuses a value
//! returns [`PolicyError::Format`]; an ID it finds invalid is not an error at
//! all but data (`Ok(Err(InvalidId))` from `Policy::validate`).

use std::io;
use std::path::PathBuf;

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

    /// Instantiating or calling the policy failed without a trap: it declared
    /// or grew its memory past [`PolicyLimits::max_memory_bytes`](super::PolicyLimits).
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

    /// The policy refused to format the parts it was given.
    #[error("the policy refused to format: {0}")]
    Format(#[from] FormatError),
}

impl PolicyError {
    /// Whether the policy could not be loaded (read, compiled or matched to
    /// the contract); a hot swap that fails this way keeps the old policy.
    pub fn is_load(&self) -> bool {
        matches!(
            self,
            PolicyError::Read { .. }
                | PolicyError::Compile { .. }
                | PolicyError::WrongInterface { .. }
        )
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
            | PolicyError::BadOutput { origin, .. } => Some(origin),
            PolicyError::Engine { .. } | PolicyError::Read { .. } | PolicyError::Format(_) => None,
        }
    }

    /// Classifies a failure to instantiate or call a policy: a wasm trap
    /// anywhere in the error chain is a [`PolicyError::Trap`].
    pub(crate) fn from_call(origin: &str, error: wasmtime::Error) -> Self {
        // `{:#}` prints the whole chain: the trap, then the guest backtrace.
        let reason = format!("{error:#}");
        let origin = origin.to_string();
        if error.is::<wasmtime::Trap>() {
            PolicyError::Trap { origin, reason }
        } else {
            PolicyError::Runtime { origin, reason }
        }
    }
}
