//! `idmint lock run` under job control, in a real terminal: an interactive
//! bash in a tmux pane (its own tmux server and socket), driven with
//! `send-keys` as a person at the keyboard would. COMMAND runs in a process
//! group of its own, which Ctrl-Z and `fg` do not reach: `lock run` stops
//! and continues it, and continues it only while its lease is proved held
//! (issue 31: a stopped `lock run` left COMMAND writing through the next
//! holder's turn).
//!
//! Each COMMAND appends a line to one shared log (O_APPEND: the file's
//! order is the order of the writes), so "nothing of the first holder
//! after the second began" is read off the file, not off clocks.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support;
use crate::support::process::process_state;
use crate::support::wait::{until_showing, PATIENCE};

/// A tmux server of the test's own, with one pane running an interactive
/// bash (job control on) in `dir`, pointed at `test`'s database.
struct Terminal {
    socket: PathBuf,
}

impl Terminal {
    fn start(test: &str, dir: &Path) -> Self {
        let socket = dir.join("tmux.sock");
        let idmint = support::idmint(test);
        let mut command = Command::new("tmux");
        command
            .arg("-S")
            .arg(&socket)
            .args([
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                "160",
                "-y",
                "40",
                "-c",
            ])
            .arg(dir)
            .args(["bash", "--norc", "--noprofile", "-i"])
            // The server starts with this environment, and the pane with it.
            .env("IDMINT", env!("CARGO_BIN_EXE_idmint"))
            .env("PS1", "$ ");
        for (name, value) in idmint.get_envs() {
            match value {
                Some(value) => command.env(name, value),
                None => command.env_remove(name),
            };
        }
        support::assert_exit(&support::run(&mut command), 0);
        Self { socket }
    }

    fn tmux(&self) -> Command {
        let mut command = Command::new("tmux");
        command.arg("-S").arg(&self.socket);
        command
    }

    /// Types `line` and Enter.
    fn type_line(&self, line: &str) {
        support::assert_exit(
            &support::run(self.tmux().args(["send-keys", "-l", line])),
            0,
        );
        self.press("Enter");
    }

    /// Presses one key (`C-z`, `Enter`).
    fn press(&self, key: &str) {
        support::assert_exit(&support::run(self.tmux().args(["send-keys", key])), 0);
    }

    /// What the pane shows, for failure messages.
    fn screen(&self) -> String {
        support::stdout(&support::run(self.tmux().args(["capture-pane", "-p"])))
    }

    /// Waits for `done`, at most [`PATIENCE`]; panics with the screen.
    #[track_caller]
    fn until(&self, what: &str, done: impl FnMut() -> bool) {
        until_showing(PATIENCE, what, done, || {
            format!("the terminal shows:\n{}", self.screen())
        });
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        // bash hangs up its jobs (stopped ones are continued to see it).
        let _ = self.tmux().arg("kill-server").stdin(Stdio::null()).output();
    }
}

/// The parent of `pid`, from /proc.
fn parent(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("the process is there");
    let (_, rest) = stat.rsplit_once(')').unwrap();
    rest.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The first holder's COMMAND: its pid, then a line per tenth of a second
/// until the file `stop` appears.
const FIRST: &str = "echo $$ > first.pid; \
                     while [ ! -e stop ]; do echo first >> log; sleep 0.1; done";

/// Starts `lock run demo --ttl TTL -- sh -c FIRST` at the prompt, waits for
/// its first line, presses Ctrl-Z and waits until `lock run` is stopped.
/// Returns the pids of `lock run` and of COMMAND.
fn first_holder_stopped(terminal: &Terminal, dir: &Path, ttl: &str) -> (u32, u32) {
    terminal.type_line(&format!(
        "\"$IDMINT\" lock run demo --ttl {ttl} -- sh -c '{FIRST}'"
    ));
    let log = dir.join("log");
    terminal.until("the first holder's COMMAND writes", || {
        lines(&log).iter().any(|line| line == "first")
    });
    let command: u32 = std::fs::read_to_string(dir.join("first.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let wrapper = parent(parent(command));
    terminal.press("C-z");
    terminal.until("lock run stops on Ctrl-Z", || {
        process_state(wrapper) == Some('T')
    });
    (wrapper, command)
}

/// Ctrl-Z stops COMMAND with `lock run`, and `fg` continues both while the
/// lease holds: COMMAND goes on and `lock run` exits with its code.
#[test]
fn ctrl_z_stops_the_command_and_fg_continues_it() {
    const TEST: &str = "lock_job_stop_and_fg";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(support::database(TEST));
    let dir = tempfile::tempdir().unwrap();
    let terminal = Terminal::start(TEST, dir.path());
    // 60 s: the lease outlives the stop on any machine.
    let (_, command) = first_holder_stopped(&terminal, dir.path(), "60");
    terminal.until("COMMAND stops with lock run", || {
        process_state(command) == Some('T')
    });

    let log = dir.path().join("log");
    let before = lines(&log).len();
    terminal.type_line("fg; echo \"exit $?\" > first.status");
    terminal.until("COMMAND continues with lock run", || {
        lines(&log).len() > before
    });
    std::fs::write(dir.path().join("stop"), "").unwrap();
    let status = dir.path().join("first.status");
    terminal.until("lock run exits", || status.exists());
    terminal.until("its status is written", || !lines(&status).is_empty());
    assert_eq!(lines(&status), ["exit 0"], "{}", terminal.screen());
}

/// Issue 31: while the first holder is stopped (Ctrl-Z) its lease lapses
/// and a second holder takes the lock; the first COMMAND writes nothing
/// from then on, neither while stopped nor after `fg`, which ends it
/// (`lock run` exits 76) before it runs again.
#[test]
fn a_lease_that_lapsed_while_stopped_ends_the_command_at_fg() {
    const TEST: &str = "lock_job_lapsed";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(support::database(TEST));
    let dir = tempfile::tempdir().unwrap();
    let terminal = Terminal::start(TEST, dir.path());
    let (_, command) = first_holder_stopped(&terminal, dir.path(), "2");

    // The second holder has the lock only once the first lease has ended
    // on the server; it writes for two seconds.
    let second = support::run(
        support::idmint(TEST)
            .current_dir(dir.path())
            .args(["lock", "run", "demo", "--wait", "60", "--"])
            .args([
                "sh",
                "-c",
                "i=0; while [ $i -lt 20 ]; do echo second >> log; sleep 0.1; i=$((i+1)); done",
            ]),
    );
    support::assert_exit(&second, 0);

    terminal.type_line("fg; echo \"exit $?\" > first.status");
    let status = dir.path().join("first.status");
    terminal.until("lock run exits", || status.exists());
    terminal.until("its status is written", || !lines(&status).is_empty());
    assert_eq!(lines(&status), ["exit 76"], "{}", terminal.screen());
    terminal.until(
        "COMMAND is gone",
        || !matches!(process_state(command), Some(state) if state != 'Z'),
    );

    let log = lines(&dir.path().join("log"));
    let second_began = log
        .iter()
        .position(|line| line == "second")
        .expect("the second holder wrote");
    let overlapping = log[second_began..]
        .iter()
        .filter(|line| *line == "first")
        .count();
    assert_eq!(
        overlapping, 0,
        "the first COMMAND wrote {overlapping} times after the second holder began: {log:?}"
    );
}
