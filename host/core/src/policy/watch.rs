//! Sources of live swaps: a policy file, and the policies collection.
//!
//! Each follower is a tokio task that notices a new policy, loads it (on a
//! blocking thread: compiling takes a while), and hands it to
//! [`LivePolicy::try_swap`], which runs the activation check and swaps only
//! if it passes. What happened is sent as a [`SwapEvent`] on a channel, for
//! the caller to report: the library never prints. A refused policy is
//! reported once and the one in service stays.
//!
//! - [`follow_file`] polls the file's size and modification time every
//!   [`FILE_POLL`]. A file caught half-written fails to load and is retried
//!   when it changes again, so writers need not rename into place (though
//!   they should).
//! - [`follow_store`] follows the `active` pointer of the policies collection
//!   (`store.rs`) with a change stream, or, on servers without change
//!   streams, by polling every [`STORE_POLL`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures_util::StreamExt;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

use super::activation::{self, ActivationOptions, ActivationReport};
use super::error::PolicyError;
use super::live::LivePolicy;
use super::runtime::{Policy, PolicyRuntime};
use super::store::{PolicyStore, PolicyStoreError};

/// How often [`follow_file`] looks at the file.
pub const FILE_POLL: Duration = Duration::from_millis(200);

/// How often [`follow_store`] reads the active pointer when the server has no
/// change streams (and, as a safety net, how often it reads it anyway with
/// one: every ten of these).
pub const STORE_POLL: Duration = Duration::from_millis(500);

/// What a follower did.
#[derive(Debug)]
#[non_exhaustive]
pub enum SwapEvent {
    /// A new policy passed its activation check and is now in service.
    Swapped {
        /// Where it came from: the file, or the stored version.
        source: String,
        /// The check it passed.
        report: ActivationReport,
    },
    /// A new policy was refused; the one in service stays.
    Refused {
        /// Where it came from.
        source: String,
        /// Why.
        error: PolicyError,
    },
    /// Reading the source failed (the file vanished, the database is down);
    /// the follower keeps trying.
    SourceError {
        /// The source.
        source: String,
        /// What went wrong.
        message: String,
    },
    /// The server offers no change streams, so the store is polled.
    Polling {
        /// Why the change stream could not be opened.
        reason: String,
    },
}

impl SwapEvent {
    /// A stable one-word name of the event: `swapped`, `refused`,
    /// `source-error` or `polling` (the CLI's `--json` events, the log's
    /// `event` field).
    pub fn kind(&self) -> &'static str {
        match self {
            SwapEvent::Swapped { .. } => "swapped",
            SwapEvent::Refused { .. } => "refused",
            SwapEvent::SourceError { .. } => "source-error",
            SwapEvent::Polling { .. } => "polling",
        }
    }

    /// Whether the event is something an operator should look at (a
    /// refusal, a source that cannot be read) rather than news.
    pub fn is_warning(&self) -> bool {
        matches!(
            self,
            SwapEvent::Refused { .. } | SwapEvent::SourceError { .. }
        )
    }
}

/// The one sentence each event is reported with, by every process that
/// follows a policy (`next --stream` prints it, `serve` logs it).
impl std::fmt::Display for SwapEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SwapEvent::Swapped { source, report } => write!(
                f,
                "policy swapped: now serving {} {} (sha256 {}) from {source}",
                report.policy.name, report.policy.version, report.sha256
            ),
            SwapEvent::Refused { source, error } => write!(
                f,
                "policy from {source} refused, keeping the current one: {error}"
            ),
            SwapEvent::SourceError { source, message } => {
                write!(f, "cannot read {source}: {message}")
            }
            SwapEvent::Polling { reason } => write!(
                f,
                "no change stream ({reason}); polling the policies collection"
            ),
        }
    }
}

