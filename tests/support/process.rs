//! Running `idmint`: one run to its end (exit code, stdout, stderr), several
//! at once, or an `idmint seq` read as it prints.

use std::process::{Command, Stdio};

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

    /// Sends `signal` to the process.
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on our own child's pid.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, signal) }, 0);
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
