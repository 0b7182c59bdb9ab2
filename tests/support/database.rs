//! Each test's own database on the shared server (named after the test),
//! and what tests read of a database or check of what a client sent to it.

use mongodb::{Client, Database};

use super::server::uri;

/// A fresh, empty database for one test, named after it.
pub async fn database(test: &str) -> Database {
    let database = database_handle(test).await;
    database.drop().await.expect("drop the test database");
    database
}

/// The database of `test`, as it is (unlike [`database`], nothing is
/// dropped), on a client of its own, as another process would have it.
pub async fn database_handle(test: &str) -> Database {
    let client = Client::with_uri_str(uri())
        .await
        .expect("connect to the test server");
    client.database(&database_name(test))
}

/// The database name for a test: `t_<test>`, within MongoDB's 63-byte limit.
pub fn database_name(test: &str) -> String {
    let cleaned: String = test
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let mut name = format!("t_{cleaned}");
    name.truncate(60);
    name
}

/// Puts `database` into the path of `uri`, keeping its options.
pub fn with_database(uri: &str, database: &str) -> String {
    let (base, query) = uri
        .split_once('?')
        .map_or((uri, None), |(b, q)| (b, Some(q)));
    let scheme_end = base.find("://").map_or(0, |at| at + 3);
    let host_end = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |at| scheme_end + at);
    let mut out = format!("{}/{database}", &base[..host_end]);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

/// Every command a monitored client sent, as the server received it.
#[derive(Clone, Default)]
pub struct CommandLog {
    commands: std::sync::Arc<std::sync::Mutex<Vec<(String, mongodb::bson::Document)>>>,
}

impl CommandLog {
    /// The commands named `name` (e.g. "findAndModify", "update", "insert"),
    /// each as the full command document sent.
    pub fn named(&self, name: &str) -> Vec<mongodb::bson::Document> {
        self.commands
            .lock()
            .unwrap()
            .iter()
            .filter(|(command, _)| command == name)
            .map(|(_, document)| document.clone())
            .collect()
    }

    /// Every command sent, in order, as (name, document).
    pub fn all(&self) -> Vec<(String, mongodb::bson::Document)> {
        self.commands.lock().unwrap().clone()
    }
}

/// A fresh database for `test` (as [`database`]) on a client that records
/// every command it sends, with the log of them: for asserting what the
/// library really sends (write concerns, one round trip per block, ...).
pub async fn monitored_database(test: &str) -> (Database, CommandLog) {
    use mongodb::event::command::CommandEvent;
    use mongodb::event::EventHandler;
    let log = CommandLog::default();
    let mut options = mongodb::options::ClientOptions::parse(uri())
        .await
        .expect("parse the test server URI");
    let sink = log.commands.clone();
    options.command_event_handler = Some(EventHandler::callback(move |event| {
        if let CommandEvent::Started(started) = event {
            sink.lock()
                .unwrap()
                .push((started.command_name.clone(), started.command.clone()));
        }
    }));
    let client = Client::with_options(options).expect("connect to the test server");
    let database = client.database(&database_name(test));
    database.drop().await.expect("drop the test database");
    (database, log)
}

/// Asserts that a write command was sent with `w: "majority"`, `j: true`
/// and a `wtimeout` (so that a primary cut off from the majority answers).
#[track_caller]
pub fn assert_durable(command: &mongodb::bson::Document) {
    let concern = command
        .get_document("writeConcern")
        .unwrap_or_else(|_| panic!("no writeConcern in {command}"));
    assert_eq!(
        concern.get_str("w").ok(),
        Some("majority"),
        "w is not majority in {command}"
    );
    assert_eq!(
        concern.get_bool("j").ok(),
        Some(true),
        "j is not true in {command}"
    );
    let wtimeout = match concern.get("wtimeout") {
        Some(mongodb::bson::Bson::Int32(ms)) => Some(i64::from(*ms)),
        Some(mongodb::bson::Bson::Int64(ms)) => Some(*ms),
        _ => None,
    };
    assert!(
        wtimeout.is_some_and(|ms| ms > 0),
        "no wtimeout in {command}"
    );
}

/// Every document of `collection`, sorted by `_id`.
pub async fn documents(database: &Database, collection: &str) -> Vec<mongodb::bson::Document> {
    use futures_util::TryStreamExt;
    database
        .collection::<mongodb::bson::Document>(collection)
        .find(mongodb::bson::doc! {})
        .sort(mongodb::bson::doc! { "_id": 1 })
        .await
        .expect("read the collection")
        .try_collect()
        .await
        .expect("read the collection")
}
