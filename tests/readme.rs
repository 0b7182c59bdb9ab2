//! The README and the guides, each followed in order, give exactly what
//! they show.
//!
//! Each markdown file with examples (`README.md`, `ARCHITECTURE.md`, every
//! `docs/*.md` but the benchmark figures of `docs/BENCHMARKS.md`) is one
//! test, named for it (`readme::docs_locks_md`), listed once in
//! [`markdown_files!`]; [`every_markdown_file_with_examples_runs`] fails on
//! a file with examples that is not listed. A file's test starts a fresh
//! server of its own, so the file's examples run in a fresh database (the
//! default, `idmint`) that no other file touched, as a reader who opens only
//! that guide would: a guide that needs a counter shows the `$ ` commands
//! that make it. The test runs every example that has a `$ ` prompt, in
//! ```` ```console ```` and ```` ```text ```` blocks, from top to bottom, and
//! compares each command's output with what the file shows under it. Every
//! failing command is reported, with the file and line it is on.
//!
//! # Blocks
//!
//! trycmd's syntax, which reads as a terminal session:
//!
//! - `$ COMMAND`: a command. The lines after it belong to it while a quote is
//!   open or the line ends with `\` (a multi-line mongosh script).
//! - `? N` on the line after it: its exit status; without one, 0. A command
//!   followed by `$ echo $?` is not checked: the echo shows its status.
//! - Then its output, up to the next `$ ` line or the end of the block:
//!   stdout and stderr interleaved as they were written. A line `...` stands
//!   for any number of lines. Trailing blanks of a line, and blank lines at
//!   the end, are not compared.
//!
//! A block whose first line has no `$ ` prompt (a synopsis, a listing) is not
//! run, nor are ```` ```sh ````, ```` ```js ```` and the other blocks.
//!
//! # Markers
//!
//! An HTML comment on the line just before a block's opening fence (not shown
//! when the file is rendered):
//!
//! - `<!-- readme-test: skip (REASON) -->`: the block is not run (a
//!   benchmark: minutes, a tool CI does not have).
//! - `<!-- readme-test: background until "TEXT" -->`: the block's first
//!   command is started in the background, as a reader starts it in another
//!   terminal. Its output is read until a line containing TEXT; those lines
//!   are its output. The rest of the block runs while it does. At the end of
//!   the block its process group gets SIGTERM (`idmint serve` shuts down on
//!   it as on Ctrl-C), and the test waits until every process of the group
//!   has exited; what the command printed after TEXT is not compared.
//!
//! # How a command runs
//!
//! As `sh -c '(exit S); COMMAND'`, S being the previous command's status so
//! that `$?` means what it means in one shell, with stdin empty, in a fresh
//! directory whose `target` is a symlink to the workspace's `target/` (the
//! files' commands run from the workspace root), with `PATH` starting with
//! the directory of the `idmint` under test and of mongosh (`IDMINT_MONGOSH`),
//! and without the caller's `IDMINT_*` and `RUST_LOG` variables.
//!
//! # Substitutions: ports only
//!
//! - MongoDB: the README tells the reader to `export MONGODB_URI=...` and the
//!   files' commands use `$MONGODB_URI`; here `MONGODB_URI` is the fresh server's,
//!   `mongodb://127.0.0.1:PORT`. A file that uses `$MONGODB_URI_US` (a
//!   second deployment, for a counter striped across two) gets a second
//!   fresh server there.
//! - HTTP: `idmint serve` listens on the files' `127.0.0.1:8080`. Here
//!   `:8080` in a command becomes the port the running `idmint serve` said it
//!   listens on (`listening on http://127.0.0.1:PORT`), or `:0` while none
//!   runs, so the serve command itself takes a free port from the system
//!   (no race with other processes); in output, `127.0.0.1:PORT` and
//!   `localhost:PORT` read `:8080` again. Its admin listener, the files'
//!   `127.0.0.1:8081`, is substituted the same way (`(admin on
//!   http://127.0.0.1:PORT)`).
//!
//! # Normalisation
//!
//! ```` ```console ```` blocks are deterministic and compared byte for byte.
//! ```` ```text ```` blocks show a live run: the file's text and the real
//! output both go through these rules, and must then be equal, so that the
//! file shows real values and the test compares all but what must vary:
//!
//! | what varies | shape | becomes | examples |
//! |---|---|---|---|
//! | time in a cyclic ID | 22 digits after `-`: 20 of time, 2 of sequence | `<time>` + the 2 | `ORD-2026112309182178591401` |
//! | a base32 snowflake ID | 13 Crockford characters after `-` | `<base32>` | `EVT-06YGFTZ8G0000` |
//! | a snowflake value | a number of 17 to 19 digits | `<snowflake>` | `seq events`, Leaf's snowflake route |
//! | a time of day | RFC 3339, `2026-11-23T09:18:21.123456Z` | `<time>` | `counter show`'s last issued at |
//! | an HTTP date | a line `date: ...` | `date: <date>` | `curl -i` |
//! | a lease's remaining time | `expires in: 29.960` | `expires in: <secs>` | `lock status` |
//! | a random token | 32 lowercase hex digits | `<token N>`, N counting distinct tokens per block | lock owners |
//! | a SHA-256 | 64 lowercase hex digits | `<sha256>` | a policy build's hash |
//! | a UUIDv7 | canonical lowercase text, version 7 | `<uuidv7>` | `builtin:uuidv7`'s IDs |
//! | a ULID | 26 Crockford characters, the first 0 to 7 | `<ulid>` | `builtin:ulid`'s IDs |
//! | the year of a period | 4 digits: between dashes before digits (an ID), first on a line before a value (`seq`), or after `current:` | `<year>` | a periodic counter's `CN-2026-000000001`, `2026 3` |
//!
//! A shape is a whole word: a run of letters and digits with no letter or
//! digit next to it.
//!
//! # Updating the outputs
//!
//! `IDMINT_README_TEST=overwrite cargo test --test main readme` writes each
//! real output that does not match (and its `? N`) into its file in place of
//! the one shown: the capture of a real run. Check the diff before committing.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::support::{self, OwnedServer, ServerConfig};

