//! The docs agree with the CLI and with themselves.
//!
//! - `docs/reference.md` names every subcommand and every long flag of
//!   the `idmint` under test, and none that it does not have. The CLI's own definition is read from
//!   the binary's help (`idmint --help`, then `idmint PATH --help` down the
//!   command tree; hidden commands and flags are not shown there, so they
//!   are not asked for). The reference gives each command a heading
//!   `` ### `idmint PATH` ``, its own flags as the rows of a table under it
//!   (`` | `--flag ARG` | meaning | ``), and links to "database flags" when it
//!   takes `--uri`, `--uris`, `--db` and `--server-timeout`, documented once with
//!   `--json`, `--help` and `--version` under "Common flags"
//!   ([`reference_lists_every_command_and_flag_and_no_other`]).
//! - Every relative link of README.md, ARCHITECTURE.md and `docs/*.md`
//!   names a file that exists, and an anchor that a heading (or an
//!   `<a id>`) of that file makes ([`links_between_the_docs_resolve`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use crate::support;

/// Flags documented once for every command that has them, not per command.
const COMMON_FLAGS: &[&str] = &[
    "--json",
    "--help",
    "--version",
    "--uri",
    "--uris",
    "--db",
    "--server-timeout",
];
/// The flag that tells a command takes the database flags.
const DATABASE_FLAG: &str = "--uri";
/// What a command's section says when it takes them.
const DATABASE_FLAGS_LINK: &str = "[database flags](#database-flags)";

#[test]
fn reference_lists_every_command_and_flag_and_no_other() {
    let reference = std::fs::read_to_string(support::workspace_root().join("docs/reference.md"))
        .expect("read docs/reference.md");
    let problems = reference_problems(&cli_commands(), &reference);
    assert!(
        problems.is_empty(),
        "docs/reference.md does not match `idmint --help`:\n  {}",
        problems.join("\n  ")
    );
}

/// Every command path of the CLI (`["counter", "create"]`), the root (`[]`)
/// included, with its long flags.
fn cli_commands() -> BTreeMap<Vec<String>, BTreeSet<String>> {
    let mut commands = BTreeMap::new();
    let mut pending = vec![Vec::<String>::new()];
    while let Some(path) = pending.pop() {
        let output = Command::new(env!("CARGO_BIN_EXE_idmint"))
            .args(&path)
            .arg("--help")
            .output()
            .expect("run idmint --help");
        assert!(output.status.success(), "idmint {path:?} --help failed");
        let help = String::from_utf8(output.stdout).expect("help is UTF-8");
        let (subcommands, flags) = parse_help(&help);
        for subcommand in subcommands {
            let mut child = path.clone();
            child.push(subcommand);
            pending.push(child);
        }
        commands.insert(path, flags);
    }
    commands
}

/// The subcommands (`help` aside) and long flags a clap help text lists.
/// An entry starts at a fixed indent: two spaces (`  NAME  about`,
/// `  -c, --count <N>`) or six (`      --json`); wrapped text is indented
/// further, so a flag named in a description is not taken for one.
fn parse_help(help: &str) -> (Vec<String>, BTreeSet<String>) {
    let mut subcommands = Vec::new();
    let mut flags = BTreeSet::new();
    let mut section = "";
    for line in help.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if !line.starts_with(' ') {
            section = line.trim_end_matches(':');
            continue;
        }
        let entry = if let Some(rest) = line.strip_prefix("      ") {
            (!rest.starts_with(' ')).then_some(rest)
        } else {
            line.strip_prefix("  ")
                .filter(|rest| !rest.starts_with(' '))
        };
        let Some(entry) = entry else { continue };
        match section {
            "Commands" => {
                let name = entry.split_whitespace().next().unwrap_or_default();
                if name != "help" {
                    subcommands.push(name.to_string());
                }
            }
            "Options" => {
                let names = entry.split("  ").next().unwrap_or_default();
                flags.extend(
                    names
                        .split([',', ' '])
                        .filter(|word| word.starts_with("--"))
                        .map(str::to_string),
                );
            }
            _ => {}
        }
    }
    (subcommands, flags)
}

