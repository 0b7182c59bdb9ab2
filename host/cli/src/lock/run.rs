//! `idmint lock run`: takes the lock, starts COMMAND under its guard
//! (`guard`), renews the lease, stops COMMAND before the lease can lapse or
//! once it ran past `--at-most`, passes signals and job control on, and
//! releases the lock (after `--at-least`).

use std::future::Future;
use std::time::Duration;

use idmint::lock::{stop_grace, Lease, Lock, LockError, LockName, WaitOptions, Watchdog, READERS};
use tokio_util::sync::CancellationToken;

use super::args::RunArgs;
use super::guard::{exit_code, spawn_guard, FORWARDED};
use crate::exit::{UsageError, EXIT_AT_MOST, EXIT_LOCK_LOST};
use crate::job_control;
use crate::{Outcome, Output};

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

/// How waits for a lock poll: a lease that runs out writes nothing a
/// change stream could see, so short polls.
pub(super) fn wait_options(wait: Duration) -> WaitOptions {
    WaitOptions::new(wait).poll(Duration::from_millis(50), Duration::from_millis(250))
}

pub(super) async fn run(args: &RunArgs, output: &Output) -> anyhow::Result<Outcome> {
    let name = LockName::new(&args.name)?;
    let (ttl, at_least) = (args.ttl, args.at_least);
    let wait = if args.skip { Duration::ZERO } else { args.wait };
    let at_most = at_most(args)?;
    let database = args.connect.connect().await?;
    let lock = Lock::new(&database, name.clone());
    // While it waits, a signal ends the wait (`waited`); from then on the
    // signals are COMMAND's: they are passed on, not obeyed, and the stop
    // signals stop COMMAND's group with `lock run`.
    let mut signals = Forwarded::install()?;
    let stop = CancellationToken::new();
    let waiting = wait_options(wait).stop_on(stop.clone());
    let env = match (args.permits, args.shared) {
        (Some(permits), _) => vec![
            ("IDMINT_LOCK_MODE", "shared".to_string()),
            ("IDMINT_LOCK_PERMITS", permits.to_string()),
        ],
        (None, true) => vec![("IDMINT_LOCK_MODE", "shared".to_string())],
        (None, false) => vec![("IDMINT_LOCK_MODE", "exclusive".to_string())],
    };
    let acquire = async {
        match (args.permits, args.shared) {
            (Some(permits), _) => {
                lock.acquire_shared_at_least(ttl, at_least, permits, &waiting)
                    .await
            }
            (None, true) => {
                lock.acquire_shared_at_least(ttl, at_least, READERS, &waiting)
                    .await
            }
            (None, false) => lock.acquire_at_least(ttl, at_least, &waiting).await,
        }
    };
    let lease = match waited(acquire, &name, &stop, &mut signals).await {
        Waited::Done(acquired) => acquired?,
        Waited::Signalled(code) => return Ok(Outcome::Exit(code)),
    };
    let job = Job {
        command: &args.command,
        name: &name,
        ttl,
        at_most,
        json: output.is_json(),
        env,
        guard_flags: guard_flags(args),
    };
    Ok(match hold(lease, &job, &mut signals).await? {
        Held::Exited(code) => Outcome::Exit(code),
        Held::Overran => Outcome::Exit(EXIT_AT_MOST),
        Held::Lost => Outcome::Exit(EXIT_LOCK_LOST),
    })
}

/// The guard's test-hook flags `args` asks for (`test-hooks` builds).
fn guard_flags(args: &RunArgs) -> Vec<&'static str> {
    #[cfg(feature = "test-hooks")]
    if args.stop_guard_before_command {
        return vec!["--stop-before-command"];
    }
    let _ = args;
    Vec::new()
}

/// How long a wait stopped by a signal may take to leave the line (its
/// database slow to answer, or cut off) before it is given up on: a place
/// not refreshed for three refreshes lapses by itself then.
const LEAVE_WITHIN: Duration = Duration::from_secs(3);

/// How a wait for a lock ended.
#[expect(
    clippy::large_enum_variant,
    reason = "made once per wait and matched at once"
)]
pub(super) enum Waited {
    /// The acquire ended by itself.
    Done(Result<Lease, LockError>),
    /// A signal ended it: the wait left the line and released a lease it
    /// took in that moment, or was given up on after [`LEAVE_WITHIN`] or a
    /// second signal (its place left to lapse as a crashed waiter's does).
    /// The exit code: 128 + the signal's number, as a shell reports a
    /// process it ended.
    Signalled(u8),
}

