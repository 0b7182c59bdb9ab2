//! The rules of the prefixes one counter owns (which characters a prefix
//! may hold is each policy's to say).

use crate::sequence::error::SequenceError;

/// The most prefixes one counter owns.
pub const MAX_PREFIXES: usize = 32;

/// The longest prefix a counter owns, in bytes (each policy has its own,
/// usually shorter, limit).
pub const MAX_PREFIX_BYTES: usize = 128;

/// Fails unless `prefixes` can be owned by one counter: distinct, at most
/// [`MAX_PREFIXES`], each at most [`MAX_PREFIX_BYTES`] and without control
/// characters.
pub(crate) fn check_prefixes(prefixes: &[String]) -> Result<(), SequenceError> {
    let bad = |reason: String| Err(SequenceError::InvalidSpec(reason));
    if prefixes.len() > MAX_PREFIXES {
        return bad(format!(
            "{} prefixes: a counter owns at most {MAX_PREFIXES}",
            prefixes.len()
        ));
    }
    for (at, prefix) in prefixes.iter().enumerate() {
        if prefixes[..at].contains(prefix) {
            return bad(format!("prefix {prefix:?} is given twice"));
        }
        if prefix.len() > MAX_PREFIX_BYTES {
            return bad(format!(
                "prefix {prefix:?} is {} bytes long, the limit is {MAX_PREFIX_BYTES}",
                prefix.len()
            ));
        }
        if prefix.chars().any(char::is_control) {
            return bad(format!("prefix {prefix:?} holds a control character"));
        }
    }
    Ok(())
}
