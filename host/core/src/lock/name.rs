//! Lock names: the `_id` of a lock document, under the counter-name rules.

use std::fmt;
use std::str::FromStr;

use crate::sequence::CounterName;

/// A lock name that breaks the naming rules; nothing was sent to the server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid lock name {name:?}: {reason}")]
pub struct InvalidLockName {
    /// The name as given.
    pub name: String,
    /// Which rule it breaks.
    pub reason: String,
}

/// A validated lock name: the same rules as [`CounterName`] (1 to 128 bytes of
/// ASCII letters, digits and `_ - . :`, starting with a letter or digit).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LockName(CounterName);

impl LockName {
    /// Checks `name` and wraps it.
    pub fn new(name: impl Into<String>) -> Result<Self, InvalidLockName> {
        CounterName::new(name)
            .map(Self)
            .map_err(|invalid| InvalidLockName {
                name: invalid.name,
                reason: invalid.reason,
            })
    }

    /// The name as a string.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl FromStr for LockName {
    type Err = InvalidLockName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl fmt::Display for LockName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_rules_apply() {
        assert!(LockName::new("nightly-backup:eu").is_ok());
        let err = LockName::new("$where").unwrap_err().to_string();
        assert!(
            err.contains("invalid lock name") && err.contains("start"),
            "{err}"
        );
    }
}
