//! Job control for `lock run`: COMMAND runs in a process group of its own
//! (see `lock`), which the terminal's stop key (Ctrl-Z) and the shell's
//! `fg` and `bg` do not reach, since they signal `lock run`'s group only.
//! So `lock run` takes the stop signals it receives (SIGTSTP, SIGTTIN,
//! SIGTTOU) as meant for both: it stops COMMAND's group, then itself, and
//! once continued it decides whether COMMAND may continue too (`lock`
//! continues it only while the lease is proved held).

/// The stop signals `lock run` takes for COMMAND's group as well.
pub const STOPS: [libc::c_int; 3] = [libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU];

/// Whether `signal` is one of [`STOPS`].
pub fn is_stop(signal: libc::c_int) -> bool {
    STOPS.contains(&signal)
}

/// Stops every process of `group` with SIGSTOP (which cannot be caught or
/// ignored, so nothing of COMMAND runs on), then this process with `signal`
/// as if it had not been caught (the shell sees the job stopped as it
/// would without `lock run`). Returns once this process is continued
/// (SIGCONT: `fg`, `bg`, `kill -CONT`); `group` is left stopped for the
/// caller to continue or kill. When this process's group is orphaned (no
/// shell left to continue it), the kernel discards the stop and this
/// returns at once.
pub fn stop_with(group: libc::pid_t, signal: libc::c_int) {
    // SAFETY: kill(2) on COMMAND's group; sigaction(2) with a zeroed
    // sigaction whose handler is SIG_DFL, the previous one restored as it
    // was; raise(2) of a signal this thread does not block.
    unsafe {
        libc::kill(-group, libc::SIGSTOP);
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut default.sa_mask);
        let mut caught: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(signal, &default, &mut caught) == -1 {
            // Cannot stop as the shell expects: SIGSTOP stops all the same.
            libc::raise(libc::SIGSTOP);
            return;
        }
        // raise(3) signals this very thread, which takes it on its way back
        // from the call: the whole process stops before raise returns.
        libc::raise(signal);
        libc::sigaction(signal, &caught, std::ptr::null_mut());
    }
}
