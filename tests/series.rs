//! Gap-free series (issue 52): a number taken inside the business
//! transaction exists only if that transaction commits, with its record;
//! transactions on one series conflict and run again, taking nothing twice;
//! the audit proves a series whole and names each hole.

use std::sync::Arc;

use idmint::mongo::durable_write_concern;
use idmint::parts::PeriodUnit;
use idmint::sequence::CounterName;
use idmint::series::{
    audit, create_periodic_series, create_series, read_series, Finding, Series, SeriesError,
    SeriesPeriod,
};
use idmint::ErrorClass;
use mongodb::bson::{doc, Document};
use mongodb::{ClientSession, Database};
use tokio::sync::Barrier;

use crate::support::{self, assert_durable, assert_exit, documents, idmint, run, stdout};

/// Series `name` of the test's database, made with first number 1.
async fn invoices(test: &str) -> (Database, Series) {
    let database = support::database(test).await;
    let name = CounterName::new("invoices").unwrap();
    create_series(&database, &name, 1).await.unwrap();
    (database.clone(), Series::new(&database, name))
}

/// A session of `database`'s client with a transaction started on it, as
/// an app starts one: majority and journal on its commit.
async fn in_transaction(database: &Database) -> ClientSession {
    let mut session = database.client().start_session().await.unwrap();
    session
        .start_transaction()
        .write_concern(durable_write_concern())
        .await
        .unwrap();
    session
}

/// Numbers invoice `reference` in `session`'s transaction: the number,
/// then the invoice with it.
async fn number_invoice(
    database: &Database,
    series: &Series,
    session: &mut ClientSession,
    reference: &str,
) -> Result<u64, SeriesError> {
    let number = series.next_in(session, reference).await?;
    database
        .collection::<Document>("invoices")
        .insert_one(doc! { "_id": reference, "number": number as i64 })
        .session(&mut *session)
        .await
        .expect("insert the invoice");
    Ok(number)
}

