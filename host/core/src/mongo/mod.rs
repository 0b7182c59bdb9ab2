//! What idmint needs to know about MongoDB itself, named once: the server
//! error codes it reacts to, and the write concern of every write that hands
//! something out (a value, a segment, a lease, a lock).
//!
//! The collections idmint uses are named in [`collections`].
//!
//! Every module that matches on a server error uses these helpers, so that a
//! code is spelled in one place (as the Rust driver does in its `error.rs`).

pub mod collections;
pub mod round_trips;

use mongodb::bson::Bson;
use mongodb::error::{Error, ErrorKind, WriteFailure};
use mongodb::options::{Acknowledgment, WriteConcern};

/// `Unauthorized`: the user lacks a privilege for the operation.
pub const UNAUTHORIZED: i32 = 13;
/// `NamespaceNotFound`: dropping a collection that does not exist.
pub const NAMESPACE_NOT_FOUND: i32 = 26;
/// `RoleNotFound`: dropping a role that does not exist.
pub const ROLE_NOT_FOUND: i32 = 31;
/// `IndexNotFound`: dropping an index that does not exist.
pub const INDEX_NOT_FOUND: i32 = 27;
/// `NamespaceExists`: creating a collection that already exists.
pub const NAMESPACE_EXISTS: i32 = 48;
/// `DuplicateKey`: an insert or upsert hit a unique index (`_id` included).
pub const DUPLICATE_KEY: i32 = 11000;
/// `Location51002`: `createRole` for a role that already exists.
pub const ROLE_EXISTS: i32 = 51002;

/// The server's error code, for command errors and single write errors.
pub fn error_code(error: &Error) -> Option<i32> {
    match error.kind.as_ref() {
        ErrorKind::Command(command) => Some(command.code),
        ErrorKind::Write(WriteFailure::WriteError(write)) => Some(write.code),
        _ => None,
    }
}

/// True for a duplicate-key error (11000): an insert or upsert lost a race,
/// or the document already exists.
pub fn is_duplicate_key(error: &Error) -> bool {
    error_code(error) == Some(DUPLICATE_KEY)
}

/// True when the user lacks a privilege (13).
pub fn is_unauthorized(error: &Error) -> bool {
    error_code(error) == Some(UNAUTHORIZED)
}

/// The server's message for a command or write error, if it sent one.
pub fn server_message(error: &Error) -> Option<&str> {
    match error.kind.as_ref() {
        ErrorKind::Command(command) => Some(&command.message),
        ErrorKind::Write(WriteFailure::WriteError(write)) => Some(&write.message),
        _ => None,
    }
}

/// How long a primary waits for a majority to acknowledge a durable write
/// before it answers with a write concern error (`wtimeout`).
pub const DURABLE_WRITE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The write concern for every write that hands out a value, a lease or a
/// lock: acknowledged by a majority of the replica set and written to their
/// journals, so that what was returned once survives a crash or failover and
/// is never returned again.
///
/// With a `wtimeout` ([`DURABLE_WRITE_TIMEOUT`]): a primary cut off from
/// the majority (a partition that leaves it primary until it notices)
/// would otherwise hold the write, and the caller, until the partition
/// heals. It answers with a write concern error instead, which idmint treats
/// as a failure: the values are not handed out, the lease is not counted as
/// renewed. The write may still be applied (and so values skipped), never
/// handed out twice.
pub fn durable_write_concern() -> WriteConcern {
    WriteConcern::builder()
        .w(Acknowledgment::Majority)
        .journal(true)
        .w_timeout(DURABLE_WRITE_TIMEOUT)
        .build()
}

