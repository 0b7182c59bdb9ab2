//! Running `idmint`: one run to its end (exit code, stdout, stderr), several
//! at once, or an `idmint seq` read as it prints.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Receiver};

use super::database::database_name;
use super::server::uri;

/// Runs a command to completion with no stdin and returns its output.
pub fn run(command: &mut Command) -> std::process::Output {
    command
        .stdin(Stdio::null())
        .output()
        .expect("run the command")
}

/// A command's stdout, as text.
pub fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The values a command printed, one a line.
pub fn printed_values(output: &std::process::Output) -> Vec<u64> {
    stdout(output)
        .lines()
        .map(|line| line.parse().unwrap())
        .collect()
}

/// A command's stderr, as text.
pub fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts the exit code, showing both output streams when it differs.
#[track_caller]
pub fn assert_exit(output: &std::process::Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "expected exit {code}\nstdout: {}\nstderr: {}",
        stdout(output),
        stderr(output)
    );
}

/// The `idmint` binary, pointed at the test server and `test`'s database.
pub fn idmint(test: &str) -> Command {
    idmint_on(uri(), &database_name(test))
}

/// The `idmint` binary, pointed at the server of `uri` (a server of the
/// test's own) and its database `database`; no policy from the
/// environment.
pub fn idmint_on(uri: &str, database: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_idmint"));
    command
        .env("MONGODB_URI", uri)
        .env("IDMINT_DB", database)
        .env_remove("IDMINT_POLICY");
    command
}

/// Sends signal `number` to process `pid`, a process of the test's own
/// (started by it, not yet reaped): it must be there to receive it.
pub fn signal(pid: u32, number: i32) {
    let target = libc::pid_t::try_from(pid).expect("a pid");
    // SAFETY: kill(2) on a process of this test's own.
    assert_eq!(
        unsafe { libc::kill(target, number) },
        0,
        "signal {number} to {pid}"
    );
}

/// Reads `reader` (a child's stdout or stderr) line by line in a thread
/// of its own: the lines arrive on the receiver, which ends with the
/// reader. The reader is drained to its end even once the receiver is
/// dropped, so that the child never blocks on a full pipe.
pub fn read_lines(reader: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(reader).lines().map_while(Result::ok) {
            let _ = sender.send(line);
        }
    });
    receiver
}

/// A process's state letter in /proc (`T`: stopped, `Z`: a zombie),
/// `None` once it is gone.
pub fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.trim_start().chars().next()
}

/// Whether process `pid` still runs (it exists and is not a zombie).
pub fn running(pid: u32) -> bool {
    !matches!(process_state(pid), None | Some('Z' | 'X'))
}

/// A running `idmint seq` whose values are read line by line as it prints
/// them. It writes more than a pipe holds and blocks until read, which the
/// concurrency tests use to make processes overlap for certain.
pub struct Seq {
    /// The process.
    pub child: std::process::Child,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

impl Seq {
    /// Starts `idmint seq ARGS` for `test`'s database.
    pub fn start(test: &str, args: &[&str]) -> Self {
        let mut command = idmint(test);
        command.arg("seq").args(args);
        Self::spawn(command)
    }

    /// Starts `command` (an `idmint seq` set up by the caller), reading its
    /// stdout line by line.
    pub fn spawn(mut command: Command) -> Self {
        use std::io::BufRead;
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start idmint seq");
        let lines = std::io::BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        Self { child, lines }
    }

    /// The next value printed, or `None` at the end.
    pub fn next_value(&mut self) -> Option<u64> {
        self.next_line().map(|line| {
            // A periodic counter prints `PERIOD VALUE`: the value is last.
            line.rsplit(' ')
                .next()
                .and_then(|value| value.parse().ok())
                .expect("a number")
        })
    }

    /// The next line as printed (a periodic counter's: `PERIOD VALUE`).
    pub fn next_line(&mut self) -> Option<String> {
        self.lines.next().map(|line| line.expect("read a line"))
    }

    /// Every value left.
    pub fn rest(&mut self) -> Vec<u64> {
        std::iter::from_fn(|| self.next_value()).collect()
    }

    /// Sends `number` to the process.
    pub fn signal(&self, number: i32) {
        signal(self.child.id(), number);
    }
}

/// Starts `count` runs of `idmint ARGS` for `test` at once, then waits for
/// all of them; their outputs, in start order.
pub fn run_at_once(test: &str, args: &[&str], count: usize) -> Vec<std::process::Output> {
    let children: Vec<_> = (0..count)
        .map(|_| {
            idmint(test)
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start idmint")
        })
        .collect();
    children
        .into_iter()
        .map(|child| child.wait_with_output().expect("wait for idmint"))
        .collect()
}