/// What the reference gets wrong about `commands`, one line each.
fn reference_problems(
    commands: &BTreeMap<Vec<String>, BTreeSet<String>>,
    reference: &str,
) -> Vec<String> {
    let mut problems = Vec::new();
    let sections = command_sections(reference);
    let all_flags: BTreeSet<&String> = commands.values().flatten().collect();

    // Leaf commands: a group (`counter`) is documented by its commands.
    let leaves: BTreeMap<&Vec<String>, &BTreeSet<String>> = commands
        .iter()
        .filter(|(path, _)| {
            !path.is_empty()
                && !commands
                    .keys()
                    .any(|other| other.len() > path.len() && other.starts_with(path))
        })
        .collect();
    for (path, flags) in &leaves {
        let name = format!("idmint {}", path.join(" "));
        let Some(section) = sections.get(&name) else {
            problems.push(format!("`{name}` has no section (### `{name}`)"));
            continue;
        };
        let own: BTreeSet<&String> = flags
            .iter()
            .filter(|flag| !COMMON_FLAGS.contains(&flag.as_str()))
            .collect();
        let documented: BTreeSet<&String> = section.flags.iter().collect();
        for flag in own.difference(&documented) {
            problems.push(format!("`{name}`: flag {flag} is not in its table"));
        }
        for flag in documented.difference(&own) {
            problems.push(format!(
                "`{name}`: its table lists {flag}, which it does not take"
            ));
        }
        let takes_database = flags.contains(DATABASE_FLAG);
        if takes_database != section.text.contains(DATABASE_FLAGS_LINK) {
            problems.push(format!(
                "`{name}`: {} the database flags, but its section {} \"{DATABASE_FLAGS_LINK}\"",
                if takes_database {
                    "takes"
                } else {
                    "does not take"
                },
                if takes_database {
                    "does not say"
                } else {
                    "says"
                },
            ));
        }
    }
    for name in sections.keys() {
        let known = leaves
            .keys()
            .any(|path| *name == format!("idmint {}", path.join(" ")));
        if !known {
            problems.push(format!("a section for `{name}`, which is not a command"));
        }
    }
    // Any flag named anywhere must exist; the common ones must be documented.
    let named = flags_named(reference);
    for flag in &named {
        if !all_flags.contains(flag) {
            problems.push(format!("{flag} is named but no command takes it"));
        }
    }
    for flag in COMMON_FLAGS {
        let taken = all_flags.iter().any(|known| known == flag);
        let row = format!("| `{flag}");
        if taken && !reference.lines().any(|line| line.starts_with(&row)) {
            problems.push(format!("{flag} has no row under the common flags"));
        }
    }
    problems
}

/// A command's section of the reference.
struct Section {
    /// Its text, heading excluded.
    text: String,
    /// The long flags in the first cells of its tables' rows.
    flags: Vec<String>,
}

/// The sections headed `` ### `idmint PATH` ``, by `idmint PATH`.
fn command_sections(reference: &str) -> BTreeMap<String, Section> {
    let mut sections = BTreeMap::new();
    let mut current: Option<(String, Section)> = None;
    for line in reference.lines() {
        if line.starts_with('#') {
            sections.extend(current.take());
            let name = line
                .strip_prefix("### `")
                .and_then(|rest| rest.strip_suffix('`'))
                .filter(|name| name.starts_with("idmint"));
            current = name.map(|name| {
                (
                    name.to_string(),
                    Section {
                        text: String::new(),
                        flags: Vec::new(),
                    },
                )
            });
            continue;
        }
        let Some((_, section)) = current.as_mut() else {
            continue;
        };
        section.text.push_str(line);
        section.text.push('\n');
        if let Some(first_cell) = line
            .strip_prefix("| ")
            .and_then(|row| row.split(" | ").next())
        {
            section.flags.extend(flags_named(first_cell));
        }
    }
    sections.extend(current);
    sections
}

/// The long flags (`--name`) a text names.
fn flags_named(text: &str) -> BTreeSet<String> {
    let mut flags = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("--") {
        let before = rest[..at].chars().next_back();
        let after = &rest[at + 2..];
        let length = after
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
            .unwrap_or(after.len());
        let name = &after[..length];
        // `--name`, not a `---` rule, `-- COMMAND` or a word's inner dashes.
        let starts_word = before.is_none_or(|c| !c.is_ascii_alphanumeric() && c != '-');
        if starts_word && name.starts_with(|c: char| c.is_ascii_lowercase()) {
            flags.insert(format!("--{name}"));
        }
        rest = &after[length..];
    }
    flags
}

#[test]
fn links_between_the_docs_resolve() {
    let root = support::workspace_root();
    let mut files = vec!["README.md".to_string(), "ARCHITECTURE.md".to_string()];
    for entry in std::fs::read_dir(root.join("docs")).expect("read docs/") {
        let name = entry.expect("a docs/ entry").file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".md") {
            files.push(format!("docs/{name}"));
        }
    }
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(root.join(file))
            .unwrap_or_else(|error| panic!("read {file}: {error}"));
        let dir = Path::new(file).parent().unwrap_or(Path::new(""));
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((target.as_str(), ""));
            let linked = if path.is_empty() {
                root.join(file)
            } else {
                root.join(dir).join(path)
            };
            if !linked.exists() {
                broken.push(format!("{file}:{line}: {target}: no such file"));
                continue;
            }
            if !anchor.is_empty() {
                let anchors = std::fs::read_to_string(&linked)
                    .map(|text| anchors(&text))
                    .unwrap_or_default();
                if !anchors.contains(anchor) {
                    broken.push(format!("{file}:{line}: {target}: no such anchor"));
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links that do not resolve:\n  {}",
        broken.join("\n  ")
    );
}

