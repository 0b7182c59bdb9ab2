//! Gap-free series numbered per period (issue 52, step 4): a fiscal year
//! that starts in April and a calendar year, both in Europe/Paris, on a
//! server whose clock the test moves across their first day; each period
//! starts again at the first number, keeps the last of the one before, and
//! is audited on its own.

use idmint::sequence::CounterName;
use idmint::series::{audit_with, read_series, summaries};
use mongodb::bson::{doc, Document};

use crate::support::{assert_exit, run, stdout, FakeClockServer};

/// Runs `idmint ARGS` on `clock`'s server, database `series_periods`: its
/// stdout, after asserting exit `code`.
fn idmint(clock: &FakeClockServer, args: &[&str], code: i32) -> String {
    let output = run(clock.idmint("series_periods").args(args));
    assert_exit(&output, code);
    stdout(&output).trim().to_string()
}

/// A fiscal year from 1 April, in Paris: the last second of 31 March
/// (21:59:59 UTC, summer time) numbers in the year that started in 2026;
/// the first of 1 April numbers from 1 again in 2027's, the old year's last
/// kept. A number reserved in the old year is confirmed in it after the
/// change; each year is audited apart (a hole planted in the old one is
/// named there, and counted by the watch); the calendar year in Paris
/// changes at 23:00 UTC on 31 December.
#[tokio::test]
async fn each_period_starts_again_at_its_first_number_on_the_servers_clock() {
    let clock = FakeClockServer::start("2027-03-31 21:59:58");
    let fiscal = [
        "--period",
        "year",
        "--period-start",
        "04-01",
        "--zone",
        "Europe/Paris",
    ];
    idmint(
        &clock,
        &[&["series", "create", "invoices"][..], &fiscal].concat(),
        0,
    );
    let next = |reference: &str| {
        idmint(
            &clock,
            &["series", "next", "invoices", "--reference", reference],
            0,
        )
    };
    assert_eq!(next("order 1"), "2026 1");
    assert_eq!(next("order 2"), "2026 2");
    assert_eq!(
        idmint(&clock, &["series", "reserve", "invoices"], 0),
        "2026 3"
    );

    clock.freeze("2027-03-31 22:00:00");
    assert_eq!(next("order 4"), "2027 1");
    let confirmed = idmint(
        &clock,
        &[
            "series",
            "confirm",
            "invoices",
            "3",
            "--period",
            "2026",
            "--reference",
            "order 3",
        ],
        0,
    );
    assert_eq!(
        confirmed,
        "series 'invoices': number 3 of period 2026 is confirmed with reference \"order 3\""
    );
    // Number 3 of 2027 was never reserved.
    idmint(
        &clock,
        &[
            "series", "void", "invoices", "3", "--period", "2027", "--reason", "x",
        ],
        2,
    );
    assert_eq!(
        idmint(
            &clock,
            &["series", "audit", "invoices", "--period", "2026"],
            0
        ),
        "series 'invoices', period 2026: numbers 1 to 3, 3 confirmed, 0 voided; whole: every \
         number has one record"
    );
    assert_eq!(
        idmint(&clock, &["series", "audit", "invoices"], 0),
        "series 'invoices', period 2027: numbers 1 to 1, 1 confirmed, 0 voided; whole: every \
         number has one record"
    );
    idmint(
        &clock,
        &["series", "audit", "invoices", "--period", "2025"],
        2,
    );

    let database = mongodb::Client::with_uri_str(&clock.server.uri)
        .await
        .unwrap()
        .database("series_periods");
    let name = CounterName::new("invoices").unwrap();
    let state = read_series(&database, &name, None).await.unwrap();
    assert_eq!(
        (state.current.as_str(), state.last, state.closed.clone()),
        ("2027", 1, vec![("2026".to_string(), 3)])
    );
    database
        .collection::<Document>("series_numbers")
        .delete_one(doc! { "_id": "invoices/2026/0000000000000000002" })
        .await
        .unwrap();
    let old_year = audit_with(&database, &name, Some("2026"), None, |_| {})
        .await
        .unwrap();
    assert_eq!(
        old_year.findings,
        [idmint::series::Finding::Missing { from: 2, to: 2 }]
    );
    let watched = summaries(&database).await.unwrap();
    assert_eq!(watched[0].missing, 1, "{watched:?}");

    // The calendar year in Paris: 2027 begins at 23:00 UTC on 31 December.
    clock.freeze("2027-12-31 22:59:59");
    idmint(
        &clock,
        &[
            "series",
            "create",
            "receipts",
            "--period",
            "year",
            "--zone",
            "Europe/Paris",
        ],
        0,
    );
    let receipt = |reference: &str| {
        idmint(
            &clock,
            &["series", "next", "receipts", "--reference", reference],
            0,
        )
    };
    assert_eq!(receipt("r-1"), "2027 1");
    clock.freeze("2027-12-31 23:00:00");
    assert_eq!(receipt("r-2"), "2028 1");
}

/// What a period is made of is checked before anything is written: a day
/// is no period of a series, a month has no first day of its own, 30
/// February is no day, a zone the server does not know leaves no series.
#[tokio::test]
async fn a_period_that_cannot_be_is_refused_and_nothing_is_made() {
    let clock = FakeClockServer::start("2026-06-01 12:00:00");
    for (args, needle) in [
        (&["--period", "day"][..], "per year or per month"),
        (
            &["--period", "month", "--period-start", "04-01"][..],
            "only a year",
        ),
        (
            &["--period", "year", "--period-start", "02-30"][..],
            "02-30",
        ),
        (
            &["--period", "year", "--zone", "Mars/Olympus_Mons"][..],
            "not a time zone the server knows",
        ),
        (&["--period-start", "04-01"][..], "--period"),
    ] {
        let output = run(clock
            .idmint("series_periods_bad")
            .args(["series", "create", "s"])
            .args(args));
        assert_exit(&output, 2);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
    let database = mongodb::Client::with_uri_str(&clock.server.uri)
        .await
        .unwrap()
        .database("series_periods_bad");
    assert_eq!(
        database
            .collection::<Document>("series")
            .count_documents(doc! {})
            .await
            .unwrap(),
        0
    );
}
