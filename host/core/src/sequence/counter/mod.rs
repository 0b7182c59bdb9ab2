//! A counter, whatever its kind: its document's shared field rules
//! (`fields`), the document read ([`document::CounterDocument`], with the
//! one reader every kind reads its own counters through) and the prefix
//! rules (`prefixes`). They sit below the kinds: a kind reads and writes its
//! documents with them. What dispatches on a kind chosen at run time sits
//! above the registry, beside it: the spec a new counter is made from
//! (`sequence/spec.rs`) and the command an application in another language
//! takes values with (`sequence/command.rs`).

pub(crate) mod document;
pub(crate) mod fields;
pub(crate) mod prefixes;
