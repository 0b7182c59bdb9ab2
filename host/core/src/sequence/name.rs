//! Counter names: the `_id` of a counter document, checked before any query.

use std::fmt;
use std::str::FromStr;

/// The longest counter name accepted, in bytes.
pub const MAX_COUNTER_NAME_LEN: usize = 128;

/// A counter name that breaks the naming rules; nothing was sent to the
/// server. A [`SequenceError::InvalidCounterName`](super::SequenceError)
/// carries it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid counter name {name:?}: {reason}")]
pub struct InvalidCounterName {
    /// The name as given.
    pub name: String,
    /// Which rule it breaks.
    pub reason: String,
}

/// A validated counter name.
///
/// Names are 1 to 128 bytes of ASCII letters, digits and `_ - . :`, starting
/// with a letter or digit. A name is only ever sent as a string value (never
/// parsed as a document), and these rules keep out `$` and every other
/// character that could be mistaken for an operator or a path by a DBA copying
/// it into a shell query.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CounterName(String);

impl CounterName {
    /// Checks `name` and wraps it.
    pub fn new(name: impl Into<String>) -> Result<Self, InvalidCounterName> {
        let name = name.into();
        let problem = if name.is_empty() {
            Some("it is empty".to_string())
        } else if name.len() > MAX_COUNTER_NAME_LEN {
            Some(format!(
                "it is {} bytes long, the limit is {MAX_COUNTER_NAME_LEN}",
                name.len()
            ))
        } else if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
            Some("it must start with an ASCII letter or digit".to_string())
        } else {
            name.char_indices()
                .find(|&(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':')))
                .map(|(at, c)| format!("character {c:?} at byte {at} is not allowed (use letters, digits, _ - . :)"))
        };
        match problem {
            Some(reason) => Err(InvalidCounterName { name, reason }),
            None => Ok(Self(name)),
        }
    }

    /// The name as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for CounterName {
    type Err = InvalidCounterName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl fmt::Display for CounterName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_names() {
        for name in [
            "SerialNo1",
            "orders",
            "eu-west.orders:2026",
            "9lives",
            "a_b",
        ] {
            assert_eq!(CounterName::new(name).unwrap().as_str(), name);
        }
    }

    #[test]
    fn rejects_operators_paths_and_oversized_names() {
        for (name, needle) in [
            ("", "empty"),
            ("$gt", "start"),
            ("a$b", "'$'"),
            ("a.b{", "'{'"),
            ("has space", "' '"),
            ("naïve", "'ï'"),
            ("nul\0", "'\\0'"),
        ] {
            let err = CounterName::new(name).unwrap_err().to_string();
            assert!(err.contains(needle), "{name:?}: {err}");
        }
        let long = "a".repeat(MAX_COUNTER_NAME_LEN + 1);
        assert!(CounterName::new(long)
            .unwrap_err()
            .to_string()
            .contains("129 bytes"));
        assert!(CounterName::new("a".repeat(MAX_COUNTER_NAME_LEN)).is_ok());
    }
}
