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

use crate::support::fault_proxy::FaultProxy;
use crate::support::service::{assert_error, block_on, request, Answer, Service};
use crate::support::{self, assert_exit, create, run, OwnedServer, ServerConfig};

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
    let database = runtime.block_on(support::database(TEST));
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
    let pushed = run(support::idmint(TEST).args([
        "--json",
        "policy",
        "push",
        support::fixture_policy("check-digit"),
    ]));
    assert_exit(&pushed, 0);
    assert_exit(
        &run(support::idmint(TEST).args(["policy", "activate", "1"])),
        0,
    );
    // A lock held by someone.
    let lock = Lock::new(&database, LockName::new("nightly-report").unwrap());
    let lease = runtime.block_on(support::held(&lock, Duration::from_secs(600)));

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
    let shot = support::workspace_root().join("target/tmp/monitor.png");
    std::fs::create_dir_all(shot.parent().unwrap()).unwrap();
    chromium(&[&format!("--screenshot={}", shot.display()), &url]);
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    if std::env::var("IDMINT_README_TEST").as_deref() == Ok("overwrite") {
        let docs: PathBuf = support::workspace_root().join("docs/monitor.png");
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
    let database = runtime.block_on(support::database(TEST));
    let lock = Lock::new(&database, LockName::new("payroll").unwrap());
    let lease = runtime.block_on(support::held(&lock, Duration::from_secs(600)));
    // A semaphore held by two of its permits, whose owners stay unshown too.
    let permits: Vec<_> = (0..2)
        .map(|_| {
            let holder = Lock::new(&database, LockName::new("pool").unwrap());
            let permit = runtime
                .block_on(holder.try_acquire_shared(Duration::from_secs(600), 3))
                .unwrap()
                .expect("a free permit");
            (holder, permit)
        })
        .collect();
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
    assert_eq!(json.json()["locks"][1]["name"], "pool", "{json:?}");
    assert_eq!(json.json()["locks"][1]["shared"], 2, "{json:?}");
    assert_eq!(
        json.json()["locks"][0]["holder_fingerprint"],
        fingerprint(lock.owner()).as_str()
    );
    let page = get("/monitor");
    assert!(page.body.contains(&fingerprint(lock.owner())), "{page:?}");
    assert!(page.body.contains("2 shared"), "{page:?}");
    for answer in [&json, &page] {
        for owner in std::iter::once(lock.owner()).chain(permits.iter().map(|(h, _)| h.owner())) {
            assert!(
                !answer.body.contains(owner),
                "an owner token is shown: {answer:?}"
            );
        }
    }
    runtime.block_on(lease.release()).unwrap();
    for (_, permit) in permits {
        runtime.block_on(permit.release()).unwrap();
    }
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
    block_on(support::database(TEST));
    create(TEST, "seg", &["--kind", "segment", "--step", "100"]);
    let proxy = FaultProxy::start();
    let mut command = support::idmint(TEST);
    command.env("MONGODB_URI", proxy.uri());
    let service = Service::spawn(command, &[]);
    assert_eq!(
        service.get("/v1/counters/seg/values?count=5").values(),
        [1, 2, 3, 4, 5]
    );
    // The database answers through the proxy. (Asked with `/readyz`, not
    // the monitor: the monitor would reuse its healthy read for a few
    // seconds after the partition.)
    let ready = service.admin("/readyz");
    assert_eq!(ready.json()["database"], "ok", "{ready:?}");
    proxy.partition();
    assert_shown_without_the_database(&service);
}