/// The series' records, as (number, state, reference).
async fn records(database: &Database) -> Vec<(i64, String, String)> {
    documents(database, "series_numbers")
        .await
        .iter()
        .map(|record| {
            (
                record.get_i64("number").unwrap(),
                record.get_str("state").unwrap().to_string(),
                record.get_str("reference").unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// A number taken in a transaction that aborts was never used: the series
/// and its records are as before, and the next transaction takes the same
/// number; once it commits, the audit finds the series whole.
#[tokio::test]
async fn a_number_taken_in_an_aborted_transaction_was_never_used() {
    let (database, series) = invoices("series_aborted").await;
    let mut session = in_transaction(&database).await;
    let number = number_invoice(&database, &series, &mut session, "inv-a")
        .await
        .unwrap();
    assert_eq!(number, 1);
    session.abort_transaction().await.unwrap();
    assert_eq!(
        read_series(&database, series.name(), None)
            .await
            .unwrap()
            .last,
        0
    );
    assert!(records(&database).await.is_empty());
    assert!(documents(&database, "invoices").await.is_empty());

    let mut session = in_transaction(&database).await;
    let number = number_invoice(&database, &series, &mut session, "inv-b")
        .await
        .unwrap();
    session.commit_transaction().await.unwrap();
    assert_eq!(
        number, 1,
        "the aborted transaction's number was taken again"
    );
    assert_eq!(
        records(&database).await,
        [(1, "confirmed".to_string(), "inv-b".to_string())]
    );
    let audit = audit(&database, series.name()).await.unwrap();
    assert!(audit.is_whole(), "{audit:?}");
    assert_eq!((audit.first, audit.last, audit.confirmed), (1, 1, 1));
}

/// Two transactions on one series: the second's take conflicts with the
/// first's, which holds the series document, and says it may run again;
/// run again after the first commits, it takes the next number.
#[tokio::test]
async fn a_second_transaction_on_a_series_conflicts_and_runs_again_for_the_next_number() {
    let (database, series) = invoices("series_conflict").await;
    let mut first = in_transaction(&database).await;
    let mut second = in_transaction(&database).await;
    assert_eq!(
        number_invoice(&database, &series, &mut first, "inv-1")
            .await
            .unwrap(),
        1
    );
    let conflict = number_invoice(&database, &series, &mut second, "inv-2")
        .await
        .expect_err("two transactions took from one series at once");
    assert!(conflict.is_transient(), "{conflict}");
    second.abort_transaction().await.unwrap();
    first.commit_transaction().await.unwrap();

    let mut again = in_transaction(&database).await;
    assert_eq!(
        number_invoice(&database, &series, &mut again, "inv-2")
            .await
            .unwrap(),
        2
    );
    again.commit_transaction().await.unwrap();
    let audit = audit(&database, series.name()).await.unwrap();
    assert!(audit.is_whole(), "{audit:?}");
    assert_eq!(audit.confirmed, 2);
}

/// Eight writers at once (a barrier), each numbering 12 invoices in
/// transactions, aborting every third, running again each that conflicts:
/// the committed invoices hold the numbers 1 to 64, once each, each the
/// number of the record that names it; the audit finds the series whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_writers_number_invoices_at_once_with_none_missing() {
    const WRITERS: usize = 8;
    const EACH: usize = 12;
    let (database, series) = invoices("series_writers").await;
    let start = Arc::new(Barrier::new(WRITERS));
    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let (database, series, start) = (database.clone(), series.clone(), start.clone());
            tokio::spawn(async move {
                let mut committed = Vec::new();
                let mut conflicts = 0;
                start.wait().await;
                for invoice in 0..EACH {
                    let reference = format!("inv-{writer}-{invoice}");
                    loop {
                        let mut session = in_transaction(&database).await;
                        match number_invoice(&database, &series, &mut session, &reference).await {
                            Ok(number) if invoice % 3 == 2 => {
                                let _ = number;
                                session.abort_transaction().await.unwrap();
                            }
                            Ok(number) => match session.commit_transaction().await {
                                Ok(()) => committed.push((number, reference.clone())),
                                Err(error) if error.contains_label("TransientTransactionError") => {
                                    conflicts += 1;
                                    continue;
                                }
                                Err(error) => panic!("commit: {error}"),
                            },
                            Err(error) if error.is_transient() => {
                                let _ = session.abort_transaction().await;
                                conflicts += 1;
                                continue;
                            }
                            Err(error) => panic!("{error}"),
                        }
                        break;
                    }
                }
                (committed, conflicts)
            })
        })
        .collect();
    let mut committed = Vec::new();
    let mut conflicts = 0;
    for writer in writers {
        let (mine, theirs) = writer.await.unwrap();
        committed.extend(mine);
        conflicts += theirs;
    }
    committed.sort();
    let numbers: Vec<u64> = committed.iter().map(|(number, _)| *number).collect();
    let expected = (WRITERS * EACH * 2 / 3) as u64;
    assert_eq!(
        numbers,
        (1..=expected).collect::<Vec<_>>(),
        "{conflicts} conflicts"
    );
    let invoices: Vec<(u64, String)> = documents(&database, "invoices")
        .await
        .iter()
        .map(|invoice| {
            (
                invoice.get_i64("number").unwrap() as u64,
                invoice.get_str("_id").unwrap().to_string(),
            )
        })
        .collect();
    let mut invoices = invoices;
    invoices.sort();
    assert_eq!(invoices, committed);
    let records: Vec<(u64, String)> = records(&database)
        .await
        .into_iter()
        .map(|(number, state, reference)| {
            assert_eq!(state, "confirmed");
            (number as u64, reference)
        })
        .collect();
    assert_eq!(records, committed);
    let audit = audit(&database, series.name()).await.unwrap();
    assert!(audit.is_whole(), "{audit:?}");
    assert_eq!(audit.last, expected);
    println!("{conflicts} conflicts ran again");
}

/// A session with no transaction in progress is refused as bad input, and
/// nothing is taken: the series' last and its records are as before.
#[tokio::test]
async fn a_number_is_refused_outside_a_transaction_and_nothing_is_taken() {
    let (database, series) = invoices("series_no_transaction").await;
    let mut session = database.client().start_session().await.unwrap();
    let refused = series
        .next_in(&mut session, "inv-1")
        .await
        .expect_err("a number outside a transaction");
    assert!(
        matches!(refused, SeriesError::NotInTransaction(_)),
        "{refused}"
    );
    assert_eq!(refused.class(), ErrorClass::BadInput);
    assert_eq!(
        read_series(&database, series.name(), None)
            .await
            .unwrap()
            .last,
        0
    );
    assert!(records(&database).await.is_empty());
}

/// `Series::take` commits its own transaction with majority and journal,
/// and the record and the series move together.
#[tokio::test]
async fn a_number_taken_on_its_own_is_committed_durably() {
    let (database, log) = support::monitored_database("series_durable").await;
    let name = CounterName::new("receipts").unwrap();
    create_series(&database, &name, 500).await.unwrap();
    let taken = Series::new(&database, name.clone())
        .take("receipt 1")
        .await
        .unwrap();
    assert_eq!((taken.number, taken.attempts), (500, 1));
    let commits = log.named("commitTransaction");
    assert_eq!(commits.len(), 1, "{:?}", log.all());
    assert_durable(&commits[0]);
    let audit = audit(&database, &name).await.unwrap();
    assert!(audit.is_whole(), "{audit:?}");
    assert_eq!((audit.first, audit.last), (500, 500));
}

/// `idmint series`: made, numbered, audited whole (exit 0); then each way
/// a series can be broken by hand is named and the audit exits 1: a
/// missing range, a record past the last, a voided number with no reason.
/// No counter path reaches a series.
#[tokio::test]
async fn the_audit_names_each_hole_and_exits_1() {
    const TEST: &str = "series_audit";
    let database = support::database(TEST).await;
    assert_exit(&run(idmint(TEST).args(["series", "create", "inv"])), 0);
    for number in 1..=6 {
        let output = run(idmint(TEST)
            .args(["series", "next", "inv", "--reference"])
            .arg(format!("order {number}")));
        assert_exit(&output, 0);
        assert_eq!(stdout(&output).trim(), number.to_string());
    }
    let output = run(idmint(TEST).args(["series", "audit", "inv"]));
    assert_exit(&output, 0);
    assert_eq!(
        stdout(&output).trim(),
        "series 'inv': numbers 1 to 6, 6 confirmed, 0 voided; whole: every number has one record"
    );
    // A counter path does not know it.
    let output = run(idmint(TEST).args(["seq", "inv"]));
    assert_exit(&output, 2);

    let numbers = database.collection::<Document>("series_numbers");
    numbers
        .delete_many(doc! { "number": { "$in": [2_i64, 3_i64] } })
        .await
        .unwrap();
    numbers
        .update_one(
            doc! { "number": 5_i64 },
            doc! { "$set": { "state": "voided" }, "$unset": { "reference": "" } },
        )
        .await
        .unwrap();
    numbers
        .insert_one(doc! {
            "_id": "inv//0000000000000000009", "series": "inv", "period": "",
            "number": 9_i64, "state": "confirmed", "reference": "by hand",
        })
        .await
        .unwrap();
    // A second record of number 1, filed under an _id of its own.
    numbers
        .insert_one(doc! {
            "_id": "inv//0000000000000000001-again", "series": "inv", "period": "",
            "number": 1_i64, "state": "confirmed", "reference": "order 1, again",
        })
        .await
        .unwrap();
    let output = run(idmint(TEST).args(["series", "audit", "inv"]));
    assert_exit(&output, 1);
    assert_eq!(
        stdout(&output).trim(),
        "series 'inv': numbers 1 to 6, 3 confirmed, 0 voided; NOT whole, 4 finding(s):\n  \
         numbers 2 to 3 have no record\n  \
         number 5 is voided with no reason\n  \
         number 1 has a second record, \"inv//0000000000000000001-again\" (filed under another \
         number's _id)\n  \
         number 9 has a record but is past the series' last"
    );
    let output = run(idmint(TEST).args(["series", "audit", "inv", "--json"]));
    assert_exit(&output, 1);
    let json: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let findings: Vec<&str> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|finding| finding["finding"].as_str().unwrap())
        .collect();
    assert_eq!(findings, ["missing", "no-reason", "duplicate", "beyond"]);
    let name = CounterName::new("inv").unwrap();
    let audit = audit(&database, &name).await.unwrap();
    assert_eq!(audit.findings[0], Finding::Missing { from: 2, to: 3 });
}

