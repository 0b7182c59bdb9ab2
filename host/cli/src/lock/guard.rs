//! The guard `lock run` starts COMMAND under: a second `idmint` process
//! (the hidden `lock guard`) leading a process group of its own, which kills
//! that group when `lock run` is gone (the pipe it watches reads
//! end-of-file) and exits with COMMAND's code.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use idmint::lock::LockName;

use super::GuardArgs;
use crate::exit::UsageError;
use crate::Outcome;

/// The signals `lock run` passes on to COMMAND's process group.
pub(super) const FORWARDED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Starts `idmint lock guard -- COMMAND` as the leader of a new process
/// group, holding the write end of the pipe it watches (returned: dropping
/// it, or dying, ends the guard's group).
pub(super) fn spawn_guard(
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
pub(super) fn exit_code(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .map(|code| code as u8)
        .unwrap_or_else(|| 128u8.wrapping_add(status.signal().unwrap_or(0) as u8))
}