/// A dead database (killed): the monitor page names it and shows the rest.
#[test]
fn the_monitor_page_names_a_dead_database_and_shows_the_rest() {
    let mut server = OwnedServer::start(ServerConfig::default());
    let idmint = || support::idmint_on(&server.uri, "monitor_dead_database");
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

/// The ordinary counters of [`counters_of_every_sort`].
const ORDINARY: usize = 120;

/// Fills the database of `test` with more counters than the monitor's
/// default view shows when it must choose: `cust-0000` to `cust-0119`,
/// ordinary, each owning a prefix of its own, in the shape `counter create`
/// writes (the first made by the library, the others copies of its
/// document under other names); and one counter of each sort the view
/// shows first: `invoices`, five values from its end; `broken`, malformed;
/// `legacy` and `legacy-copy`, documents without `prefixes` that both own
/// `LEG-` undeclared. Returns every name, by name.
fn counters_of_every_sort(test: &str) -> Vec<String> {
    use mongodb::bson::{doc, Document};
    block_on(async {
        let database = support::database(test).await;
        let first = CounterName::new("cust-0000").unwrap();
        sequence::create(
            &database,
            &first,
            &CounterSpec::of(CounterKind::Autoinc).prefixes(vec!["C0000-".into()]),
        )
        .await
        .unwrap();
        let counters = database.collection::<Document>(sequence::COUNTERS_COLLECTION);
        let template = counters
            .find_one(doc! { "_id": "cust-0000" })
            .await
            .unwrap()
            .unwrap();
        let copies: Vec<Document> = (1..ORDINARY)
            .map(|i| {
                let mut copy = template.clone();
                let prefix = format!("C{i:04}-");
                copy.insert("_id", format!("cust-{i:04}"));
                copy.insert("prefix", &prefix);
                copy.insert("prefixes", vec![prefix]);
                copy
            })
            .collect();
        counters.insert_many(copies).await.unwrap();
        let mut nearly = Settings::default();
        nearly.start = Some(MAX_VALUE - 5);
        sequence::create(
            &database,
            &CounterName::new("invoices").unwrap(),
            &CounterSpec::of(CounterKind::Autoinc)
                .settings(nearly)
                .prefixes(vec!["INV-".into()]),
        )
        .await
        .unwrap();
        counters
            .insert_many([
                doc! { "_id": "broken", "kind": "autoinc", "seq": "many" },
                doc! { "_id": "legacy", "val": 0_i64, "maxval": 999_i64, "prefix": "LEG-" },
                doc! { "_id": "legacy-copy", "val": 0_i64, "maxval": 999_i64, "prefix": "LEG-" },
            ])
            .await
            .unwrap();
    });
    let mut names: Vec<String> = (0..ORDINARY).map(|i| format!("cust-{i:04}")).collect();
    names.extend(["invoices", "broken", "legacy", "legacy-copy"].map(String::from));
    names.sort();
    names
}

/// The names of the counters a `/monitor.json` answer shows, in order.
fn shown(snapshot: &Value) -> Vec<String> {
    snapshot["counters"]
        .as_array()
        .unwrap_or_else(|| panic!("no counters in {snapshot}"))
        .iter()
        .map(|row| row["name"].as_str().unwrap().to_string())
        .collect()
}

/// The row of counter `name` in a `/monitor.json` answer.
fn row<'a>(snapshot: &'a Value, name: &str) -> &'a Value {
    snapshot["counters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not shown: {snapshot}"))
}

/// A GET on the admin listener that must answer 200.
fn ok(service: &Service, path: &str) -> Answer {
    let answer = service.admin(path);
    assert_eq!(answer.status, 200, "{path}: {answer:?}");
    answer
}

/// With more counters than fit on a page, the monitor shows by default the
/// ones to look at first (near their end, malformed, with a prefix owned
/// twice or undeclared, the busiest here), each with why, and only counts
/// the others.
#[test]
fn the_monitor_shows_the_counters_to_look_at_first_and_counts_the_rest() {
    const TEST: &str = "monitor_first";
    let names = counters_of_every_sort(TEST);
    let service = Service::start(TEST, &[]);
    // An ordinary counter made busy here.
    for _ in 0..3 {
        assert_eq!(
            service.get("/v1/counters/cust-0042/values?count=5").status,
            200
        );
    }

    let snapshot = ok(&service, "/monitor.json").json();
    assert_eq!(snapshot["problems"], Value::Array(Vec::new()), "{snapshot}");
    let paging = &snapshot["paging"];
    assert_eq!(paging["view"], "first", "{paging}");
    assert_eq!(paging["total"], names.len(), "{paging}");
    let attention = |name: &str| row(&snapshot, name)["attention"].clone();
    assert_eq!(attention("invoices"), serde_json::json!(["near_end"]));
    assert_eq!(attention("broken"), serde_json::json!(["malformed"]));
    for legacy in ["legacy", "legacy-copy"] {
        assert_eq!(
            attention(legacy),
            serde_json::json!(["shared_prefix", "undeclared_prefixes"])
        );
        assert_eq!(row(&snapshot, legacy)["collisions"][0]["prefix"], "LEG-");
    }
    assert_eq!(attention("cust-0042"), serde_json::json!(["busy"]));
    assert_eq!(row(&snapshot, "cust-0042")["recent_values"], 15);
    // Only those; every other counter is counted.
    let shown = shown(&snapshot);
    assert_eq!(shown.len(), 5, "{shown:?}");
    assert_eq!(paging["more"], names.len() - 5, "{paging}");
    assert_eq!(
        paging["attention"],
        serde_json::json!({
            "malformed": 1, "shared_prefix": 2, "near_end": 1,
            "undeclared_prefixes": 2, "busy": 1,
        })
    );

    let page = ok(&service, "/monitor").body;
    for name in ["invoices", "broken", "legacy-copy", "cust-0042"] {
        assert!(page.contains(name), "{name} is not on the page: {page}");
    }
    assert!(page.contains("near the end"), "{page}");
    assert!(page.contains("And 119 more counters: search or"), "{page}");
    assert!(
        !page.contains("cust-0007"),
        "an ordinary counter is shown: {page}"
    );
}

