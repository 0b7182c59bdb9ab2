//! `idmint completions SHELL` and `idmint man`, made from the command line's
//! own definition: bash's completion, sourced in a real bash, completes
//! subcommands, nested subcommands, flags and a flag's choices as the
//! binary has them; the manual pages render with man(1), one per command,
//! and list every flag the command's help lists.

use std::process::Command;

use crate::support::{assert_exit, run, stderr, stdout};

/// `idmint` with no server: these commands need none.
fn idmint() -> Command {
    Command::new(env!("CARGO_BIN_EXE_idmint"))
}

/// What bash's completion of `idmint` offers for the words of `line` (the
/// last one being completed), the script sourced from `idmint completions
/// bash` in a real bash, driven as readline drives it (COMP_WORDS,
/// COMP_CWORD, then the function `complete -p idmint` names).
fn bash_completes(line: &[&str]) -> Vec<String> {
    let script = stdout(&run(idmint().args(["completions", "bash"])));
    let words = line
        .iter()
        .map(|word| format!("'{word}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let driver = format!(
        r#"{script}
COMP_WORDS=({words})
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMP_LINE="${{COMP_WORDS[*]}}"
COMP_POINT=${{#COMP_LINE}}
function=$(complete -p idmint | sed -E 's/.*-F ([^ ]+).*/\1/')
"$function" idmint "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\n' "${{COMPREPLY[@]}}"
"#
    );
    let output = run(Command::new("bash").args(["--norc", "-c", &driver]));
    assert_exit(&output, 0);
    let mut offered: Vec<String> = stdout(&output)
        .lines()
        .map(|line| line.trim().to_string())
        .filter(|line| !line.is_empty())
        .collect();
    offered.sort();
    offered
}

#[test]
fn bash_completes_commands_flags_and_choices_as_the_binary_has_them() {
    assert_eq!(bash_completes(&["idmint", "cou"]), ["counter"]);
    assert_eq!(
        bash_completes(&["idmint", "counter", "cr"]),
        ["create"],
        "a nested subcommand"
    );
    assert_eq!(
        bash_completes(&["idmint", "serve", "--max-con"]),
        ["--max-concurrent", "--max-connections"],
        "serve's flags"
    );
    assert_eq!(
        bash_completes(&["idmint", "serve", "--log-format", ""]),
        ["json", "text"],
        "a flag's choices"
    );
    let shells: Vec<String> = bash_completes(&["idmint", "completions", ""])
        .into_iter()
        .filter(|word| !word.starts_with('-'))
        .collect();
    assert_eq!(shells, ["bash", "elvish", "fish", "powershell", "zsh"]);
}

#[test]
fn every_shell_gets_a_script_and_an_unknown_one_is_refused() {
    for shell in ["bash", "elvish", "fish", "powershell", "zsh"] {
        let output = run(idmint().args(["completions", shell]));
        assert_exit(&output, 0);
        let script = stdout(&output);
        // fish names a flag without its dashes (`-l max-connections`).
        for name in ["counter", "serve", "max-connections"] {
            assert!(script.contains(name), "{shell}'s script lacks {name}");
        }
    }
    let refused = run(idmint().args(["completions", "tcsh"]));
    assert_exit(&refused, 2);
    assert!(
        stderr(&refused).contains("invalid value 'tcsh'"),
        "{}",
        stderr(&refused)
    );
}

/// The long flags `idmint ARGS --help` lists.
fn flags_in_help(args: &[&str]) -> Vec<String> {
    let help = stdout(&run(idmint().args(args).arg("--help")));
    let mut flags: Vec<String> = help
        .lines()
        .filter_map(|line| {
            let entry = line.trim_start();
            let names = entry.split("  ").next()?;
            (line.starts_with("  ") && !line.starts_with("        ")).then_some(names)
        })
        .flat_map(|names| {
            names
                .split([',', ' '])
                .filter(|word| word.starts_with("--"))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    flags.sort();
    flags.dedup();
    flags
}

/// `man -l PAGE` as plain ASCII text (no typographic hyphens), wide
/// enough that no flag is broken.
fn rendered(page: &std::path::Path) -> String {
    let output = run(Command::new("man")
        .arg("-l")
        .arg(page)
        .env("MANWIDTH", "300")
        .env("LC_ALL", "C"));
    assert_exit(&output, 0);
    stdout(&output)
}

#[test]
fn man_writes_a_page_per_command_that_man_renders_with_every_flag() {
    let printed = run(idmint().arg("man"));
    assert_exit(&printed, 0);
    assert!(stdout(&printed).contains(".TH idmint 1"));

    let dir = tempfile::tempdir().unwrap();
    let written = run(idmint().args(["man", "--json", "--dir"]).arg(dir.path()));
    assert_exit(&written, 0);
    let report: serde_json::Value = serde_json::from_str(&stdout(&written)).unwrap();
    let names: Vec<&str> = report["written"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|name| name.as_str())
        .collect();
    for page in [
        "idmint.1",
        "idmint-serve.1",
        "idmint-counter-create.1",
        "idmint-lock-run.1",
    ] {
        assert!(names.contains(&page), "{page} not written: {names:?}");
        assert!(dir.path().join(page).is_file());
    }
    assert!(!names.iter().any(|name| name.contains("help")), "{names:?}");
    let mut on_disk: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut reported: Vec<String> = names.iter().map(|name| name.to_string()).collect();
    reported.sort();
    assert_eq!(
        on_disk, reported,
        "nothing beside the pages (no partial file)"
    );

    for (page, command) in [
        ("idmint-serve.1", vec!["serve"]),
        ("idmint-counter-create.1", vec!["counter", "create"]),
    ] {
        let text = rendered(&dir.path().join(page));
        for flag in flags_in_help(&command) {
            assert!(text.contains(&flag), "{page} does not list {flag}");
        }
    }

    let missing = dir.path().join("absent");
    let refused = run(idmint().args(["man", "--dir"]).arg(&missing));
    assert_exit(&refused, 2);
    assert!(
        stderr(&refused).contains("not a directory"),
        "{}",
        stderr(&refused)
    );
    assert!(!missing.exists());
}
