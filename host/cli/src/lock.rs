//! `idmint lock run|status|release`: the library's leases for shell scripts
//! and cron jobs, shaped like `flock`.

use std::fmt::Write;
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use clap::{Args, Subcommand};
use idmint::lock::{
    status_all, Lock, LockError, LockName, LockState, WaitOptions, Watchdog, LOCKS_COLLECTION,
};
use serde::Serialize;

use super::exit::{UsageError, EXIT_LOCK_LOST};
use super::{ConnectArgs, Outcome, Output};

/// How long a COMMAND gets between SIGTERM and SIGKILL once the lease is lost.
const KILL_GRACE: Duration = Duration::from_secs(5);

/// `idmint lock ...`
#[derive(Debug, Subcommand)]
pub enum LockCmd {
    /// Run COMMAND while holding the lock, renewing it, releasing it at the end; exits with
    /// COMMAND's code, 75 if the lock was not had within --wait, 76 if the lease was lost while
    /// COMMAND ran (COMMAND is then stopped: SIGTERM, SIGKILL after 5 s).
    Run(RunArgs),
    /// Show a lock (or all locks): holder, fencing token, time left by the server's clock, hold count.
    Status(StatusArgs),
    /// Clear a lock's holder (a DBA removing a dead holder); prints the token removed.
    Release(ReleaseArgs),
}

/// Arguments of `idmint lock run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The lock's name: letters, digits, _ - . : (at most 128).
    pub name: String,
    /// Lease length in seconds (0.1 to 86400); renewed every third of it while COMMAND runs.
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    pub ttl: f64,
    /// How long to wait for the lock, in seconds (0: try once; at most 86400).
    #[arg(long, default_value_t = 0.0, value_name = "SECS")]
    pub wait: f64,
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

impl LockCmd {
    pub fn connect(&self) -> &ConnectArgs {
        match self {
            LockCmd::Run(args) => &args.connect,
            LockCmd::Status(args) => &args.connect,
            LockCmd::Release(args) => &args.connect,
        }
    }

    pub async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        match self {
            LockCmd::Run(args) => run(args).await,
            LockCmd::Status(args) => {
                let name = args.name.as_deref().map(LockName::new).transpose()?;
                let database = args.connect.connect().await?;
                let locks =
                    status_all(&database.collection(LOCKS_COLLECTION), name.as_ref()).await?;
                if let (Some(name), true) = (&name, locks.is_empty()) {
                    if !output.is_json() {
                        output.report(&(), || format!("lock '{name}' was never taken"))?;
                        return Ok(Outcome::Success);
                    }
                }
                output.report(&locks, || locks.iter().map(describe).collect::<String>())?;
                Ok(Outcome::Success)
            }
            LockCmd::Release(args) => {
                let name = LockName::new(&args.name)?;
                let database = args.connect.connect().await?;
                let removed = match Lock::new(&database, name).force_release().await {
                    Ok(removed) => removed,
                    // Nothing to release: the command ran and found so.
                    Err(error @ LockError::NotHeld(_)) => {
                        return Err(super::exit::Finding(error.to_string()).into())
                    }
                    Err(error) => return Err(idmint::Error::from(error).into()),
                };
                #[derive(Serialize)]
                struct Released<'a> {
                    released: &'a LockState,
                }
                output.report(&Released { released: &removed }, || {
                    format!(
                        "released lock '{}': removed holder {} with fencing token {} (hold count {})",
                        removed.name,
                        removed.owner.as_deref().unwrap_or("?"),
                        removed.token,
                        removed.count
                    )
                })?;
                Ok(Outcome::Success)
            }
        }
    }
}

fn describe(state: &LockState) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "lock '{}'", state.name);
    match (&state.owner, state.expires_in_ms) {
        (Some(owner), Some(ms)) if ms > 0 => {
            let _ = writeln!(text, "  holder:     {owner}");
            let _ = writeln!(text, "  token:      {}", state.token);
            let _ = writeln!(text, "  expires in: {:.3} s", ms as f64 / 1000.0);
            let _ = writeln!(text, "  hold count: {}", state.count);
        }
        (Some(owner), _) => {
            let _ = writeln!(
                text,
                "  free (lease of {owner} with token {} expired)",
                state.token
            );
        }
        (None, _) => {
            let _ = writeln!(text, "  free (last token {})", state.token);
        }
    }
    text
}

/// Seconds as a Duration; the library checks the range.
fn seconds(flag: &str, value: f64) -> Result<Duration, UsageError> {
    Duration::try_from_secs_f64(value)
        .map_err(|_| UsageError(format!("--{flag} {value} is not a number of seconds")))
}

async fn run(args: &RunArgs) -> anyhow::Result<Outcome> {
    let name = LockName::new(&args.name)?;
    let ttl = seconds("ttl", args.ttl)?;
    let wait = seconds("wait", args.wait)?;
    let database = args.connect.connect().await?;
    let lock = Lock::new(&database, name.clone());
    let lease = lock
        .acquire(
            ttl,
            // Short polls: a lease that runs out writes nothing a change stream could see.
            &WaitOptions::new(wait).poll(Duration::from_millis(50), Duration::from_millis(250)),
        )
        .await?;
    let token = lease.token();
    let mut watchdog = Watchdog::start(&lease);

    let (program, program_args) = args.command.split_first().expect("clap requires COMMAND");
    let mut child = match tokio::process::Command::new(program)
        .args(program_args)
        .env("IDMINT_LOCK_TOKEN", token.to_string())
        .env("IDMINT_LOCK_NAME", name.as_str())
        .spawn()
    {
        Ok(child) => child,
        Err(error) => {
            watchdog.stop();
            lease.release().await?;
            return Err(UsageError(format!("cannot run {program:?}: {error}")).into());
        }
    };

    tokio::select! {
        status = child.wait() => {
            let status = status?;
            watchdog.stop();
            let code = status
                .code()
                .map(|code| code as u8)
                .unwrap_or_else(|| 128u8.wrapping_add(status.signal().unwrap_or(0) as u8));
            match lease.release().await {
                Ok(_) => Ok(Outcome::Exit(code)),
                Err(error @ LockError::Lost { .. }) => {
                    eprintln!(
                        "idmint: lock '{name}': lease with fencing token {token} was lost while {program:?} ran \
                         ({error}); it exited with {code}"
                    );
                    Ok(Outcome::Exit(EXIT_LOCK_LOST))
                }
                Err(error) => Err(error.into()),
            }
        }
        reason = watchdog.lost() => {
            eprintln!(
                "idmint: lock '{name}': lease with fencing token {token} lost ({reason}); \
                 stopping {program:?} (SIGTERM, SIGKILL after {} s)",
                KILL_GRACE.as_secs()
            );
            stop(&mut child).await;
            // The lock is someone else's now (or nobody's): nothing to release.
            std::mem::forget(lease);
            Ok(Outcome::Exit(EXIT_LOCK_LOST))
        }
    }
}

async fn stop(child: &mut tokio::process::Child) {
    if let Some(pid) = child.id() {
        // SAFETY: kill(2) on our own child's pid, which it still is (not yet reaped).
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGTERM);
        }
    }
    if tokio::time::timeout(KILL_GRACE, child.wait())
        .await
        .is_err()
    {
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
}
