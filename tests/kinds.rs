//! The kinds of counter against the server, through the library and
//! `idmint seq`: every value exactly once across processes, corrupt
//! documents left byte-identical, the race-safe auto-increment upsert, one
//! round trip per block, the command `idmint pipeline` prints, and the
//! segment allocator's double buffer, give-back and crash safety.

use std::collections::BTreeSet;
use std::sync::Arc;

use idmint::sequence::{
    self, AutoincCounter, CounterKind, CounterSpec, OpenOptions, OpenedCounter, SegmentCounter,
    SegmentOptions, Sequence, SequenceError, COUNTERS_COLLECTION, MAX_VALUE,
};
use mongodb::bson::{doc, Decimal128, Document};
use tokio::sync::Barrier;

use crate::support::{
    self, assert_durable, assert_exit, counter_document, counter_name, database_handle, idmint,
    printed_values, run, stderr, stdout, Seq,
};

/// 8 processes take from one counter of `kind` at once. Each writes more
/// than a pipe holds, so it blocks until read: reading one value of each
/// first proves all 8 are running at the same time. Returns each process's
/// values in the order it printed them.
fn eight_processes(test: &str, counter: &str, per_process: u64) -> Vec<Vec<u64>> {
    let count = per_process.to_string();
    let mut processes: Vec<Seq> = (0..8)
        .map(|_| Seq::start(test, &[counter, "--count", &count]))
        .collect();
    let mut values: Vec<Vec<u64>> = processes
        .iter_mut()
        .map(|process| vec![process.next_value().expect("a first value")])
        .collect();
    for (process, values) in processes.iter_mut().zip(&mut values) {
        while let Some(value) = process.next_value() {
            values.push(value);
        }
        let status = process.child.wait().unwrap();
        assert!(status.success(), "idmint seq failed: {status}");
    }
    values
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_processes_get_every_value_exactly_once_from_each_kind() {
    const TEST: &str = "eight_processes_each_kind";
    // More than a pipe buffer holds (64 KiB) at 6 to 7 bytes a line.
    const PER_PROCESS: u64 = 12_000;
    let database = support::database(TEST).await;
    for spec in [
        // Raw values only: three counters, and none of them formats IDs.
        CounterSpec::default()
            .maxval(1_000_000)
            .prefixes(Vec::new()),
        CounterSpec::of(CounterKind::Autoinc).prefixes(Vec::new()),
        CounterSpec::of(CounterKind::Segment)
            .step(100)
            .prefixes(Vec::new()),
    ] {
        let kind = spec.kind;
        let counter = format!("every_{kind}");
        sequence::create(&database, &counter_name(&counter), &spec)
            .await
            .unwrap();
        let per_process =
            tokio::task::spawn_blocking(move || eight_processes(TEST, &counter, PER_PROCESS))
                .await
                .unwrap();
        let mut all = BTreeSet::new();
        for values in &per_process {
            assert_eq!(values.len() as u64, PER_PROCESS, "{kind}");
            assert!(
                values.windows(2).all(|pair| pair[0] < pair[1]),
                "{kind}: one process's values must increase"
            );
            all.extend(values.iter().copied());
        }
        assert_eq!(
            all.len() as u64,
            8 * PER_PROCESS,
            "{kind}: a value was handed out twice"
        );
        if kind != CounterKind::Segment {
            // Cyclic (no wrap at this size) and autoinc leave no gaps.
            assert_eq!(
                all,
                (1..=8 * PER_PROCESS).collect::<BTreeSet<_>>(),
                "{kind}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_racing_upserts_of_a_missing_counter_all_succeed_with_distinct_values() {
    const TEST: &str = "sixteen_racing_upserts";
    support::database(TEST).await;
    // In-process, each racer on a client of its own, released together.
    let barrier = Arc::new(Barrier::new(16));
    let mut racers = Vec::new();
    for _ in 0..16 {
        let database = database_handle(TEST).await;
        let barrier = barrier.clone();
        racers.push(tokio::spawn(async move {
            let counter = AutoincCounter::new(&database, counter_name("raced"));
            barrier.wait().await;
            counter.take_or_create(1, 1).await
        }));
    }
    let mut values = BTreeSet::new();
    for racer in racers {
        let taken = racer.await.unwrap().expect("no racer sees the lost upsert");
        values.extend(taken);
    }
    assert_eq!(values, (1..=16).collect::<BTreeSet<_>>());

    // And as 16 processes at once, on another missing counter, from 100.
    let outputs = tokio::task::spawn_blocking(|| {
        support::run_at_once(
            TEST,
            &["seq", "raced.cli", "--upsert", "--start", "100"],
            16,
        )
    })
    .await
    .unwrap();
    let mut values = BTreeSet::new();
    for output in &outputs {
        assert_exit(output, 0);
        assert!(stderr(output).is_empty(), "{}", stderr(output));
        values.insert(stdout(output).trim().parse::<u64>().unwrap());
    }
    assert_eq!(values, (100..116).collect::<BTreeSet<_>>());
}

/// Each malformed counter of each kind is refused with a reason, and its
/// document is left exactly as it was.
#[tokio::test]
async fn corrupt_counters_of_each_kind_are_reported_and_left_unchanged() {
    let (database, log) = support::monitored_database("corrupt_each_kind").await;
    let collection = database.collection::<Document>(COUNTERS_COLLECTION);
    let cases = [
        (doc! { "kind": "autoinc" }, "seq is missing"),
        (
            doc! { "kind": "autoinc", "seq": "7" },
            "seq is the string \"7\", not a number",
        ),
        (
            doc! { "kind": "autoinc", "seq": -3_i64 },
            "seq is -3, it must not be negative",
        ),
        (
            doc! { "kind": "autoinc", "seq": 2.5 },
            "seq is 2.5, not an integer",
        ),
        (
            doc! { "kind": "autoinc", "seq": "7".parse::<Decimal128>().unwrap() },
            "seq is of BSON type Decimal128, not a number",
        ),
        (doc! { "kind": "segment", "max": 1 }, "step is missing"),
        (
            doc! { "kind": "segment", "max": -1_i64, "step": 10 },
            "max is -1, it must not be negative",
        ),
        (
            doc! { "kind": "segment", "max": 1, "step": "10" },
            "step is the string \"10\", not a number",
        ),
        (
            doc! { "kind": "segment", "max": 1, "step": 0 },
            "step is 0, it must be at least 1",
        ),
        (
            doc! { "kind": "segment", "max": 1, "step": 10, "prefix": 3 },
            "prefix is the number 3, not a string",
        ),
        (
            doc! { "kind": 7, "val": 0, "maxval": 9 },
            "kind is the number 7, not a string",
        ),
    ];
    for (index, (fields, reason)) in cases.into_iter().enumerate() {
        let id = format!("bad{index}");
        let mut document = doc! { "_id": &id };
        document.extend(fields.clone());
        collection.insert_one(&document).await.unwrap();
        // Through the seam, which reads the document first ...
        let error = Sequence::open(&database, counter_name(&id), &OpenOptions::default())
            .await
            .unwrap_err();
        assert!(error.to_string().contains(reason), "{id}: {error}");
        // ... and through the atomic update itself, which must not touch it.
        let kind = fields.get_str("kind").unwrap_or("cyclic");
        let error = match kind {
            "autoinc" => AutoincCounter::new(&database, counter_name(&id))
                .take(1)
                .await
                .unwrap_err(),
            "segment" => {
                SegmentCounter::new(&database, counter_name(&id), SegmentOptions::default())
                    .next_value()
                    .await
                    .unwrap_err()
            }
            _ => idmint::CyclicCounter::new(&database, counter_name(&id))
                .next(1)
                .await
                .unwrap_err(),
        };
        assert!(
            matches!(error, SequenceError::CorruptCounter { .. }),
            "{id}: {error:?}"
        );
        assert!(error.to_string().contains(reason), "{id}: {error}");
        assert!(error.to_string().contains("left unchanged"), "{error}");
        assert_eq!(
            counter_document(&database, &id).await.unwrap(),
            document,
            "{id} was modified"
        );
    }
    // An unknown kind is named, and nothing is modified.
    let unknown = doc! { "_id": "future", "kind": "hilo", "next": 3 };
    collection.insert_one(&unknown).await.unwrap();
    let error = Sequence::open(&database, counter_name("future"), &OpenOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(error, SequenceError::UnknownKind { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("\"hilo\""), "{error}");
    // A kind used as another is refused the same way. (The corrupt counters
    // own the empty prefix undeclared, so this one owns a prefix of its own.)
    sequence::create(
        &database,
        &counter_name("cyc"),
        &CounterSpec::default().prefix(Some("CYC-".into())),
    )
    .await
    .unwrap();
    let before = counter_document(&database, "cyc").await;
    let error = AutoincCounter::new(&database, counter_name("cyc"))
        .take(1)
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "counter 'cyc' is a cyclic counter, not an autoinc one; it was left unchanged"
    );
    assert_eq!(counter_document(&database, "cyc").await, before);
    assert_eq!(counter_document(&database, "future").await, Some(unknown));
    // Every write was durable.
    for command in log.named("findAndModify") {
        assert_durable(&command);
    }
}

#[tokio::test]
async fn auto_increment_reserves_blocks_in_one_round_trip_and_stops_at_its_limit() {
    let (database, log) = support::monitored_database("autoinc_blocks").await;
    let counter = AutoincCounter::new(&database, counter_name("inv"));
    counter
        .create(&CounterSpec::of(CounterKind::Autoinc).start(42))
        .await
        .unwrap();
    assert_eq!(counter.take(1).await.unwrap(), 42..=42);
    assert_eq!(counter.take(10).await.unwrap(), 43..=52);
    let fetches = log.named("findAndModify");
    assert_eq!(fetches.len(), 2, "one round trip per request");
    fetches.iter().for_each(assert_durable);
    // At the limit, nothing is handed out and nothing changes.
    database
        .collection::<Document>(COUNTERS_COLLECTION)
        .update_one(
            doc! { "_id": "inv" },
            doc! { "$set": { "seq": (sequence::MAX_VALUE - 1) as i64 } },
        )
        .await
        .unwrap();
    let error = counter.take(2).await.unwrap_err();
    assert!(
        matches!(error, SequenceError::Exhausted { .. }),
        "{error:?}"
    );
    assert_eq!(
        counter.take(1).await.unwrap(),
        sequence::MAX_VALUE..=sequence::MAX_VALUE
    );
}

/// The next segment is fetched in the background, before the current one
/// runs dry: counted in the commands the driver sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_segment_is_fetched_before_the_buffer_runs_dry() {
    let (database, log) = support::monitored_database("segment_prefetch").await;
    sequence::create(
        &database,
        &counter_name("seg"),
        &CounterSpec::of(CounterKind::Segment).step(100),
    )
    .await
    .unwrap();
    // A fixed step (no adaptation), prefetch at 10%: Leaf's settings.
    let options = SegmentOptions::default().prefetch_at(0.1).max_step(100);
    let allocator = SegmentCounter::new(&database, counter_name("seg"), options);
    let fetches = || log.named("findAndModify").len();

    assert_eq!(
        allocator.take(9).await.unwrap(),
        (1..=9).collect::<Vec<_>>()
    );
    allocator.settled().await;
    assert_eq!(fetches(), 1, "9% used: no prefetch yet");
    assert_eq!(allocator.next_value().await.unwrap(), 10);
    // 10% used: the next segment is on its way; wait for it to land.
    allocator.settled().await;
    assert_eq!(fetches(), 2, "the prefetch started at 10%");
    // The rest of the first segment, then the second: no more round trips,
    // and nobody waited on the database but the very first request.
    assert_eq!(
        allocator.take(90).await.unwrap(),
        (11..=100).collect::<Vec<_>>()
    );
    assert_eq!(allocator.next_value().await.unwrap(), 101);
    assert_eq!(fetches(), 2, "the second segment was already buffered");
    let stats = allocator.stats();
    assert_eq!(
        (stats.fetches, stats.background_fetches, stats.waits),
        (2, 1, 1)
    );
    log.named("findAndModify").iter().for_each(assert_durable);
    allocator.close().await.unwrap();
}

/// 8 tasks of one process, released together, take from one allocator:
/// through the shared buffers, then each through a taker of its own
/// (batches of 16). Every value once, each task's increasing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_takers_in_one_process_share_the_buffers() {
    let database = support::database("segment_many_takers").await;
    for (counter, batched) in [("shared", false), ("batched", true)] {
        sequence::create(
            &database,
            &counter_name(counter),
            &CounterSpec::of(CounterKind::Segment)
                .step(50)
                .prefixes(Vec::new()),
        )
        .await
        .unwrap();
        let allocator =
            SegmentCounter::new(&database, counter_name(counter), SegmentOptions::default());
        let barrier = Arc::new(Barrier::new(8));
        let takers: Vec<_> = (0..8)
            .map(|_| {
                let allocator = allocator.clone();
                let mut taker = batched.then(|| allocator.taker(16));
                let barrier = barrier.clone();
                tokio::spawn(async move {
                    barrier.wait().await;
                    let mut values = Vec::new();
                    for _ in 0..500 {
                        let value = match taker.as_mut() {
                            Some(taker) => taker.next_value().await,
                            None => allocator.next_value().await,
                        };
                        values.push(value.unwrap());
                    }
                    values
                })
            })
            .collect();
        let mut all = BTreeSet::new();
        for taker in takers {
            let values = taker.await.unwrap();
            assert!(values.windows(2).all(|pair| pair[0] < pair[1]), "{counter}");
            all.extend(values);
        }
        assert_eq!(all.len(), 4000, "{counter}: a value was handed out twice");
        allocator.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_shutdown_gives_back_the_unused_tail_unless_another_process_took_a_segment() {
    const TEST: &str = "segment_give_back";
    let (database, log) = support::monitored_database(TEST).await;
    sequence::create(
        &database,
        &counter_name("seg"),
        &CounterSpec::of(CounterKind::Segment).step(1000),
    )
    .await
    .unwrap();
    let max = |document: Option<Document>| document.unwrap().get_i64("max").unwrap();

    // The CLI: 5 values, then the rest of the segment goes back.
    let output = run(idmint(TEST).args(["seq", "seg", "--count", "5"]));
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), "1\n2\n3\n4\n5\n");
    assert_eq!(max(counter_document(&database, "seg").await), 6);
    let output = run(idmint(TEST).args(["seq", "seg", "--count", "2"]));
    assert_eq!(stdout(&output), "6\n7\n");

    // Two processes: A's segment is no longer the last one, so A gives
    // nothing back; B's is, and B does.
    let a = SegmentCounter::new(&database, counter_name("seg"), SegmentOptions::default());
    let b = SegmentCounter::new(
        &database_handle(TEST).await,
        counter_name("seg"),
        SegmentOptions::default(),
    );
    assert_eq!(a.next_value().await.unwrap(), 8);
    assert_eq!(b.next_value().await.unwrap(), 1008);
    assert_eq!(a.close().await.unwrap().values, 0);
    assert_eq!(max(counter_document(&database, "seg").await), 2008);
    let given = b.close().await.unwrap();
    assert_eq!((given.values, given.max), (999, Some(1009)));
    assert_eq!(max(counter_document(&database, "seg").await), 1009);
    // Closed means closed.
    assert!(matches!(
        a.next_value().await,
        Err(SequenceError::Closed(_))
    ));
    log.named("update").iter().for_each(assert_durable);
}

/// `kill -9` mid-segment, then a restart: nothing is issued twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_mid_segment_never_causes_a_value_to_be_issued_twice() {
    const TEST: &str = "segment_kill_9";
    let database = support::database(TEST).await;
    sequence::create(
        &database,
        &counter_name("seg"),
        &CounterSpec::of(CounterKind::Segment).step(100),
    )
    .await
    .unwrap();
    // Blocked on a full pipe, mid-segment, when killed.
    let before = tokio::task::spawn_blocking(|| {
        let mut victim = Seq::start(TEST, &["seg", "--count", "1000000"]);
        let before: Vec<u64> = (0..250).map(|_| victim.next_value().unwrap()).collect();
        victim.child.kill().unwrap();
        victim.child.wait().unwrap();
        before
    })
    .await
    .unwrap();
    // Every segment the victim took lies below `max`, printed or not.
    let max = counter_document(&database, "seg")
        .await
        .unwrap()
        .get_i64("max")
        .unwrap() as u64;
    let after = tokio::task::spawn_blocking(|| {
        let output = run(idmint(TEST).args(["seq", "seg", "--count", "300"]));
        assert_exit(&output, 0);
        printed_values(&output)
    })
    .await
    .unwrap();
    assert_eq!(before, (1..=250).collect::<Vec<_>>());
    assert!(max > 250, "the victim was mid-segment: max {max}");
    assert_eq!(
        after,
        (max..max + 300).collect::<Vec<_>>(),
        "the restarted process starts past every segment the victim took"
    );
}

/// `next --count N` on a cyclic counter takes blocks: 2,500 IDs cost three
/// round trips, not 2,500.
#[tokio::test]
async fn ids_from_a_cyclic_counter_cost_one_round_trip_per_block() {
    let (database, log) = support::monitored_database("cyclic_blocks_round_trips").await;
    sequence::create(&database, &counter_name("c"), &CounterSpec::default())
        .await
        .unwrap();
    let (sequence, _) = Sequence::open(&database, counter_name("c"), &OpenOptions::default())
        .await
        .unwrap();
    let policy = idmint::PolicyRuntime::new()
        .unwrap()
        .load_default()
        .unwrap();
    let minter = idmint::Minter::prepare(sequence, policy, None, Arc::new(idmint::SystemClock))
        .await
        .unwrap();
    let before = log.all().len();
    let ids = minter.next_ids(2500).await.unwrap();
    assert_eq!(ids.len(), 2500);
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), 2500);
    let sent: Vec<String> = log.all()[before..]
        .iter()
        .map(|(name, _)| name.clone())
        .collect();
    assert_eq!(
        sent, ["findAndModify"; 3],
        "one round trip per block of 1000"
    );
    log.named("findAndModify").iter().for_each(assert_durable);
}