/// The files' HTTP port, replaced by the one `idmint serve` listens on.
const SHOWN_HTTP_PORT: &str = "8080";
/// The files' admin port (`idmint serve --admin-listen`), replaced likewise.
const SHOWN_ADMIN_PORT: &str = "8081";
/// What a marker comment starts with.
const MARKER: &str = "<!-- readme-test:";
/// The variable that makes the test write real outputs into the files.
const OVERWRITE_VAR: &str = "IDMINT_README_TEST";

/// One test per markdown file with examples, and the list of them.
macro_rules! markdown_files {
    ($($test:ident => $path:literal),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                examples_run_in_order($path);
            }
        )*
        /// The files whose examples run, relative to the workspace root.
        const MARKDOWN_FILES: &[&str] = &[$($path),*];
    };
}

markdown_files! {
    readme_md => "README.md",
    docs_counter_kinds_md => "docs/counter-kinds.md",
    docs_service_md => "docs/service.md",
    docs_locks_md => "docs/locks.md",
    docs_gap_free_md => "docs/gap-free.md",
    docs_dba_md => "docs/dba.md",
    docs_policies_md => "docs/policies.md",
    docs_reference_md => "docs/reference.md",
    docs_production_md => "docs/production.md",
}

/// The markdown files a reader is sent to: README.md, ARCHITECTURE.md and
/// the guides of `docs/` (not `docs/BENCHMARKS.md`, measured figures).
fn markdown_files_on_disk() -> Vec<String> {
    let workspace = crate::support::workspace_root();
    let mut files: Vec<String> = ["README.md", "ARCHITECTURE.md"]
        .into_iter()
        .filter(|file| workspace.join(file).is_file())
        .map(str::to_string)
        .collect();
    let docs = std::fs::read_dir(workspace.join("docs")).expect("read docs/");
    let mut guides: Vec<String> = docs
        .map(|entry| {
            entry
                .expect("a docs/ entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.ends_with(".md") && name != "BENCHMARKS.md")
        .map(|name| format!("docs/{name}"))
        .collect();
    guides.sort();
    files.extend(guides);
    files
}

#[test]
fn every_markdown_file_with_examples_runs() {
    let workspace = crate::support::workspace_root();
    let mut unlisted = Vec::new();
    for file in markdown_files_on_disk() {
        let text = std::fs::read_to_string(workspace.join(&file))
            .unwrap_or_else(|error| panic!("read {file}: {error}"));
        let blocks = parse(&text).unwrap_or_else(|error| panic!("{file}: {error}"));
        if !blocks.is_empty() && !MARKDOWN_FILES.contains(&file.as_str()) {
            unlisted.push(file);
        }
    }
    assert!(
        unlisted.is_empty(),
        "markdown files with `$ ` examples that no test runs (list them in markdown_files!): {unlisted:?}"
    );
    for file in MARKDOWN_FILES {
        assert!(
            workspace.join(file).is_file(),
            "{file} is listed in markdown_files! but does not exist"
        );
    }
}

/// Runs the examples of `file` (relative to the workspace root) in order,
/// against a server of their own.
fn examples_run_in_order(file: &str) {
    let workspace = crate::support::workspace_root().to_path_buf();
    let path = workspace.join(file);
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("read {file}: {error}"));
    let blocks = parse(&text).unwrap_or_else(|error| panic!("{file}: {error}"));
    assert!(
        blocks.iter().any(|block| !block.skip),
        "{file} has no example to run"
    );

    // The policy examples use the check-digit fixture's component, which the
    // tests build on first use (into target/policy-fixtures/).
    support::fixture_policy("check-digit");
    let server = OwnedServer::start(ServerConfig::default());
    let second = text
        .contains(SECOND_URI_VAR)
        .then(|| OwnedServer::start(ServerConfig::default()));
    let dir = tempfile::tempdir().expect("a working directory");
    std::os::unix::fs::symlink(workspace.join("target"), dir.path().join("target"))
        .expect("link target/ into the working directory");
    let mut session = Session::new(file, dir.path(), server.uri.trim_end_matches('/'));
    session.second_uri = second
        .as_ref()
        .map(|second| second.uri.trim_end_matches('/').to_string());
    for block in &blocks {
        session.run_block(block);
    }

    if std::env::var(OVERWRITE_VAR).as_deref() == Ok("overwrite") && !session.fixes.is_empty() {
        std::fs::write(&path, apply_fixes(&text, &session.fixes))
            .unwrap_or_else(|error| panic!("write {file}: {error}"));
        eprintln!(
            "wrote {} real output(s) into {file}: check the diff",
            session.fixes.len()
        );
    }
    assert!(
        session.failures.is_empty(),
        "{} example(s) did not give what {file} shows \
         ({OVERWRITE_VAR}=overwrite writes the real outputs in):\n\n{}",
        session.failures.len(),
        session.failures.join("\n")
    );
}

/// The variable a file uses for a second deployment's connection string.
const SECOND_URI_VAR: &str = "$MONGODB_URI_US";

/// A fenced block of a file with at least one `$ ` command.
#[derive(Debug, PartialEq)]
struct Block {
    /// `console` (compared byte for byte) or `text` (normalised).
    normalised: bool,
    /// Marked `skip`.
    skip: bool,
    /// Marked `background until "TEXT"`: TEXT.
    background_until: Option<String>,
    commands: Vec<Example>,
}

/// One `$ ` command of a block and what the file shows for it.
#[derive(Debug, PartialEq)]
struct Example {
    /// The command, continuation lines included.
    command: String,
    /// The file's line number (1-based) of its `$ `.
    line: usize,
    /// Its `? N`, if given.
    status: Option<i32>,
    /// The 0-based line index of its `? N` line, or of where one would go.
    status_at: usize,
    /// The output lines shown.
    output: Vec<String>,
    /// The 0-based line range of the file that holds them.
    output_lines: std::ops::Range<usize>,
}

fn parse(readme: &str) -> Result<Vec<Block>, String> {
    let lines: Vec<&str> = readme.lines().collect();
    let mut blocks = Vec::new();
    let mut marker: Option<(usize, String)> = None;
    let mut at = 0;
    while at < lines.len() {
        let line = lines[at];
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix(MARKER) {
            let text = rest
                .strip_suffix("-->")
                .ok_or_else(|| format!("line {}: a marker ends with -->", at + 1))?;
            marker = Some((at + 1, text.trim().to_string()));
            at += 1;
            continue;
        }
        let Some(lang) = trimmed.strip_prefix("```") else {
            if let Some((marked, _)) = &marker {
                if !trimmed.is_empty() {
                    return Err(format!(
                        "line {marked}: a marker must be followed by a fenced block"
                    ));
                }
            }
            at += 1;
            continue;
        };
        let start = at + 1;
        let end = (start..lines.len())
            .find(|&i| lines[i].trim() == "```")
            .ok_or_else(|| format!("line {}: a block that is not closed", at + 1))?;
        let marked = marker.take();
        let runs = matches!(lang, "console" | "text")
            && !line.starts_with(' ')
            && lines
                .get(start)
                .is_some_and(|first| first.starts_with("$ "));
        if runs {
            let mut block = Block {
                normalised: lang == "text",
                skip: false,
                background_until: None,
                commands: examples(&lines, start, end)?,
            };
            if let Some((marked_at, text)) = marked {
                if text.starts_with("skip") {
                    block.skip = true;
                } else if let Some(until) = text
                    .strip_prefix("background until \"")
                    .and_then(|rest| rest.strip_suffix('"'))
                {
                    block.background_until = Some(until.to_string());
                } else {
                    return Err(format!("line {marked_at}: unknown marker {text:?}"));
                }
            }
            blocks.push(block);
        } else if let Some((marked_at, _)) = marked {
            return Err(format!(
                "line {marked_at}: a marker on a block that does not run (no `$ ` on its first line)"
            ));
        }
        at = end + 1;
    }
    Ok(blocks)
}

/// The commands of the block between lines `start` and `end` (exclusive).
fn examples(lines: &[&str], start: usize, end: usize) -> Result<Vec<Example>, String> {
    let mut examples = Vec::new();
    let mut at = start;
    while at < end {
        let first = lines[at]
            .strip_prefix("$ ")
            .ok_or_else(|| format!("line {}: expected a `$ ` command", at + 1))?;
        let line = at + 1;
        let mut command = first.to_string();
        while (quote_open(&command) || command.ends_with('\\')) && at + 1 < end {
            at += 1;
            command.push('\n');
            command.push_str(lines[at]);
        }
        if quote_open(&command) {
            return Err(format!("line {line}: a quote is not closed in the block"));
        }
        at += 1;
        let status_at = at;
        let mut status = None;
        if let Some(code) = lines.get(at).and_then(|l| l.strip_prefix("? ")) {
            if at < end {
                status = Some(
                    code.trim()
                        .parse()
                        .map_err(|_| format!("line {}: `? N` needs a number", at + 1))?,
                );
                at += 1;
            }
        }
        let output_start = at;
        while at < end && !lines[at].starts_with("$ ") {
            at += 1;
        }
        examples.push(Example {
            command,
            line,
            status,
            status_at,
            output: lines[output_start..at]
                .iter()
                .map(|l| l.to_string())
                .collect(),
            output_lines: output_start..at,
        });
    }
    Ok(examples)
}

/// Whether `command` ends inside a quote (sh rules: '...' takes everything
/// literally, "..." and bare words honour `\`; `#` after a blank starts a
/// comment).
fn quote_open(command: &str) -> bool {
    let mut quote = None;
    let mut chars = command.chars().peekable();
    let mut previous = ' ';
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some('\''), '\'') => quote = None,
            (Some('\''), _) => {}
            (Some('"'), '"') => quote = None,
            (_, '\\') => {
                chars.next();
            }
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '#') if previous.is_whitespace() => {
                // A comment: to the end of the line.
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            (None, _) => {}
        }
        previous = c;
    }
    quote.is_some()
}

