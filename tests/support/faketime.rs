//! libfaketime: a process whose wall clock the test sets.

use std::path::PathBuf;
use std::process::Command;

/// Loads libfaketime into `command`, its monotonic clocks (timers, sleeps,
/// timeouts) left on real time; the caller's FAKETIME variables say what
/// its wall clock reads. The library comes from Debian's `faketime` package
/// (`scripts/test.sh` installs it).
///
/// The thread-safe build, `libfaketimeMT`, where the package has it: a
/// server reads its clock file from many threads at once, and the plain
/// build parses it into one static buffer, so a thread could read another's
/// half-parsed copy and get the real time instead (a clock test saw the
/// server's real date once, under load); the soak found the same
/// (docs/RELIABILITY.md).
///
/// Not through the package's `faketime` wrapper: it names a semaphore after
/// its own PID and leaves it behind when killed, and a later wrapper given
/// the same PID then fails with "sem_open: File exists" before running
/// anything.
pub(super) fn with_libfaketime(command: &mut Command) -> &mut Command {
    let dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("faketime"))
        .chain([PathBuf::from("/usr/lib/faketime")])
        .collect();
    let found = ["libfaketimeMT.so.1", "libfaketime.so.1"]
        .iter()
        .flat_map(|name| dirs.iter().map(move |dir| dir.join(name)))
        .find(|path| path.exists());
    let library =
        found.expect("libfaketime.so.1 (Debian's faketime package; scripts/test.sh installs it)");
    command
        .env("LD_PRELOAD", library)
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
}

/// Runs `command` with its wall clock set by libfaketime, `clock` in
/// FAKETIME's own forms: an offset (`"+1h"`, `"-3600s"`), a frozen instant
/// (`"2026-01-01 00:00:00"`) or a start that then ticks
/// (`"@2026-01-01 00:00:00"`).
pub fn fake_clock<'a>(command: &'a mut Command, clock: &str) -> &'a mut Command {
    with_libfaketime(command).env("FAKETIME", clock)
}
