//! Counters as tests make and read them: their names, their documents as
//! stored, made and shown through `idmint`.

use idmint::sequence::striping::create_striped;
use idmint::sequence::{
    CounterKind, CounterName, CounterSpec, OpenOptions, Sequence, COUNTERS_COLLECTION,
};
use mongodb::bson::{doc, Document};
use mongodb::Database;
use serde_json::Value;

use super::database::{database, database_handle};
use super::process::{assert_exit, idmint, run, stdout};

/// A counter's name from a test's literal.
pub fn counter_name(text: &str) -> CounterName {
    CounterName::new(text).unwrap()
}

/// Creates counter `name` of `spec` in `database`, striped over `lanes`
/// lanes (`1`: unstriped), and opens it.
pub async fn create_striped_and_open(
    database: &Database,
    name: &CounterName,
    spec: &CounterSpec,
    lanes: u64,
) -> Sequence {
    create_striped(database, name, spec, lanes).await.unwrap();
    let (sequence, _) = Sequence::open(database, name.clone(), &OpenOptions::default())
        .await
        .unwrap();
    sequence
}

/// The test's database, with the autoinc counter `orders` (owning no
/// prefix) striped over `lanes` lanes (`1`: unstriped), and a `Sequence`
/// opened on it.
pub async fn striped_orders(test: &str, lanes: u64) -> (Database, CounterName, Sequence) {
    let database = database(test).await;
    let name = counter_name("orders");
    let spec = CounterSpec::of(CounterKind::Autoinc).prefixes(Vec::new());
    let sequence = create_striped_and_open(&database, &name, &spec, lanes).await;
    (database, name, sequence)
}

/// Counter `name`'s document in `database` as stored, if there is one.
pub async fn counter_document(database: &Database, name: &str) -> Option<Document> {
    database
        .collection::<Document>(COUNTERS_COLLECTION)
        .find_one(doc! { "_id": name })
        .await
        .unwrap()
}

/// Counter `name`'s document in `test`'s database as stored, if there is
/// one.
pub async fn counter_doc(test: &str, name: &str) -> Option<Document> {
    counter_document(&database_handle(test).await, name).await
}

/// Replaces counter `id` in `database` by `{_id: id, ..fields}`, as a hand
/// edit would, and returns what it wrote.
pub async fn replace_counter(database: &Database, id: &str, fields: Document) -> Document {
    let mut document = doc! { "_id": id };
    document.extend(fields);
    database
        .collection::<Document>(COUNTERS_COLLECTION)
        .replace_one(doc! { "_id": id }, &document)
        .await
        .expect("replace the counter");
    document
}

/// `idmint counter create NAME ARGS` in `test`'s database, which must
/// succeed.
pub fn create(test: &str, name: &str, args: &[&str]) {
    assert_exit(
        &run(idmint(test).args(["counter", "create", name]).args(args)),
        0,
    );
}

/// The number `field` of `idmint counter show NAME --json` in `test`'s
/// database.
pub fn counter_field(test: &str, name: &str, field: &str) -> u64 {
    let output = run(idmint(test).args(["counter", "show", name, "--json"]));
    assert_exit(&output, 0);
    let shown: Value = serde_json::from_str(&stdout(&output)).unwrap();
    shown[field]
        .as_u64()
        .unwrap_or_else(|| panic!("no {field} in {shown}"))
}

/// The worker leases of snowflake counter `name` in `test`'s database, as
/// `idmint workers NAME --json` lists them (live or not).
pub fn worker_leases(test: &str, name: &str) -> Vec<Value> {
    let output = run(idmint(test).args(["workers", name, "--json"]));
    assert_exit(&output, 0);
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    report["leases"]
        .as_array()
        .unwrap_or_else(|| panic!("no leases in {report}"))
        .clone()
}

/// The `PERIOD VALUE` lines `idmint seq` prints for a periodic counter, as
/// (period, value) pairs.
pub fn period_value_pairs(printed: &str) -> Vec<(String, u64)> {
    printed
        .lines()
        .map(|line| {
            let (period, value) = line.split_once(' ').expect("PERIOD VALUE");
            (period.to_string(), value.parse().expect("a value"))
        })
        .collect()
}

/// The layout of snowflake counter `counter` of `test`'s database, as
/// `idmint counter show --json` says it.
pub fn snowflake_layout(test: &str, counter: &str) -> idmint::parts::Layout {
    let output = run(idmint(test).args(["counter", "show", counter, "--json"]));
    assert_exit(&output, 0);
    let shown: Value = serde_json::from_str(&stdout(&output)).unwrap();
    idmint::parts::Layout {
        time_bits: shown["time_bits"].as_u64().unwrap() as u32,
        worker_bits: shown["worker_bits"].as_u64().unwrap() as u32,
        seq_bits: shown["seq_bits"].as_u64().unwrap() as u32,
        unit: shown["unit"].as_str().unwrap().parse().unwrap(),
        epoch_ms: shown["epoch_ms"].as_u64().unwrap(),
    }
}
