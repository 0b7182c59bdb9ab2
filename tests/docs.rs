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
//! - Every relative link of README.md, ARCHITECTURE.md, `docs/*.md` and
//!   `docs/design/*.md` names a file that exists, and an anchor that a heading (or an
//!   `<a id>`) of that file makes ([`links_between_the_docs_resolve`]).
//! - The kinds of counter are the registry's everywhere: the kinds the
//!   binary knows (what `counter create --kind` accepts) are exactly those
//!   of `docs/counter-kinds.md`'s `--kind` list and README's kinds table, and
//!   no help text of the CLI names a kind it does not know
//!   ([`help_texts_and_docs_name_the_registry_s_kinds`]).
//! - `docs/reference.md`'s environment table names every environment
//!   variable the host code reads (`env::var`, clap's `env = "..."`, ...), but
//!   those only Cargo or the soak sets, and every variable in its first column
//!   is one the code reads or sets ([`environment_table_matches_the_code`]).

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
    help_texts()
        .into_iter()
        .map(|(path, help)| (path, parse_help(&help).1))
        .collect()
}

/// Every command path of the CLI, the root included, with its `--help` text.
fn help_texts() -> BTreeMap<Vec<String>, String> {
    let mut texts = BTreeMap::new();
    let mut pending = vec![Vec::<String>::new()];
    while let Some(path) = pending.pop() {
        let output = Command::new(env!("CARGO_BIN_EXE_idmint"))
            .args(&path)
            .arg("--help")
            .output()
            .expect("run idmint --help");
        assert!(output.status.success(), "idmint {path:?} --help failed");
        let help = String::from_utf8(output.stdout).expect("help is UTF-8");
        for subcommand in parse_help(&help).0 {
            let mut child = path.clone();
            child.push(subcommand);
            pending.push(child);
        }
        texts.insert(path, help);
    }
    texts
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
    for dir in ["docs", "docs/design"] {
        let entries =
            std::fs::read_dir(root.join(dir)).unwrap_or_else(|e| panic!("read {dir}/: {e}"));
        for entry in entries {
            let name = entry.expect("a directory entry").file_name();
            let name = name.to_string_lossy();
            if name.ends_with(".md") {
                files.push(format!("{dir}/{name}"));
            }
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

/// Words that may stand before "counter" or "lane" in a help text without
/// naming a kind ("a striped counter", "holding counters"). A word there
/// that is neither one of these nor a kind the binary knows fails
/// [`help_texts_and_docs_name_the_registry_s_kinds`]: name a real kind, or
/// add the word here if it is plain English.
const NOT_KINDS: &[&str] = &[
    "a",
    "an",
    "another",
    "any",
    "counter",
    "each",
    "every",
    "holding",
    "idmint",
    "inspect",
    "its",
    "many",
    "new",
    "no",
    "of",
    "one",
    "other",
    "some",
    "striped",
    "the",
    "their",
    "this",
    "unstriped",
];

#[test]
fn help_texts_and_docs_name_the_registry_s_kinds() {
    let known = registry_kinds();
    assert!(known.len() >= 2, "read no kinds from the binary: {known:?}");
    let mut problems = Vec::new();
    for (path, help) in help_texts() {
        let (named, unknown) = kinds_named(&help, &known);
        for word in unknown {
            problems.push(format!(
                "`idmint {}` --help names a kind of counter `{word}`, which the binary does not \
                 know (if it is not meant as a kind, add it to NOT_KINDS)",
                path.join(" ")
            ));
        }
        if path == ["counter", "create"] && named != known {
            problems.push(format!(
                "`idmint counter create --help` names the kinds {named:?}, not the registry's {known:?}"
            ));
        }
    }
    let root = support::workspace_root();
    let guide = std::fs::read_to_string(root.join("docs/counter-kinds.md"))
        .expect("read docs/counter-kinds.md");
    match guide_kinds(&guide) {
        Some(listed) if listed == known => {}
        listed => problems.push(format!(
            "docs/counter-kinds.md's `idmint counter create NAME --kind ...` lists {listed:?}, not \
             the registry's {known:?}"
        )),
    }
    let readme = std::fs::read_to_string(root.join("README.md")).expect("read README.md");
    let table = readme_kinds(&readme);
    if table != known {
        problems.push(format!(
            "README's kinds table (under \"## Counter kinds\") has the rows {table:?}, not the \
             registry's {known:?}"
        ));
    }
    assert!(
        problems.is_empty(),
        "kinds of counter:\n  {}",
        problems.join("\n  ")
    );
}

/// The kinds the binary under test knows, as its refusal of an unknown
/// `--kind` lists them (`... idmint knows cyclic, autoinc and periodic`).
fn registry_kinds() -> BTreeSet<String> {
    let output = Command::new(env!("CARGO_BIN_EXE_idmint"))
        .args(["counter", "create", "c", "--kind", "no-such-kind"])
        .output()
        .expect("run idmint counter create --kind no-such-kind");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = stderr
        .lines()
        .find_map(|line| line.split_once("idmint knows ").map(|(_, list)| list))
        .unwrap_or_else(|| panic!("the refusal of an unknown kind lists none:\n{stderr}"));
    words_of_list(line)
}

/// The words of "a, b and c" (or "a, b or c").
fn words_of_list(list: &str) -> BTreeSet<String> {
    list.split(", ")
        .flat_map(|part| part.split(" and "))
        .flat_map(|part| part.split(" or "))
        .map(|word| word.trim().to_string())
        .filter(|word| !word.is_empty())
        .collect()
}

/// The kinds a help text names, and the words it puts where a kind goes
/// that are neither a kind of `known` nor one of [`NOT_KINDS`]. A kind
/// goes before "counter(s)" or "lane(s)", with the kinds listed before it
/// ("autoinc, segment and cyclic counters"), and before the colon of an
/// option's per-kind help ("autoinc, segment: the first value").
fn kinds_named(help: &str, known: &BTreeSet<String>) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut named = BTreeSet::new();
    let mut unknown = BTreeSet::new();
    let text = help.split_whitespace().collect::<Vec<_>>().join(" ");
    let words: Vec<&str> = text.split(' ').collect();
    let bare = |word: &str| -> String {
        word.trim_matches(|c: char| !c.is_alphanumeric())
            .trim_end_matches("'s")
            .to_lowercase()
    };
    let is_noun = |word: &str| {
        let word = word.trim_end_matches(|c: char| !c.is_alphanumeric());
        ["counter", "counters", "lane", "lanes"].contains(&word)
    };
    for (at, word) in words.iter().enumerate() {
        if !is_noun(word) || at == 0 {
            continue;
        }
        // Back over "x, y and z": the word before the noun, then, while it
        // is a kind, the words its list joins to it.
        let mut index = at - 1;
        let mut first = true;
        loop {
            // "install, counters" or "(its data) counter": the word ends a
            // phrase of its own and says nothing of the noun.
            if first && !words[index].ends_with(|c: char| c.is_alphanumeric()) {
                break;
            }
            let candidate = bare(words[index]);
            if known.contains(&candidate) {
                named.insert(candidate);
            } else {
                if !candidate.is_empty() && !NOT_KINDS.contains(&candidate.as_str()) {
                    unknown.insert(candidate);
                }
                break;
            }
            first = false;
            if index == 0 {
                break;
            }
            let before = words[index - 1];
            if before.ends_with(',') {
                index -= 1;
            } else if index >= 2 && ["and", "or"].contains(&before) {
                index -= 2;
            } else {
                break;
            }
        }
    }
    // An option's per-kind help: "cyclic: the largest ..." or "autoinc,
    // segment: the first ...", and `--kind`'s "KIND: what it is; ...".
    for line in help.lines() {
        let entry = line.trim_start();
        let description = match entry.strip_prefix("--").or_else(|| entry.strip_prefix("-")) {
            Some(rest) => rest.split_once("  ").map(|(_, d)| d.trim_start()),
            None => None,
        };
        for part in description.into_iter().flat_map(|d| d.split("; ")) {
            let Some((head, _)) = part.split_once(": ") else {
                continue;
            };
            let head_words = words_of_list(head);
            let lower = head_words.iter().all(|w| {
                w.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            });
            if !lower || head_words.is_empty() {
                continue;
            }
            for word in head_words {
                if known.contains(&word) {
                    named.insert(word);
                } else {
                    unknown.insert(word);
                }
            }
        }
    }
    (named, unknown)
}

/// The kinds of docs/counter-kinds.md's `idmint counter create NAME --kind
/// a|b|c`.
fn guide_kinds(guide: &str) -> Option<BTreeSet<String>> {
    let text = guide.split_whitespace().collect::<Vec<_>>().join(" ");
    let after = text.split_once("`idmint counter create NAME --kind ")?.1;
    let list = after.split('`').next()?;
    Some(list.split('|').map(str::to_string).collect())
}

/// The kinds in the first column of README's table under "## Counter
/// kinds": `` | `cyclic` (default) | ... ``.
fn readme_kinds(readme: &str) -> BTreeSet<String> {
    let section = format!("\n{readme}");
    let section = section
        .split("\n## ")
        .find(|section| section.starts_with("Counter kinds"))
        .unwrap_or_default();
    section
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split('`').next())
        .map(str::to_string)
        .collect()
}

/// Environment variables the host code reads that are not for users, and
/// why the reference leaves them out.
const NOT_FOR_USERS: &[(&str, &str)] = &[
    (
        "CARGO",
        "set by Cargo for the build script that builds the policies",
    ),
    (
        "RUSTC",
        "set by Cargo for the build script that builds the policies",
    ),
    ("OUT_DIR", "set by Cargo for the build script"),
    (
        "IDMINT_SOAK_BROKEN",
        "read only by the `soak-broken` feature, which the binary users build never has",
    ),
];

/// Flags of `serve` that are not settings of the service: help, and the
/// global switch of every command's output format.
const SERVE_FLAGS_WITHOUT_A_VARIABLE: &[&str] = &["--help", "--json"];

/// Every setting of `serve` that has a flag can be set from the
/// environment: each flag its help lists says `[env: VARIABLE=]` (the
/// variables themselves are held to the reference's table by
/// [`environment_table_matches_the_code`]).
#[test]
fn every_serve_flag_can_be_set_from_the_environment() {
    let help = help_texts()
        .remove(&vec!["serve".to_string()])
        .expect("serve's help");
    let missing = flags_without_a_variable(&help);
    assert!(
        missing.is_empty(),
        "serve flags with no environment variable: {missing:?}"
    );
}

/// The long flags of a clap help text whose entry names no `[env: ...]`,
/// those of [`SERVE_FLAGS_WITHOUT_A_VARIABLE`] aside. An entry is its
/// flag line and the lines indented further below it.
fn flags_without_a_variable(help: &str) -> Vec<String> {
    let mut entries: Vec<(String, String)> = Vec::new();
    for line in help.lines() {
        let entry = line
            .strip_prefix("      ")
            .filter(|rest| rest.starts_with("--"))
            .or_else(|| line.strip_prefix("  ").filter(|rest| rest.starts_with('-')));
        match entry {
            Some(entry) => {
                let names = entry.split("  ").next().unwrap_or_default();
                let flag = names
                    .split([',', ' '])
                    .find(|word| word.starts_with("--"))
                    .unwrap_or_default();
                entries.push((flag.to_string(), entry.to_string()));
            }
            None => {
                if let Some((_, text)) = entries.last_mut() {
                    text.push_str(line);
                }
            }
        }
    }
    entries
        .into_iter()
        .filter(|(flag, text)| {
            !SERVE_FLAGS_WITHOUT_A_VARIABLE.contains(&flag.as_str()) && !text.contains("[env: ")
        })
        .map(|(flag, _)| flag)
        .collect()
}

#[test]
fn environment_table_matches_the_code() {
    let root = support::workspace_root();
    let mut sources = Vec::new();
    rust_sources(&root.join("host"), &mut sources);
    assert!(!sources.is_empty(), "found no sources under host/");
    let mut read = BTreeSet::new();
    let mut set = BTreeSet::new();
    for path in &sources {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|error| panic!("read {}: {error}", path.display()));
        let (reads, sets) = variables_in_code(&text);
        read.extend(reads);
        set.extend(sets);
    }
    let reference =
        std::fs::read_to_string(root.join("docs/reference.md")).expect("read docs/reference.md");
    let (rows, mentioned) = environment_table(&reference);
    let problems = environment_problems(&read, &set, &rows, &mentioned);
    assert!(
        problems.is_empty(),
        "docs/reference.md's environment table does not match the code:\n  {}",
        problems.join("\n  ")
    );
}

