//! Standard IDs from snowflake counters (docs/design/standard-ids.md): the
//! tag and salt each snowflake counter gets, unique in its database, drawn
//! durably, kept once when two processes race for an older counter's; the
//! built-in policies `builtin:uuidv7` and `builtin:ulid` (contract 0.5.0),
//! whose IDs code no one here wrote accepts: Python's `uuid` module and the
//! `python-ulid` package (PyPI), and the `uuid` npm package; an older counter's tag given by `idmint
//! serve` too; counters that do not own the empty prefix formatting
//! standard IDs all the same, their tag the namespace, with `next` and
//! `serve`, and refused a policy that does not write the tag; two
//! counters' IDs kept apart by their tags under a frozen clock
//! (libfaketime).

use std::collections::HashSet;
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use idmint::sequence::{draw_tag, ensure_tag, keep_tag, COUNTERS_COLLECTION, MAX_TAG, TAGS_ID};
use mongodb::bson::{doc, Document};
use serde_json::Value;
use tokio::sync::Barrier;

use crate::support::service::{Answer, Service};
use crate::support::{
    self, assert_durable, assert_exit, counter_doc, counter_name, create, database_handle,
    fixture_policy, idmint, run, stderr, stdout,
};

/// What the `tag:` line of `idmint counter show`'s text says.
fn tag_line(text: &str) -> &str {
    text.lines()
        .find_map(|line| line.trim_start().strip_prefix("tag:"))
        .unwrap_or_else(|| panic!("no tag line in {text}"))
        .trim()
}

