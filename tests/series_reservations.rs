//! Reservations of a gap-free series (issue 52, step 2): a number reserved,
//! then confirmed with a reference or voided with a reason; a retried call
//! (its answer lost) answers the same and takes nothing; a reservation past
//! its deadline is voided "expired" and never handed to anyone else; the
//! audit finds the series whole through all of it. In the library, the
//! CLI, and `idmint serve` with its answers lost on the way.

use std::io::Write;
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::sync::Arc;
use std::time::Duration;

use idmint::sequence::CounterName;
use idmint::series::{
    audit, create_series, read_series, void_expired, NumberState, Series, SeriesError, EXPIRED,
};
use mongodb::bson::{doc, DateTime, Document};
use mongodb::Database;
use tokio::sync::Barrier;

use crate::support::fault_proxy::FaultProxy;
use crate::support::service::{assert_error, request, Answer, Service};
use crate::support::{self, assert_durable, assert_exit, documents, idmint, run, stdout};

const LONG: Duration = Duration::from_secs(300);

/// Series `invoices` of the test's database, first number 1.
async fn invoices(database: &Database) -> Series {
    let name = CounterName::new("invoices").unwrap();
    create_series(database, &name, 1).await.unwrap();
    Series::new(database, name)
}

/// The record of number `number` of series `invoices`.
async fn record(database: &Database, number: u64) -> Document {
    database
        .collection::<Document>("series_numbers")
        .find_one(doc! { "series": "invoices", "number": number as i64 })
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("no record of number {number}"))
}

/// The series' `last`.
async fn last(database: &Database) -> u64 {
    read_series(database, &CounterName::new("invoices").unwrap(), None)
        .await
        .unwrap()
        .last
}

