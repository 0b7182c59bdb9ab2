//! The stored functions themselves, run by mongosh after the shell loader,
//! against the same counters as the Rust host: values never handed out
//! twice between the two, a missing counter named, the printed loader, the
//! auto-increment upsert.

use std::process::{Output, Stdio};

use idmint::sequence::{CounterName, CounterSpec, CyclicCounter, OpenedCounter};
use idmint::{installer, Clock, SystemClock};

use crate::support::{self, mongosh::shell};

fn numbers(output: &Output) -> Vec<u64> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

/// Three mongosh sessions calling the stored getNextUniqueSeq and the host's
/// pipeline path on one counter, with the overlap made certain: every shell
/// reports it is ready and waits for a "go" document; the host starts only
/// then, and after its first value waits (polling the counter, bounded by
/// the shells' lifetime) until a shell has taken one, so that the two sides'
/// values interleave. No value is handed out twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_function_in_mongosh_and_the_host_never_hand_out_a_value_twice() {
    use std::io::{BufRead, BufReader};
    const TEST: &str = "mongosh_and_host";
    let database = support::database(TEST).await;
    installer::install(&database, &Default::default())
        .await
        .unwrap();
    let counter = CyclicCounter::new(&database, CounterName::new("shared").unwrap());
    counter
        .create(&CounterSpec::default().maxval(1_000_000))
        .await
        .unwrap();

    let script = "print('ready');\n\
                  while (db.getCollection('go').findOne() === null) sleep(5);\n\
                  for (let i = 0; i < 100; i++) print(getNextUniqueSeq('shared'));";
    let mut shells: Vec<_> = (0..3)
        .map(|_| {
            shell(TEST, script)
                .stdout(Stdio::piped())
                .spawn()
                .expect("run mongosh (scripts/test.sh installs it; or set IDMINT_MONGOSH)")
        })
        .collect();
    let mut readers: Vec<_> = shells
        .iter_mut()
        .map(|shell| BufReader::new(shell.stdout.take().unwrap()).lines())
        .collect();
    for reader in &mut readers {
        // The loader's line, then "ready".
        let ready = reader.find(|line| line.as_ref().is_ok_and(|l| l.trim() == "ready"));
        assert!(ready.is_some(), "a shell never got ready");
    }
    database
        .collection::<mongodb::bson::Document>("go")
        .insert_one(mongodb::bson::doc! { "go": true })
        .await
        .unwrap();
    let mut host = vec![
        counter
            .next(SystemClock.now_micros())
            .await
            .unwrap()
            .sequence,
    ];
    // Wait until a shell has taken a value after the host's first.
    loop {
        let val = counter.state().await.unwrap().cyclic().unwrap().val;
        if val > host[0] {
            break;
        }
        assert!(
            shells
                .iter_mut()
                .any(|shell| shell.try_wait().unwrap().is_none()),
            "every shell ended before the host's first value: no overlap"
        );
        tokio::task::yield_now().await;
    }
    for _ in 1..200 {
        host.push(
            counter
                .next(SystemClock.now_micros())
                .await
                .unwrap()
                .sequence,
        );
    }
    let mut values = host.clone();
    for (shell, reader) in shells.into_iter().zip(readers) {
        let from_shell: Vec<u64> = reader
            .map_while(Result::ok)
            .filter_map(|line| line.trim().parse().ok())
            .collect();
        let output = shell.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "mongosh failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(from_shell.len(), 100);
        values.extend(from_shell);
    }
    assert!(
        host.windows(2).any(|pair| pair[1] > pair[0] + 1),
        "the host's values form one block: the two sides did not interleave"
    );
    values.sort_unstable();
    assert_eq!(values, (1..=500).collect::<Vec<u64>>());
}

#[tokio::test]
async fn the_stored_function_names_a_missing_counter() {
    const TEST: &str = "mongosh_missing_counter";
    let database = support::database(TEST).await;
    installer::install(&database, &Default::default())
        .await
        .unwrap();
    let output = shell(TEST, "getNextUniqueSeq('ghost');").output().unwrap();
    assert!(!output.status.success());
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(text.contains("counter 'ghost' does not exist"), "{text}");
}

/// `idmint shell-loader` prints the loader; a DBA saves it and loads it in
/// mongosh, and the installed function is then callable in the session.
#[tokio::test]
async fn the_printed_shell_loader_makes_the_functions_callable() {
    const TEST: &str = "mongosh_printed_loader";
    let database = support::database(TEST).await;
    installer::install(&database, &Default::default())
        .await
        .unwrap();
    let counter = CyclicCounter::new(&database, CounterName::new("dba").unwrap());
    counter
        .create(&CounterSpec::default().maxval(2))
        .await
        .unwrap();

    let printed = support::idmint(TEST).arg("shell-loader").output().unwrap();
    assert!(printed.status.success());
    let dir = tempfile::tempdir().unwrap();
    let loader = dir.path().join("idmint-loader.js");
    std::fs::write(&loader, &printed.stdout).unwrap();
    let work = dir.path().join("work.js");
    std::fs::write(
        &work,
        "print([1, 2, 3].map(() => getNextUniqueSeq('dba')).join(','));\n",
    )
    .unwrap();
    // Files run in order, in one session: the loader, then the DBA's work.
    let output = support::mongosh::connected(support::uri(), &support::database_name(TEST))
        .arg(&loader)
        .arg(&work)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("idmint loader: loaded") && l.contains("getNextUniqueSeq")),
        "{stdout}"
    );
    assert!(
        stdout.lines().any(|line| line.trim() == "1,2,0"),
        "{stdout}"
    );
}

/// `getNextSequence` with `upsert` creates a missing counter, from `start`,
/// in the document the host creates; shells and the host then share it. It
/// owns no prefix, so the counter that owns the empty one keeps formatting
/// IDs, and `status` finds nothing to report.
#[tokio::test]
async fn the_stored_auto_increment_creates_a_missing_counter_the_host_shares() {
    const TEST: &str = "mongosh_autoinc_upsert";
    let database = support::database(TEST).await;
    installer::install(&database, &Default::default())
        .await
        .unwrap();
    let output = shell(
        TEST,
        "print(getNextSequence('visits', { upsert: true, start: 100 }));\n\
         print(getNextSequence('visits', { upsert: true, start: 100 }));",
    )
    .output()
    .unwrap();
    assert_eq!(numbers(&output), [100, 101]);
    let host =
        idmint::sequence::AutoincCounter::new(&database, CounterName::new("visits").unwrap());
    assert_eq!(host.take(2).await.unwrap(), 102..=103);
    let output = shell(TEST, "print(getNextSequence('visits'));")
        .output()
        .unwrap();
    assert_eq!(numbers(&output), [104]);
    let document = support::documents(&database, "counters").await;
    let owner = support::run(support::idmint(TEST).args(["counter", "create", "orders"]));
    support::assert_exit(&owner, 0);
    let next = support::run(support::idmint(TEST).args(["next", "orders"]));
    support::assert_exit(&next, 0);
    support::assert_exit(&support::run(support::idmint(TEST).arg("status")), 0);
    assert_eq!(
        document,
        [
            mongodb::bson::doc! { "_id": "visits", "kind": "autoinc", "seq": 104_i64, "prefixes": [] }
        ]
    );
}