/// `idmint counter show NAME --json` in `test`'s database.
fn shown(test: &str, name: &str) -> Value {
    let output = run(idmint(test).args(["counter", "show", name, "--json"]));
    assert_exit(&output, 0);
    serde_json::from_str(&stdout(&output)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_snowflake_counter_is_created_with_its_own_tag_and_a_secret_salt() {
    const TEST: &str = "standard_ids_created_tagged";
    let (database, log) = support::monitored_database(TEST).await;
    let name = counter_name("a");
    idmint::sequence::create(
        &database,
        &name,
        &idmint::sequence::CounterSpec::of(idmint::sequence::CounterKind::Snowflake),
    )
    .await
    .unwrap();
    let draws = log.named("findAndModify");
    assert_eq!(draws.len(), 1, "one draw of the tag: {draws:?}");
    assert_eq!(
        draws[0].get_str("findAndModify").unwrap(),
        COUNTERS_COLLECTION
    );
    assert_eq!(
        draws[0].get_document("query").unwrap(),
        &doc! { "_id": TAGS_ID }
    );
    assert_durable(&draws[0]);
    create(TEST, "b", &["--kind", "snowflake", "--raw"]);

    let (a, b) = (shown(TEST, "a"), shown(TEST, "b"));
    assert_eq!((a["tag"].as_u64(), b["tag"].as_u64()), (Some(1), Some(2)));
    for document in [counter_doc(TEST, "a").await, counter_doc(TEST, "b").await] {
        let salt = document.unwrap().get_str("salt").unwrap().to_string();
        assert!(
            salt.len() == 16 && u64::from_str_radix(&salt, 16).is_ok(),
            "{salt}"
        );
        assert!(!a.to_string().contains(&salt) && !b.to_string().contains(&salt));
    }
    let a_salt = counter_doc(TEST, "a")
        .await
        .unwrap()
        .get_str("salt")
        .unwrap()
        .to_string();
    let b_salt = counter_doc(TEST, "b")
        .await
        .unwrap()
        .get_str("salt")
        .unwrap()
        .to_string();
    assert_ne!(a_salt, b_salt);
    let text = run(idmint(TEST).args(["counter", "show", "b"]));
    assert_exit(&text, 0);
    assert_eq!(tag_line(&stdout(&text)), "2", "{}", stdout(&text));
    assert!(!stdout(&text).contains(&b_salt));

    // The tags document is not a counter: listings do not show it.
    let listed: Vec<String> = idmint::sequence::list(&database)
        .await
        .unwrap()
        .into_iter()
        .map(|listed| listed.name)
        .collect();
    assert_eq!(listed, ["a", "b"]);
    assert_eq!(idmint::sequence::count(&database, "").await.unwrap(), 2);
    assert_eq!(
        idmint::sequence::list_page(&database, "_", 0, 10)
            .await
            .unwrap()
            .len(),
        0
    );
    // Nor does a counter of another kind get a tag.
    create(TEST, "c", &["--kind", "autoinc", "--raw"]);
    assert!(counter_doc(TEST, "c").await.unwrap().get("tag").is_none());
}

/// Counter `name` made as idmint made snowflake counters before tags: its
/// document without `tag` and `salt`; `raw` if it owns no prefix.
async fn untagged(test: &str, name: &str, raw: bool) {
    let raw: &[&str] = if raw { &["--raw"] } else { &[] };
    create(test, name, &[&["--kind", "snowflake"], raw].concat());
    let database = database_handle(test).await;
    database
        .collection::<Document>(COUNTERS_COLLECTION)
        .update_one(
            doc! { "_id": name },
            doc! { "$unset": { "tag": 1, "salt": 1 } },
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_racing_to_tag_an_older_counter_keep_the_first_tag() {
    const TEST: &str = "standard_ids_tag_race";
    support::database(TEST).await;
    untagged(TEST, "old", true).await;
    assert_eq!(shown(TEST, "old")["tag"], Value::Null);
    let text = stdout(&run(idmint(TEST).args(["counter", "show", "old"])));
    assert!(tag_line(&text).starts_with("none yet"), "{text}");
    // Other snowflake uses of it are as they were: IDs, no tag written.
    assert_exit(&run(idmint(TEST).args(["seq", "old", "--count", "3"])), 0);
    assert!(counter_doc(TEST, "old").await.unwrap().get("tag").is_none());

    // Two clients, as two processes: both draw before either keeps.
    let name = counter_name("old");
    let barrier = Arc::new(Barrier::new(2));
    let racers = (0..2).map(|_| {
        let (barrier, name) = (barrier.clone(), name.clone());
        tokio::spawn(async move {
            let database = database_handle(TEST).await;
            let drawn = draw_tag(&database, &name, None).await.unwrap();
            barrier.wait().await;
            let kept = keep_tag(&database, &name, drawn).await.unwrap();
            (drawn, kept)
        })
    });
    let mut results = Vec::new();
    for racer in racers.collect::<Vec<_>>() {
        results.push(racer.await.unwrap());
    }
    let [(drawn_a, kept_a), (drawn_b, kept_b)] = results[..] else {
        unreachable!()
    };
    assert_ne!(drawn_a.tag, drawn_b.tag, "each draw its own number");
    assert_eq!(kept_a, kept_b, "both keep one tag and salt");
    assert!(kept_a == drawn_a || kept_a == drawn_b);
    assert_eq!(
        shown(TEST, "old")["tag"].as_u64(),
        Some(u64::from(kept_a.tag))
    );

    // Once tagged, a counter keeps its tag: nothing more is drawn.
    let database = database_handle(TEST).await;
    assert_eq!(ensure_tag(&database, &name).await.unwrap(), kept_a);
    let tags = database
        .collection::<Document>(COUNTERS_COLLECTION)
        .find_one(doc! { "_id": TAGS_ID })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(tags.get_i64("last").unwrap(), 3, "{tags}");

    // An untagged counter gets one the first time it is asked for.
    untagged(TEST, "older", true).await;
    let given = ensure_tag(&database, &counter_name("older")).await.unwrap();
    assert_eq!(given.tag, 5);
    assert_eq!(shown(TEST, "older")["tag"].as_u64(), Some(5));
    // Only a snowflake counter has one.
    create(TEST, "plain", &["--kind", "autoinc", "--raw"]);
    let error = ensure_tag(&database, &counter_name("plain"))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("not a snowflake one"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_last_tag_a_snowflake_counter_is_refused_naming_the_limit() {
    const TEST: &str = "standard_ids_tags_run_out";
    let database = support::database(TEST).await;
    create(TEST, "first", &["--kind", "snowflake"]);
    database
        .collection::<Document>(COUNTERS_COLLECTION)
        .update_one(
            doc! { "_id": TAGS_ID },
            doc! { "$set": { "last": i64::from(MAX_TAG) - 1 } },
        )
        .await
        .unwrap();
    create(TEST, "last", &["--kind", "snowflake", "--raw"]);
    assert_eq!(
        shown(TEST, "last")["tag"].as_u64(),
        Some(u64::from(MAX_TAG))
    );
    let output =
        run(idmint(TEST).args(["counter", "create", "more", "--kind", "snowflake", "--raw"]));
    assert_ne!(output.status.code(), Some(0));
    assert!(
        stderr(&output).contains("16777215 snowflake counter tags are all taken"),
        "{}",
        stderr(&output)
    );
    assert!(counter_doc(TEST, "more").await.is_none(), "nothing written");
}

/// Milliseconds since 1970 now, by this machine's clock (the one `idmint`
/// reads).
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// `idmint next NAME --policy builtin:POLICY --count COUNT` in `test`'s
/// database, with the time before and after it in milliseconds.
fn next_ids(test: &str, name: &str, policy: &str, count: usize) -> (u64, Vec<String>, u64) {
    let before = now_ms();
    let ids = minted(&mut next_command(test, name, policy, count), count);
    let after = now_ms();
    (before, ids, after)
}

/// `idmint next NAME --policy builtin:POLICY --count COUNT` in `test`'s
/// database, not yet run.
fn next_command(test: &str, name: &str, policy: &str, count: usize) -> Command {
    let mut command = idmint(test);
    command.args([
        "next",
        name,
        "--policy",
        &format!("builtin:{policy}"),
        "--count",
        &count.to_string(),
    ]);
    command
}

/// Runs `idmint next` (`command`): its `count` IDs.
fn minted(command: &mut Command, count: usize) -> Vec<String> {
    let output = run(command);
    assert_exit(&output, 0);
    let ids: Vec<String> = stdout(&output).lines().map(str::to_string).collect();
    assert_eq!(ids.len(), count);
    ids
}

/// `ids` read back by `idmint validate --policy builtin:POLICY` with the
/// default layout: each one's parts (`timestamp_micros`, `snowflake`).
fn read_back(test: &str, policy: &str, ids: &[String]) -> Vec<Value> {
    let output = run(idmint(test)
        .args(["validate", "--policy", &format!("builtin:{policy}")])
        .args(["--layout", "41,10,12", "--json"])
        .args(ids));
    assert_exit(&output, 0);
    let checked: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let results = checked["results"].as_array().expect("results").clone();
    assert_eq!(results.len(), ids.len(), "{checked}");
    results
        .into_iter()
        .map(|result| result["parts"].clone())
        .collect()
}

/// Runs `script` with the Python that has python-ulid (`IDMINT_INTEROP_PYTHON`,
/// set by `scripts/tools.sh`'s `ensure_interop`; else `python3`), the IDs
/// one per line on its stdin; what it prints, one line per ID.
fn python(script: &str, ids: &[String]) -> Vec<String> {
    let python = std::env::var_os("IDMINT_INTEROP_PYTHON").unwrap_or_else(|| "python3".into());
    let mut command = Command::new(python);
    command.args(["-c", script]);
    lines_of(command, ids)
}

/// Runs `script`, an ES module, with node in the directory where the `uuid`
/// npm package is installed (`IDMINT_UUID_NPM_DIR`, set by
/// `scripts/tools.sh`'s `ensure_interop`), the IDs one per line on its
/// stdin; what it prints, one line per ID.
fn node_uuid(script: &str, ids: &[String]) -> Vec<String> {
    let dir = std::env::var_os("IDMINT_UUID_NPM_DIR").expect(
        "IDMINT_UUID_NPM_DIR names where the uuid npm package is installed: \
         run the tests through scripts/test.sh, whose ensure_interop installs it",
    );
    let mut command = Command::new("node");
    command
        .args(["--input-type=module", "-e", script])
        .current_dir(dir);
    lines_of(command, ids)
}

/// Runs `command`, the IDs one per line on its stdin; what it prints, one
/// line per ID.
fn lines_of(mut command: Command, ids: &[String]) -> Vec<String> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(ids.join("\n").as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// For each UUID: its version, whether its variant is RFC 4122's, whether
/// the module writes it back as given, its milliseconds (`int >> 80`) and
/// the tag at its fixed place.
const PYTHON_UUID: &str = r#"
import sys, uuid
for line in sys.stdin.read().split():
    u = uuid.UUID(line)
    print(u.version, u.variant == uuid.RFC_4122, str(u) == line, u.int >> 80, (u.int >> 26) & 0xffffff)
"#;

/// For each UUID: what the `uuid` npm package's `validate` and `version`
/// say of it.
const NODE_UUID: &str = r#"
import { validate, version } from 'uuid';
import { readFileSync } from 'node:fs';
for (const id of readFileSync(0, 'utf8').split(/\s+/).filter(Boolean)) {
  console.log(validate(id), validate(id) ? version(id) : '-');
}
"#;

/// For each ULID: whether `python-ulid` reads it and writes it back as
/// given, its milliseconds (`.milliseconds`, the `.timestamp` in ms) and
/// the tag at its fixed place.
const PYTHON_ULID: &str = r#"
import sys
from ulid import ULID
for line in sys.stdin.read().split():
    u = ULID.from_str(line)
    print(str(u) == line, u.milliseconds, round(u.timestamp * 1000), (int(u) >> 32) & 0xffffff)
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uuidv7_ids_are_version_7_of_their_millisecond_with_the_counter_tag_and_increase() {
    const TEST: &str = "standard_ids_uuidv7";
    support::database(TEST).await;
    create(TEST, "events", &["--kind", "snowflake"]);
    let tag = shown(TEST, "events")["tag"].as_u64().unwrap();
    let (before, ids, after) = next_ids(TEST, "events", "uuidv7", 3000);
    assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "increasing");
    let read = python(PYTHON_UUID, &ids);
    assert_eq!(read.len(), ids.len());
    for (id, line) in ids.iter().zip(&read) {
        let fields: Vec<&str> = line.split(' ').collect();
        assert_eq!(fields[..3], ["7", "True", "True"], "{id}: {line}");
        let ms: u64 = fields[3].parse().unwrap();
        assert!(
            (before..=after).contains(&ms),
            "{id}: {ms} not in {before}..={after}"
        );
        assert_eq!(fields[4].parse::<u64>().unwrap(), tag, "{id}");
    }
    let read = node_uuid(NODE_UUID, &ids);
    assert_eq!(read.len(), ids.len());
    for (id, line) in ids.iter().zip(&read) {
        assert_eq!(line, "true 7", "{id}: the uuid npm package says {line}");
    }
    // Read back by the policy, with the counter's layout: its fields and tag.
    let parts = &read_back(TEST, "uuidv7", &ids[..1])[0];
    let snowflake = &parts["snowflake"];
    assert_eq!(snowflake["tag"].as_u64(), Some(tag), "{parts}");
    assert_eq!(snowflake.get("salt"), None, "the salt is never shown");
    assert_eq!(snowflake["worker"].as_u64(), Some(0), "{parts}");
    let ms = parts["timestamp_micros"].as_u64().unwrap() / 1000;
    assert!((before..=after).contains(&ms), "{parts}");
    // The activation check (`policy check`, a swap) passes both.
    for policy in ["builtin:uuidv7", "builtin:ulid"] {
        let output = run(idmint(TEST).args(["policy", "check", policy]));
        assert_exit(&output, 0);
    }
    // A made-up UUID of another version is refused.
    let output = run(idmint(TEST).args([
        "validate",
        "0198f3a2-6c40-4001-8000-0400b5e2c1d7",
        "--policy",
        "builtin:uuidv7",
    ]));
    assert_exit(&output, 1);
    assert!(
        stdout(&output).contains("version is 4"),
        "{}",
        stdout(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ulids_carry_their_millisecond_and_the_counter_tag_and_increase() {
    const TEST: &str = "standard_ids_ulid";
    support::database(TEST).await;
    // The tag of the second snowflake counter of the database: not the first's.
    create(TEST, "first", &["--kind", "snowflake", "--raw"]);
    create(TEST, "events", &["--kind", "snowflake"]);
    let tag = shown(TEST, "events")["tag"].as_u64().unwrap();
    assert_ne!(Some(tag), shown(TEST, "first")["tag"].as_u64());
    let (before, ids, after) = next_ids(TEST, "events", "ulid", 3000);
    assert!(ids.iter().all(|id| id.len() == 26));
    assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "increasing");
    for (id, line) in ids.iter().zip(python(PYTHON_ULID, &ids)) {
        let fields: Vec<&str> = line.split(' ').collect();
        assert_eq!(fields[0], "True", "{id}: {line}");
        let ms: u64 = fields[1].parse().unwrap();
        assert!(
            (before..=after).contains(&ms),
            "{id}: {ms} not in {before}..={after}"
        );
        assert_eq!(fields[2], fields[1], "{id}: .timestamp");
        assert_eq!(fields[3].parse::<u64>().unwrap(), tag, "{id}");
    }
    // The first two IDs read back: the second's sequence follows the
    // first's within a millisecond, and starts again at 0 in the next (a
    // loaded machine can put a millisecond between them).
    let parts = read_back(TEST, "ulid", &ids[..2]);
    for part in &parts {
        assert_eq!(part["snowflake"]["tag"].as_u64(), Some(tag), "{part}");
    }
    let (first, second) = (&parts[0], &parts[1]);
    let expected = if first["timestamp_micros"] == second["timestamp_micros"] {
        first["snowflake"]["seq"].as_u64().unwrap() + 1
    } else {
        0
    };
    assert_eq!(
        second["snowflake"]["seq"].as_u64(),
        Some(expected),
        "{first} {second}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_counter_gets_its_tag_from_the_first_standard_policy_only() {
    const TEST: &str = "standard_ids_older_counter";
    support::database(TEST).await;
    create(TEST, "old", &["--kind", "snowflake"]);
    database_handle(TEST)
        .await
        .collection::<Document>(COUNTERS_COLLECTION)
        .update_one(
            doc! { "_id": "old" },
            doc! { "$unset": { "tag": 1, "salt": 1 } },
        )
        .await
        .unwrap();
    // A policy of an older contract needs no tag: none is written.
    let output = run(idmint(TEST).args(["next", "old", "--policy", "builtin:base32"]));
    assert_exit(&output, 0);
    assert_eq!(shown(TEST, "old")["tag"], Value::Null);
    let (_, ids, _) = next_ids(TEST, "old", "uuidv7", 2);
    let tag = shown(TEST, "old")["tag"].as_u64().expect("tagged now");
    assert_eq!(tag, 2, "the next tag of the database");
    let read = python(PYTHON_UUID, &ids);
    assert!(
        read.iter().all(|line| line.ends_with(&format!(" {tag}"))),
        "{read:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standard_policies_are_refused_for_other_kinds_and_for_prefixes() {
    const TEST: &str = "standard_ids_refused";
    support::database(TEST).await;
    create(TEST, "orders", &["--kind", "autoinc"]);
    create(TEST, "events", &["--kind", "snowflake", "--prefix", "EVT-"]);
    create(
        TEST,
        "old",
        &[
            "--kind",
            "snowflake",
            "--raw",
            "--layout",
            "29,20,14",
            "--unit",
            "s",
        ],
    );
    for policy in ["builtin:uuidv7", "builtin:ulid"] {
        let output = run(idmint(TEST).args(["next", "orders", "--policy", policy]));
        assert_ne!(output.status.code(), Some(0));
        assert!(
            stderr(&output).contains("formats snowflake IDs only")
                && stderr(&output).contains("use a snowflake counter"),
            "{}",
            stderr(&output)
        );
        let output = run(idmint(TEST).args(["next", "events", "--policy", policy]));
        assert_ne!(output.status.code(), Some(0));
        assert!(
            stderr(&output).contains("holds no prefix"),
            "{}",
            stderr(&output)
        );
    }
    assert_eq!(
        counter_doc(TEST, "orders")
            .await
            .unwrap()
            .get_i64("seq")
            .ok(),
        Some(0),
        "nothing taken"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layout_whose_worker_and_sequence_do_not_fit_a_standard_id_is_refused() {
    const TEST: &str = "standard_ids_wide_layout";
    support::database(TEST).await;
    // 20 worker and 14 sequence bits: 34, more than the 24 a standard ID holds.
    create(
        TEST,
        "wide",
        &["--kind", "snowflake", "--layout", "29,20,14", "--unit", "s"],
    );
    for policy in ["builtin:uuidv7", "builtin:ulid"] {
        let output = run(idmint(TEST).args(["next", "wide", "--policy", policy]));
        assert_ne!(output.status.code(), Some(0), "{}", stdout(&output));
        assert!(
            stderr(&output).contains("out of range"),
            "{}",
            stderr(&output)
        );
    }
    let leases = support::worker_leases(TEST, "wide");
    assert!(
        leases
            .iter()
            .all(|lease| lease["live"] == Value::Bool(false)),
        "the worker id was given back: {leases:?}"
    );
}

/// `idmint serve` gives an older snowflake counter its tag before its first
/// standard ID, as `idmint next` does: its IDs are told apart from other
/// counters' by their tag, not by noise alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_gives_an_older_counter_its_tag_before_its_first_standard_id() {
    const TEST: &str = "standard_ids_serve_older_counter";
    support::database(TEST).await;
    untagged(TEST, "old", false).await;
    assert!(counter_doc(TEST, "old").await.unwrap().get("tag").is_none());
    let service = Service::start(TEST, &["--policy-for", "snowflake=builtin:uuidv7"]);
    let answer = service.get("/v1/counters/old/ids?count=3");
    assert_eq!(answer.status, 200, "{answer:?}");
    let ids = ids_of(&answer);
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert_carry_the_tag(TEST, "old", &ids);
}

/// The IDs of a `/ids` answer.
fn ids_of(answer: &Answer) -> Vec<String> {
    answer.json()["ids"]
        .as_array()
        .expect("ids")
        .iter()
        .map(|id| id.as_str().expect("an ID").to_string())
        .collect()
}

/// Asserts that each of `ids`, UUIDv7s of counter `name`, reads back
/// with the counter's tag, which it has (not 0).
fn assert_carry_the_tag(test: &str, name: &str, ids: &[String]) {
    let tag = shown(test, name)["tag"].as_u64().expect("a tag");
    assert_ne!(tag, 0);
    for (id, parts) in ids.iter().zip(read_back(test, "uuidv7", ids)) {
        assert_eq!(
            parts["snowflake"]["tag"].as_u64(),
            Some(tag),
            "{name} {id}: {parts}"
        );
    }
}

/// The clock frozen at the whole second `seconds` (Unix time), for `command`.
fn frozen_at(command: &mut Command, seconds: u64) -> &mut Command {
    let date =
        run(Command::new("date").args(["-u", "-d", &format!("@{seconds}"), "+%Y-%m-%d %H:%M:%S"]));
    assert_exit(&date, 0);
    support::fake_clock(command, stdout(&date).trim()).env("TZ", "UTC")
}

/// With the clock frozen, two counters' processes take the same worker id
/// and the same sequences in the same millisecond: their standard IDs are
/// still all distinct, kept apart by the counters' tags (and noise), their
/// time bits equal: one counter owns the empty prefix, the other owns no
/// prefix (`--raw`) and its tag alone keeps its IDs apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_frozen_clock_the_tag_keeps_two_counters_ids_apart() {
    const COUNT: usize = 500;
    let frozen = now_ms() / 1000;
    for (test, policy, time_chars) in [
        ("standard_ids_frozen_uuidv7", "uuidv7", 13),
        ("standard_ids_frozen_ulid", "ulid", 10),
    ] {
        support::database(test).await;
        let (a, b) = (format!("{policy}-a"), format!("{policy}-b"));
        create(test, &a, &["--kind", "snowflake"]);
        create(test, &b, &["--kind", "snowflake", "--raw"]);
        let mut all = HashSet::new();
        let mut by_counter = Vec::new();
        for name in [&a, &b] {
            let ids = minted(
                frozen_at(&mut next_command(test, name, policy, COUNT), frozen),
                COUNT,
            );
            let parts = read_back(test, policy, &ids);
            let tags: HashSet<_> = parts
                .iter()
                .map(|p| p["snowflake"]["tag"].clone())
                .collect();
            assert_eq!(tags.len(), 1, "one tag per counter: {tags:?}");
            all.extend(ids.iter().cloned());
            by_counter.push((ids, parts));
        }
        assert_eq!(all.len(), 2 * COUNT, "{policy}: every ID distinct");
        let (ids_a, parts_a) = &by_counter[0];
        let (ids_b, parts_b) = &by_counter[1];
        for i in 0..COUNT {
            let (id_a, id_b) = (&ids_a[i], &ids_b[i]);
            let (a, b) = (&parts_a[i], &parts_b[i]);
            assert_eq!(
                a["timestamp_micros"].as_u64(),
                Some(frozen * 1_000_000),
                "{id_a}: {a}"
            );
            assert_eq!(
                a["timestamp_micros"], b["timestamp_micros"],
                "{id_a} {id_b}"
            );
            assert_eq!(
                a["snowflake"]["worker"], b["snowflake"]["worker"],
                "{a} {b}"
            );
            assert_eq!(a["snowflake"]["seq"], b["snowflake"]["seq"], "{a} {b}");
            assert_ne!(a["snowflake"]["tag"], b["snowflake"]["tag"], "{a} {b}");
            assert_eq!(id_a[..time_chars], id_b[..time_chars], "the same time bits");
        }
    }
}

/// A snowflake counter that does not own the empty prefix formats standard
/// IDs without one, with `idmint next` and `idmint serve`: its tag, unique
/// in the database, keeps them apart from every other counter's, so any
/// number of counters of one database make UUIDs side by side. A policy
/// that does not write the tag (one on contract 0.4.0, or a 0.5.0 one that
/// reads no tag back) gets no IDs without a prefix from such a counter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_without_the_empty_prefix_make_standard_ids_keyed_by_their_tags() {
    const TEST: &str = "standard_ids_keyed_by_tag";
    const COUNT: usize = 200;
    support::database(TEST).await;
    create(TEST, "owner", &["--kind", "snowflake"]);
    create(TEST, "raw-1", &["--kind", "snowflake", "--raw"]);
    create(TEST, "raw-2", &["--kind", "snowflake", "--raw"]);
    let mut all = HashSet::new();
    for name in ["owner", "raw-1"] {
        let (_, ids, _) = next_ids(TEST, name, "uuidv7", COUNT);
        assert_carry_the_tag(TEST, name, &ids);
        all.extend(ids);
    }
    // A policy that receives no tag: the empty prefix is another counter's.
    let output = run(idmint(TEST).args(["next", "raw-1", "--policy", "builtin:base32"]));
    assert_exit(&output, 2);
    assert!(
        stderr(&output).contains("owns no prefix"),
        "{}",
        stderr(&output)
    );
    // One that receives it but does not write it: refused, naming the tag.
    // Exit 4: the policy cannot serve the counter.
    let output = run(idmint(TEST).args(["next", "raw-1", "--policy", fixture_policy("untagged")]));
    assert_exit(&output, 4);
    let tag = shown(TEST, "raw-1")["tag"].as_u64().expect("a tag");
    assert!(
        stderr(&output).contains(&format!("by its tag ({tag}) alone"))
            && stderr(&output).contains("reads it back with tag 0"),
        "{}",
        stderr(&output)
    );
    // The service, for a counter it has never served.
    let service = Service::start(TEST, &["--policy-for", "snowflake=builtin:uuidv7"]);
    let answer = service.get(&format!("/v1/counters/raw-2/ids?count={COUNT}"));
    assert_eq!(answer.status, 200, "{answer:?}");
    let ids = ids_of(&answer);
    assert_carry_the_tag(TEST, "raw-2", &ids);
    all.extend(ids);
    assert_eq!(all.len(), 3 * COUNT, "every ID distinct");
}

/// The proof of issue 35 at scale: four processes at once, two per counter
/// of one database (both `--raw`, so their tags alone keep them apart), one
/// of each pair making UUIDv7s and the other ULIDs, 250,000 each. Every ID
/// is distinct, each is valid by code no one here wrote (Python's `uuid` and
/// the `uuid` npm package for the UUIDs, `python-ulid` for the ULIDs), each
/// carries its counter's tag and a time within its process's run, and each
/// process's IDs increase. The processes are started together but their
/// overlap is not forced: this test is about validity and scale; two
/// processes of one counter racing for worker ids are the snowflake tests'
/// (`snowflake::eight_processes_lease_eight_worker_ids_and_never_share_an_id`),
/// and equal workers and sequences of two counters
/// are the frozen-clock test's above.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_processes_make_a_million_standard_ids_all_distinct_and_valid() {
    const TEST: &str = "standard_ids_a_million";
    const COUNT: usize = 250_000;
    support::database(TEST).await;
    create(TEST, "orders", &["--kind", "snowflake", "--raw"]);
    create(TEST, "payments", &["--kind", "snowflake", "--raw"]);
    let runs = [
        ("orders", "uuidv7"),
        ("payments", "uuidv7"),
        ("orders", "ulid"),
        ("payments", "ulid"),
    ];
    let before = now_ms();
    let children: Vec<_> = runs
        .iter()
        .map(|(name, policy)| {
            next_command(TEST, name, policy, COUNT)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("idmint runs")
        })
        .collect();
    let outputs: Vec<_> = children
        .into_iter()
        .map(|child| child.wait_with_output().expect("idmint ends"))
        .collect();
    let after = now_ms();
    let mut all = HashSet::with_capacity(4 * COUNT);
    for ((name, policy), output) in runs.iter().zip(outputs) {
        assert_exit(&output, 0);
        let ids: Vec<String> = stdout(&output).lines().map(str::to_string).collect();
        assert_eq!(ids.len(), COUNT, "{name} {policy}");
        assert!(
            ids.windows(2).all(|pair| pair[0] < pair[1]),
            "{name} {policy}: increasing"
        );
        let tag = shown(TEST, name)["tag"].as_u64().expect("a tag");
        // Each line: the milliseconds and the tag the library reads.
        let read: Vec<(u64, u64)> = if *policy == "uuidv7" {
            for (id, line) in ids.iter().zip(node_uuid(NODE_UUID, &ids)) {
                assert_eq!(line, "true 7", "{id}: the uuid npm package says {line}");
            }
            python(PYTHON_UUID, &ids)
                .iter()
                .zip(&ids)
                .map(|(line, id)| {
                    let fields: Vec<&str> = line.split(' ').collect();
                    assert_eq!(fields[..3], ["7", "True", "True"], "{id}: {line}");
                    (fields[3].parse().unwrap(), fields[4].parse().unwrap())
                })
                .collect()
        } else {
            python(PYTHON_ULID, &ids)
                .iter()
                .zip(&ids)
                .map(|(line, id)| {
                    let fields: Vec<&str> = line.split(' ').collect();
                    assert_eq!(fields[0], "True", "{id}: {line}");
                    (fields[1].parse().unwrap(), fields[3].parse().unwrap())
                })
                .collect()
        };
        assert_eq!(read.len(), COUNT, "{name} {policy}");
        for (id, (ms, read_tag)) in ids.iter().zip(read) {
            assert!(
                (before..=after).contains(&ms),
                "{name} {id}: {ms} not in {before}..={after}"
            );
            assert_eq!(read_tag, tag, "{name} {id}");
        }
        all.extend(ids);
    }
    assert_eq!(all.len(), 4 * COUNT, "every ID distinct");
}