/// A command running in the background until its block ends.
struct Background {
    child: Child,
    drain: std::thread::JoinHandle<()>,
}

/// The state the commands of one file share: the directory, the
/// environment, the last status, the port of the running `idmint serve`.
struct Session {
    /// The file, as failures name it.
    file: String,
    dir: PathBuf,
    path: std::ffi::OsString,
    mongodb_uri: String,
    /// A second server's, for files that use [`SECOND_URI_VAR`].
    second_uri: Option<String>,
    status: i32,
    http_port: Option<String>,
    admin_port: Option<String>,
    failures: Vec<String>,
    fixes: Vec<Fix>,
}

/// A real output to write into the file in place of the one shown.
struct Fix {
    /// The `? N` line to write (None: none), and where it goes.
    status: Option<i32>,
    status_at: usize,
    /// Whether the file has a `? N` line there now.
    had_status: bool,
    output: Vec<String>,
    output_lines: std::ops::Range<usize>,
}

impl Session {
    fn new(file: &str, dir: &Path, mongodb_uri: &str) -> Self {
        let mut path = vec![Path::new(env!("CARGO_BIN_EXE_idmint"))
            .parent()
            .expect("the binary's directory")
            .to_path_buf()];
        if let Some(parent) = support::mongosh::binary()
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
        {
            path.push(parent.to_path_buf());
        }
        path.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        Self {
            file: file.to_string(),
            dir: dir.to_path_buf(),
            path: std::env::join_paths(path).expect("a PATH"),
            mongodb_uri: mongodb_uri.to_string(),
            second_uri: None,
            status: 0,
            http_port: None,
            admin_port: None,
            failures: Vec::new(),
            fixes: Vec::new(),
        }
    }

