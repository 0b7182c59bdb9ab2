//! The arguments of each `idmint lock` subcommand (clap), apart from the
//! commands that read them, which import them from here.

use std::os::fd::RawFd;
use std::time::Duration;

use clap::Args;

use crate::duration_arg::parse_duration;
use crate::ConnectArgs;

/// Arguments of `idmint lock run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The lock's name: letters, digits, _ - . : (at most 128).
    pub name: String,
    /// Lease length (0.1 s to 1 day; seconds, or with a unit: 500ms, 30s, 10m); renewed every
    /// third of it while COMMAND runs.
    #[arg(long, default_value = "30", value_name = "DURATION", value_parser = parse_duration)]
    pub ttl: Duration,
    /// How long to wait for the lock (0: try once; at most 1 day).
    #[arg(long, default_value = "0", value_name = "DURATION", value_parser = parse_duration)]
    pub wait: Duration,
    /// Don't wait: exit 75 at once when the lock is held, as a cron job wants (--wait 0, said
    /// out loud).
    #[arg(long, conflicts_with = "wait")]
    pub skip: bool,
    /// A scheduled job: the lock stays held this long from when it was had (by the server's
    /// clock), however soon COMMAND ends and even if `lock run` dies, so that the job runs again,
    /// on this machine or another, no sooner than that (ShedLock's lockAtLeastFor). 0: released
    /// when COMMAND ends.
    #[arg(long, default_value = "0", value_name = "DURATION", value_parser = parse_duration)]
    pub at_least: Duration,
    /// Stop COMMAND once it has run this long (a hung job): SIGTERM, then SIGKILL after a
    /// grace; `lock run` then releases the lock (after --at-least) and exits 124. At least
    /// --at-least.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub at_most: Option<Duration>,
    /// A reader of a read-write lock: many readers hold the lock at once, never beside its
    /// writer (`lock run` without --shared). First come, first served: a reader that comes
    /// while a writer waits queues behind it.
    #[arg(long, conflicts_with = "permits")]
    pub shared: bool,
    /// A semaphore: one of N permits under the name, at most N holders at once, each with its
    /// own fencing token, handed out in arrival order (1 to 1000000). A call with a lower N
    /// than the holders have waits until fewer than its N hold.
    #[arg(long, value_name = "N")]
    pub permits: Option<u32>,
    /// Testing aid: the guard stops itself (SIGSTOP) just before it starts COMMAND, for a
    /// test to signal COMMAND's group then. Only in builds with the `test-hooks` feature (the
    /// test suite's).
    #[cfg(feature = "test-hooks")]
    #[arg(long, hide = true)]
    pub stop_guard_before_command: bool,
    /// The command to run, with its arguments (after `--`).
    #[arg(required = true, last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// Arguments of `idmint lock elect`.
#[derive(Debug, Args)]
pub struct ElectArgs {
    /// The lock's name: letters, digits, _ - . : (at most 128).
    pub name: String,
    /// Lease length (0.1 s to 1 day; seconds, or with a unit); renewed every third of it while
    /// leading. A standby takes over within about this long after the leader dies or is cut off.
    #[arg(long, default_value = "10", value_name = "DURATION", value_parser = parse_duration)]
    pub ttl: Duration,
    /// How this candidate is named while it leads (`lock status`, /monitor.json), 1 to 128
    /// printable characters; COMMAND gets it as IDMINT_LOCK_LABEL. Default: HOST:PID.
    #[arg(long, value_name = "LABEL")]
    pub id: Option<String>,
    /// The command to run while leading, with its arguments (after `--`).
    #[arg(required = true, last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// Arguments of the internal `idmint lock guard`.
#[derive(Debug, Args)]
pub struct GuardArgs {
    /// The read end of the pipe whose only write end `lock run` holds.
    #[arg(long, value_name = "FD")]
    pub watch_fd: RawFd,
    /// Testing aid: stop (SIGSTOP) just before starting COMMAND (`lock run
    /// --stop-guard-before-command`). Only in `test-hooks` builds.
    #[cfg(feature = "test-hooks")]
    #[arg(long, hide = true)]
    pub stop_before_command: bool,
    /// The command to run, with its arguments (after `--`).
    #[arg(required = true, last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// Arguments of `idmint lock status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// One lock; all locks when omitted.
    pub name: Option<String>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// Arguments of `idmint lock release`.
#[derive(Debug, Args)]
pub struct ReleaseArgs {
    /// The lock's name.
    pub name: String,
    /// Required: this releases whoever holds the lock.
    #[arg(long, required = true)]
    pub force: bool,
    #[command(flatten)]
    pub connect: ConnectArgs,
}