/// The `.rs` files under `dir`, `target/` aside.
fn rust_sources(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            if path.file_name().is_some_and(|name| name != "target") {
                rust_sources(&path, found);
            }
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
}

/// The environment variables a source file reads, and those it sets for a
/// child process, by the ways host code does: `env::var("X")`,
/// `env::var_os("X")`, a `var("X")` helper, clap's `env = "X"`, a
/// `prebuilt_env: "X"` of the policies' build, a `..._ENV: &str = "X"`
/// constant, tracing's `EnvFilter::..._default_env` (`RUST_LOG`); and
/// `.env("X", ...)` for what it sets.
fn variables_in_code(text: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut read = BTreeSet::new();
    let mut set = BTreeSet::new();
    for opening in [
        "var(\"",
        "var_os(\"",
        "env = \"",
        "prebuilt_env: \"",
        "_ENV: &str = \"",
    ] {
        read.extend(quoted_after(text, opening));
    }
    if text.contains("_default_env()") {
        read.insert("RUST_LOG".to_string());
    }
    set.extend(quoted_after(text, ".env(\""));
    (read, set)
}

/// The upper-case names quoted right after each `opening` in `text`.
fn quoted_after(text: &str, opening: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find(opening) {
        rest = &rest[at + opening.len()..];
        let name = rest.split('"').next().unwrap_or_default();
        if is_variable(name) {
            names.insert(name.to_string());
        }
    }
    names
}