/// `Series::number_with` numbers a business record in a transaction it
/// runs: eight writers at once (a barrier) each number 6 invoices, runs
/// conflicting with another writer's again, and commit numbers 1 to 48,
/// each the number of its invoice; a business write that fails (an
/// invoice id taken already) aborts the transaction, is returned, and
/// takes no number.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn number_with_runs_conflicts_again_and_a_failed_write_takes_nothing() {
    const WRITERS: usize = 8;
    const EACH: usize = 6;
    let (database, series) = invoices("series_number_with").await;
    let start = Arc::new(Barrier::new(WRITERS));
    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let (database, series, start) = (database.clone(), series.clone(), start.clone());
            tokio::spawn(async move {
                let mut session = database.client().start_session().await.unwrap();
                let mut taken = Vec::new();
                start.wait().await;
                for n in 0..EACH {
                    let id = format!("inv-{writer}-{n}");
                    let number = series
                        .number_with(&mut session, &id, |session, number| {
                            insert_invoice(session, &database, id.clone(), number)
                        })
                        .await
                        .unwrap();
                    taken.push((number.number, id));
                }
                taken
            })
        })
        .collect();
    let mut committed = Vec::new();
    for writer in writers {
        committed.extend(writer.await.unwrap());
    }
    committed.sort();
    let numbers: Vec<u64> = committed.iter().map(|(number, _)| *number).collect();
    assert_eq!(numbers, (1..=(WRITERS * EACH) as u64).collect::<Vec<_>>());

    let mut session = database.client().start_session().await.unwrap();
    let failed = series
        .number_with(&mut session, "inv-0-0", |session, number| {
            insert_invoice(session, &database, "inv-0-0".to_string(), number)
        })
        .await
        .expect_err("an invoice id taken already");
    assert!(!failed.is_transient(), "{failed}");
    assert!(failed.to_string().contains("write the record"), "{failed}");
    let audit = audit(&database, series.name()).await.unwrap();
    assert!(audit.is_whole(), "{audit:?}");
    assert_eq!(
        audit.last,
        (WRITERS * EACH) as u64,
        "the failed write took a number"
    );
}

