//! What a counter document is: the `kind` field, and the limits every
//! numeric kind shares.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// The largest value an auto-increment or segment counter hands out:
/// 2^53 - 1, the last integer a JavaScript number (and so the stored
/// functions and every JSON client) holds exactly.
pub const MAX_VALUE: u64 = (1 << 53) - 1;

/// The kinds of counter idmint knows. A document without a `kind` field is
/// [`CounterKind::Cyclic`], so the seed's `{_id, val, maxval}` keeps working.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CounterKind {
    /// The seed's serial number: 0..=maxval, wrapping, with a server-decided
    /// microsecond timestamp that makes (timestamp, value) unique.
    Cyclic,
    /// `$inc` auto-increment (seed 002): 1, 2, 3, ... one round trip per
    /// request.
    Autoinc,
    /// Segment allocation (seed 003, Meituan Leaf): a process takes a whole
    /// range with one update and hands it out from memory.
    Segment,
    /// Snowflake IDs (seed 001, Baidu uid-generator): time, leased worker
    /// id and sequence in 63 bits, issued from memory.
    Snowflake,
}

impl CounterKind {
    /// Every kind, in the order the documentation lists them.
    pub const ALL: [CounterKind; 4] = [Self::Cyclic, Self::Autoinc, Self::Segment, Self::Snowflake];

    /// The value of the document's `kind` field.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cyclic => "cyclic",
            Self::Autoinc => "autoinc",
            Self::Segment => "segment",
            Self::Snowflake => "snowflake",
        }
    }
}

impl fmt::Display for CounterKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `kind` that idmint does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown counter kind {0:?}: idmint knows cyclic, autoinc, segment and snowflake")]
pub struct UnknownKind(pub String);

impl FromStr for CounterKind {
    type Err = UnknownKind;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.as_str() == text)
            .ok_or_else(|| UnknownKind(text.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_it_prints_and_names_an_unknown_kind() {
        for kind in CounterKind::ALL {
            assert_eq!(kind.as_str().parse::<CounterKind>(), Ok(kind));
        }
        let error = "hilo".parse::<CounterKind>().unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown counter kind \"hilo\": idmint knows cyclic, autoinc, segment and snowflake"
        );
    }
}
