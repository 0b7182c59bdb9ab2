//! The guard `lock run` starts COMMAND under: a second `idmint` process
//! (the hidden `lock guard`) leading a process group of its own, which
//! kills that group when `lock run` is gone (the pipe it watches reads
//! end-of-file) or has stopped proving the lease, and exits with COMMAND's
//! code.
//!
//! Through the pipe `lock run` tells the guard the lease's local deadline
//! each time it moves ([`GuardLine`]): 8 bytes, the deadline in nanoseconds
//! of the monotonic clock both processes read (`CLOCK_MONOTONIC`). The guard
//! kills the group when that moment passes with no later one sent. So a
//! `lock run` that cannot act (stopped with SIGSTOP, or starved of CPU)
//! still cannot keep COMMAND running past the lease: its guard ends it at
//! the deadline, before the server can give the lock to someone else.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Instant;

use idmint::lock::LockName;

use super::args::GuardArgs;
use crate::exit::UsageError;
use crate::Outcome;

/// The signals `lock run` passes on to COMMAND's process group.
pub(super) const FORWARDED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Starts `idmint lock guard -- COMMAND` as the leader of a new process
/// group, holding the write end of the pipe it watches (returned as the
/// [`GuardLine`]: dropping it, or dying, ends the guard's group).
pub(super) fn spawn_guard(
    command: &[String],
    name: &LockName,
    token: i64,
    json: bool,
    env: &[(&'static str, String)],
    flags: &[&'static str],
) -> std::io::Result<(tokio::process::Child, GuardLine)> {
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
        .args(["lock", "guard", "--watch-fd", &fd.to_string()])
        .args(flags)
        .arg("--")
        .args(command)
        .env("IDMINT_LOCK_TOKEN", token.to_string())
        .env("IDMINT_LOCK_NAME", name.as_str())
        .envs(env.iter().map(|(key, value)| (*key, value)))
        .process_group(0);
    // SAFETY: fcntl(2) and sigprocmask(2) only, in the child between fork
    // and exec: the read end (close-on-exec, like every fd idmint opens) is
    // kept for the guard, and the passed-on signals are blocked in it from
    // its first instruction: one `lock run` passes on before COMMAND exists
    // waits in the guard until it does (see [`guard`]), rather than being
    // lost or ending the guard.
    unsafe {
        guard.pre_exec(move || {
            if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            mask_forwarded(libc::SIG_BLOCK)
        });
    }
    let child = guard.spawn()?;
    drop(watched);
    // SAFETY: fcntl(2) on the write end this function owns.
    unsafe {
        let flags = libc::fcntl(watch.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(watch.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
    Ok((
        child,
        GuardLine {
            fd: watch,
            sent: None,
        },
    ))
}

/// Returns when the group must end: the watched pipe `fd` read end-of-file
/// or failed, or the last deadline `lock run` sent has passed.
fn watch_line(fd: RawFd) {
    let mut deadline: Option<u64> = None;
    let mut message = [0u8; 8];
    let mut have = 0;
    loop {
        let timeout_ms = match deadline {
            None => -1,
            Some(at) => {
                let now = monotonic_nanos();
                if now >= at {
                    return;
                }
                libc::c_int::try_from((at - now) / 1_000_000 + 1).unwrap_or(libc::c_int::MAX)
            }
        };
        let mut ready = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll(2) on one pollfd.
        let polled = unsafe { libc::poll(&mut ready, 1, timeout_ms) };
        if polled == 0 {
            continue;
        }
        let read = if polled == -1 {
            -1
        } else {
            // SAFETY: read(2) into what is left of the 8-byte message.
            unsafe { libc::read(fd, message[have..].as_mut_ptr().cast(), 8 - have) }
        };
        if read == -1 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if read == 0 {
            return;
        }
        have += read as usize;
        if have == message.len() {
            deadline = Some(u64::from_le_bytes(message));
            have = 0;
        }
    }
}

/// Now on `CLOCK_MONOTONIC`, in nanoseconds: the clock `Instant` reads, the
/// same in every process of the machine.
fn monotonic_nanos() -> u64 {
    // SAFETY: clock_gettime(2) fills the timespec it is given.
    let mut now: libc::timespec = unsafe { std::mem::zeroed() };
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now);
    }
    (now.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(now.tv_nsec as u64)
}

/// `lock run`'s end of the watched pipe: what it tells its guard (see the
/// module docs). Dropping it, or `lock run` dying, ends the guard's group.
pub(super) struct GuardLine {
    fd: OwnedFd,
    sent: Option<Instant>,
}

impl GuardLine {
    /// Tells the guard that COMMAND must be gone by `stop_by` (none: no
    /// deadline to enforce), unless it was told so already. Never blocks: a
    /// guard that does not read (stopped with its group) misses nothing it
    /// needs, as only the latest deadline counts and it comes again.
    pub fn send(&mut self, stop_by: Option<Instant>) {
        let Some(at) = stop_by else { return };
        if self.sent == Some(at) {
            return;
        }
        let from_now = at.saturating_duration_since(Instant::now());
        let nanos = monotonic_nanos()
            .saturating_add(u64::try_from(from_now.as_nanos()).unwrap_or(u64::MAX));
        let message = nanos.to_le_bytes();
        // SAFETY: write(2) of 8 bytes from a local buffer; the fd is
        // non-blocking, and pipes write 8 bytes whole or not at all.
        let written =
            unsafe { libc::write(self.fd.as_raw_fd(), message.as_ptr().cast(), message.len()) };
        if written == message.len() as isize {
            self.sent = Some(at);
        }
    }
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
pub(super) fn guard(args: &GuardArgs) -> anyhow::Result<Outcome> {
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
    // The signals `lock run` passes on are blocked here since the guard
    // started (`spawn_guard`), and their dispositions are still the ones the
    // guard was started with: COMMAND gets those, unblocked.
    let guard_pid = std::process::id() as libc::pid_t;
    let (program, program_args) = args.command.split_first().expect("clap requires COMMAND");
    let mut command = std::process::Command::new(program);
    command.args(program_args);
    // SAFETY: only async-signal-safe calls (sigprocmask, prctl, getppid)
    // between fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        command.pre_exec(move || {
            mask_forwarded(libc::SIG_UNBLOCK)?;
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
    // `lock run` gone (killed, crashed), or its deadline passed with no
    // later one: end the group, this guard included.
    std::thread::spawn(move || {
        watch_line(fd);
        // SAFETY: kill(2) on this process's own group.
        unsafe {
            libc::kill(0, libc::SIGKILL);
        }
    });
    #[cfg(feature = "test-hooks")]
    if args.stop_before_command {
        // SAFETY: raise only sends this process a signal.
        unsafe { libc::raise(libc::SIGSTOP) };
    }
    let mut child = command
        .spawn()
        .map_err(|error| UsageError(format!("cannot run {program:?}: {error}")))?;
    pass_on_what_waited()?;
    let status = child.wait()?;
    Ok(Outcome::Exit(exit_code(status)))
}

/// Once COMMAND runs: from now on the signals `lock run` passes on reach
/// COMMAND's group directly, and the guard ignores them (it stays to report
/// COMMAND's code); each that came while COMMAND did not exist yet, and
/// waited blocked, goes to the group now. One that came just as COMMAND
/// started may so reach COMMAND twice; none is lost.
fn pass_on_what_waited() -> std::io::Result<()> {
    // SAFETY: sigpending(2) fills the zeroed set it is given.
    let mut pending: libc::sigset_t = unsafe { std::mem::zeroed() };
    if unsafe { libc::sigpending(&mut pending) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    let waited: Vec<libc::c_int> = FORWARDED
        .into_iter()
        // SAFETY: sigismember(3) reads the set sigpending filled.
        .filter(|&number| unsafe { libc::sigismember(&pending, number) } == 1)
        .collect();
    for number in FORWARDED {
        // SAFETY: signal(2) with SIG_IGN, which also drops the guard's own
        // pending instance of it (passed on below).
        unsafe { libc::signal(number, libc::SIG_IGN) };
    }
    mask_forwarded(libc::SIG_UNBLOCK)?;
    for number in waited {
        // SAFETY: kill(2) on this process's own group, which ignores it.
        unsafe { libc::kill(0, number) };
    }
    Ok(())
}

/// Blocks or unblocks ([`libc::SIG_BLOCK`], [`libc::SIG_UNBLOCK`]) the
/// signals `lock run` passes on, in the calling thread. Async-signal-safe:
/// it runs between fork and exec too.
fn mask_forwarded(how: libc::c_int) -> std::io::Result<()> {
    // SAFETY: sigemptyset(3) and sigaddset(3) on a local set, then
    // sigprocmask(2) with it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for number in FORWARDED {
            libc::sigaddset(&mut set, number);
        }
        if libc::sigprocmask(how, &set, std::ptr::null_mut()) == -1 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A process's exit code as a shell reports it: its own, or 128 plus the
/// signal that killed it.
pub(super) fn exit_code(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .map(|code| code as u8)
        .unwrap_or_else(|| 128u8.wrapping_add(status.signal().unwrap_or(0) as u8))
}