/// `idmint pipeline` prints the very command idmint sends for each kind,
/// and an application can run it with another driver (mongosh's, here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_printed_command_is_what_idmint_sends_and_runs_from_another_driver() {
    use idmint::sequence::{take_command, ClientTime, CommandOptions};
    const TEST: &str = "printed_pipeline";
    let (database, log) = support::monitored_database(TEST).await;
    for (counter, spec) in [
        ("c", CounterSpec::default()),
        (
            "a",
            CounterSpec::of(CounterKind::Autoinc).prefixes(Vec::new()),
        ),
        (
            "s",
            CounterSpec::of(CounterKind::Segment)
                .step(100)
                .prefixes(Vec::new()),
        ),
    ] {
        sequence::create(&database, &counter_name(counter), &spec)
            .await
            .unwrap();
    }
    idmint::CyclicCounter::new(&database, counter_name("c"))
        .take(5, 12_345)
        .await
        .unwrap();
    AutoincCounter::new(&database, counter_name("a"))
        .take(3)
        .await
        .unwrap();
    let segments = SegmentCounter::new(&database, counter_name("s"), SegmentOptions::default());
    segments.next_value().await.unwrap();
    segments.settled().await;
    let sent = log.named("findAndModify");
    let expected = [
        take_command(
            CounterKind::Cyclic,
            &counter_name("c"),
            5,
            &CommandOptions::default().client(ClientTime::Micros(12_345)),
        )
        .unwrap(),
        take_command(
            CounterKind::Autoinc,
            &counter_name("a"),
            3,
            &CommandOptions::default(),
        )
        .unwrap(),
        take_command(
            CounterKind::Segment,
            &counter_name("s"),
            0,
            &CommandOptions::default(),
        )
        .unwrap(),
    ];
    // Compared pairwise: a short log would skip the comparison.
    assert!(
        sent.len() >= expected.len(),
        "{} commands sent for {} takes",
        sent.len(),
        expected.len()
    );
    for (sent, expected) in sent.iter().zip(&expected) {
        for field in ["findAndModify", "update", "new"] {
            assert_eq!(
                sent.get(field),
                expected.get(field),
                "{field} of {expected}"
            );
        }
        // The printed filter is the library's with the kind's guard added
        // first to its `$expr` (the library reads the document it gets back
        // instead; an application would not).
        let (sent_query, printed) = (
            sent.get_document("query").unwrap(),
            expected.get_document("query").unwrap(),
        );
        for (field, value) in sent_query.iter().filter(|(field, _)| *field != "$expr") {
            assert_eq!(printed.get(field), Some(value), "{field} of {printed}");
        }
        let guard = printed.get_document("$expr").unwrap();
        match sent_query.get("$expr") {
            Some(own) => assert_eq!(guard.get_array("$and").unwrap().last(), Some(own)),
            None => assert!(guard.contains_key("$and"), "{guard}"),
        }
        assert_durable(sent);
    }
    // The CLI prints the same command.
    let printed = run(idmint(TEST).args([
        "pipeline",
        "c",
        "--count",
        "5",
        "--client-micros",
        "12345",
        "--json",
    ]));
    assert_exit(&printed, 0);
    let printed: serde_json::Value = serde_json::from_str(&stdout(&printed)).unwrap();
    assert_eq!(
        printed,
        mongodb::bson::Bson::Document(expected[0].clone()).into_relaxed_extjson()
    );
    // Another driver runs the printed autoinc command (server clock, no
    // client reading needed) and gets the next value.
    let printed = run(idmint(TEST).args(["pipeline", "a", "--kind", "autoinc"]));
    assert_exit(&printed, 0);
    let script = format!(
        "const r = db.runCommand(EJSON.parse({}, {{ relaxed: true }})); print(r.value.seq.toString());",
        serde_json::Value::String(stdout(&printed))
    );
    let output = crate::support::mongosh::shell(TEST, &script)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&output.stdout)
            .trim()
            .lines()
            .last(),
        Some("4"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    segments.close().await.unwrap();
}