/// Runs `acquire` (a wait for lock `name` with `stop` in its options) to
/// its end. A stop signal stops `lock run` as any job (the wait goes on
/// when it is continued); any other of `signals` stops the wait through
/// `stop`, and the acquire is still awaited: it leaves the line, and
/// passes on a lock handed to it, before it returns, unless that takes
/// [`LEAVE_WITHIN`] or a second signal comes first.
pub(super) async fn waited(
    acquire: impl Future<Output = Result<Lease, LockError>>,
    name: &LockName,
    stop: &CancellationToken,
    signals: &mut Forwarded,
) -> Waited {
    tokio::pin!(acquire);
    let mut signalled: Option<u8> = None;
    // Armed (reset) by the first signal; until then its branch is off.
    let give_up = tokio::time::sleep(LEAVE_WITHIN);
    tokio::pin!(give_up);
    loop {
        tokio::select! {
            acquired = &mut acquire => {
                let Some(code) = signalled else {
                    return Waited::Done(acquired);
                };
                // Taken as the wait was stopped: COMMAND is not run.
                if let Ok(lease) = acquired {
                    if let Err(error) = lease.release().await {
                        eprintln!(
                            "idmint: lock '{name}': taken as the wait was stopped, not released: {error}"
                        );
                    }
                }
                return Waited::Signalled(code);
            }
            _ = &mut give_up, if signalled.is_some() => {
                return Waited::Signalled(signalled.unwrap_or_default());
            }
            signal = signals.recv() => {
                if job_control::is_stop(signal) {
                    // SAFETY: raise(2) of SIGSTOP on this process: a waiter
                    // stops as any job does.
                    unsafe { libc::raise(libc::SIGSTOP) };
                    continue;
                }
                let code = 128u8.wrapping_add(signal as u8);
                if signalled.is_some() {
                    return Waited::Signalled(code);
                }
                signalled = Some(code);
                stop.cancel();
                give_up
                    .as_mut()
                    .reset(tokio::time::Instant::now() + LEAVE_WITHIN);
            }
        }
    }
}

/// COMMAND as a holder runs it.
pub(super) struct Job<'a> {
    /// COMMAND and its arguments.
    pub command: &'a [String],
    /// The lock.
    pub name: &'a LockName,
    /// The lease's TTL, what renewals ask for.
    pub ttl: Duration,
    /// `--at-most`, if given.
    pub at_most: Option<Duration>,
    /// Whether the guard reports its one failure as JSON.
    pub json: bool,
    /// Variables for COMMAND besides the lock's name and token.
    pub env: Vec<(&'static str, String)>,
    /// Flags for the guard besides its own: the test hooks' (none in the
    /// binary users build).
    pub guard_flags: Vec<&'static str>,
}

/// How a holding of the lock ended.
pub(super) enum Held {
    /// COMMAND exited with this code, and the lock was released.
    Exited(u8),
    /// COMMAND ran past `--at-most` and was stopped; the lock was released.
    Overran,
    /// The lease was lost, or could not be renewed: COMMAND was stopped
    /// before the server could end it.
    Lost,
}

/// Runs `job` under its guard while `lease` is held, renewing it, and
/// stops COMMAND before the lease can lapse or once it ran past
/// `--at-most`; `signals` are passed on to COMMAND's group. Releases the
/// lease at the end (after `--at-least`).
pub(super) async fn hold(
    lease: idmint::lock::Lease,
    job: &Job<'_>,
    signals: &mut Forwarded,
) -> anyhow::Result<Held> {
    let (name, ttl, at_most) = (job.name, job.ttl, job.at_most);
    let started = tokio::time::Instant::now();
    let token = lease.token();
    let mut watchdog = Watchdog::start(&lease);
    let (program, _) = job.command.split_first().expect("clap requires COMMAND");
    let (mut child, mut line) = match spawn_guard(
        job.command,
        name,
        token,
        job.json,
        &job.env,
        &job.guard_flags,
    ) {
        Ok(spawned) => spawned,
        Err(error) => {
            watchdog.stop();
            lease.release().await?;
            return Err(UsageError(format!("cannot run {program:?}: {error}")).into());
        }
    };
    let group = child.id().expect("a child not yet waited for has a pid") as libc::pid_t;
    // The guard learns each new deadline within a tenth of the TTL (at
    // most 1 s): before the old one passes, since renewals come every
    // third of it, and within the stop grace this process allows itself.
    line.send(watchdog.stop_by());
    let mut tell_guard =
        tokio::time::interval((ttl / 10).clamp(Duration::from_millis(10), Duration::from_secs(1)));
    tell_guard.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);

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
            _ = tell_guard.tick() => line.send(watchdog.stop_by()),
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
        return Ok(Held::Lost);
    }
    match lease.release().await {
        Ok(_) if overran => Ok(Held::Overran),
        Ok(_) => Ok(Held::Exited(code)),
        Err(error @ (LockError::Lost { .. } | LockError::Unrenewed { .. })) => {
            eprintln!(
                "idmint: lock '{name}': lease with fencing token {token} was lost while {program:?} ran \
                 ({error}); it exited with {code}"
            );
            Ok(Held::Lost)
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
pub(super) struct Forwarded {
    received: tokio::sync::mpsc::UnboundedReceiver<libc::c_int>,
}

impl Forwarded {
    pub fn install() -> anyhow::Result<Self> {
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

    pub async fn recv(&mut self) -> libc::c_int {
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
