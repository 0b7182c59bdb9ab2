//! A counter, whatever its kind: its document's shared field rules
//! (`fields`), the document read ([`document::CounterDocument`], with the
//! one reader every kind reads its own counters through), the prefix rules
//! (`prefixes`), the spec a new counter is made from (`spec`) and the
//! command an application in another language takes values with
//! (`command`).
//!
//! `fields`, `document` and `prefixes` sit below the kinds (a kind reads
//! and writes its documents with them); `spec` and `command` sit above the
//! registry, since they dispatch on a kind chosen at run time.

pub(crate) mod command;
pub(crate) mod document;
pub(crate) mod fields;
pub(crate) mod prefixes;
pub(crate) mod spec;
