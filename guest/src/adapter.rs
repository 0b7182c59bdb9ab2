//! Converts the kit's plain-Rust failures into the types the WIT bindings
//! generate. Included by path into each policy crate, where `crate::` names
//! that crate's own generated bindings (the same WIT, so the same names).

use crate::idmint::policy::types::{NonDigit, WrongLength};
use crate::kit::{FormatFailure, Invalid};
use crate::{FormatError, InvalidId};

impl From<FormatFailure> for FormatError {
    fn from(failure: FormatFailure) -> Self {
        match failure {
            FormatFailure::BadPrefix(why) => FormatError::BadPrefix(why),
            FormatFailure::SequenceOutOfRange(n) => FormatError::SequenceOutOfRange(n),
            FormatFailure::TimestampOutOfRange(n) => FormatError::TimestampOutOfRange(n),
        }
    }
}

impl From<Invalid> for InvalidId {
    fn from(invalid: Invalid) -> Self {
        match invalid {
            Invalid::WrongLength { found, min, max } => {
                InvalidId::WrongLength(WrongLength { found, min, max })
            }
            Invalid::BadPrefix(why) => InvalidId::BadPrefix(why),
            Invalid::NonDigit { position, found } => {
                InvalidId::NonDigit(NonDigit { position, found })
            }
            Invalid::ImpossibleDate(why) => InvalidId::ImpossibleDate(why),
            Invalid::Malformed(why) => InvalidId::Malformed(why),
        }
    }
}
