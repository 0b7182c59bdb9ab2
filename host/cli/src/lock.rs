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
//!   code.
//! - **Job control** (`job_control`): SIGTSTP (Ctrl-Z), SIGTTIN and SIGTTOU
//!   stop COMMAND's group (SIGSTOP) and then `lock run`. When continued
//!   (`fg`, `bg`), `lock run` continues the group only if the lease's local
//!   deadline has not passed meanwhile (no renewal is sent while stopped);
//!   if it has, the group is killed while still stopped and `lock run`
//!   exits 76.
//! - **The lease's local deadline** (the library's `Lease::deadline`: the
//!   send time of the last acknowledged renewal plus the TTL, less a tenth)
//!   stops COMMAND whatever the driver is doing: SIGTERM `stop_grace` before
//!   it, SIGKILL at it, both before the server could end the lease.
//!
//! What remains possible: a process that leaves the group (`setsid`,
//! `setpgid`) escapes the group kill; `lock run` paused by a signal it
//! cannot see (SIGSTOP, a frozen VM) cannot stop COMMAND, which runs on past
//! the lease (fencing tokens protect the resource then); COMMAND runs in a
//! background process group, so it cannot read from a terminal. On platforms without
//! `PR_SET_PDEATHSIG` (macOS, the BSDs), COMMAND survives a `kill -9` of
//! the guard itself (not of `lock run`, which the pipe covers).

use std::fmt::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use clap::{Args, Subcommand};
use idmint::lock::{
    status_all, stop_grace, Lock, LockError, LockName, LockState, WaitOptions, Watchdog,
    LOCKS_COLLECTION,
};
use serde::Serialize;

use super::duration_arg::parse_duration;
use super::exit::{UsageError, EXIT_AT_MOST, EXIT_LOCK_LOST};
use super::job_control;
use super::{ConnectArgs, Outcome, Output};

/// The signals `lock run` passes on to COMMAND's process group.
const FORWARDED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// `idmint lock ...`
#[derive(Debug, Subcommand)]
pub enum LockCmd {
    /// Run COMMAND while holding the lock, renewing it, releasing it at the end; exits with
    /// COMMAND's code, 75 if the lock was not had within --wait, 76 if the lease was lost or could
    /// not be renewed while COMMAND ran (COMMAND is then stopped: SIGTERM, then SIGKILL before the
    /// lease can expire), 124 if COMMAND ran past --at-most (it is then stopped the same way).
    /// COMMAND and what it starts die with `lock run` (kill -9 included);
    /// SIGINT, SIGTERM and SIGHUP are passed on to them; Ctrl-Z stops them with `lock run`, and
    /// `fg` continues them only if the lease did not lapse meanwhile (else exit 76).
    Run(RunArgs),
    /// Show a lock (or all locks): holder, fencing token, time left by the server's clock, hold count.
    Status(StatusArgs),
    /// Clear a lock's holder (a DBA removing a dead holder); prints the token removed.
    Release(ReleaseArgs),
    /// Internal: the process `lock run` starts COMMAND under (see the module docs).
    #[command(hide = true)]
    Guard(GuardArgs),
}

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
    /// The command to run, with its arguments (after `--`).
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
            LockCmd::Guard(args) => &args.connect,
        }
    }

    pub async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        match self {
            LockCmd::Run(args) => run(args, output).await,
            LockCmd::Guard(args) => guard(args),
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
    text
}

/// `--at-most`, checked against `--at-least`.
fn at_most(args: &RunArgs) -> Result<Option<Duration>, UsageError> {
    match args.at_most {
        Some(at_most) if at_most.is_zero() => Err(UsageError(
            "--at-most 0 would stop COMMAND at once: give how long it may run".to_string(),
        )),
        Some(at_most) if at_most < args.at_least => Err(UsageError(format!(
            "--at-most {} is less than --at-least {}: a job stopped sooner than the lock is held \
             for it would only wait",
            humantime::format_duration(at_most),
            humantime::format_duration(args.at_least)
        ))),
        at_most => Ok(at_most),
    }
}