    fn run_block(&mut self, block: &Block) {
        if block.skip {
            return;
        }
        let mut background = None;
        for (index, example) in block.commands.iter().enumerate() {
            let checks_status = block
                .commands
                .get(index + 1)
                .is_none_or(|next| next.command.trim() != "echo $?");
            let (status, output) = if index == 0 && block.background_until.is_some() {
                let until = block.background_until.as_deref().unwrap_or_default();
                let (running, lines) = self.start_background(example, until);
                background = Some(running);
                (0, lines)
            } else {
                self.run(example)
            };
            self.status = status;
            let shown_status = example.status.unwrap_or(0);
            let status_ok =
                !checks_status || status == shown_status || index == 0 && background.is_some();
            let output_ok = matches(
                &block_view(block, &example.output),
                &block_view(block, &output),
            );
            if !(status_ok && output_ok) {
                self.failures.push(format!(
                    "{} line {}: $ {}\n  the file shows{}:\n{}\n  real output (status {status}):\n{}\n",
                    self.file,
                    example.line,
                    example.command,
                    example
                        .status
                        .map_or_else(String::new, |code| format!(" (status {code})")),
                    indent(&example.output),
                    indent(&output),
                ));
                self.fixes.push(Fix {
                    status: (checks_status && status != 0).then_some(status),
                    status_at: example.status_at,
                    had_status: example.status.is_some(),
                    output,
                    output_lines: example.output_lines.clone(),
                });
            }
        }
        if let Some(Background { child, drain }) = background {
            stop(child);
            // The pipe ends once every process of the group has exited.
            let _ = drain.join();
            self.http_port = None;
            self.admin_port = None;
        }
    }

