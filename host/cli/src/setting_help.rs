//! The help of a flag that sets one of a counter's settings, led by the
//! kinds that take it: each kind's declared settings say which, so no list
//! of kinds is written here.

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