/// The targets of the markdown links `[text](target)` outside code blocks
/// and code spans, with their line numbers.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut fenced = false;
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut in_code = false;
        let mut rest = line;
        while let Some(c) = rest.chars().next() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code && rest.starts_with("](") {
                if let Some(end) = rest[2..].find(')') {
                    found.push((index + 1, rest[2..2 + end].to_string()));
                }
            }
            rest = &rest[c.len_utf8()..];
        }
    }
    found
}

/// The anchors a markdown file has: its headings' (GitHub's rule: lower
/// case, spaces to dashes, other punctuation dropped, `-N` for repeats)
/// and its `<a id="...">`s.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut anchors = BTreeSet::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("<a id=\"") {
            let after = &rest[at + 7..];
            if let Some(end) = after.find('"') {
                anchors.insert(after[..end].to_string());
            }
            rest = after;
        }
        let heading = line.trim_start_matches('#');
        if heading.len() == line.len() || !heading.starts_with(' ') {
            continue;
        }
        let slug: String = heading
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        let count = seen.entry(slug.clone()).or_insert(0);
        anchors.insert(if *count == 0 {
            slug.clone()
        } else {
            format!("{slug}-{count}")
        });
        *count += 1;
    }
    anchors
}

/// The checks' own rules, without the binary.
mod rules {
    use super::*;

    fn strings(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn help_entries_are_read_and_wrapped_text_is_not() {
        let help = "Usage: idmint counter [OPTIONS] <COMMAND>\n\
            \n\
            Commands:\n  \
              create  Create a counter: see --kind\n  \
              help    Print this message\n\
            \n\
            Options:\n      \
                  --kind <KIND>  the kind, wrapped onto\n                     \
                                 --next lines\n\
            \n  \
              -y, --yes\n          \
                      yes, a long help's entry\n";
        let (commands, flags) = parse_help(help);
        assert_eq!(commands, ["create"]);
        assert_eq!(flags, strings(&["--kind", "--yes"]));
    }

    #[test]
    fn a_missing_or_invented_command_or_flag_is_a_problem() {
        let commands: BTreeMap<Vec<String>, BTreeSet<String>> = [
            (vec![], strings(&["--json", "--help"])),
            (vec!["seq".into()], strings(&["--count", "--uri", "--json"])),
            (vec!["validate".into()], strings(&["--prefix"])),
        ]
        .into_iter()
        .collect();
        let good = "| `--json` | x |\n| `--help` | x |\n| `--uri URI` | x |\n\
            ### `idmint seq`\n\nTakes the [database flags](#database-flags).\n\n\
            | `--count N` | how many |\n\
            ### `idmint validate`\n\n| `--prefix P` | the prefix |\n";
        assert_eq!(reference_problems(&commands, good), Vec::<String>::new());
        for bad in [
            good.replace("| `--count N` | how many |\n", ""),
            good.replace("--count N", "--count N`, `--counted"),
            good.replace("### `idmint validate`", "### `idmint validation`"),
            good.replace("Takes the [database flags](#database-flags).", ""),
            good.replace("the prefix", "see `--stream`"),
        ] {
            assert!(
                !reference_problems(&commands, &bad).is_empty(),
                "accepted:\n{bad}"
            );
        }
    }

    #[test]
    fn flags_are_whole_words() {
        assert_eq!(
            flags_named("`--count N`, ---, lock run -- COMMAND, a--b, `-y, --yes`"),
            strings(&["--count", "--yes"])
        );
    }

    #[test]
    fn anchors_follow_github() {
        let text = "# Locks\n## What a holder is guaranteed, and for how long\n\
            ### `idmint serve`\n## From another language: `idmint pipeline`\n\
            ```\n# not a heading\n```\n## Locks\n<a id=\"prefixes\"></a>text\n";
        assert_eq!(
            anchors(text),
            strings(&[
                "locks",
                "what-a-holder-is-guaranteed-and-for-how-long",
                "idmint-serve",
                "from-another-language-idmint-pipeline",
                "locks-1",
                "prefixes",
            ])
        );
        assert_eq!(
            links("see [a](b.md#c) and `[x](not-a-link)`\n```\n[y](z)\n```\n"),
            [(1, "b.md#c".to_string())]
        );
    }
}