    /// The command as the shell runs it: ports substituted, `$?` set.
    fn script(&self, command: &str) -> String {
        let port = self.http_port.as_deref().unwrap_or("0");
        let admin = self.admin_port.as_deref().unwrap_or("0");
        let command = command
            .replace(&format!(":{SHOWN_HTTP_PORT}"), &format!(":{port}"))
            .replace(&format!(":{SHOWN_ADMIN_PORT}"), &format!(":{admin}"));
        format!("(exit {}); {command}", self.status)
    }

    fn command(&self, command: &str) -> Command {
        let mut shell = Command::new("sh");
        shell
            .arg("-c")
            .arg(self.script(command))
            .current_dir(&self.dir)
            .env("PATH", &self.path)
            .env("MONGODB_URI", &self.mongodb_uri)
            .stdin(Stdio::null());
        if let Some(second) = &self.second_uri {
            shell.env(&SECOND_URI_VAR[1..], second);
        }
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("IDMINT_") || name == "RUST_LOG" {
                shell.env_remove(name);
            }
        }
        shell
    }

    /// Runs a command to its end: its status and its output lines.
    fn run(&mut self, example: &Example) -> (i32, Vec<String>) {
        let (mut reader, writer) = std::io::pipe().expect("a pipe");
        let mut child = {
            let mut shell = self.command(&example.command);
            shell
                .stdout(writer.try_clone().expect("a pipe"))
                .stderr(writer);
            shell.spawn().expect("run sh")
            // `shell`, holding the pipe's write end, is dropped here, so the
            // read below ends when the command's processes close theirs.
        };
        let mut output = Vec::new();
        reader.read_to_end(&mut output).expect("read the output");
        let status = child.wait().expect("wait for sh");
        (status_code(status), self.real_lines(&output))
    }

    /// Starts a command in the background and reads its output until a line
    /// contains `until`.
    fn start_background(&mut self, example: &Example, until: &str) -> (Background, Vec<String>) {
        use std::os::unix::process::CommandExt;
        let (reader, writer) = std::io::pipe().expect("a pipe");
        let child = {
            let mut shell = self.command(&example.command);
            shell
                .stdout(writer.try_clone().expect("a pipe"))
                .stderr(writer)
                .process_group(0);
            shell.spawn().expect("run sh")
        };
        let mut lines = BufReader::new(reader).lines();
        let mut shown = Vec::new();
        loop {
            match lines.next() {
                Some(Ok(line)) => {
                    let done = line.contains(until);
                    if let Some(port) = listening_port(&line, "listening on http://") {
                        self.http_port = Some(port);
                    }
                    if let Some(port) = listening_port(&line, "(admin on http://") {
                        self.admin_port = Some(port);
                    }
                    shown.push(line);
                    if done {
                        break;
                    }
                }
                _ => {
                    shown.push(format!("(ended before printing {until:?})"));
                    break;
                }
            }
        }
        // The rest is read (and dropped) so the command never blocks on a full pipe.
        let drain = std::thread::spawn(move || for _ in lines.by_ref() {});
        let shown = self.real_lines(shown.join("\n").as_bytes());
        (Background { child, drain }, shown)
    }

    /// Real output as the files show it: lines, the HTTP port read back
    /// as theirs.
    fn real_lines(&self, output: &[u8]) -> Vec<String> {
        let mut text = String::from_utf8_lossy(output).into_owned();
        let mut ports: Vec<(&String, &str)> = [
            (&self.http_port, SHOWN_HTTP_PORT),
            (&self.admin_port, SHOWN_ADMIN_PORT),
        ]
        .into_iter()
        .filter_map(|(port, readme)| Some((port.as_ref()?, readme)))
        .collect();
        // The longer first, so that one port is never read inside another.
        ports.sort_by_key(|(port, _)| std::cmp::Reverse(port.len()));
        for (port, readme) in ports {
            for host in ["127.0.0.1", "localhost"] {
                text = text.replace(&format!("{host}:{port}"), &format!("{host}:{readme}"));
            }
        }
        text.lines().map(str::to_string).collect()
    }
}

