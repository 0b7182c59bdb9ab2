//! Gap-free series under `kill -9` (issue 52): eight processes number
//! invoices in transactions (the mongosh twin, `takeSeriesNumber`, and the
//! invoice in one transaction), a third of them aborting on purpose, and
//! three are killed inside a transaction (after their number and invoice
//! are written, before the commit) and started again. The audit, reconciled
//! with the invoices, finds every number from 1 to the last exactly once,
//! each confirmed on a committed invoice, and no aborted or killed
//! transaction's invoice or number.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::Child;
use std::sync::mpsc;
use std::time::Duration;

use mongodb::bson::{doc, Document};

use crate::support::fault_proxy::{seed, Rng};
use crate::support::mongosh::shell_on;
use crate::support::process::signal;
use crate::support::{assert_exit, documents, idmint_on, run, stdout, OwnedServer, ServerConfig};

/// Invoices each process numbers.
const INVOICES: usize = 6;

/// The script of process `process`, run `run`: `INVOICES` invoices, each
/// numbered in a transaction run again after a write conflict; every third
/// aborted on purpose. It prints `took` inside the transaction, after the
/// number and the invoice are written and before the commit (or abort); at
/// its `stop_at`-th transaction (0: none) it then waits there, for the test
/// to kill it: inside its transaction for certain.
fn script(process: usize, run: usize, stop_at: u64) -> String {
    format!(
        r#"
        const session = db.getMongo().startSession();
        const invoices = session.getDatabase(db.getName()).getCollection("invoices");
        let took = 0;
        for (let n = 0; n < {INVOICES}; n++) {{
          const reference = "p{process}-r{run}-" + n;
          for (;;) {{
            session.startTransaction({{ writeConcern: {{ w: "majority", j: true }} }});
            try {{
              const number = takeSeriesNumber("inv", reference, session);
              invoices.insertOne({{ _id: reference, number: number }});
              print(JSON.stringify({{ took: reference }}));
              if (++took === {stop_at}) sleep(600000);
              if (n % 3 === 2) {{
                session.abortTransaction();
                print(JSON.stringify({{ aborted: reference }}));
              }} else {{
                session.commitTransaction();
                print(JSON.stringify({{ committed: reference, number: number }}));
              }}
              break;
            }} catch (error) {{
              try {{ session.abortTransaction(); }} catch (ignored) {{}}
              const transient = error.errorLabels && error.errorLabels.includes("TransientTransactionError");
              if (!transient && !/WriteConflict|write conflict/i.test(String(error.message))) throw error;
              sleep(10 + Math.floor(Math.random() * 40));
            }}
          }}
        }}
        print(JSON.stringify({{ done: {process} }}));
        "#
    )
}

/// What a process said, by line, sent to the test as it comes.
enum Said {
    Took(usize),
    Committed(String),
    Aborted(String),
    Done(usize),
    /// Its output ended (process, run).
    Ended(usize, usize),
}

fn spawn(uri: &str, process: usize, run: usize, stop_at: u64, said: mpsc::Sender<Said>) -> Child {
    let mut child = shell_on(uri, "shop", &script(process, run, stop_at))
        .spawn()
        .expect("start mongosh");
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let Ok(value) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            let message = if value.get("took").is_some() {
                Said::Took(process)
            } else if let Some(reference) = value["committed"].as_str() {
                Said::Committed(reference.to_string())
            } else if let Some(reference) = value["aborted"].as_str() {
                Said::Aborted(reference.to_string())
            } else if value.get("done").is_some() {
                Said::Done(process)
            } else {
                continue;
            };
            if said.send(message).is_err() {
                return;
            }
        }
        let _ = said.send(Said::Ended(process, run));
    });
    child
}