async fn run(args: &RunArgs, output: &Output) -> anyhow::Result<Outcome> {
    let name = LockName::new(&args.name)?;
    let (ttl, at_least) = (args.ttl, args.at_least);
    let wait = if args.skip { Duration::ZERO } else { args.wait };
    let at_most = at_most(args)?;
    let database = args.connect.connect().await?;
    let lock = Lock::new(&database, name.clone());
    let lease = lock
        .acquire_at_least(
            ttl,
            at_least,
            // Short polls: a lease that runs out writes nothing a change stream could see.
            &WaitOptions::new(wait).poll(Duration::from_millis(50), Duration::from_millis(250)),
        )
        .await?;
    let started = tokio::time::Instant::now();
    let token = lease.token();
    let mut watchdog = Watchdog::start(&lease);
    // From here on the signals are COMMAND's: they are passed on, not
    // obeyed; the stop signals stop COMMAND's group with `lock run`.
    let mut signals = Forwarded::install()?;

    let (program, _) = args.command.split_first().expect("clap requires COMMAND");
    let (mut child, _watched) = match spawn_guard(&args.command, &name, token, output.is_json()) {
        Ok(spawned) => spawned,
        Err(error) => {
            watchdog.stop();
            lease.release().await?;
            return Err(UsageError(format!("cannot run {program:?}: {error}")).into());
        }
    };
    let group = child.id().expect("a child not yet waited for has a pid") as libc::pid_t;

    let grace = stop_grace(ttl);
    // Why COMMAND was stopped, once it was.
    let mut stopped: Option<std::sync::Arc<LockError>> = None;
    let mut killed = false;
    // `--at-most`: when COMMAND is asked to stop, then killed.
    let mut overran = false;
    let mut over_time = at_most.map(|at_most| started + at_most);
    let exited = exited(group);
    tokio::pin!(exited);
    loop {
        let before = if stopped.is_some() {
            Duration::ZERO
        } else {
            grace
        };
        tokio::select! {
            result = &mut exited => {
                result?;
                break;
            }
            reason = watchdog.expiring(before), if !killed => {
                if stopped.is_none() {
                    let kill = match watchdog.deadline() {
                        Some(at) => format!(
                            "SIGKILL in {} ms at the lease's local deadline, before the server can end it",
                            at.saturating_duration_since(std::time::Instant::now()).as_millis()
                        ),
                        None => "SIGKILL at once".to_string(),
                    };
                    // Signal first: a print can block (a full pipe, a
                    // background job's stderr under `stty tostop`).
                    signal_group(group, libc::SIGTERM);
                    eprintln!("idmint: {reason}; stopping {program:?}: SIGTERM now, {kill}");
                    stopped = Some(reason);
                } else {
                    signal_group(group, libc::SIGKILL);
                    killed = true;
                }
            }
            _ = sleep_until_some(over_time), if over_time.is_some() && !killed => {
                if overran {
                    signal_group(group, libc::SIGKILL);
                    killed = true;
                    over_time = None;
                } else {
                    signal_group(group, libc::SIGTERM);
                    overran = true;
                    over_time = Some(tokio::time::Instant::now() + grace);
                    eprintln!(
                        "idmint: lock '{name}': {program:?} ran past --at-most {}; stopping it: \
                         SIGTERM now, SIGKILL in {} ms",
                        humantime::format_duration(at_most.unwrap_or_default()),
                        grace.as_millis()
                    );
                }
            }
            signal = signals.recv() => {
                if !job_control::is_stop(signal) {
                    signal_group(group, signal);
                    continue;
                }
                job_control::stop_with(group, signal);
                // Continued: COMMAND with it only while the lease is proved
                // held; one that lapsed meanwhile ends COMMAND before it
                // runs again (the SIGKILL of the deadline, which passed).
                if killed || watchdog.deadline().is_some_and(|at| at > std::time::Instant::now()) {
                    signal_group(group, libc::SIGCONT);
                    continue;
                }
                signal_group(group, libc::SIGKILL);
                killed = true;
                eprintln!(
                    "idmint: lock '{name}': the lease with fencing token {token} lapsed while \
                     `lock run` was stopped; killed {program:?} (SIGKILL) before it ran again"
                );
                stopped.get_or_insert_with(|| {
                    std::sync::Arc::new(LockError::Unrenewed {
                        name: name.clone(),
                        token,
                        last_failure: Some("`lock run` was stopped past its deadline".to_string()),
                    })
                });
            }
        }
    }
    // The guard has exited (not yet reaped, so the group's id is still its
    // own): whatever COMMAND left running in the group goes with it.
    signal_group(group, libc::SIGKILL);
    let status = child.wait().await?;
    watchdog.stop();
    let code = exit_code(status);

    if let Some(reason) = stopped {
        if matches!(*reason, LockError::Lost { .. }) {
            // The lock is someone else's now (or nobody's): nothing to release.
            std::mem::forget(lease);
        } else {
            // Not renewed in time, perhaps still ours: give it back if the
            // database answers soon, else it ends by itself.
            let _ = tokio::time::timeout(grace, lease.release()).await;
        }
        return Ok(Outcome::Exit(EXIT_LOCK_LOST));
    }
    let code = if overran { EXIT_AT_MOST } else { code };
    match lease.release().await {
        Ok(_) => Ok(Outcome::Exit(code)),
        Err(error @ (LockError::Lost { .. } | LockError::Unrenewed { .. })) => {
            eprintln!(
                "idmint: lock '{name}': lease with fencing token {token} was lost while {program:?} ran \
                 ({error}); it exited with {code}"
            );
            Ok(Outcome::Exit(EXIT_LOCK_LOST))
        }
        Err(error) => Err(error.into()),
    }
}

