//! Printing: text for people, JSON (`--json`) for programs.

use std::io::{self, Write};

use serde::Serialize;

/// Where a command's results and errors go.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    json: bool,
}

impl Output {
    /// Text output, or JSON with `json`.
    pub fn new(json: bool) -> Self {
        Self { json }
    }

    /// True with `--json`.
    pub fn is_json(&self) -> bool {
        self.json
    }

    /// Prints `value` as one JSON document (with `--json`) or `text()` otherwise.
    pub fn report<T: Serialize>(
        &self,
        value: &T,
        text: impl FnOnce() -> String,
    ) -> anyhow::Result<()> {
        let mut stdout = io::stdout().lock();
        if self.json {
            serde_json::to_writer(&mut stdout, value)?;
            writeln!(stdout)?;
        } else {
            let text = text();
            write!(stdout, "{text}")?;
            if !text.ends_with('\n') && !text.is_empty() {
                writeln!(stdout)?;
            }
        }
        stdout.flush()?;
        Ok(())
    }

    /// Prints lines as they come (text mode only; JSON callers use `report`).
    pub fn lines<I, S>(&self, lines: I) -> anyhow::Result<()>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut stdout = io::BufWriter::new(io::stdout().lock());
        for line in lines {
            writeln!(stdout, "{}", line.as_ref())?;
        }
        stdout.flush()?;
        Ok(())
    }

    /// Prints one JSON object per line (JSON Lines), as they come: for
    /// results handed out piece by piece (`seq`, `next`), so that what was
    /// handed out is printed even if a later piece fails.
    pub fn json_lines<I, T>(&self, items: I) -> anyhow::Result<()>
    where
        I: IntoIterator<Item = T>,
        T: Serialize,
    {
        let mut stdout = io::BufWriter::new(io::stdout().lock());
        for item in items {
            serde_json::to_writer(&mut stdout, &item)?;
            writeln!(stdout)?;
        }
        stdout.flush()?;
        Ok(())
    }

    /// Prints a warning to stderr: something the command did not change but
    /// someone should (text, or one JSON object with `--json`).
    pub fn warning(&self, message: &str) {
        let mut stderr = io::stderr().lock();
        if self.json {
            let _ = writeln!(stderr, "{}", serde_json::json!({ "warning": message }));
        } else {
            let _ = writeln!(stderr, "idmint: warning: {message}");
        }
    }

    /// Prints an error to stderr with its cause chain, and the server it was
    /// talking to (password redacted) when that matters.
    pub fn error(&self, error: &anyhow::Error, exit_code: u8, server: Option<&str>) {
        let mut stderr = io::stderr().lock();
        // The driver's own errors are summed up by the errors that wrap
        // them (`mongo::describe_error`); their full text, topology dump
        // and all, is for --json's `detail`.
        let message = chain_text(error, false);
        if self.json {
            let value = serde_json::json!({
                "error": {
                    "message": message,
                    "detail": chain_text(error, true),
                    "class": super::exit::class_of(error),
                    "exit_code": exit_code,
                    "server": server,
                }
            });
            let _ = writeln!(stderr, "{value}");
        } else {
            let _ = writeln!(stderr, "idmint: error: {message}");
            if let Some(server) = server {
                let _ = writeln!(stderr, "idmint: server: {server}");
            }
        }
    }
}

/// An error and its causes, joined with ": ", each cause once: a cause whose
/// text its parent already ends with (an error that displays its source
/// and also returns it from `source()`, such as "cannot read policy file F:
/// No such file or directory (os error 2)") is not repeated. The driver's
/// own errors are left out unless `with_driver`.
fn chain_text(error: &anyhow::Error, with_driver: bool) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in error.chain() {
        if !with_driver && cause.is::<mongodb::error::Error>() {
            continue;
        }
        let text = cause.to_string();
        if parts.last().is_some_and(|last| last.ends_with(&text)) {
            continue;
        }
        parts.push(text);
    }
    parts.join(": ")
}
