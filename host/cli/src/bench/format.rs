//! The format benchmark ([`run_format`]): the other half of an ID, on one
//! thread and with no database. Every mode makes batches of IDs, one
//! `String` per ID:
//!
//! - `format_wasm`: the embedded default policy's `format-batch`, through
//!   the sandbox (a fresh store and instance per batch), split into one
//!   `String` per ID: what `next` costs beyond the counter;
//! - `format_native`: the same format in plain Rust in the host
//!   ([`native_format`]), its yardstick;
//! - `format_base32`, `format_uuidv7`, `format_ulid`: the built-in policies
//!   for snowflake counters, through the sandbox likewise, on the stamps of
//!   one worker's IDs of one millisecond (with a counter's tag and salt);
//! - `uuid_crate_v7`: the Rust `uuid` crate's `Uuid::now_v7()` written as
//!   text, the standard IDs' yardstick: the generator an application would
//!   otherwise call, unique by chance.
//!
//! The modes are interleaved in short slices so that drift hits them alike:
//! compare ratios within one run.

use std::time::{Duration, Instant};

use serde::Serialize;

use idmint::parts::{Layout, SnowflakeParts};
use idmint::policy::{Policy, PolicyError, PolicyRuntime, Stamp};
use idmint::sequence::{Clock, SystemClock};

use super::native_format;
use super::sequence::{BenchReport, BenchResult};

/// What the format benchmark measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FormatMode {
    /// The default policy, in WebAssembly.
    FormatWasm,
    /// The same format in plain Rust.
    FormatNative,
    /// `builtin:base32`, in WebAssembly.
    FormatBase32,
    /// `builtin:uuidv7`, in WebAssembly.
    FormatUuidv7,
    /// `builtin:ulid`, in WebAssembly.
    FormatUlid,
    /// The `uuid` crate's `Uuid::now_v7()`, as text.
    UuidCrateV7,
}

impl FormatMode {
    /// Every mode, in report order.
    pub const ALL: [FormatMode; 6] = [
        FormatMode::FormatWasm,
        FormatMode::FormatNative,
        FormatMode::FormatBase32,
        FormatMode::FormatUuidv7,
        FormatMode::FormatUlid,
        FormatMode::UuidCrateV7,
    ];

    /// The mode's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            FormatMode::FormatWasm => "format_wasm",
            FormatMode::FormatNative => "format_native",
            FormatMode::FormatBase32 => "format_base32",
            FormatMode::FormatUuidv7 => "format_uuidv7",
            FormatMode::FormatUlid => "format_ulid",
            FormatMode::UuidCrateV7 => "uuid_crate_v7",
        }
    }

    /// The pairs a report gives the ratio of: each mode against its
    /// yardstick.
    pub const RATIOS: [(FormatMode, FormatMode); 3] = [
        (FormatMode::FormatWasm, FormatMode::FormatNative),
        (FormatMode::FormatUuidv7, FormatMode::UuidCrateV7),
        (FormatMode::FormatUlid, FormatMode::UuidCrateV7),
    ];
}

/// How to run the format benchmark.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FormatBenchOptions {
    /// IDs formatted per call (one host/guest crossing for wasm). Default: 1024.
    pub batch: usize,
    /// Time spent per mode. Default: 3 s.
    pub duration: Duration,
    /// How many interleaved slices that time is cut into. Default: 3.
    pub slices: u32,
}

impl Default for FormatBenchOptions {
    fn default() -> Self {
        Self {
            batch: 1024,
            duration: Duration::from_secs(3),
            slices: 3,
        }
    }
}

/// The policies and stamps the modes format.
struct Inputs {
    default: Policy,
    base32: Policy,
    uuidv7: Policy,
    ulid: Policy,
    /// A cyclic counter's stamps, a realistic spread of times.
    plain: Vec<Stamp>,
    /// One worker's snowflake IDs of one millisecond, tagged.
    snowflake: Vec<Stamp>,
}