/// Resolves at `at`; never without one.
async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Sends `signal` to every process of the group led by the guard.
fn signal_group(group: libc::pid_t, signal: libc::c_int) {
    // SAFETY: kill(2) on the process group `lock run` created for COMMAND;
    // its id stays reserved while the guard, its leader, is not reaped.
    unsafe {
        libc::kill(-group, signal);
    }
}

/// Resolves once process `pid` (the guard) has exited, without reaping it
/// (`WNOWAIT`), so that its group can still be signalled by its id.
async fn exited(pid: libc::pid_t) -> std::io::Result<()> {
    tokio::task::spawn_blocking(move || loop {
        // SAFETY: waitid(2) with a zeroed siginfo_t it fills in.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let done = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if done == 0 {
            return Ok(());
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(error);
        }
    })
    .await?
}

/// The signals passed on to COMMAND, and the stop signals
/// ([`job_control::STOPS`]): each one not ignored when `lock run` started
/// (a signal ignored by `nohup` stays ignored, in COMMAND too).
struct Forwarded {
    received: tokio::sync::mpsc::UnboundedReceiver<libc::c_int>,
}

impl Forwarded {
    fn install() -> anyhow::Result<Self> {
        use tokio::signal::unix::{signal, SignalKind};
        let (sender, received) = tokio::sync::mpsc::unbounded_channel();
        for number in FORWARDED.into_iter().chain(job_control::STOPS) {
            if is_ignored(number) {
                continue;
            }
            let mut stream = signal(SignalKind::from_raw(number))?;
            let sender = sender.clone();
            tokio::spawn(async move {
                while stream.recv().await.is_some() {
                    if sender.send(number).is_err() {
                        return;
                    }
                }
            });
        }
        Ok(Self { received })
    }

    async fn recv(&mut self) -> libc::c_int {
        match self.received.recv().await {
            Some(signal) => signal,
            None => std::future::pending().await,
        }
    }
}

/// Whether `signal` is ignored (SIG_IGN) in this process.
fn is_ignored(signal: libc::c_int) -> bool {
    // SAFETY: sigaction(2) with a null new action only reads the current one.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut current) == 0
            && current.sa_sigaction == libc::SIG_IGN
    }
}