/// Runs `printed` (what `idmint pipeline` printed) twice with mongosh's
/// driver, as an application in another language would: each run's `value`
/// in relaxed extended JSON (null: nothing was taken), or the server's error.
fn run_printed_twice(test: &str, printed: &str) -> Vec<serde_json::Value> {
    let script = format!(
        "const command = EJSON.parse({}, {{ relaxed: true }});\n\
         for (let i = 0; i < 2; i++) {{\n\
           let r;\n\
           try {{ r = db.runCommand(command); }} catch (e) {{ r = {{ ok: 0, errmsg: e.message }}; }}\n\
           print('RUN ' + (r.ok ? EJSON.stringify(r.value, {{ relaxed: true }})\n\
             : JSON.stringify({{ error: String(r.errmsg) }})));\n\
         }}",
        serde_json::Value::String(printed.to_string())
    );
    let output = crate::support::mongosh::shell(test, &script)
        .output()
        .unwrap();
    let runs: Vec<serde_json::Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.strip_prefix("RUN "))
        .map(|run| serde_json::from_str(run).unwrap())
        .collect();
    assert_eq!(
        runs.len(),
        2,
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    runs
}

/// What `idmint pipeline NAME` prints for the counter as stored.
fn printed(test: &str, counter: &str) -> String {
    let printed = run(idmint(test).args(["pipeline", counter]));
    assert_exit(&printed, 0);
    stdout(&printed)
}