/// Waits until the server's clock is past `deadline` (its `hello` says
/// the time): a condition on the clock that decides expiry, not a sleep.
async fn until_server_time_passes(database: &Database, deadline: DateTime) {
    support::wait::within(Duration::from_secs(30), "the server's clock", async {
        loop {
            let hello = database.run_command(doc! { "hello": 1 }).await.unwrap();
            if *hello.get_datetime("localTime").unwrap() > deadline {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
}

/// A number reserved is confirmed once or voided once: a retried reserve
/// with its client key answers the same number and takes none; a confirm
/// or void repeated answers `already`; the other way round, or another
/// reference, is refused and writes nothing; a number never reserved is
/// refused. The audit then finds the series whole. Every write is durable.
#[tokio::test]
async fn a_reserved_number_is_settled_once_and_retries_answer_the_same() {
    let (database, log) = support::monitored_database("series_reserve").await;
    let series = invoices(&database).await.by("billing");

    let first = series.reserve(LONG, Some("order-7")).await.unwrap();
    assert_eq!(
        (first.number, first.state, first.reused),
        (1, NumberState::Reserved, false)
    );
    let again = series.reserve(LONG, Some("order-7")).await.unwrap();
    assert_eq!(
        (again.number, again.deadline, again.reused),
        (1, first.deadline, true)
    );
    assert_eq!(last(&database).await, 1, "a retried reserve took a number");
    let second = series.reserve(LONG, None).await.unwrap();
    assert_eq!(second.number, 2);

    let reserved = record(&database, 1).await;
    assert_eq!(reserved.get_str("state").unwrap(), "reserved");
    assert_eq!(reserved.get_str("reserved_by").unwrap(), "billing");
    assert_eq!(reserved.get_str("client_key").unwrap(), "order-7");
    let ttl = reserved
        .get_datetime("deadline")
        .unwrap()
        .timestamp_millis()
        - reserved
            .get_datetime("reserved_at")
            .unwrap()
            .timestamp_millis();
    assert_eq!(ttl, 300_000, "{reserved}");

    // A reference that begins with $ is a string, not a field path.
    let confirmed = series.confirm(1, "$invoice-1").await.unwrap();
    assert_eq!(
        (confirmed.state, confirmed.already),
        (NumberState::Confirmed, false)
    );
    let repeated = series.confirm(1, "$invoice-1").await.unwrap();
    assert!(repeated.already);
    assert_eq!(
        record(&database, 1).await.get_str("reference").unwrap(),
        "$invoice-1"
    );
    let refused = series.confirm(1, "invoice-9").await.unwrap_err();
    assert!(
        matches!(&refused, SeriesError::Settled { number: 1, why, .. }
            if why.contains("\"$invoice-1\"") && why.contains("\"invoice-9\"")),
        "{refused}"
    );
    let refused = series.void(1, "typo").await.unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("a confirmed number is never voided"),
        "{refused}"
    );

    let voided = series.void(2, "order cancelled").await.unwrap();
    assert_eq!((voided.state, voided.already), (NumberState::Voided, false));
    let repeated = series.void(2, "another reason").await.unwrap();
    assert_eq!(
        (repeated.already, repeated.reason.as_deref()),
        (true, Some("order cancelled"))
    );
    let refused = series.confirm(2, "invoice-2").await.unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("a voided number is never confirmed"),
        "{refused}"
    );
    let never = series.confirm(3, "invoice-3").await.unwrap_err();
    assert!(
        matches!(never, SeriesError::NotReserved { number: 3, .. }),
        "{never}"
    );
    let empty = series.void(2, "").await.unwrap_err();
    assert!(matches!(empty, SeriesError::BadInput { .. }), "{empty}");

    let voided = record(&database, 2).await;
    assert_eq!(
        (
            voided.get_str("state").unwrap(),
            voided.get_str("reason").unwrap()
        ),
        ("voided", "order cancelled")
    );
    let audit = audit(&database, series.name()).await.unwrap();
    assert!(audit.is_whole(), "{audit:?}");
    assert_eq!(
        (audit.last, audit.confirmed, audit.voided, audit.reserved),
        (2, 1, 1, 0)
    );

    let commits = log.named("commitTransaction");
    assert_eq!(commits.len(), 2, "two reserves took numbers");
    commits.iter().for_each(assert_durable);
    let updates = log.named("update");
    assert!(updates.len() >= 5, "{updates:?}");
    updates.iter().for_each(assert_durable);
}

/// A reservation past its deadline (the server's clock) is voided
/// "expired": a confirm after it is refused and voids it if nothing had;
/// the sweep voids the others; the next reserve takes the next number,
/// never an expired one; the audit finds the series whole.
#[tokio::test]
async fn a_reservation_past_its_deadline_is_voided_and_never_handed_out_again() {
    let database = support::database("series_expiry").await;
    let series = invoices(&database).await;
    let one = series.reserve(Duration::from_secs(1), None).await.unwrap();
    let two = series
        .reserve(Duration::from_secs(1), Some("retry-me"))
        .await
        .unwrap();
    let three = series.reserve(LONG, None).await.unwrap();
    until_server_time_passes(&database, two.deadline).await;

    // Number 1: confirmed too late, refused, and voided by that refusal.
    let late = series.confirm(one.number, "invoice-1").await.unwrap_err();
    assert!(late.to_string().contains("voided \"expired\""), "{late}");
    assert_eq!(
        record(&database, 1).await.get_str("reason").unwrap(),
        EXPIRED
    );
    // Number 2: the sweep voided it with number 1 (nothing left to void).
    let state = record(&database, 2).await;
    assert_eq!(
        (
            state.get_str("state").unwrap(),
            state.get_str("by").unwrap()
        ),
        ("voided", "idmint (expiry)")
    );
    assert_eq!(void_expired(&database, None).await.unwrap(), 0);
    // Its client key answers the voided reservation, taking nothing.
    let retried = series
        .reserve(Duration::from_secs(1), Some("retry-me"))
        .await
        .unwrap();
    assert_eq!(
        (retried.number, retried.state, retried.reused),
        (2, NumberState::Voided, true)
    );
    // Number 3 is still reserved, and the next is 4.
    assert_eq!(
        record(&database, 3).await.get_str("state").unwrap(),
        "reserved"
    );
    assert_eq!(series.reserve(LONG, None).await.unwrap().number, 4);
    series.confirm(three.number, "invoice-3").await.unwrap();

    let audit = audit(&database, series.name()).await.unwrap();
    assert!(audit.is_whole(), "{audit:?}");
    assert_eq!((audit.confirmed, audit.voided, audit.reserved), (1, 2, 1));
}

/// Eight reserves with one client key at once (a barrier) take one number
/// between them: the unique index on the client keys refuses the others'
/// records, and they answer the first one's number.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reserves_with_one_client_key_at_once_take_one_number() {
    let database = support::database("series_reserve_race").await;
    let series = invoices(&database).await;
    let barrier = Arc::new(Barrier::new(8));
    let reserves: Vec<_> = (0..8)
        .map(|_| {
            let (series, barrier) = (series.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                series.reserve(LONG, Some("the-same-key")).await.unwrap()
            })
        })
        .collect();
    let mut numbers = Vec::new();
    let mut reused = 0;
    for reserve in reserves {
        let reservation = reserve.await.unwrap();
        numbers.push(reservation.number);
        reused += usize::from(reservation.reused);
    }
    assert_eq!(numbers, [1; 8], "one key, one number");
    assert_eq!(reused, 7);
    assert_eq!(
        last(&database).await,
        1,
        "a reserve took a number it did not answer"
    );
    assert_eq!(documents(&database, "series_numbers").await.len(), 1);
}

