//! How idmint writes lists and numbers for people: the one place the
//! messages, help texts and reports that list kinds or large numbers get
//! them from.

/// `words` as a list in a sentence, the last two joined by `conjunction`:
/// `autoinc, segment and snowflake`; `None` when there are none. The one
/// place the messages and help texts that list kinds join them.
pub fn list_words(words: &[impl AsRef<str>], conjunction: &str) -> Option<String> {
    let (last, rest) = words.split_last()?;
    let last = last.as_ref();
    if rest.is_empty() {
        return Some(last.to_string());
    }
    let rest: Vec<&str> = rest.iter().map(AsRef::as_ref).collect();
    Some(format!("{} {conjunction} {last}", rest.join(", ")))
}

/// `1234567` as `1,234,567`, as idmint writes large numbers for people.
pub fn group_thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(group_thousands(0), "0");
        assert_eq!(group_thousands(999), "999");
        assert_eq!(group_thousands(1_000), "1,000");
    }

    #[test]
    fn words_are_listed_as_in_a_sentence() {
        assert_eq!(
            list_words(&["a", "b", "c"], "and").as_deref(),
            Some("a, b and c")
        );
        assert_eq!(list_words(&["a"], "or").as_deref(), Some("a"));
        assert_eq!(list_words(&[] as &[&str], "or"), None);
    }
}
