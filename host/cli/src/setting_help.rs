//! The help of the flags that name a kind or set one of a counter's
//! settings, made from the registry: `--kind` says what each kind is, a
//! setting's flag is led by the kinds whose declared settings take it, so no
//! list of kinds is written here.

use idmint::sequence::{list_words, CounterKind, Setting};

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

/// The kinds' names, in the registry's order: `cyclic, autoinc, ...`.
pub fn kinds_list() -> String {
    let names: Vec<&str> = CounterKind::ALL.iter().map(|kind| kind.as_str()).collect();
    names.join(", ")
}

/// The kinds' names to choose from, the default marked: `cyclic (the
/// default), autoinc, ... or periodic`.
pub fn kinds_choice() -> String {
    let names: Vec<String> = CounterKind::ALL
        .iter()
        .map(|&kind| match kind == CounterKind::DEFAULT {
            true => format!("{kind} (the default)"),
            false => kind.to_string(),
        })
        .collect();
    list_words(&names, "or").unwrap_or_default()
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