/// `idmint series reserve|confirm|void`: the number on stdout (JSON with
/// `--json`), a retried reserve's warning, a refusal's message and exit 2.
#[tokio::test]
async fn the_cli_reserves_confirms_and_voids() {
    const TEST: &str = "series_reserve_cli";
    let database = support::database(TEST).await;
    assert_exit(&run(idmint(TEST).args(["series", "create", "inv"])), 0);
    let output = run(idmint(TEST).args(["series", "reserve", "inv", "--client-key", "k1"]));
    assert_exit(&output, 0);
    assert_eq!(stdout(&output).trim(), "1");
    let output =
        run(idmint(TEST).args(["series", "reserve", "inv", "--client-key", "k1", "--json"]));
    assert_exit(&output, 0);
    let json: serde_json::Value =
        serde_json::from_str(stdout(&output).lines().next().unwrap()).unwrap();
    assert_eq!(
        (json["number"].as_u64(), json["reused"].as_bool()),
        (Some(1), Some(true))
    );
    assert!(json["deadline"].as_str().unwrap().ends_with('Z'), "{json}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("reserved by an earlier call with this client key"),
        "{stderr}"
    );

    let output = run(idmint(TEST).args(["series", "confirm", "inv", "1", "--reference", "A-1"]));
    assert_exit(&output, 0);
    assert_eq!(
        stdout(&output).trim(),
        "series 'inv': number 1 is confirmed with reference \"A-1\""
    );
    let output = run(idmint(TEST).args(["series", "confirm", "inv", "1", "--reference", "A-2"]));
    assert_exit(&output, 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("number 1 is confirmed with reference \"A-1\" already, not \"A-2\"; nothing was written"),
        "{stderr}"
    );
    assert_exit(
        &run(idmint(TEST).args(["series", "reserve", "inv", "--ttl", "0"])),
        2,
    );
    let output = run(idmint(TEST).args(["series", "reserve", "inv", "--ttl", "60"]));
    assert_eq!(stdout(&output).trim(), "2");
    let output = run(idmint(TEST).args(["series", "void", "inv", "2", "--reason", "cancelled"]));
    assert_exit(&output, 0);
    assert_eq!(
        stdout(&output).trim(),
        "series 'inv': number 2 is voided (\"cancelled\")"
    );
    let output = run(idmint(TEST).args(["series", "void", "inv", "7", "--reason", "x"]));
    assert_exit(&output, 2);
    let output = run(idmint(TEST).args(["series", "audit", "inv"]));
    assert_exit(&output, 0);
    assert_eq!(
        stdout(&output).trim(),
        "series 'inv': numbers 1 to 2, 1 confirmed, 1 voided; whole: every number has one record"
    );
    assert_eq!(documents(&database, "series_numbers").await.len(), 2);
}

