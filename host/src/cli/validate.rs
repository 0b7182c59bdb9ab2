//! `idmint validate [ID ...]`: check IDs against the policy.

use std::io::{self, BufRead, IsTerminal};

use clap::Args;
use idmint::policy::IdParts;
use serde::Serialize;

use super::counter::rfc3339_micros;
use super::exit::UsageError;
use super::policy_args::PolicyArgs;
use super::{Outcome, Output};

/// Arguments of `idmint validate`.
#[derive(Debug, Args)]
pub struct ValidateCmd {
    /// IDs to check; with none, one ID per line is read from stdin.
    pub ids: Vec<String>,
    /// Also require this exact prefix.
    #[arg(long)]
    pub prefix: Option<String>,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

#[derive(Serialize)]
struct Checked<'a> {
    id: &'a str,
    valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    parts: Option<&'a IdParts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

#[derive(Serialize)]
struct ValidateReport<'a> {
    valid: bool,
    results: Vec<Checked<'a>>,
}

impl ValidateCmd {
    pub fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        let ids = if self.ids.is_empty() {
            read_stdin()?
        } else {
            self.ids.clone()
        };
        if ids.is_empty() {
            return Err(UsageError(
                "no IDs given: pass them as arguments or one per line on stdin".into(),
            )
            .into());
        }
        let policy = self.policy.load()?;
        let verdicts = policy
            .validate_many(&ids, self.prefix.as_deref())
            .map_err(idmint::Error::from)?;
        let results: Vec<Checked> = ids
            .iter()
            .zip(&verdicts)
            .map(|(id, verdict)| match verdict {
                Ok(parts) => Checked {
                    id,
                    valid: true,
                    parts: Some(parts),
                    error: None,
                },
                Err(reason) => Checked {
                    id,
                    valid: false,
                    parts: None,
                    error: Some(reason.to_string()),
                },
            })
            .collect();
        let all_valid = results.iter().all(|checked| checked.valid);
        let report = ValidateReport {
            valid: all_valid,
            results,
        };
        output.report(&report, || {
            report
                .results
                .iter()
                .map(|checked| match (checked.parts, &checked.error) {
                    (Some(parts), _) => format!(
                        "{}: ok (prefix {:?}, {}, sequence {})\n",
                        checked.id,
                        parts.prefix,
                        rfc3339_micros(parts.timestamp_micros),
                        parts.sequence
                    ),
                    (None, error) => format!(
                        "{}: invalid: {}\n",
                        checked.id,
                        error.as_deref().unwrap_or("")
                    ),
                })
                .collect()
        })?;
        Ok(if all_valid {
            Outcome::Success
        } else {
            Outcome::Failure
        })
    }
}

fn read_stdin() -> anyhow::Result<Vec<String>> {
    let stdin = io::stdin();
    if stdin.is_terminal() {
        return Ok(Vec::new());
    }
    let mut ids = Vec::new();
    for line in stdin.lock().lines() {
        let line = line?;
        let id = line.trim();
        if !id.is_empty() {
            ids.push(id.to_string());
        }
    }
    Ok(ids)
}