/// The policy a process that follows the policies collection starts with:
/// the active stored version if there is one and it passes the activation
/// check against `checks`, else `local`. A stored policy refused here is
/// reported on `events`, not fatal: the follower retries it only when the
/// active version changes. Only a database failure is an error.
pub async fn first_policy(
    store: &PolicyStore,
    runtime: &PolicyRuntime,
    local: &Policy,
    checks: &ActivationOptions,
    events: &UnboundedSender<SwapEvent>,
) -> Result<Policy, PolicyStoreError> {
    let Some(active) = store.active().await? else {
        return Ok(local.clone());
    };
    let source = super::store::version_source(active.version);
    match store.load(runtime, active.version).await {
        Ok(policy) => match activation::check(&policy, checks) {
            Ok(_) => return Ok(policy),
            Err(error) => {
                let _ = events.send(SwapEvent::Refused { source, error });
            }
        },
        Err(error) if error.is_database() => return Err(error),
        Err(error) => {
            let _ = events.send(SwapEvent::SourceError {
                source,
                message: format!("refused, using the local policy: {error}"),
            });
        }
    }
    Ok(local.clone())
}

/// Starts the followers a long-running process asks for: of the policy file
/// `file`, and of the policies collection (`store`), each offering what it
/// finds to `live` and reporting on `events`.
pub fn follow(
    file: Option<PathBuf>,
    store: Option<PolicyStore>,
    runtime: &PolicyRuntime,
    live: &Arc<LivePolicy>,
    events: &UnboundedSender<SwapEvent>,
) -> Vec<JoinHandle<()>> {
    let mut followers = Vec::new();
    if let Some(path) = file {
        followers.push(follow_file(
            path,
            runtime.clone(),
            live.clone(),
            events.clone(),
        ));
    }
    if let Some(store) = store {
        followers.push(follow_store(
            store,
            runtime.clone(),
            live.clone(),
            events.clone(),
        ));
    }
    followers
}

/// Follows `path`: whenever its size or modification time changes and its
/// bytes differ from the policy in service, loads it with `runtime` and
/// offers it to `live`.
pub fn follow_file(
    path: PathBuf,
    runtime: PolicyRuntime,
    live: Arc<LivePolicy>,
    events: UnboundedSender<SwapEvent>,
) -> JoinHandle<()> {
    let fingerprint = |meta: &std::fs::Metadata| (meta.len(), meta.modified().ok());
    // Read before the task starts, so that a file replaced between this call
    // and the task's first poll is seen as the change it is.
    let mut seen: Option<(u64, Option<SystemTime>)> =
        std::fs::metadata(&path).ok().map(|m| fingerprint(&m));
    tokio::spawn(async move {
        let source = path.display().to_string();
        let mut failing = false;
        let mut ticker = tokio::time::interval(FILE_POLL);
        loop {
            ticker.tick().await;
            let now = match tokio::fs::metadata(&path).await {
                Ok(meta) => Some(fingerprint(&meta)),
                Err(error) => {
                    if !failing {
                        failing = true;
                        let _ = events.send(SwapEvent::SourceError {
                            source: source.clone(),
                            message: error.to_string(),
                        });
                    }
                    continue;
                }
            };
            failing = false;
            if now == seen {
                continue;
            }
            seen = now;
            let bytes = match tokio::fs::read(&path).await {
                Ok(bytes) => bytes,
                Err(error) => {
                    let _ = events.send(SwapEvent::SourceError {
                        source: source.clone(),
                        message: error.to_string(),
                    });
                    continue;
                }
            };
            if crate::checksum::sha256_hex(&bytes) == live.current().sha256() {
                continue;
            }
            let event = swap_in(&runtime, &live, bytes, source.clone()).await;
            if events.send(event).is_err() {
                return;
            }
        }
    })
}