/// A search by the start of a name finds an ordinary counter; pages of
/// counters by name, followed by their `next` links, are disjoint and
/// consecutive and cover every counter, in the JSON and on the page.
#[test]
fn the_monitor_finds_counters_by_name_and_pages_through_all_of_them() {
    const TEST: &str = "monitor_pages";
    let names = counters_of_every_sort(TEST);
    let service = Service::start(TEST, &[]);

    let found = ok(&service, "/monitor.json?q=cust-0007").json();
    assert_eq!(shown(&found), ["cust-0007"], "{found}");
    assert_eq!(found["paging"]["view"], "page");
    assert_eq!(found["paging"]["total"], 1);
    let found = ok(&service, "/monitor.json?q=cust-001").json();
    let expected: Vec<String> = (10..20).map(|i| format!("cust-{i:04}")).collect();
    assert_eq!(shown(&found), expected, "{found}");
    // A page's counters carry their reasons too.
    let found = ok(&service, "/monitor.json?q=inv").json();
    assert_eq!(
        row(&found, "invoices")["attention"],
        serde_json::json!(["near_end"])
    );
    let page = ok(&service, "/monitor?q=cust-0007").body;
    assert!(page.contains("cust-0007"), "{page}");
    assert!(!page.contains("cust-0008"), "{page}");

    // Every counter, 50 a page, by following the links.
    let mut seen: Vec<String> = Vec::new();
    let mut query = Some("?per_page=50".to_string());
    let mut pages = 0;
    while let Some(next) = query {
        let answer = ok(&service, &format!("/monitor.json{next}")).json();
        let paging = &answer["paging"];
        pages += 1;
        assert_eq!(paging["page"], pages, "{paging}");
        assert_eq!(paging["total"], names.len(), "{paging}");
        let page = shown(&answer);
        assert!(!page.is_empty() && page.len() <= 50, "{paging}: {page:?}");
        seen.extend(page);
        query = paging["next"].as_str().map(str::to_string);
    }
    assert_eq!(pages, names.len().div_ceil(50));
    assert_eq!(
        seen, names,
        "the pages are not every counter once, in order"
    );

    // The page links to its neighbours, with plain links.
    let second = ok(&service, "/monitor?page=2&per_page=50").body;
    assert!(
        second.contains(r#"href="?page=3&amp;per_page=50""#),
        "{second}"
    );
    assert!(
        second.contains(r#"href="?page=1&amp;per_page=50""#),
        "{second}"
    );
    assert!(
        second.contains(&names[50]) && !second.contains(&names[49]),
        "{second}"
    );
}

/// Bad query parameters are answered 400, naming the parameter; the page
/// size is bounded.
#[test]
fn the_monitor_refuses_bad_parameters_naming_them() {
    const TEST: &str = "monitor_parameters";
    block_on(support::database(TEST));
    let service = Service::start(TEST, &[]);
    for (query, parameter) in [
        ("page=0", "page"),
        ("page=two", "page"),
        ("page=1000001", "page"),
        ("per_page=0", "per_page"),
        ("per_page=501", "per_page"),
        ("q=a%24b", "q"),
        ("q=-x", "q"),
        ("sort=name", "sort"),
    ] {
        for route in ["/monitor", "/monitor.json"] {
            let answer = service.admin(&format!("{route}?{query}"));
            assert_error(&answer, 400, "bad-request", parameter);
        }
    }
    // The largest page is served.
    let largest = ok(&service, "/monitor.json?per_page=500").json();
    assert_eq!(largest["paging"]["per_page"], 500);
}

/// A striped counter's row says what each of its lanes has handed out, as
/// `counter show` says it, on the default page and on a page found by name.
#[test]
fn the_monitor_shows_each_lane_of_a_striped_counter() {
    const TEST: &str = "monitor_lanes";
    block_on(support::database(TEST));
    create(TEST, "orders", &["--kind", "autoinc", "--stripes", "2"]);
    let taken = run(support::idmint(TEST).args(["seq", "orders", "--count", "3"]));
    assert_exit(&taken, 0);
    // `counter show`'s lines of the lanes: "  lane 0: local value 2, ...".
    let shown = run(support::idmint(TEST).args(["counter", "show", "orders"]));
    assert_exit(&shown, 0);
    let lanes: Vec<(String, String)> = support::stdout(&shown)
        .lines()
        .filter_map(|line| line.trim().split_once(": "))
        .filter(|(label, _)| label.starts_with("lane "))
        .map(|(label, text)| (label.to_string(), text.trim().to_string()))
        .collect();
    assert_eq!(lanes.len(), 2, "{}", support::stdout(&shown));
    assert!(
        lanes
            .iter()
            .any(|(_, text)| text.starts_with("local value")),
        "{lanes:?}"
    );
    let service = Service::start(TEST, &[]);
    for path in ["/monitor.json", "/monitor.json?q=orders"] {
        let snapshot = ok(&service, path).json();
        let facts: Vec<(String, String)> = row(&snapshot, "orders")["facts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|fact| {
                (
                    fact[0].as_str().unwrap().to_string(),
                    fact[1].as_str().unwrap().to_string(),
                )
            })
            .collect();
        for lane in &lanes {
            assert!(facts.contains(lane), "{path}: {lane:?} not in {facts:?}");
        }
    }
}
