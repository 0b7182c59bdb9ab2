//! `idmint validate [ID ...]`: check IDs against the policy.

use std::io::{self, BufRead, IsTerminal};

use clap::Args;
use idmint::policy::{check_ids, IdParts};
use serde::Serialize;

use super::counter::rfc3339_micros;
use super::exit::UsageError;
use super::layout_args::LayoutArgs;
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
    /// Read each valid ID as a snowflake ID of this layout (with --unit,
    /// --epoch): its time, worker id and sequence, as the policy decodes
    /// them (or, for a policy of contract 0.2.0, as the layout does). A bare
    /// number (a raw value, as `seq` prints it) is decoded by the layout alone.
    #[command(flatten)]
    pub snowflake: LayoutArgs,
}

/// A snowflake ID's parts, decoded with the layout given.
#[derive(Serialize)]
struct SnowflakeView {
    time: u64,
    worker: u64,
    seq: u64,
    issued_at: String,
    /// The counter's tag, read back by a policy that writes it (contract
    /// 0.5.0: the standard IDs); 0 otherwise, and then not shown.
    #[serde(skip_serializing_if = "is_zero")]
    tag: u32,
}

fn is_zero(tag: &u32) -> bool {
    *tag == 0
}

#[derive(Serialize)]
struct Checked<'a> {
    id: &'a str,
    valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    parts: Option<&'a IdParts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    snowflake: Option<SnowflakeView>,
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
        let layout = if self.snowflake.given() {
            Some(self.snowflake.layout()?)
        } else {
            None
        };
        // Raw snowflake values by the layout, the rest by the policy,
        // loaded only for them: the library's one routing.
        let verdicts = check_ids(&ids, self.prefix.as_deref(), layout.as_ref(), || {
            self.policy.load()
        })?;
        let results: Vec<Checked> = ids
            .iter()
            .zip(&verdicts)
            .map(|(id, verdict)| match verdict {
                Ok(parts) => Checked {
                    id,
                    valid: true,
                    parts: Some(parts),
                    // The policy's reading (contract 0.3.0), else the layout's.
                    snowflake: layout.and_then(|layout| {
                        let decoded = parts
                            .snowflake
                            .or_else(|| layout.decompose(parts.sequence))?;
                        Some(SnowflakeView {
                            time: decoded.time,
                            worker: decoded.worker,
                            seq: decoded.seq,
                            tag: decoded.tag,
                            issued_at: rfc3339_micros(layout.unix_ms_of(decoded.time) * 1000),
                        })
                    }),
                    error: None,
                },
                Err(reason) => Checked {
                    id,
                    valid: false,
                    parts: None,
                    snowflake: None,
                    error: Some(reason.clone()),
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
                .map(|checked| match (checked.parts, &checked.snowflake, &checked.error) {
                    (Some(parts), Some(snowflake), _) => format!(
                        "{}: ok (prefix {:?}, snowflake {}: issued at {}, worker {}, sequence {}{})\n",
                        checked.id,
                        parts.prefix,
                        parts.sequence,
                        snowflake.issued_at,
                        snowflake.worker,
                        snowflake.seq,
                        match snowflake.tag {
                            0 => String::new(),
                            tag => format!(", counter tag {tag}"),
                        }
                    ),
                    (Some(parts), None, _) => format!(
                        "{}: ok (prefix {:?}, {}, sequence {})\n",
                        checked.id,
                        parts.prefix,
                        rfc3339_micros(parts.timestamp_micros),
                        parts.sequence
                    ),
                    (None, _, error) => format!(
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