/// Starts `idmint lock guard -- COMMAND` as the leader of a new process
/// group, holding the write end of the pipe it watches (returned: dropping
/// it, or dying, ends the guard's group).
fn spawn_guard(
    command: &[String],
    name: &LockName,
    token: i64,
    json: bool,
) -> std::io::Result<(tokio::process::Child, OwnedFd)> {
    let (watched, watch) = pipe()?;
    let fd = watched.as_raw_fd();
    // /proc/self/exe is this very binary even if its file was replaced since.
    #[cfg(target_os = "linux")]
    let program = std::path::PathBuf::from("/proc/self/exe");
    #[cfg(not(target_os = "linux"))]
    let program = std::env::current_exe()?;
    let mut guard = tokio::process::Command::new(program);
    // The guard's one failure (COMMAND cannot be started) is reported in
    // the form the caller asked for.
    if json {
        guard.arg("--json");
    }
    guard
        .args(["lock", "guard", "--watch-fd", &fd.to_string(), "--"])
        .args(command)
        .env("IDMINT_LOCK_TOKEN", token.to_string())
        .env("IDMINT_LOCK_NAME", name.as_str())
        .process_group(0);
    // SAFETY: fcntl(2) only, in the child between fork and exec: the read
    // end (close-on-exec, like every fd idmint opens) is kept for the guard.
    unsafe {
        guard.pre_exec(move || {
            if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = guard.spawn()?;
    drop(watched);
    Ok((child, watch))
}

/// A pipe, both ends close-on-exec: (read, write).
fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe(2) fills both fds on success; each is then owned once.
    #[cfg(target_os = "linux")]
    let made = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    #[cfg(not(target_os = "linux"))]
    let made = unsafe {
        let made = libc::pipe(fds.as_mut_ptr());
        if made == 0 {
            libc::fcntl(fds[0], libc::F_SETFD, libc::FD_CLOEXEC);
            libc::fcntl(fds[1], libc::F_SETFD, libc::FD_CLOEXEC);
        }
        made
    };
    if made == -1 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fresh fds from pipe(2), owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// `idmint lock guard`: runs COMMAND in this process's group (which
/// `lock run` made for it), kills the whole group when `lock run` is gone
/// (the watched pipe reads end-of-file), and exits with COMMAND's code.
/// Blocking code on purpose: this process does nothing else, and COMMAND is
/// started from the main thread, which lives as long as the process (Linux
/// sends the parent-death signal when the *thread* that forked exits).
fn guard(args: &GuardArgs) -> anyhow::Result<Outcome> {
    // Named for ps and top (it was started as /proc/self/exe).
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(2) PR_SET_NAME with a NUL-terminated name.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, c"idmint-guard".as_ptr());
    }
    let fd = args.watch_fd;
    // SAFETY: fcntl(2) on the fd `lock run` passed: COMMAND must not inherit it.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } == -1 {
        return Err(UsageError(format!(
            "lock guard: --watch-fd {fd}: {}",
            std::io::Error::last_os_error()
        ))
        .into());
    }
    // Signals passed on by `lock run` reach the whole group: the guard stays
    // to the end to report COMMAND's code. COMMAND gets the dispositions the
    // guard was started with.
    // SAFETY: signal(2) with SIG_IGN; the previous dispositions are restored
    // in COMMAND.
    let previous: Vec<(libc::c_int, libc::sighandler_t)> = FORWARDED
        .iter()
        .map(|&number| (number, unsafe { libc::signal(number, libc::SIG_IGN) }))
        .collect();
    let guard_pid = std::process::id() as libc::pid_t;
    let (program, program_args) = args.command.split_first().expect("clap requires COMMAND");
    let mut command = std::process::Command::new(program);
    command.args(program_args);
    // SAFETY: only async-signal-safe calls (signal, prctl, getppid) between
    // fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        command.pre_exec(move || {
            for &(number, disposition) in &previous {
                libc::signal(number, disposition);
            }
            #[cfg(target_os = "linux")]
            {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                // The guard died before the prctl: no signal will come.
                if libc::getppid() != guard_pid {
                    return Err(std::io::Error::other("the lock guard is gone"));
                }
            }
            #[cfg(not(target_os = "linux"))]
            let _ = guard_pid;
            Ok(())
        });
    }
    // `lock run` gone (killed, crashed): end the group, this guard included.
    std::thread::spawn(move || loop {
        let mut byte = 0u8;
        // SAFETY: read(2) into a one-byte buffer on the watched fd.
        let read = unsafe { libc::read(fd, (&mut byte as *mut u8).cast(), 1) };
        if read == -1 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if read <= 0 {
            // SAFETY: kill(2) on this process's own group.
            unsafe {
                libc::kill(0, libc::SIGKILL);
            }
            return;
        }
    });
    let mut child = command
        .spawn()
        .map_err(|error| UsageError(format!("cannot run {program:?}: {error}")))?;
    let status = child.wait()?;
    Ok(Outcome::Exit(exit_code(status)))
}

/// A process's exit code as a shell reports it: its own, or 128 plus the
/// signal that killed it.
fn exit_code(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .map(|code| code as u8)
        .unwrap_or_else(|| 128u8.wrapping_add(status.signal().unwrap_or(0) as u8))
}