/// The command `idmint pipeline` prints takes two new values in two runs,
/// for every kind that has one, and takes nothing from a counter it refuses
/// (malformed, of another kind or zone, out of values, missing): the run
/// gets `value: null`, never the untouched counter, whose value an
/// application would hand out again. The printed command is the counter's
/// own (its kind, period and zone are read from it); flags that contradict
/// the counter and a zone that is not one are refused (exit 2).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_printed_command_takes_new_values_or_nothing_for_every_kind() {
    const TEST: &str = "printed_refusals";
    let database = support::database(TEST).await;
    let collection = database.collection::<Document>(COUNTERS_COLLECTION);
    for (counter, spec) in [
        ("c", CounterSpec::default().prefixes(Vec::new())),
        (
            "a",
            CounterSpec::of(CounterKind::Autoinc).prefixes(Vec::new()),
        ),
        (
            "s",
            CounterSpec::of(CounterKind::Segment).prefixes(Vec::new()),
        ),
    ] {
        sequence::create(&database, &counter_name(counter), &spec)
            .await
            .unwrap();
    }
    // The README's credit notes: numbered per year in Paris.
    assert_exit(
        &run(idmint(TEST).args([
            "counter",
            "create",
            "credit-notes",
            "--kind",
            "periodic",
            "--zone",
            "Europe/Paris",
            "--prefix",
            "CN-",
        ])),
        0,
    );
    let refused = |counter: &str, printed: &str, before: Document| {
        let (counter, printed) = (counter.to_string(), printed.to_string());
        let collection = collection.clone();
        async move {
            assert_eq!(
                run_printed_twice(TEST, &printed),
                [serde_json::Value::Null, serde_json::Value::Null],
                "{counter}: a refusal must take nothing and return nothing"
            );
            let after = collection
                .find_one(doc! { "_id": &counter })
                .await
                .unwrap()
                .unwrap();
            assert_eq!(after, before, "{counter} was modified");
        }
    };

    // Two runs, two values, each kind's command read from its counter.
    let mut commands = std::collections::BTreeMap::new();
    for (counter, field, first, second) in [
        ("c", "val", 1, 2),
        ("a", "seq", 1, 2),
        ("s", "max", 1001, 2001),
        ("credit-notes", "seq", 1, 2),
    ] {
        let command = printed(TEST, counter);
        let runs = run_printed_twice(TEST, &command);
        assert_eq!(
            (runs[0][field].as_u64(), runs[1][field].as_u64()),
            (Some(first), Some(second)),
            "{counter}: {runs:?}"
        );
        commands.insert(counter, command);
    }
    let periodic = commands["credit-notes"].clone();
    assert!(periodic.contains("Europe/Paris"), "{periodic}");

    // The README's mistake: the command built from flags alone, for a year
    // in UTC, run against the counter of Paris: nothing, twice.
    let from_flags = run(idmint(TEST).env_remove("MONGODB_URI").args([
        "pipeline",
        "credit-notes",
        "--kind",
        "periodic",
    ]));
    assert_exit(&from_flags, 0);
    assert!(
        stderr(&from_flags).contains("no database was given (--uri or MONGODB_URI): the command is built from the flags alone, for a periodic counter of a year in UTC"),
        "{}",
        stderr(&from_flags)
    );
    let before = counter_document(&database, "credit-notes").await.unwrap();
    refused("credit-notes", &stdout(&from_flags), before).await;

    // A malformed counter (its value fields intact): nothing, twice.
    for counter in ["c", "a", "s", "credit-notes"] {
        let owned = counter_document(&database, counter).await.unwrap();
        let owned = owned.get("prefixes").unwrap().clone();
        collection
            .update_one(
                doc! { "_id": counter },
                doc! { "$set": { "prefixes": "X-" } },
            )
            .await
            .unwrap();
        let before = counter_document(&database, counter).await.unwrap();
        refused(counter, &commands[counter], before).await;
        collection
            .update_one(
                doc! { "_id": counter },
                doc! { "$set": { "prefixes": owned } },
            )
            .await
            .unwrap();
    }

    // Out of values: nothing, twice.
    for (counter, fields) in [
        ("a", doc! { "seq": MAX_VALUE as i64 }),
        ("s", doc! { "max": (MAX_VALUE - 10) as i64 }),
        (
            "credit-notes",
            doc! { "current": "9999", "seq": MAX_VALUE as i64 },
        ),
    ] {
        collection
            .update_one(doc! { "_id": counter }, doc! { "$set": fields })
            .await
            .unwrap();
        let before = counter_document(&database, counter).await.unwrap();
        refused(counter, &commands[counter], before).await;
    }
    // A cyclic counter never runs out: it wraps, and its timestamp moves on.
    collection
        .update_one(doc! { "_id": "c" }, doc! { "$set": { "val": 99_i64 } })
        .await
        .unwrap();
    let ts = counter_document(&database, "c")
        .await
        .unwrap()
        .get_i64("ts")
        .unwrap();
    let runs = run_printed_twice(TEST, &commands["c"]);
    assert_eq!(
        (runs[0]["val"].as_u64(), runs[1]["val"].as_u64()),
        (Some(0), Some(1))
    );
    assert!(runs[0]["ts"].as_i64().unwrap() > ts, "{runs:?}");

    // Of another kind, or missing: nothing, twice.
    let before = support::replace_counter(
        &database,
        "c",
        doc! { "kind": "autoinc", "seq": 5_i64, "prefixes": [] },
    )
    .await;
    refused("c", &commands["c"], before).await;
    let ghost = run(idmint(TEST).args(["pipeline", "ghost"]));
    assert_exit(&ghost, 0);
    assert!(
        stderr(&ghost).contains(&format!(
            "counter 'ghost' does not exist in database '{}'",
            support::database_name(TEST)
        )),
        "{}",
        stderr(&ghost)
    );
    assert_eq!(
        run_printed_twice(TEST, &stdout(&ghost)),
        [serde_json::Value::Null, serde_json::Value::Null]
    );

    // Flags that contradict the counter, or name no zone: exit 2.
    for (args, message) in [
        (
            &["credit-notes", "--kind", "periodic", "--zone", "UTC"][..],
            "counter 'credit-notes' has zone Europe/Paris, not UTC (--zone UTC)",
        ),
        (
            &["credit-notes", "--period", "month"][..],
            "counter 'credit-notes' has period year, not month (--period month)",
        ),
        (
            &["a", "--kind", "cyclic"][..],
            "counter 'a' has kind autoinc, not cyclic (--kind cyclic)",
        ),
        (
            &["a", "--zone", "UTC"][..],
            "--zone applies to periodic counters; counter 'a' is an autoinc counter",
        ),
        (
            &["s", "--client-micros", "5"][..],
            "--client-micros applies to cyclic counters; counter 's' is a segment counter",
        ),
        (
            &["credit-notes", "--step", "10"][..],
            "--step applies to segment counters; counter 'credit-notes' is a periodic counter",
        ),
        (
            &["ghost", "--kind", "periodic", "--zone", "$zone"][..],
            "zone \"$zone\" is not a time zone name",
        ),
    ] {
        let refused = run(idmint(TEST).arg("pipeline").args(args));
        assert_exit(&refused, 2);
        assert!(
            stderr(&refused).contains(message),
            "{args:?}: {}",
            stderr(&refused)
        );
        assert_eq!(stdout(&refused), "", "{args:?}");
    }
    let no_database = run(idmint(TEST)
        .env_remove("MONGODB_URI")
        .args(["pipeline", "x", "--kind", "periodic", "--zone", "$zone"]));
    assert_exit(&no_database, 2);
    assert!(
        stderr(&no_database).contains("zone \"$zone\" is not a time zone name"),
        "{}",
        stderr(&no_database)
    );
}