/// The business write of [`Series::number_with`] in these tests: invoice
/// `id` with `number`, in `session`'s transaction.
fn insert_invoice<'s>(
    session: &'s mut ClientSession,
    database: &Database,
    id: String,
    number: u64,
) -> futures_util::future::BoxFuture<'s, mongodb::error::Result<()>> {
    use futures_util::FutureExt;
    let invoices = database.collection::<Document>("invoices");
    let invoice = doc! { "_id": id, "number": number as i64 };
    async move {
        invoices
            .insert_one(invoice)
            .session(session)
            .await
            .map(|_| ())
    }
    .boxed()
}

/// A client killed (`kill -9`) inside its transaction, its number taken
/// and its record written but not committed: the server aborts the
/// transaction when its lifetime ends (`transactionLifetimeLimitSeconds`,
/// 2 s on this test's own server), and the next take, which conflicted
/// with it until then, takes the same number. Nothing was used by the
/// killed client, and the series stays whole.
#[test]
fn a_client_killed_in_its_transaction_uses_no_number() {
    use std::io::BufRead;
    use std::process::Stdio;

    use crate::support::process::{process_state, signal};
    use crate::support::{idmint_on, wait, OwnedServer, ServerConfig};

    let server = OwnedServer::start(ServerConfig::default());
    support::service::block_on(async {
        let client = mongodb::Client::with_uri_str(&server.uri).await.unwrap();
        client
            .database("admin")
            .run_command(doc! { "setParameter": 1, "transactionLifetimeLimitSeconds": 2 })
            .await
            .unwrap();
    });
    let cli = || idmint_on(&server.uri, "shop");
    assert_exit(&run(cli().args(["series", "create", "inv"])), 0);
    let mut killed = cli()
        .args([
            "series",
            "next",
            "inv",
            "--reference",
            "killed",
            "--stop-before-commit",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(killed.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "1");
    wait::until(
        std::time::Duration::from_secs(30),
        "the client stopped in its transaction",
        || process_state(killed.id()) == Some('T'),
    );
    signal(killed.id(), libc::SIGKILL);
    killed.wait().unwrap();

    let output = run(cli().args(["series", "next", "inv", "--reference", "after", "--json"]));
    assert_exit(&output, 0);
    let taken: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(taken["number"], 1, "{taken}");
    let output = run(cli().args(["series", "audit", "inv", "--json"]));
    assert_exit(&output, 0);
    let audit: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(
        (audit["last"].as_u64(), audit["confirmed"].as_u64()),
        (Some(1), Some(1))
    );
    let numbers = support::service::block_on(async {
        let client = mongodb::Client::with_uri_str(&server.uri).await.unwrap();
        documents(&client.database("shop"), "series_numbers").await
    });
    assert_eq!(numbers.len(), 1);
    assert_eq!(numbers[0].get_str("reference").unwrap(), "after");
}

/// The two commands `idmint series pipeline` prints, run as an app in
/// another language runs them (`runCommand`, in its own transaction, the
/// record's placeholders filled), leave the documents `Series::next_in`
/// leaves: the series moved up by one, and the same record but for when
/// and by whom.
#[tokio::test]
async fn the_pipeline_commands_leave_what_next_in_leaves() {
    use mongodb::bson::Bson;
    const TEST: &str = "series_pipeline";
    let database = support::database(TEST).await;
    let (ours, theirs) = (
        CounterName::new("ours").unwrap(),
        CounterName::new("theirs").unwrap(),
    );
    for name in [&ours, &theirs] {
        // Numbered per fiscal year from April, in Paris: both ways
        // compute the period of the server's clock alike.
        let fiscal = SeriesPeriod::new(PeriodUnit::Year, (4, 1), "Europe/Paris").unwrap();
        create_periodic_series(&database, name, 41, Some(&fiscal))
            .await
            .unwrap();
    }
    let mut session = in_transaction(&database).await;
    let number = Series::new(&database, ours.clone())
        .next_in(&mut session, "order 7")
        .await
        .unwrap();
    session.commit_transaction().await.unwrap();

    let output = run(idmint(TEST).args([
        "series",
        "pipeline",
        "theirs",
        "--period",
        "year",
        "--period-start",
        "04-01",
        "--zone",
        "Europe/Paris",
    ]));
    assert_exit(&output, 0);
    let printed: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let command = |part: &str| match Bson::try_from(printed[part].clone()).unwrap() {
        Bson::Document(command) => command,
        other => panic!("{part} is {other}"),
    };
    let mut session = in_transaction(&database).await;
    let taken = database
        .run_command(command("take"))
        .session(&mut session)
        .await
        .unwrap();
    let their_number = taken
        .get_document("value")
        .unwrap()
        .get_i64("last")
        .unwrap();
    let their_period = taken
        .get_document("value")
        .unwrap()
        .get_str("current")
        .unwrap()
        .to_string();
    let filled = stdout(&output)
        .replace("<number in 19 digits>", &format!("{their_number:019}"))
        .replace("<period>", &their_period)
        .replace("<number>", &their_number.to_string())
        .replace("<reference>", "order 7")
        .replace("<now>", "2026-11-29T00:00:00Z")
        .replace("<by>", "an app");
    let filled: serde_json::Value = serde_json::from_str(&filled).unwrap();
    let record = match Bson::try_from(filled["record"].clone()).unwrap() {
        Bson::Document(command) => command,
        other => panic!("{other}"),
    };
    database
        .run_command(record)
        .session(&mut session)
        .await
        .unwrap();
    session.commit_transaction().await.unwrap();
    assert_eq!(their_number as u64, number);

    assert_left_alike(&database).await;
    let audit = audit(&database, &theirs).await.unwrap();
    assert!(audit.is_whole(), "{audit:?}");
}

/// The stored function `takeSeriesNumber(name, reference, session)`, run in
/// mongosh through idmint's loader, refuses a session with no transaction
/// (nothing written), and in one takes the number and writes the record
/// `Series::next_in` writes (but for when and by whom); an aborted
/// transaction leaves nothing.
#[tokio::test]
async fn the_mongosh_twin_takes_as_next_in_does() {
    // A series without periods ($inc), and one per month (the pipeline).
    twin_takes_as_next_in_does("series_mongosh", None).await;
    let monthly = SeriesPeriod::new(PeriodUnit::Month, (1, 1), "+05:30").unwrap();
    twin_takes_as_next_in_does("series_mongosh_monthly", Some(monthly)).await;
}

async fn twin_takes_as_next_in_does(test: &'static str, period: Option<SeriesPeriod>) {
    let database = support::database(test).await;
    assert_exit(&run(idmint(test).arg("install")), 0);
    let (ours, theirs) = (
        CounterName::new("ours").unwrap(),
        CounterName::new("theirs").unwrap(),
    );
    for name in [&ours, &theirs] {
        create_periodic_series(&database, name, 41, period.as_ref())
            .await
            .unwrap();
    }
    let mut session = in_transaction(&database).await;
    Series::new(&database, ours.clone())
        .next_in(&mut session, "order 7")
        .await
        .unwrap();
    session.commit_transaction().await.unwrap();

    let lines = support::mongosh::json_lines(&mut support::mongosh::shell(
        test,
        r#"
        const session = db.getMongo().startSession();
        try { takeSeriesNumber("theirs", "order 7", session); }
        catch (error) { print(JSON.stringify({ refused: error.message })); }
        session.startTransaction({ writeConcern: { w: "majority", j: true } });
        const aborted = takeSeriesNumber("theirs", "order 6", session);
        session.abortTransaction();
        session.startTransaction({ writeConcern: { w: "majority", j: true } });
        const number = takeSeriesNumber("theirs", "order 7", session);
        session.commitTransaction();
        print(JSON.stringify({ aborted: aborted, number: number }));
        "#,
    ));
    assert!(
        lines[0]["refused"]
            .as_str()
            .unwrap()
            .contains("only inside a transaction"),
        "{lines:?}"
    );
    assert_eq!(lines[1], serde_json::json!({ "aborted": 41, "number": 41 }));

    let records = assert_left_alike(&database).await;
    assert!(records[1].get_datetime("at").is_ok(), "{:?}", records[1]);
    let audit = audit(&database, &theirs).await.unwrap();
    assert!(audit.is_whole(), "{audit:?}");
}

/// Asserts that series `ours` and `theirs` of `database`, each with one
/// number taken, one by `Series::next_in` and one another way, are alike
/// but for their names and when they were made, and so are their records
/// but for when and by whom; returns the records.
async fn assert_left_alike(database: &Database) -> Vec<Document> {
    let without = |mut document: Document, fields: &[&str]| {
        for field in fields {
            document.remove(*field);
        }
        document
    };
    let series = documents(database, "series").await;
    assert_eq!(
        without(series[0].clone(), &["_id", "created_at", "taken_at"]),
        without(series[1].clone(), &["_id", "created_at", "taken_at"])
    );
    let records = documents(database, "series_numbers").await;
    assert_eq!(records.len(), 2, "{records:?}");
    // The period of the server's clock, as the series' own rule says
    // (none for a series without periods).
    let period = series[0].get_str("current").unwrap_or("");
    assert_eq!(
        period.is_empty(),
        series[0].get_str("period").is_err(),
        "{series:?}"
    );
    assert_eq!(
        records[0].get_str("_id").unwrap(),
        format!("ours/{period}/0000000000000000041")
    );
    assert_eq!(
        records[1].get_str("_id").unwrap(),
        format!("theirs/{period}/0000000000000000041")
    );
    assert_eq!(
        without(records[0].clone(), &["_id", "series", "at", "by"]),
        without(records[1].clone(), &["_id", "series", "at", "by"])
    );
    records
}

/// `series audit --against COLLECTION.FIELD` reconciles the series with the
/// business records both ways, naming a record numbered by hand and a
/// confirmed number whose record is gone (exit 1); `--csv` writes the
/// register, a row per record and a row per hole, with the findings on
/// stderr and the same exit code.
#[tokio::test]
async fn the_audit_reconciles_with_the_business_records_and_writes_a_register() {
    const TEST: &str = "series_audit_against";
    let database = support::database(TEST).await;
    let name = CounterName::new("inv").unwrap();
    create_series(&database, &name, 1).await.unwrap();
    let series = Series::new(&database, name.clone());
    for reference in ["inv-1", "inv-2", "inv-3", "inv-4"] {
        let mut session = database.client().start_session().await.unwrap();
        series
            .number_with(&mut session, reference, |session, number| {
                insert_invoice(session, &database, reference.to_string(), number)
            })
            .await
            .unwrap();
    }
    let whole = run(idmint(TEST).args(["series", "audit", "inv", "--against", "invoices._id"]));
    assert_exit(&whole, 0);
    assert_eq!(
        stdout(&whole).trim(),
        "series 'inv': numbers 1 to 4, 4 confirmed, 0 voided; reconciled with invoices._id \
         (4 reference(s) read); whole: every number has one record"
    );

    let invoices = database.collection::<Document>("invoices");
    invoices
        .insert_one(doc! { "_id": "by-hand", "number": 5_i64 })
        .await
        .unwrap();
    invoices.delete_one(doc! { "_id": "inv-2" }).await.unwrap();
    database
        .collection::<Document>("series_numbers")
        .delete_one(doc! { "number": 3_i64 })
        .await
        .unwrap();
    let output = run(idmint(TEST).args(["series", "audit", "inv", "--against", "invoices._id"]));
    assert_exit(&output, 1);
    assert_eq!(
        stdout(&output).trim(),
        "series 'inv': numbers 1 to 4, 3 confirmed, 0 voided; reconciled with invoices._id \
         (4 reference(s) read); NOT whole, 4 finding(s):\n  \
         number 3 has no record\n  \
         a business record holds reference \"by-hand\", which no confirmed number has\n  \
         a business record holds reference \"inv-3\", which no confirmed number has\n  \
         number 2 is confirmed with reference \"inv-2\", which no business record holds"
    );

    let output = run(idmint(TEST).args(["series", "audit", "inv", "--csv"]));
    assert_exit(&output, 1);
    let rows: Vec<Vec<String>> = stdout(&output)
        .lines()
        .map(|line| line.split(',').map(str::to_string).collect())
        .collect();
    assert_eq!(
        rows[0],
        ["number", "to", "state", "reference", "reason", "at", "by"]
    );
    let states: Vec<(&str, &str, &str, &str)> = rows[1..]
        .iter()
        .map(|row| {
            (
                row[0].as_str(),
                row[1].as_str(),
                row[2].as_str(),
                row[3].as_str(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            ("1", "", "confirmed", "inv-1"),
            ("2", "", "confirmed", "inv-2"),
            ("3", "3", "missing", ""),
            ("4", "", "confirmed", "inv-4"),
        ]
    );
    assert!(
        rows[1][5].ends_with('Z') && !rows[1][6].is_empty(),
        "{rows:?}"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("number 3 has no record"), "{stderr}");
    assert_exit(
        &run(idmint(TEST).args(["series", "audit", "inv", "--against", "invoices"])),
        2,
    );
}