#[test]
fn eight_processes_killed_in_their_transactions_leave_every_number_once_on_a_committed_invoice() {
    let server = OwnedServer::start(ServerConfig::default());
    crate::support::service::block_on(async {
        let client = mongodb::Client::with_uri_str(&server.uri).await.unwrap();
        // A killed client's transaction is aborted by the server within 2 s
        // (60 s by default): the series waits that long, no longer.
        client
            .database("admin")
            .run_command(doc! { "setParameter": 1, "transactionLifetimeLimitSeconds": 2 })
            .await
            .unwrap();
    });
    let cli = || idmint_on(&server.uri, "shop");
    assert_exit(&run(cli().arg("install")), 0);
    assert_exit(&run(cli().args(["series", "create", "inv"])), 0);

    // Which three processes are killed, and at which of their transactions.
    let mut rng = Rng::new(seed("series_kill"));
    let mut victims: Vec<(usize, u64)> = Vec::new();
    while victims.len() < 3 {
        let process = rng.between(0, 7) as usize;
        if victims.iter().all(|(chosen, _)| *chosen != process) {
            victims.push((process, rng.between(1, INVOICES as u64 - 1)));
        }
    }
    let (said, heard) = mpsc::channel();
    let stop_at = |process: usize| {
        victims
            .iter()
            .find(|(chosen, _)| *chosen == process)
            .map_or(0, |(_, at)| *at)
    };
    let mut children: Vec<Child> = (0..8)
        .map(|process| spawn(&server.uri, process, 0, stop_at(process), said.clone()))
        .collect();
    let mut took = [0_u64; 8];
    let mut runs = [0_usize; 8];
    let (mut committed, mut aborted) = (HashSet::new(), HashSet::new());
    let mut done = HashSet::new();
    while done.len() < 8 {
        match heard
            .recv_timeout(Duration::from_secs(120))
            .expect("the processes went quiet")
        {
            Said::Took(process) => {
                took[process] += 1;
                let victim = victims
                    .iter()
                    .position(|(chosen, at)| *chosen == process && took[process] == *at);
                if let Some(victim) = victim {
                    // Inside its transaction: number and invoice written,
                    // not committed. Killed, then started again.
                    victims.remove(victim);
                    signal(children[process].id(), libc::SIGKILL);
                    children[process].wait().unwrap();
                    runs[process] += 1;
                    children[process] = spawn(&server.uri, process, runs[process], 0, said.clone());
                }
            }
            Said::Committed(reference) => {
                committed.insert(reference);
            }
            Said::Aborted(reference) => {
                aborted.insert(reference);
            }
            Said::Done(process) => {
                done.insert(process);
            }
            // A process whose output ended unkilled and undone failed.
            Said::Ended(process, run) if run == runs[process] && !done.contains(&process) => {
                let status = children[process].wait().unwrap();
                let mut stderr = String::new();
                if let Some(mut pipe) = children[process].stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
                }
                panic!(
                    "process {process} ended ({status}) before its invoices were done: {stderr}"
                );
            }
            Said::Ended(..) => {}
        }
    }
    assert!(
        victims.is_empty(),
        "not every victim was killed: {victims:?}"
    );
    for child in &mut children {
        assert!(child.wait().unwrap().success());
    }

    let output = run(cli().args([
        "series",
        "audit",
        "inv",
        "--against",
        "invoices._id",
        "--json",
    ]));
    assert_exit(&output, 0);
    let audit: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(audit["findings"], serde_json::json!([]), "{audit}");
    assert_eq!(audit["first"], 1);
    assert_eq!(
        audit["last"].as_u64().unwrap(),
        committed.len() as u64,
        "{audit}"
    );
    assert_eq!(audit["confirmed"].as_u64().unwrap(), committed.len() as u64);
    let (invoices, records) = crate::support::service::block_on(async {
        let client = mongodb::Client::with_uri_str(&server.uri).await.unwrap();
        let database = client.database("shop");
        (
            documents(&database, "invoices").await,
            documents(&database, "series_numbers").await,
        )
    });
    let on_invoices: HashSet<String> = invoices
        .iter()
        .map(|invoice: &Document| invoice.get_str("_id").unwrap().to_string())
        .collect();
    assert_eq!(
        on_invoices, committed,
        "the invoices are the committed ones"
    );
    assert!(aborted.is_disjoint(&on_invoices));
    let mut numbers: Vec<i64> = records
        .iter()
        .map(|record| record.get_i64("number").unwrap())
        .collect();
    numbers.sort();
    assert_eq!(numbers, (1..=committed.len() as i64).collect::<Vec<_>>());
    // Each invoice has the number its record has.
    for record in &records {
        let invoice = invoices
            .iter()
            .find(|invoice| invoice.get_str("_id").ok() == record.get_str("reference").ok())
            .unwrap();
        assert_eq!(
            number_of(invoice),
            record.get_i64("number").ok(),
            "{invoice}"
        );
    }
    assert_eq!(runs.iter().sum::<usize>(), 3, "three processes were killed");
    // Every process finished a whole run: two of each three committed.
    assert!(
        committed.len() >= 8 * (INVOICES - INVOICES / 3),
        "{}",
        committed.len()
    );
}

/// An invoice's number as mongosh wrote it (a JavaScript number: an int32
/// or a double).
fn number_of(invoice: &Document) -> Option<i64> {
    match invoice.get("number")? {
        mongodb::bson::Bson::Int32(number) => Some(i64::from(*number)),
        mongodb::bson::Bson::Int64(number) => Some(*number),
        mongodb::bson::Bson::Double(number) => Some(*number as i64),
        _ => None,
    }
}