/// An auto-increment handle takes its values after the first with the short
/// guard (its counter's known shape): blocks stay contiguous, the room
/// check still holds, and a counter changed meanwhile is judged again: a
/// malformed one refused and left exactly as it is.
#[tokio::test]
async fn an_autoinc_counter_is_judged_again_after_it_changed() {
    let database = support::database("autoinc_short_guard").await;
    let collection = database.collection::<Document>(COUNTERS_COLLECTION);
    collection
        .insert_one(doc! { "_id": "ai", "kind": "autoinc", "seq": 0_i64, "prefixes": ["AI-"] })
        .await
        .unwrap();
    let counter = AutoincCounter::new(&database, counter_name("ai"));
    assert_eq!(counter.take(1).await.unwrap(), 1..=1);
    assert_eq!(counter.take(3).await.unwrap(), 2..=4);
    assert_eq!(counter.take(1).await.unwrap(), 5..=5);
    // Near the end: the filter's room check refuses what does not fit.
    let near_end = doc! { "$set": { "seq": (MAX_VALUE - 2) as i64 } };
    collection
        .update_one(doc! { "_id": "ai" }, near_end)
        .await
        .unwrap();
    assert_eq!(
        counter.take(1).await.unwrap(),
        MAX_VALUE - 1..=MAX_VALUE - 1
    );
    let error = counter.take(2).await.unwrap_err();
    assert!(
        matches!(error, SequenceError::Exhausted { .. }),
        "{error:?}"
    );
    assert_eq!(counter.take(1).await.unwrap(), MAX_VALUE..=MAX_VALUE);
    // Changed by hand into each malformed counter.
    let cases = [
        (
            doc! { "kind": "autoinc", "seq": "7" },
            "seq is the string \"7\", not a number",
        ),
        (
            doc! { "kind": "autoinc", "seq": 2.5 },
            "seq is 2.5, not an integer",
        ),
        (
            doc! { "kind": "autoinc", "seq": "7".parse::<Decimal128>().unwrap() },
            "seq is of BSON type Decimal128, not a number",
        ),
        (
            doc! { "kind": "autoinc", "seq": 7_i64, "prefixes": ["AI-", 3] },
            "prefixes holds the number 3, not only strings",
        ),
        (
            doc! { "kind": "autoinc", "seq": 7_i64, "prefix": "B-", "prefixes": ["AI-"] },
            "prefix \"B-\" is not one of its prefixes",
        ),
    ];
    for (index, (fields, reason)) in cases.into_iter().enumerate() {
        let id = format!("ai_changed{index}");
        collection
            .insert_one(doc! { "_id": &id, "kind": "autoinc", "seq": 0_i64, "prefixes": ["AI-"] })
            .await
            .unwrap();
        let counter = AutoincCounter::new(&database, counter_name(&id));
        counter.take(1).await.unwrap();
        counter.take(1).await.unwrap();
        let corrupt = support::replace_counter(&database, &id, fields).await;
        let error = counter.take(1).await.unwrap_err();
        assert!(error.to_string().contains(reason), "{id}: {error}");
        let after = collection
            .find_one(doc! { "_id": &id })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(after, corrupt, "{id} was modified");
    }
}
