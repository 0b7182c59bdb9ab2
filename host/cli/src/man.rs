//! `idmint man`: the manual pages, made from the command line's own
//! definition (clap_mangen): `idmint.1` on stdout, or with `--dir` one page
//! per command (`idmint-counter-create.1`, ...), as a package installs them
//! under `man1/`.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;

use super::exit::UsageError;
use super::{Outcome, Output};

/// Arguments of `idmint man`.
#[derive(Debug, Args)]
pub struct ManCmd {
    /// Write every command's page into this directory (it must exist)
    /// instead of printing idmint.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Serialize)]
struct Written {
    written: Vec<String>,
}

impl ManCmd {
    /// Prints or writes the pages of `command` (the whole command line, as
    /// `cli.rs` builds it).
    pub fn execute(&self, output: &Output, command: clap::Command) -> anyhow::Result<Outcome> {
        let Some(dir) = &self.dir else {
            let mut page = Vec::new();
            clap_mangen::Man::new(command).render(&mut page)?;
            std::io::stdout().lock().write_all(&page)?;
            return Ok(Outcome::Success);
        };
        if !dir.is_dir() {
            return Err(UsageError(format!(
                "--dir {}: not a directory (make it first)",
                dir.display()
            ))
            .into());
        }
        let pages = pages(command)?;
        let mut written = Vec::new();
        for (name, page) in pages {
            write_whole(&dir.join(&name), &page)?;
            written.push(name);
        }
        output.report(
            &Written {
                written: written.clone(),
            },
            || {
                written
                    .iter()
                    .map(|name| dir.join(name).display().to_string())
                    .collect::<Vec<_>>()
                    .join("\n")
            },
        )?;
        Ok(Outcome::Success)
    }
}

/// Every visible command's page, `(file name, roff)`, each command before
/// its subcommands, all rendered before any is written.
fn pages(mut command: clap::Command) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    command.build();
    let mut pages = Vec::new();
    add_pages(command, &mut pages)?;
    Ok(pages)
}

fn add_pages(command: clap::Command, pages: &mut Vec<(String, Vec<u8>)>) -> anyhow::Result<()> {
    let subcommands: Vec<clap::Command> = command
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .cloned()
        .collect();
    let man = clap_mangen::Man::new(command);
    let mut page = Vec::new();
    man.render(&mut page)?;
    pages.push((man.get_filename(), page));
    for sub in subcommands {
        add_pages(sub, pages)?;
    }
    Ok(())
}

/// Writes `bytes` to `path` through a file beside it renamed into place, so
/// that a page is never left half-written.
fn write_whole(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let partial = path.with_extension("1.partial");
    std::fs::write(&partial, bytes)
        .map_err(|error| anyhow::anyhow!("write {}: {error}", partial.display()))?;
    std::fs::rename(&partial, path)
        .map_err(|error| anyhow::anyhow!("rename {} into place: {error}", path.display()))?;
    Ok(())
}