impl Inputs {
    fn new(batch: usize) -> Result<Self, PolicyError> {
        let runtime = PolicyRuntime::new()?;
        let start = SystemClock.now_micros();
        let plain = (0..batch as u64)
            .map(|i| Stamp::new(start + i * 7, i % 100))
            .collect();
        let layout = Layout::default();
        let time = layout.time_at(start / 1000);
        let snowflake = (0..batch as u64)
            .filter_map(|seq| {
                let id = layout.compose(SnowflakeParts {
                    time,
                    worker: 1,
                    seq: seq % (layout.max_seq() + 1),
                    ..SnowflakeParts::default()
                });
                let mut stamp = Stamp::snowflake(id, &layout)?;
                if let Some(fields) = stamp.snowflake.as_mut() {
                    fields.tag = 5;
                    fields.salt = 0x5eed_1d5a_17ed_c0de;
                }
                Some(stamp)
            })
            .collect();
        Ok(Self {
            default: runtime.load_default()?,
            base32: runtime.load_builtin("base32")?,
            uuidv7: runtime.load_builtin("uuidv7")?,
            ulid: runtime.load_builtin("ulid")?,
            plain,
            snowflake,
        })
    }

    /// One batch of `mode`'s IDs.
    fn batch(&self, mode: FormatMode) -> Result<Vec<String>, PolicyError> {
        const PREFIX: &str = "ORD-";
        match mode {
            FormatMode::FormatWasm => self.default.format_batch(PREFIX, &self.plain),
            FormatMode::FormatNative => native_format::format_batch(PREFIX, &self.plain).ok_or(
                PolicyError::Format(idmint::policy::FormatError::SequenceOutOfRange(0)),
            ),
            FormatMode::FormatBase32 => self.base32.format_batch("", &self.snowflake),
            FormatMode::FormatUuidv7 => self.uuidv7.format_batch("", &self.snowflake),
            FormatMode::FormatUlid => self.ulid.format_batch("", &self.snowflake),
            FormatMode::UuidCrateV7 => Ok(self
                .snowflake
                .iter()
                .map(|_| uuid::Uuid::now_v7().to_string())
                .collect()),
        }
    }
}

/// Runs every format mode on this thread; one [`BenchResult`] each, with
/// `concurrency` 1 and `ops_per_sec` in IDs per second.
pub fn run_format(options: &FormatBenchOptions) -> Result<Vec<BenchResult>, PolicyError> {
    let inputs = Inputs::new(options.batch.max(1))?;
    let mut totals = [(0_u64, Duration::ZERO); FormatMode::ALL.len()];
    let slices = options.slices.max(1);
    for slice in 0..slices {
        for offset in 0..FormatMode::ALL.len() {
            let index = (offset + slice as usize) % FormatMode::ALL.len();
            let mode = FormatMode::ALL[index];
            let started = Instant::now();
            let deadline = started + options.duration / slices;
            let mut ids = 0_u64;
            while Instant::now() < deadline {
                ids += std::hint::black_box(inputs.batch(mode)?).len() as u64;
            }
            totals[index].0 += ids;
            totals[index].1 += started.elapsed();
        }
    }
    Ok(FormatMode::ALL
        .into_iter()
        .zip(totals)
        .map(|(mode, (ops, elapsed))| BenchResult {
            mode: mode.name().into(),
            concurrency: 1,
            ops_per_sec: ops as f64 / elapsed.as_secs_f64(),
            ops,
            seconds: elapsed.as_secs_f64(),
            fetches_per_million: None,
        })
        .collect())
}

impl BenchReport {
    /// `mode`'s IDs/s divided by `yardstick`'s, if both ran.
    pub fn format_ratio(&self, mode: FormatMode, yardstick: FormatMode) -> Option<f64> {
        let rate = |mode: FormatMode| {
            self.results
                .iter()
                .find(|r| r.mode == mode.name())
                .map(|r| r.ops_per_sec)
        };
        Some(rate(mode)? / rate(yardstick)?)
    }
}