/// A driver error as a person reads it: what failed (connection refused,
/// a host name that does not resolve, authentication, TLS, the server's
/// refusal) and what to check, without the driver's topology dump. The
/// whole error stays available as the error's source (`--json` shows it).
pub fn describe_error(error: &Error) -> String {
    match error.kind.as_ref() {
        ErrorKind::ServerSelection { message, .. } => {
            format!("no usable server answered in time: {}", diagnose(message))
        }
        ErrorKind::Io(io) => format!("the connection failed: {}", diagnose(&io.to_string())),
        // The driver's monitor found the server silent (its heartbeat timed
        // out) and ended the connections in use: a partition, or a stopped or
        // overloaded server. What was sent may have been applied.
        ErrorKind::ConnectionPoolCleared { .. } => "the connection was interrupted: the server \
             stopped answering its monitor's heartbeat (a partition, or a stopped or overloaded \
             server); what was sent may have been applied"
            .to_string(),
        ErrorKind::Authentication { message, .. } => format!(
            "authentication failed ({message}): check the user, the password and authSource"
        ),
        ErrorKind::Command(command) => format!(
            "the server refused the command: {} ({}, code {})",
            command.message, command.code_name, command.code
        ),
        ErrorKind::Write(WriteFailure::WriteError(write)) => format!(
            "the server refused the write: {} (code {})",
            write.message, write.code
        ),
        ErrorKind::Write(WriteFailure::WriteConcernError(concern)) => format!(
            "the write was not confirmed durable: {} (code {})",
            concern.message, concern.code
        ),
        _ => error.to_string(),
    }
}

/// What a connection failure's text says went wrong, and what to check.
fn diagnose(detail: &str) -> String {
    let lower = detail.to_ascii_lowercase();
    let (what, check) = if lower.contains("connection refused") {
        (
            "connection refused",
            "is mongod running there, on that port?",
        )
    } else if lower.contains("failed to lookup address")
        || lower.contains("name or service not known")
        || lower.contains("no such host")
    {
        (
            "the host name does not resolve (DNS)",
            "check the host in the connection string",
        )
    } else if lower.contains("authentication") || lower.contains("auth failed") {
        (
            "authentication failed",
            "check the user, the password and authSource",
        )
    } else if lower.contains("tls") || lower.contains("certificate") || lower.contains("ssl") {
        (
            "the TLS handshake failed",
            "check tls=true/false and the certificates",
        )
    } else if lower.contains("timed out") || lower.contains("timeout") {
        (
            "the connection timed out",
            "is the host reachable (firewall, network), and the port right?",
        )
    } else if lower.contains("replicaset") || lower.contains("replica set") {
        (
            "no member of the replica set qualifies",
            "check replicaSet= and the members' state",
        )
    } else {
        (
            "the server could not be used",
            "see --json for the driver's details",
        )
    };
    format!("{what}; {check}")
}

/// `$$NOW + ms` as a date: the server's clock, for expiries decided by the
/// server (locks, worker leases). Spelled with `$toLong`/`$toDate` (MongoDB
/// 4.0+) rather than date arithmetic in `$add`, which not every server that
/// speaks the wire protocol implements.
pub(crate) fn server_now_plus(ms: i64) -> mongodb::bson::Document {
    date_plus("$$NOW", ms)
}

/// The expression of the date `date` (an expression) plus `ms`
/// milliseconds, through its milliseconds as a long, as
/// [`server_now_plus`] does.
pub(crate) fn date_plus(date: impl Into<Bson>, ms: i64) -> mongodb::bson::Document {
    mongodb::bson::doc! { "$toDate": { "$add": [{ "$toLong": date.into() }, ms] } }
}

/// Names a BSON value for a message about a malformed document: its type
/// and, when short, the value. `mongo-js/getNextUniqueSeq.js` words it the
/// same way (the conformance
/// tests compare the two implementations' messages).
pub(crate) fn describe_value(value: &Bson) -> String {
    match value {
        Bson::String(s) if s.chars().count() <= 40 => format!("the string {}", json_string(s)),
        Bson::String(_) => "a string".to_string(),
        Bson::Null => "null".to_string(),
        Bson::Boolean(b) => format!("the boolean {b}"),
        Bson::Int32(n) => format!("the number {n}"),
        Bson::Int64(n) => format!("the number {n}"),
        Bson::Double(x) => format!("the number {x}"),
        Bson::Document(_) => "a document".to_string(),
        Bson::Array(_) => "an array".to_string(),
        Bson::DateTime(_) => "a date".to_string(),
        other => format!("of BSON type {:?}", other.element_type()),
    }
}

/// A string quoted as JSON (and so as JavaScript's `JSON.stringify`) does.
fn json_string(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}