/// An HTTP request whose answer is lost: sent through `proxy`, which holds
/// the service's answers; returns once the service answered (the work is
/// done), and drops the connection, answer unread.
fn answer_lost(proxy: &FaultProxy, path: &str, body: &str) {
    let before = proxy.held_answer_bytes();
    let mut stream = TcpStream::connect(proxy.address()).unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: idmint\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    support::wait::until(Duration::from_secs(30), "the service's answer", || {
        proxy.held_answer_bytes() > before
    });
    drop(stream);
}

fn post(service: &Service, path: &str, body: &str) -> Answer {
    request(&service.address, "POST", path, &[], Some(body))
}

/// Over HTTP, with the service's answers lost on the way (the write
/// applied, its answer not delivered): a reserve retried with its client
/// key answers the same number (200, `reused`) and a confirm retried
/// answers `already`, so nothing is taken twice; a client process killed
/// -9 between its reserve and its confirm never confirms, and the service's
/// sweep voids its number "expired" at the deadline; the refusals have kinds of their own; the
/// audit finds the series whole.
#[tokio::test]
async fn over_http_lost_answers_and_dead_clients_leave_the_series_whole() {
    const TEST: &str = "series_reserve_http";
    let database = support::database(TEST).await;
    let series = invoices(&database).await;
    let service = Service::start(TEST, &[]);
    let proxy = FaultProxy::to(service.address.parse().unwrap());
    proxy.hold_answers();

    let reserve = "/v1/series/invoices/reservations";
    answer_lost(&proxy, reserve, r#"{"client_key":"order-1"}"#);
    let retried = post(&service, reserve, r#"{"client_key":"order-1"}"#);
    assert_eq!(retried.status, 200, "{retried:?}");
    assert_eq!(
        (
            retried.json()["number"].as_u64(),
            retried.json()["reused"].as_bool()
        ),
        (Some(1), Some(true))
    );
    assert_eq!(last(&database).await, 1);

    answer_lost(
        &proxy,
        "/v1/series/invoices/reservations/1/confirm",
        r#"{"reference":"INV-1"}"#,
    );
    let retried = post(
        &service,
        "/v1/series/invoices/reservations/1/confirm",
        r#"{"reference":"INV-1"}"#,
    );
    assert_eq!(retried.status, 200, "{retried:?}");
    assert_eq!(retried.json()["already"], true);
    let other = post(
        &service,
        "/v1/series/invoices/reservations/1/confirm",
        r#"{"reference":"INV-X"}"#,
    );
    assert_error(
        &other,
        409,
        "settled",
        "confirmed with reference \"INV-1\" already",
    );
    let unknown = post(&service, "/v1/series/nothing/reservations", "{}");
    assert_error(
        &unknown,
        404,
        "unknown-series",
        "series 'nothing' does not exist",
    );
    let never = post(
        &service,
        "/v1/series/invoices/reservations/9/void",
        r#"{"reason":"x"}"#,
    );
    assert_error(&never, 404, "unknown-number", "number 9 was never reserved");
    let bad = post(&service, reserve, r#"{"ttl_s":0}"#);
    assert_error(&bad, 400, "bad-request", "time to live");

    // A client process that reserves, and is killed -9 before its confirm
    // (it would have confirmed a minute later).
    let mut client = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "curl -s -X POST -H 'Content-Type: application/json' -d '{{\"ttl_s\":1}}' \
             http://{}{reserve}; echo; sleep 60; curl -s -X POST \
             -H 'Content-Type: application/json' -d '{{\"reference\":\"late\"}}' \
             http://{}{reserve}/2/confirm",
            service.address, service.address
        ))
        .stdout(std::process::Stdio::piped())
        // A group of its own: the kill takes its `sleep` along.
        .process_group(0)
        .spawn()
        .expect("start the client");
    let mut answer = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(client.stdout.take().unwrap()),
        &mut answer,
    )
    .unwrap();
    let group = -libc::pid_t::try_from(client.id()).unwrap();
    // SAFETY: kill(2) on the process group of a child of this test's own.
    assert_eq!(unsafe { libc::kill(group, libc::SIGKILL) }, 0);
    client.wait().unwrap();
    let dead: serde_json::Value = serde_json::from_str(&answer).expect(&answer);
    let number = dead["number"].as_u64().unwrap();
    assert_eq!(number, 2);
    support::wait::within(Duration::from_secs(30), "the sweep", async {
        while record(&database, number).await.get_str("state").unwrap() != "voided" {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert_eq!(
        record(&database, number).await.get_str("reason").unwrap(),
        EXPIRED
    );
    let next = post(&service, reserve, "{}");
    assert_eq!(
        (next.status, next.json()["number"].as_u64()),
        (201, Some(3))
    );
    let by = record(&database, 3)
        .await
        .get_str("by")
        .unwrap()
        .to_string();
    assert!(by.contains(':'), "{by}");
    let voided = post(
        &service,
        "/v1/series/invoices/reservations/3/void",
        r#"{"reason":"test"}"#,
    );
    assert_eq!(
        (voided.status, voided.json()["state"].as_str()),
        (200, Some("voided"))
    );

    let audit = audit(&database, series.name()).await.unwrap();
    assert!(audit.is_whole(), "{audit:?}");
    assert_eq!((audit.last, audit.confirmed, audit.voided), (3, 1, 2));
}

/// `idmint serve` watches every series: `/metrics` has each series' holes,
/// open and expired reservations, and `/monitor.json` (and the page) lists
/// the series with holes first; the counts come from the indexes, the
/// audit names the holes.
#[tokio::test]
async fn serve_shows_each_series_holes_and_reservations() {
    const TEST: &str = "series_watch";
    let database = support::database(TEST).await;
    let series = invoices(&database).await;
    for number in 1..=3 {
        assert_eq!(
            series.take(&format!("inv-{number}")).await.unwrap().number,
            number
        );
    }
    series.reserve(LONG, None).await.unwrap();
    let quiet = Series::new(&database, CounterName::new("credit-notes").unwrap());
    create_series(&database, quiet.name(), 1).await.unwrap();
    quiet.take("r-1").await.unwrap();
    database
        .collection::<Document>("series_numbers")
        .delete_one(doc! { "series": "invoices", "number": 2_i64 })
        .await
        .unwrap();

    let service = Service::start(TEST, &[]);
    let mut metrics = String::new();
    support::wait::until(Duration::from_secs(30), "the series' metrics", || {
        metrics = service.admin("/metrics").body;
        metrics.contains("idmint_series_missing_numbers{series=\"invoices\"} 1")
    });
    for line in [
        "idmint_series_reserved_numbers{series=\"invoices\"} 1",
        "idmint_series_expired_reservations{series=\"invoices\"} 0",
        "idmint_series_missing_numbers{series=\"credit-notes\"} 0",
    ] {
        assert!(metrics.contains(line), "{line} not in\n{metrics}");
    }
    let monitor = service.admin("/monitor.json").json();
    let rows: Vec<(&str, u64, u64)> = monitor["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["series"].as_str().unwrap(),
                row["missing"].as_u64().unwrap(),
                row["reserved"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [("invoices", 1, 1), ("credit-notes", 0, 0)],
        "{monitor}"
    );
    let page = service.admin("/monitor").body;
    assert!(page.contains("Gap-free series"), "{page}");
}