/// Whether `name` looks like an environment variable: `A_B2`.
fn is_variable(name: &str) -> bool {
    name.len() >= 2
        && name.starts_with(|c: char| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The environment table of the reference (the table under
/// "## Environment"): the variables of its first column, and every
/// variable named anywhere in its rows.
fn environment_table(reference: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let section = format!("\n{reference}");
    let section = section
        .split("\n## ")
        .find(|section| section.starts_with("Environment"))
        .unwrap_or_default();
    let mut rows = BTreeSet::new();
    let mut mentioned = BTreeSet::new();
    for line in section.lines().filter(|line| line.starts_with("| `")) {
        let first = line[2..].split(" | ").next().unwrap_or_default();
        rows.extend(
            first
                .split('`')
                .filter(|part| is_variable(part))
                .map(str::to_string),
        );
        mentioned.extend(
            line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|word| is_variable(word))
                .map(str::to_string),
        );
    }
    (rows, mentioned)
}

/// What the environment table gets wrong about the code, one line each.
fn environment_problems(
    read: &BTreeSet<String>,
    set: &BTreeSet<String>,
    rows: &BTreeSet<String>,
    mentioned: &BTreeSet<String>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let excluded = |name: &str| {
        name.starts_with("CARGO_") || NOT_FOR_USERS.iter().any(|(known, _)| *known == name)
    };
    for name in read.iter().filter(|name| !excluded(name)) {
        if !mentioned.contains(name) {
            problems.push(format!(
                "the code reads {name}, which the table does not name"
            ));
        }
    }
    for name in rows {
        if !read.contains(name) && !set.contains(name) {
            problems.push(format!(
                "the table has a row for {name}, which no code reads or sets"
            ));
        }
    }
    if rows.is_empty() {
        problems.push("no environment table under \"## Environment\"".to_string());
    }
    problems
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
    fn kinds_are_read_where_a_kind_goes() {
        let known = strings(&["autoinc", "cyclic", "segment"]);
        let help = "Give a counter a new generation. An unstriped autoinc or cyclic\n  \
            counter becomes striped (the counter's lanes).\n\
            Options:\n      --start <N>  autoinc, segment: the first value [default: 1]\n";
        assert_eq!(
            kinds_named(help, &known),
            (strings(&["autoinc", "cyclic", "segment"]), strings(&[]))
        );
        let invented = "a tally counter; autoinc, tally and segment counters\n\
            Options:\n      --step <N>  ledger: the step\n";
        assert_eq!(
            kinds_named(invented, &known).1,
            strings(&["ledger", "tally"])
        );
        assert_eq!(
            words_of_list("cyclic, autoinc and periodic"),
            strings(&["autoinc", "cyclic", "periodic"])
        );
        assert_eq!(
            guide_kinds("with `idmint counter create NAME --kind cyclic|autoinc` (more)"),
            Some(strings(&["autoinc", "cyclic"]))
        );
        assert_eq!(
            readme_kinds(
                "## Counter kinds\n\n| kind | x |\n|---|---|\n| `cyclic` (default) | y |\n\
                | `autoinc` | z |\n\n## Next\n| `other` | w |\n"
            ),
            strings(&["autoinc", "cyclic"])
        );
    }

    #[test]
    fn a_flag_without_env_is_found_across_wrapped_lines() {
        let help = "Options:\n      --listen <ADDR>\n          Address\n          \
                    [env: IDMINT_LISTEN=] [default: x]\n      --max-count <N>\n          \
                    The largest\n  -h, --help\n          Print help\n";
        assert_eq!(super::flags_without_a_variable(help), ["--max-count"]);
    }

    #[test]
    fn environment_variables_are_read_from_the_code_and_the_table() {
        let code = r#"
            #[arg(long, env = "IDMINT_DB")]
            let home = var("HOME");
            std::env::var_os("CARGO");
            pub const CACHE_ENV: &str = "IDMINT_CACHE";
            EnvFilter::try_from_default_env();
            Command::new(x).env("IDMINT_LOCK_TOKEN", token);
            env::var(name);
        "#;
        let (read, set) = variables_in_code(code);
        assert_eq!(
            read,
            strings(&["CARGO", "HOME", "IDMINT_CACHE", "IDMINT_DB", "RUST_LOG"])
        );
        assert_eq!(set, strings(&["IDMINT_LOCK_TOKEN"]));
        let reference = "## Environment\n\n| variable | used for |\n|---|---|\n\
            | `IDMINT_DB` | the database |\n| `IDMINT_CACHE` | default `$HOME/.cache` |\n\
            | `RUST_LOG`, `IDMINT_LOCK_TOKEN` | logs; set for COMMAND |\n\n## Next\n";
        let (rows, mentioned) = environment_table(reference);
        assert_eq!(
            environment_problems(&read, &set, &rows, &mentioned),
            Vec::<String>::new()
        );
        let missing = reference.replace("| `IDMINT_DB` | the database |\n", "");
        let (rows, mentioned) = environment_table(&missing);
        assert_eq!(
            environment_problems(&read, &set, &rows, &mentioned),
            ["the code reads IDMINT_DB, which the table does not name"]
        );
        let invented = reference.replace("`IDMINT_DB`", "`IDMINT_DB`, `IDMINT_OLD`");
        let (rows, mentioned) = environment_table(&invented);
        assert_eq!(
            environment_problems(&read, &set, &rows, &mentioned),
            ["the table has a row for IDMINT_OLD, which no code reads or sets"]
        );
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
