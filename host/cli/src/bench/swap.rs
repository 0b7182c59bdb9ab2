//! The swap benchmark (`idmint bench --only swap`): how long a new policy
//! takes to be in service after its file is replaced (`next --stream
//! --policy FILE`), and after `idmint policy activate` (`--policy-from-db`),
//! through the same followers a long-running process uses. The two built-in
//! policies `default` and `decimal` take turns, so that every swap is a real
//! change; each latency runs from the write (the rename, the activation)
//! to the follower's `Swapped` event, compile and activation check included.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mongodb::bson::Document;
use mongodb::Database;
use serde::Serialize;
use tokio::sync::mpsc::{self, UnboundedReceiver};

use idmint::policy::watch::{self, SwapEvent};
use idmint::policy::{
    ActivationOptions, LivePolicy, PolicyError, PolicyRuntime, PolicyStore, PolicyStoreError,
    DECIMAL_POLICY_WASM, DEFAULT_POLICY_WASM, POLICIES_COLLECTION,
};

/// Why the swap benchmark stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SwapBenchError {
    /// The temporary policy file could not be written or renamed.
    #[error("the swap benchmark's temporary policy file: {0}")]
    File(#[from] std::io::Error),
    /// Loading or swapping a policy failed.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The policies collection failed.
    #[error(transparent)]
    Store(#[from] PolicyStoreError),
    /// The database already holds stored policies, which the benchmark
    /// would disturb.
    #[error("database '{0}' has stored policies; run `bench --only swap` with a --db of its own")]
    StoredPolicies(String),
    /// A follower did not report the swap in time.
    #[error("no swap was reported within {} s", GIVE_UP.as_secs())]
    NoSwap,
}

/// How long one swap may take before the benchmark gives up.
const GIVE_UP: Duration = Duration::from_secs(60);

/// The latencies of one way of swapping.
#[derive(Debug, Clone, Serialize)]
pub struct SwapLatency {
    /// `file` or `activate`.
    pub mode: &'static str,
    /// Swaps measured.
    pub swaps: usize,
    /// Median, milliseconds.
    pub median_ms: f64,
    /// Slowest, milliseconds.
    pub max_ms: f64,
}

/// Both ways of swapping.
#[derive(Debug, Clone, Serialize)]
pub struct SwapReport {
    /// One entry per mode.
    pub results: Vec<SwapLatency>,
}

/// Runs `swaps` swaps of each kind. The activation part needs `database`
/// to have no stored policies (it pushes two and drops the collection
/// afterwards): run it against a database of its own.
pub async fn run(database: &Database, swaps: usize) -> Result<SwapReport, SwapBenchError> {
    let runtime = PolicyRuntime::new()?;
    let bytes: [&[u8]; 2] = [DEFAULT_POLICY_WASM, DECIMAL_POLICY_WASM];
    let file = file_swaps(&runtime, &bytes, swaps).await?;
    let activate = activate_swaps(database, &runtime, &bytes, swaps).await?;
    Ok(SwapReport {
        results: vec![summary("file", file), summary("activate", activate)],
    })
}

async fn file_swaps(
    runtime: &PolicyRuntime,
    bytes: &[&[u8]],
    swaps: usize,
) -> Result<Vec<Duration>, SwapBenchError> {
    let dir = std::env::temp_dir().join(format!(
        "idmint-bench-swap-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos())
    ));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("policy.wasm");
    std::fs::write(&path, bytes[0])?;
    let live = Arc::new(LivePolicy::new(
        runtime.load_bytes(bytes[0], "bench")?,
        ActivationOptions::default(),
    ));
    let (sender, mut events) = mpsc::unbounded_channel();
    let follower = watch::follow_file(path.clone(), runtime.clone(), live, sender);
    let mut latencies = Vec::with_capacity(swaps);
    let result = async {
        for swap in 0..swaps {
            let staged = dir.join("staged.wasm");
            std::fs::write(&staged, bytes[(swap + 1) % 2])?;
            let started = Instant::now();
            std::fs::rename(&staged, &path)?;
            swapped(&mut events).await?;
            latencies.push(started.elapsed());
        }
        Ok::<_, SwapBenchError>(())
    }
    .await;
    follower.abort();
    let _ = std::fs::remove_dir_all(&dir);
    result.map(|()| latencies)
}

async fn activate_swaps(
    database: &Database,
    runtime: &PolicyRuntime,
    bytes: &[&[u8]],
    swaps: usize,
) -> Result<Vec<Duration>, SwapBenchError> {
    let collection = database.collection::<Document>(POLICIES_COLLECTION);
    let existing = collection
        .estimated_document_count()
        .await
        .map_err(|source| PolicyStoreError::Database { source })?;
    if existing > 0 {
        return Err(SwapBenchError::StoredPolicies(database.name().to_string()));
    }
    let store = PolicyStore::new(database);
    let mut versions = Vec::new();
    for (index, bytes) in bytes.iter().enumerate() {
        let pushed = store
            .push(runtime, bytes, &format!("bench {index}"), None)
            .await?;
        versions.push(pushed.stored.version);
    }
    store.activate(runtime, versions[0]).await?;
    let live = Arc::new(LivePolicy::new(
        runtime.load_bytes(bytes[0], "bench")?,
        ActivationOptions::default(),
    ));
    let (sender, mut events) = mpsc::unbounded_channel();
    let follower = watch::follow_store(store.clone(), runtime.clone(), live, sender);
    // The version active at the start is the one in service: no swap.
    let result = async {
        let mut latencies = Vec::with_capacity(swaps);
        for swap in 0..swaps {
            let started = Instant::now();
            store.activate(runtime, versions[(swap + 1) % 2]).await?;
            swapped(&mut events).await?;
            latencies.push(started.elapsed());
        }
        Ok::<_, SwapBenchError>(latencies)
    }
    .await;
    follower.abort();
    let _ = collection.drop().await;
    result
}

/// Waits for the next swap, failing on a refusal or after [`GIVE_UP`].
async fn swapped(events: &mut UnboundedReceiver<SwapEvent>) -> Result<(), SwapBenchError> {
    let deadline = Instant::now() + GIVE_UP;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, events.recv()).await {
            Ok(Some(SwapEvent::Swapped { .. })) => return Ok(()),
            Ok(Some(SwapEvent::Refused { error, .. })) => return Err(error.into()),
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => return Err(SwapBenchError::NoSwap),
        }
    }
}

fn summary(mode: &'static str, mut latencies: Vec<Duration>) -> SwapLatency {
    latencies.sort();
    let ms = |d: &Duration| d.as_secs_f64() * 1000.0;
    SwapLatency {
        mode,
        swaps: latencies.len(),
        median_ms: latencies.get(latencies.len() / 2).map_or(0.0, ms),
        max_ms: latencies.last().map_or(0.0, ms),
    }
}
