//! `idmint lock run|status|release`: the library's leases for shell scripts
//! and cron jobs, shaped like `flock`, with flock's promise kept across
//! machines: COMMAND does not outlive the lock.
//!
//! How `lock run` keeps it:
//!
//! - **COMMAND runs under a guard**, a second `idmint` process (the hidden
//!   `lock guard`) that leads a process group of its own, with COMMAND and
//!   everything it starts in it. The guard watches a pipe whose only write
//!   end `lock run` holds: when `lock run` dies, however (`kill -9`
//!   included), the pipe reads end-of-file and the guard kills the whole
//!   group at once. On Linux COMMAND also dies with the guard
//!   (`PR_SET_PDEATHSIG`, checked against the guard's pid after it is set, in
//!   case the guard died first). When COMMAND exits, what it left running in
//!   its group is killed before the lock is released.
//! - **Signals**: SIGINT, SIGTERM and SIGHUP sent to `lock run` are passed on
//!   to the group (unless `lock run` was started with them ignored, as by
//!   `nohup`: then they stay ignored), and `lock run` exits with COMMAND's
//!   code. While it waits for the lock, they end the wait (`run::waited`):
//!   it leaves the line, releases a lock handed to it in that moment, and
//!   exits 128+N without running COMMAND.
//! - **Job control** (`job_control`): SIGTSTP (Ctrl-Z), SIGTTIN and SIGTTOU
//!   stop COMMAND's group (SIGSTOP) and then `lock run`. When continued
//!   (`fg`, `bg`), `lock run` continues the group only if the lease's local
//!   deadline has not passed meanwhile (no renewal is sent while stopped);
//!   if it has, the group is killed while still stopped and `lock run`
//!   exits 76.
//! - **The lease's local deadline** (the library's `Lease::deadline`: the
//!   send time of the last acknowledged renewal plus the TTL, less a tenth)
//!   stops COMMAND whatever the driver is doing: SIGTERM `stop_grace` before
//!   it, SIGKILL at it, both before the server could end the lease. The
//!   guard is told each deadline too (`guard`), and kills the group when it
//!   passes with no later one: a `lock run` stopped with SIGSTOP, which it
//!   cannot see, still cannot keep COMMAND running past the lease.
//!
//! What remains possible: a process that leaves the group (`setsid`,
//! `setpgid`) escapes the group kill; a machine paused as a whole (a frozen
//! VM: the guard stops too) cannot stop COMMAND, which runs on past the
//! lease when it resumes (fencing tokens protect the resource then); COMMAND runs in a
//! background process group, so it cannot read from a terminal. On platforms without
//! `PR_SET_PDEATHSIG` (macOS, the BSDs), COMMAND survives a `kill -9` of
//! the guard itself (not of `lock run`, which the pipe covers).

mod args;
mod elect;
mod guard;
mod run;

use std::fmt::Write;

use clap::Subcommand;
use idmint::lock::{status_all, Lock, LockError, LockName, LockState, LOCKS_COLLECTION};
use serde::Serialize;

use super::{ConnectArgs, Outcome, Output};
pub use args::{ElectArgs, GuardArgs, ReleaseArgs, RunArgs, StatusArgs};

/// `idmint lock ...`
#[derive(Debug, Subcommand)]
pub enum LockCmd {
    /// Run COMMAND while holding the lock, renewing it, releasing it at the end; exits with
    /// COMMAND's code, 75 if the lock was not had within --wait, 76 if the lease was lost or could
    /// not be renewed while COMMAND ran (COMMAND is then stopped: SIGTERM, then SIGKILL before the
    /// lease can expire), 124 if COMMAND ran past --at-most (it is then stopped the same way),
    /// 128+N on signal N while it waits for the lock (it leaves the line first).
    /// COMMAND and what it starts die with `lock run` (kill -9 included);
    /// SIGINT, SIGTERM and SIGHUP are passed on to them; Ctrl-Z stops them with `lock run`, and
    /// `fg` continues them only if the lease did not lapse meanwhile (else exit 76).
    Run(RunArgs),
    /// Leader election: stand for the lock's lead and run COMMAND while leading, on one machine
    /// at a time. Candidates wait in line; the leader runs COMMAND as `lock run` does (renewed,
    /// stopped before its lease can lapse). A leader that dies or is cut off is replaced by the
    /// first standby within about a TTL; one that loses the lead stops COMMAND and stands again.
    /// Exits with COMMAND's code when COMMAND exits by itself, 128+N on signal N while standing.
    /// `lock status` names the leader (--id) and its fencing token, which grows with each
    /// succession.
    Elect(ElectArgs),
    /// Show a lock (or all locks): holder, fencing token, time left by the server's clock, hold count.
    Status(StatusArgs),
    /// Clear a lock's holder (a DBA removing a dead holder); prints the token removed.
    Release(ReleaseArgs),
    /// Internal: the process `lock run` starts COMMAND under (see the module docs).
    #[command(hide = true)]
    Guard(GuardArgs),
}

impl LockCmd {
    pub fn connect(&self) -> &ConnectArgs {
        match self {
            LockCmd::Run(args) => &args.connect,
            LockCmd::Elect(args) => &args.connect,
            LockCmd::Status(args) => &args.connect,
            LockCmd::Release(args) => &args.connect,
            LockCmd::Guard(args) => &args.connect,
        }
    }

    pub async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        match self {
            LockCmd::Run(args) => run::run(args, output).await,
            LockCmd::Elect(args) => elect::elect(args, output).await,
            LockCmd::Guard(args) => guard::guard(args),
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
            if let Some(label) = &state.label {
                let _ = writeln!(text, "  label:      {label}");
            }
            let _ = writeln!(text, "  token:      {}", state.token);
            let _ = writeln!(text, "  expires in: {:.3} s", ms as f64 / 1000.0);
            if state.count == 0 {
                // Released before its `--at-least` had passed.
                let _ = writeln!(text, "  hold count: 0 (its job ended; held for --at-least)");
            } else {
                let _ = writeln!(text, "  hold count: {}", state.count);
            }
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
    let live: Vec<_> = state.live_shared().collect();
    if !live.is_empty() {
        let _ = writeln!(text, "  shared:     {} holder(s)", live.len());
        for holder in live {
            let left = holder
                .expires_in_ms
                .map(|ms| format!(", expires in {:.3} s", ms as f64 / 1000.0))
                .unwrap_or_default();
            let _ = writeln!(text, "    {} token {}{left}", holder.owner, holder.token);
        }
    }
    text
}
