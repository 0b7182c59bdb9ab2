//! The monitor page, in a real browser: headless Chromium loads it from a
//! running `idmint serve`'s admin listener and the test reads what a person
//! would see: the counters (one near its end, marked), this instance's
//! segment buffers, a worker lease, a lock held, and the policy in service
//! with its stored version. A screenshot of that page is what README shows
//! (`IDMINT_README_TEST=overwrite` writes it to `docs/monitor.png`).

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use idmint::lock::{Lock, LockName};
use idmint::sequence::{self, CounterKind, CounterName, CounterSpec, Settings, MAX_VALUE};

use serde_json::Value;

use crate::fault_proxy::FaultProxy;
use crate::harness::{self, assert_exit, run, OwnedServer, ServerConfig};
use crate::serve::{block_on, create, request, Answer, Service};

/// What the page shows of a lock's holder: the first 12 hexadecimal
/// digits of the SHA-256 of its owner token.
fn fingerprint(owner: &str) -> String {
    idmint::checksum::sha256_hex(owner.as_bytes())[..12].to_string()
}

/// Runs the browser (installed by `scripts/tools.sh`, `ensure_chromium`)
/// headless with `args`; what it printed.
fn chromium(args: &[&str]) -> Vec<u8> {
    let output = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1280,1100",
        ])
        .args(args)
        .output()
        .expect("run chromium (scripts/tools.sh installs it)");
    assert!(
        output.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// The page's text as the browser rendered it: its DOM with the markup
/// removed, one cell or line per line.
fn rendered_text(url: &str) -> (String, String) {
    let dom = String::from_utf8(chromium(&["--dump-dom", url])).unwrap();
    // What a person sees: the style sheet is not text on the page.
    let visible = match (dom.find("<style"), dom.find("</style>")) {
        (Some(start), Some(end)) => format!("{}{}", &dom[..start], &dom[end..]),
        _ => dom.clone(),
    };
    let mut text = String::new();
    let mut in_tag = false;
    for c in visible.chars() {
        match c {
            '<' => {
                in_tag = true;
                text.push(' ');
            }
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (
        dom,
        text.replace("&amp;", "&")
            .replace("&gt;", ">")
            .replace("&lt;", "<"),
    )
}

#[test]
fn the_monitor_page_shows_what_an_operator_needs_in_a_real_browser() {
    const TEST: &str = "monitor_page";
    // One runtime for every database call: a client lives on the runtime
    // it was made on.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let database = runtime.block_on(harness::database(TEST));
    runtime.block_on(async {
        let create = |name: &str, spec: CounterSpec| {
            let database = database.clone();
            let name = CounterName::new(name).unwrap();
            async move { sequence::create(&database, &name, &spec).await.unwrap() }
        };
        let mut segment = Settings::default();
        segment.step = Some(100);
        create(
            "orders",
            CounterSpec::of(CounterKind::Segment)
                .settings(segment)
                .prefixes(vec!["ORD-".into()]),
        )
        .await;
        // Five values from the end: the page marks it.
        let mut nearly = Settings::default();
        nearly.start = Some(MAX_VALUE - 5);
        create(
            "invoices",
            CounterSpec::of(CounterKind::Autoinc)
                .settings(nearly)
                .prefixes(vec!["INV-".into()]),
        )
        .await;
        create(
            "ticks",
            CounterSpec::of(CounterKind::Snowflake).prefixes(vec!["T-".into()]),
        )
        .await;
        create("serials", CounterSpec::default()).await;
    });
    // A stored policy, active: the service follows it.
    let pushed = run(harness::idmint(TEST).args([
        "--json",
        "policy",
        "push",
        harness::fixture_policy("check-digit"),
    ]));
    assert_exit(&pushed, 0);
    assert_exit(
        &run(harness::idmint(TEST).args(["policy", "activate", "1"])),
        0,
    );
    // A lock held by someone.
    let lock = Lock::new(&database, LockName::new("nightly-report").unwrap());
    let lease = runtime.block_on(harness::held(&lock, Duration::from_secs(600)));

    let service = Service::start(TEST, &["--policy-from-db"]);
    // Values from the segment counter (its buffers) and an ID from the
    // snowflake counter (a worker lease).
    assert_eq!(
        service.get("/v1/counters/orders/values?count=5").status,
        200
    );
    let ticks = service.get("/v1/counters/ticks/values");
    assert_eq!(ticks.status, 200, "{ticks:?}");

    let url = format!("http://{}/monitor", service.admin);
    let (dom, text) = rendered_text(&url);
    for counter in ["orders", "invoices", "ticks", "serials"] {
        assert!(
            text.contains(counter),
            "{counter} is not on the page: {text}"
        );
    }
    // The counter near its end is marked, and says how little is left.
    assert!(text.contains("INV- 6 values"), "{text}");
    let invoices_row = dom
        .split("<tr")
        .find(|row| row.contains("invoices"))
        .unwrap();
    assert!(invoices_row.contains(r#"class="warn""#), "{invoices_row}");
    // This instance's buffers of the segment counter: values 1..=5 taken
    // from its first segment [1, 101).
    assert!(text.contains("orders [1, 101) 6"), "{text}");
    // The service's worker lease, with its host and pid.
    let pid = service.child.id().to_string();
    let workers = dom.split("id=\"workers\"").nth(1).expect("a workers table");
    assert!(
        workers.contains("ticks") && workers.contains(&pid),
        "{workers}"
    );
    // The lock held, with a fingerprint of its holder (never the owner
    // token, which would let a reader release it).
    let locks = dom.split("id=\"locks\"").nth(1).expect("a locks table");
    assert!(
        locks.contains("nightly-report") && locks.contains(&fingerprint(lock.owner())),
        "{locks}"
    );
    assert!(
        !dom.contains(lock.owner()),
        "the owner token is on the page"
    );
    // The policy in service: the stored version 1, active.
    assert!(text.contains("In service here: check-digit"), "{text}");
    assert!(text.contains("stored version 1"), "{text}");

    // The screenshot README shows.
    let shot = harness::workspace_root().join("target/tmp/monitor.png");
    std::fs::create_dir_all(shot.parent().unwrap()).unwrap();
    chromium(&[&format!("--screenshot={}", shot.display()), &url]);
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    if std::env::var("IDMINT_README_TEST").as_deref() == Ok("overwrite") {
        let docs: PathBuf = harness::workspace_root().join("docs/monitor.png");
        std::fs::write(docs, &png).unwrap();
    }
    runtime.block_on(lease.release()).unwrap();
}

/// With an admin token, `/monitor.json` and `/monitor` show who holds a
/// lock by a fingerprint and never the owner token (which renews and
/// releases the lease).
#[test]
fn the_monitor_shows_no_lock_owner_token() {
    const TEST: &str = "monitor_no_owner_token";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let database = runtime.block_on(harness::database(TEST));
    let lock = Lock::new(&database, LockName::new("payroll").unwrap());
    let lease = runtime.block_on(harness::held(&lock, Duration::from_secs(600)));
    let token = "tok-monitor";
    let sha256 = idmint::checksum::sha256_hex(token.as_bytes());
    let service = Service::start(TEST, &["--admin-token-sha256", &sha256]);
    let bearer = format!("Bearer {token}");
    let get = |path: &str| {
        let answer = request(
            &service.admin,
            "GET",
            path,
            &[("Authorization", &bearer)],
            None,
        );
        assert_eq!(answer.status, 200, "{path}: {answer:?}");
        answer
    };
    let json = get("/monitor.json");
    assert_eq!(json.json()["locks"][0]["name"], "payroll", "{json:?}");
    assert_eq!(
        json.json()["locks"][0]["holder_fingerprint"],
        fingerprint(lock.owner()).as_str()
    );
    let page = get("/monitor");
    assert!(page.body.contains(&fingerprint(lock.owner())), "{page:?}");
    for answer in [&json, &page] {
        assert!(
            !answer.body.contains(lock.owner()),
            "the owner token is shown: {answer:?}"
        );
    }
    runtime.block_on(lease.release()).unwrap();
}

/// Asserts what the monitor shows with the database out of reach: the page
/// and its JSON are answered (not the request time limit's 503
/// `overloaded`), each part of the database's side named as the database
/// being unavailable, and this instance's side, read from memory, shown:
/// the segment counter's buffers after 5 values, the policy in service.
fn assert_shown_without_the_database(service: &Service) {
    let asked = std::time::Instant::now();
    let json: Answer = service.admin("/monitor.json");
    let took = asked.elapsed();
    assert_eq!(json.status, 200, "after {took:?}: {json:?}");
    let snapshot: Value = json.json();
    let problems: Vec<&str> = snapshot["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|problem| problem.as_str().unwrap())
        .collect();
    for part in ["counters", "locks", "stored policies", "active policy"] {
        let named = format!("{part}: the database is unavailable");
        assert!(
            problems.iter().any(|problem| problem.starts_with(&named)),
            "{named:?} not in {problems:?}"
        );
    }
    let buffers = &snapshot["instance"]["buffers"];
    assert_eq!(buffers[0]["counter"], "seg", "{snapshot}");
    assert_eq!(buffers[0]["values"], 5, "{snapshot}");
    assert!(snapshot["instance"]["rates"].is_array(), "{snapshot}");
    assert!(
        snapshot["policy"]["serving"]["name"].is_string(),
        "{snapshot}"
    );
    let page = service.admin("/monitor");
    assert_eq!(page.status, 200, "{page:?}");
    assert!(
        page.body
            .contains("Could not read counters: the database is unavailable"),
        "{}",
        page.body
    );
    let buffers = page
        .body
        .split("id=\"buffers\"")
        .nth(1)
        .expect("the buffers table");
    assert!(buffers.contains("seg"), "{buffers}");
    eprintln!("/monitor.json answered in {took:?} without the database");
}

/// A hung database (a proxy that stops forwarding; connections stay open
/// and nothing answers): the monitor page names it and shows the rest.
#[test]
fn the_monitor_page_names_a_hung_database_and_shows_the_rest() {
    const TEST: &str = "monitor_hung_database";
    block_on(harness::database(TEST));
    create(TEST, "seg", &["--kind", "segment", "--step", "100"]);
    let proxy = FaultProxy::start();
    let mut command = harness::idmint(TEST);
    command.env("MONGODB_URI", proxy.uri());
    let service = Service::spawn(command, &[]);
    assert_eq!(
        service.get("/v1/counters/seg/values?count=5").values(),
        [1, 2, 3, 4, 5]
    );
    let healthy = service.admin("/monitor.json").json();
    assert_eq!(healthy["problems"], Value::Array(Vec::new()), "{healthy}");
    proxy.partition();
    assert_shown_without_the_database(&service);
}

/// A dead database (killed): the monitor page names it and shows the rest.
#[test]
fn the_monitor_page_names_a_dead_database_and_shows_the_rest() {
    let mut server = OwnedServer::start(ServerConfig::default());
    let idmint = || {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_idmint"));
        command
            .env("MONGODB_URI", &server.uri)
            .env("IDMINT_DB", "monitor_dead_database")
            .env_remove("IDMINT_POLICY");
        command
    };
    assert_exit(
        &run(idmint().args([
            "counter", "create", "seg", "--kind", "segment", "--step", "100",
        ])),
        0,
    );
    let service = Service::spawn(idmint(), &[]);
    assert_eq!(
        service.get("/v1/counters/seg/values?count=5").values(),
        [1, 2, 3, 4, 5]
    );
    server.kill();
    assert_shown_without_the_database(&service);
}