/// Follows the active version of `store`: whenever it names bytes other than
/// the policy in service, fetches them, loads them and offers them to `live`.
/// Applies the version active when it starts, if any.
pub fn follow_store(
    store: PolicyStore,
    runtime: PolicyRuntime,
    live: Arc<LivePolicy>,
    events: UnboundedSender<SwapEvent>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        // Open the stream before the first read, so that no activation can
        // fall between the two unseen.
        let mut stream = match store.collection().watch().await {
            Ok(stream) => Some(stream),
            Err(error) => {
                let _ = events.send(SwapEvent::Polling {
                    reason: error.to_string(),
                });
                None
            }
        };
        let mut refused: Option<String> = None;
        loop {
            if !apply_active(&store, &runtime, &live, &events, &mut refused).await {
                return;
            }
            match stream.as_mut() {
                Some(changes) => {
                    let wait = tokio::time::timeout(STORE_POLL * 10, changes.next()).await;
                    match wait {
                        Ok(Some(Ok(_))) | Err(_) => {}
                        Ok(Some(Err(error))) => {
                            let _ = events.send(SwapEvent::Polling {
                                reason: format!("the change stream failed: {error}"),
                            });
                            stream = None;
                        }
                        Ok(None) => stream = None,
                    }
                }
                None => tokio::time::sleep(STORE_POLL).await,
            }
        }
    })
}

/// Reads the active pointer and swaps to it if it is new. Returns false when
/// the receiver of `events` is gone (the follower should stop).
async fn apply_active(
    store: &PolicyStore,
    runtime: &PolicyRuntime,
    live: &LivePolicy,
    events: &UnboundedSender<SwapEvent>,
    refused: &mut Option<String>,
) -> bool {
    let source_error = |error: PolicyStoreError| SwapEvent::SourceError {
        source: super::store::POLICIES_COLLECTION.to_string(),
        message: error.to_string(),
    };
    let active = match store.active().await {
        Ok(Some(active)) => active,
        Ok(None) => {
            // No stored version is active (any more): serve the process's
            // own policy again, if it is not the one in service.
            *refused = None;
            let Some(local) = live.local() else {
                return true;
            };
            if live.current().sha256() == local.sha256() {
                return true;
            }
            let source = "the local policy (no stored version is active)".to_string();
            let event = match live.try_swap(local.clone()) {
                Ok(report) => SwapEvent::Swapped { source, report },
                Err(error) => SwapEvent::Refused { source, error },
            };
            return events.send(event).is_ok();
        }
        Err(error) => return events.send(source_error(error)).is_ok(),
    };
    if active.sha256 == live.current().sha256() || refused.as_deref() == Some(&active.sha256) {
        return true;
    }
    let source = super::store::version_source(active.version);
    let event = match store.fetch(active.version).await {
        Ok((bytes, _)) => swap_in(runtime, live, bytes, source).await,
        Err(PolicyStoreError::Database { source: error }) => {
            source_error(PolicyStoreError::Database { source: error })
        }
        Err(error) => SwapEvent::Refused {
            source,
            error: PolicyError::Activation {
                origin: super::store::version_source(active.version),
                reason: error.to_string(),
            },
        },
    };
    if matches!(event, SwapEvent::Refused { .. }) {
        *refused = Some(active.sha256);
    }
    events.send(event).is_ok()
}

/// Loads `bytes` and offers them to `live`, off the async threads.
async fn swap_in(
    runtime: &PolicyRuntime,
    live: &LivePolicy,
    bytes: Vec<u8>,
    source: String,
) -> SwapEvent {
    let loader = runtime.clone();
    let origin = source.clone();
    let loaded: Result<Policy, PolicyError> =
        match tokio::task::spawn_blocking(move || loader.load_bytes(&bytes, &origin)).await {
            Ok(result) => result,
            Err(join) => Err(PolicyError::Engine {
                reason: format!("the loading thread failed: {join}"),
            }),
        };
    match loaded.and_then(|policy| live.try_swap(policy)) {
        Ok(report) => SwapEvent::Swapped { source, report },
        Err(error) => SwapEvent::Refused { source, error },
    }
}
