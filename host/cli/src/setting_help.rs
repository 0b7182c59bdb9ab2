//! The help of the flags that name a kind or set one of a counter's
//! settings, made from the registry: `--kind` says what each kind is, a
//! setting's flag is led by the kinds whose declared settings take it, so no
//! list of kinds is written here.

use idmint::sequence::{CounterKind, Setting};

/// `autoinc, segment: TEXT`: the kinds that take `setting`, then `text`.
pub fn setting_help(setting: Setting, text: &str) -> String {
    kinds_help(CounterKind::taking(setting), text)
}

/// `autoinc, segment: TEXT`: the `kinds` a flag applies to, then `text`.
pub fn kinds_help(kinds: impl Iterator<Item = CounterKind>, text: &str) -> String {
    let kinds: Vec<&str> = kinds.map(CounterKind::as_str).collect();
    format!("{}: {text}", kinds.join(", "))
}

/// What each kind is, `KIND: SUMMARY` joined by `; `: the help of `--kind`.
pub fn kinds_summary() -> String {
    let kinds: Vec<String> = CounterKind::ALL
        .iter()
        .map(|kind| format!("{kind}: {}", kind.summary()))
        .collect();
    kinds.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_kinds_that_take_the_setting() {
        assert_eq!(
            setting_help(Setting::Start, "the first value"),
            "autoinc, segment: the first value"
        );
    }
}