/// The port in `{before}HOST:PORT` (`listening on http://`, `(admin on
/// http://`), if the line says so.
fn listening_port(line: &str, before: &str) -> Option<String> {
    let address = line.split(before).nth(1)?;
    let address = address.split([' ', ')']).next()?;
    let port: String = address
        .rsplit(':')
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    (!port.is_empty()).then_some(port)
}

/// SIGTERM to the command's process group, then waits for it.
fn stop(mut child: Child) {
    let group = i32::try_from(child.id()).expect("a pid");
    // SAFETY: kill(2) on the process group of a child we started with process_group(0).
    unsafe {
        libc::kill(-group, libc::SIGTERM);
    }
    let _ = child.wait();
}

/// A status as `$?` shows it: the code, or 128 + the signal.
fn status_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

fn indent(lines: &[String]) -> String {
    lines
        .iter()
        .map(|line| format!("    | {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The lines of an output as they are compared: trailing blanks off, blank
/// lines at the end off, and a `text` block's lines normalised.
fn block_view(block: &Block, lines: &[String]) -> Vec<String> {
    let mut view: Vec<String> = lines.iter().map(|l| l.trim_end().to_string()).collect();
    while view.last().is_some_and(String::is_empty) {
        view.pop();
    }
    if block.normalised {
        let mut tokens = HashMap::new();
        view = view
            .iter()
            .map(|line| normalise(line, &mut tokens))
            .collect();
    }
    view
}

/// Whether `real` matches `shown`, where a `shown` line `...` matches any
/// number of lines.
fn matches(shown: &[String], real: &[String]) -> bool {
    match shown.split_first() {
        None => real.is_empty(),
        Some((first, rest)) if first == "..." => {
            (0..=real.len()).any(|skip| matches(rest, &real[skip..]))
        }
        Some((first, rest)) => real
            .split_first()
            .is_some_and(|(line, real_rest)| line == first && matches(rest, real_rest)),
    }
}

/// One line through the normalisation table of the module docs. `tokens`
/// numbers the random tokens of a block in the order they first appear.
fn normalise(line: &str, tokens: &mut HashMap<String, usize>) -> String {
    if line.starts_with("date: ") {
        return "date: <date>".to_string();
    }
    let mut out = String::new();
    let mut rest = line;
    while !rest.is_empty() {
        // The next whole word, and what comes before it.
        let start = rest
            .find(|c: char| c.is_ascii_alphanumeric())
            .unwrap_or(rest.len());
        let (before, tail) = rest.split_at(start);
        out.push_str(before);
        if tail.is_empty() {
            break;
        }
        let end = tail
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(tail.len());
        let (word, after) = tail.split_at(end);
        rest = after;
        // An RFC 3339 time spans several words: take it whole.
        if let Some(length) = rfc3339_length(tail) {
            out.push_str("<time>");
            rest = &tail[length..];
            continue;
        }
        // So does a UUID.
        if is_uuidv7(tail) {
            out.push_str("<uuidv7>");
            rest = &tail[UUID_LENGTH..];
            continue;
        }
        let digits = word.bytes().all(|b| b.is_ascii_digit());
        let hex = word.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        let after_dash = out.ends_with('-');
        let year = digits
            && word.len() == 4
            && ((after_dash && rest.starts_with('-') && next_is_digit(&rest[1..]))
                || (out.is_empty() && rest.starts_with(' ') && next_is_digit(&rest[1..]))
                || out.trim_end().ends_with("current:"));
        if year {
            out.push_str("<year>");
        } else if is_ulid(word) {
            out.push_str("<ulid>");
        } else if after_dash && digits && word.len() == 22 {
            out.push_str("<time>");
            out.push_str(&word[20..]);
        } else if after_dash
            && word.len() == 13
            && word
                .bytes()
                .all(|b| b.is_ascii_digit() || (b.is_ascii_uppercase() && !b"ILOU".contains(&b)))
        {
            out.push_str("<base32>");
        } else if digits && (17..=19).contains(&word.len()) {
            out.push_str("<snowflake>");
        } else if hex && word.len() == 64 {
            out.push_str("<sha256>");
        } else if hex && word.len() == 32 {
            let next = tokens.len() + 1;
            let number = *tokens.entry(word.to_string()).or_insert(next);
            out.push_str(&format!("<token {number}>"));
        } else if out.ends_with("expires in: ") && digits {
            out.push_str("<secs>");
            // The fraction, if any.
            if let Some(fraction) = rest.strip_prefix('.') {
                let digits = fraction
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(fraction.len());
                rest = &fraction[digits..];
            }
        } else {
            out.push_str(word);
        }
    }
    out
}

/// The length of a UUID's canonical text.
const UUID_LENGTH: usize = 36;

/// Whether `text` starts with a whole UUIDv7 in canonical lowercase text
/// (`01a21b13-4a40-7000-8000-0000024758ea`).
fn is_uuidv7(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() >= UUID_LENGTH
        && bytes[..UUID_LENGTH]
            .iter()
            .enumerate()
            .all(|(at, b)| match at {
                8 | 13 | 18 | 23 => *b == b'-',
                14 => *b == b'7',
                _ => matches!(b, b'0'..=b'9' | b'a'..=b'f'),
            })
        && !bytes
            .get(UUID_LENGTH)
            .is_some_and(|b| b.is_ascii_alphanumeric())
}

/// Whether `word` is a ULID: 26 Crockford base32 characters, upper case,
/// the first 0 to 7 (`01M8DH6JC000000000022350S0`).
fn is_ulid(word: &str) -> bool {
    word.len() == 26
        && word.starts_with(|c: char| ('0'..='7').contains(&c))
        && word
            .bytes()
            .all(|b| b.is_ascii_digit() || (b.is_ascii_uppercase() && !b"ILOU".contains(&b)))
        && word.bytes().any(|b| b.is_ascii_uppercase())
}

/// Whether `text` starts with a digit.
fn next_is_digit(text: &str) -> bool {
    text.starts_with(|c: char| c.is_ascii_digit())
}

/// The length of the RFC 3339 time (`YYYY-MM-DDTHH:MM:SS[.f+]Z`) that
/// `text` starts with, if it starts with one.
fn rfc3339_length(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let shape = b"dddd-dd-ddTdd:dd:dd";
    if bytes.len() < shape.len()
        || !shape.iter().zip(bytes).all(|(s, b)| match s {
            b'd' => b.is_ascii_digit(),
            _ => s == b,
        })
    {
        return None;
    }
    let mut at = shape.len();
    if bytes.get(at) == Some(&b'.') {
        at += 1;
        while bytes.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
    }
    (bytes.get(at) == Some(&b'Z')).then_some(at + 1)
}

/// The file with each fix's output (and `? N` line) written in.
fn apply_fixes(readme: &str, fixes: &[Fix]) -> String {
    let mut lines: Vec<String> = readme.lines().map(str::to_string).collect();
    // From the bottom up, so that earlier line numbers stay right.
    let mut fixes: Vec<&Fix> = fixes.iter().collect();
    fixes.sort_by_key(|fix| std::cmp::Reverse(fix.status_at));
    for fix in fixes {
        lines.splice(fix.output_lines.clone(), fix.output.iter().cloned());
        let status = fix.status.map(|code| format!("? {code}"));
        match (fix.had_status, status) {
            (true, Some(line)) => lines[fix.status_at] = line,
            (true, None) => {
                lines.remove(fix.status_at);
            }
            (false, Some(line)) => lines.insert(fix.status_at, line),
            (false, None) => {}
        }
    }
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

/// The runner's own rules, without a server.
mod rules {
    use super::*;

    fn norm(line: &str) -> String {
        normalise(line, &mut HashMap::new())
    }

    #[test]
    fn standard_ids_are_replaced_whole() {
        let mut tokens = HashMap::new();
        assert_eq!(
            normalise("01a21b13-4a40-7000-8000-0000024758ea", &mut tokens),
            "<uuidv7>"
        );
        assert_eq!(
            normalise("id 01a21b13-4a40-7000-8000-0000024758ea.", &mut tokens),
            "id <uuidv7>."
        );
        // Version 4 is not a standard ID of ours.
        assert_eq!(
            normalise("01a21b13-4a40-4abc-8def-0000024758ea", &mut tokens),
            "01a21b13-4a40-4abc-8def-0000024758ea"
        );
        assert_eq!(
            normalise("01M8DH6JC000000000022350S0", &mut tokens),
            "<ulid>"
        );
        assert_eq!(
            normalise("81M8DH6JC000000000022350S0", &mut tokens),
            "81M8DH6JC000000000022350S0"
        );
    }

    #[test]
    fn each_rule_replaces_only_its_shape() {
        assert_eq!(
            norm(r#"{"ids":["ORD-2026112309182178591401","WEB-2026112309182178591402"]}"#),
            r#"{"ids":["ORD-<time>01","WEB-<time>02"]}"#
        );
        assert_eq!(norm("EVT-06YGFTZ8G0000"), "EVT-<base32>");
        assert_eq!(norm("250514479211610112"), "<snowflake>");
        // Not a snowflake: 16 and 20 digits.
        assert_eq!(
            norm("9007199254740991 18446744073709551615"),
            "9007199254740991 18446744073709551615"
        );
        assert_eq!(
            norm("  last issued at: 2026-11-23T13:24:21.220281Z (ok)"),
            "  last issued at: <time> (ok)"
        );
        assert_eq!(norm("date: Mon, 23 Nov 2026 09:18:21 GMT"), "date: <date>");
        assert_eq!(norm("  expires in: 29.960 s"), "  expires in: <secs> s");
        assert_eq!(
            norm("(sha256 fb9235051e10fcaab11becbd0d53e4f58bb74a5a3f686eab903278aedf87e7d7)"),
            "(sha256 <sha256>)"
        );
        // Deterministic text is left as it is: 12-digit hashes, dates, counts.
        let plain =
            "create    function getLock (0.1.0, sha256 3ac7b446eb1f) [missing] 2094-09-07 5004";
        assert_eq!(norm(plain), plain);
    }

    #[test]
    fn tokens_are_numbered_so_that_a_repeated_one_stays_equal() {
        let mut tokens = HashMap::new();
        let a = "6474734841d67c039532174fb26f4bfc";
        let b = "158a6e1927f0abc8aff322716e48e670";
        assert_eq!(
            normalise(&format!("holder: {a}"), &mut tokens),
            "holder: <token 1>"
        );
        assert_eq!(normalise(&format!("1:{b}"), &mut tokens), "1:<token 2>");
        assert_eq!(
            normalise(&format!("removed holder {a}"), &mut tokens),
            "removed holder <token 1>"
        );
    }

    #[test]
    fn an_ellipsis_line_matches_any_number_of_lines() {
        let lines = |text: &str| text.lines().map(str::to_string).collect::<Vec<_>>();
        assert!(matches(&lines("a\n...\nz"), &lines("a\nz")));
        assert!(matches(&lines("a\n...\nz"), &lines("a\nb\nc\nz")));
        assert!(!matches(&lines("a\n...\nz"), &lines("a\nb")));
        assert!(!matches(&lines("a\nz"), &lines("a\nb\nz")));
    }

    #[test]
    fn blocks_commands_statuses_and_markers_are_read() {
        let readme = "text\n\
            <!-- readme-test: background until \"listening on\" -->\n\
            ```text\n\
            $ idmint serve --listen 127.0.0.1:8080\n\
            listening on http://127.0.0.1:8080\n\
            $ mongosh --eval 'a;\n    b'   # it's a comment\n\
            x\n\
            ```\n\
            ```console\n\
            $ idmint validate X\n\
            ? 1\n\
            X: invalid\n\
            \n\
            ```\n\
            ```text\n\
            idmint lock run NAME\n\
            ```\n\
            <!-- readme-test: skip (benchmark) -->\n\
            ```text\n\
            $ idmint bench\n\
            ```\n";
        let blocks = parse(readme).unwrap();
        assert_eq!(blocks.len(), 3);
        assert_eq!(blocks[0].background_until.as_deref(), Some("listening on"));
        assert!(blocks[0].normalised);
        assert_eq!(
            blocks[0].commands[1].command,
            "mongosh --eval 'a;\n    b'   # it's a comment"
        );
        assert_eq!(blocks[0].commands[1].output, ["x"]);
        assert!(!blocks[1].normalised);
        assert_eq!(blocks[1].commands[0].status, Some(1));
        assert_eq!(blocks[1].commands[0].output, ["X: invalid", ""]);
        assert!(blocks[2].skip);
        for bad in [
            "<!-- readme-test: sometimes -->\n```text\n$ true\n```\n",
            "<!-- readme-test: skip (x) -->\nprose\n```text\n$ true\n```\n",
            "<!-- readme-test: skip (x) -->\n```sh\ntrue\n```\n",
            "```text\n$ echo 'open\n```\n",
        ] {
            assert!(parse(bad).is_err(), "accepted: {bad}");
        }
    }
}
