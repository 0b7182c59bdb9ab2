//! Distributed locks against the real server: leases decided by the server's
//! clock, fencing tokens, owner+token checks, re-entrancy, waiting.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use idmint::lock::{
    fenced_filter, fenced_set, Acquired, Lock, LockError, LockName, LockState, WaitOptions,
};
use mongodb::bson::{doc, Document};
use mongodb::{Client, Database};

use crate::support::process::{running, signal};
use crate::support::{self, held, lock_name, wait};

#[tokio::test]
async fn every_lock_write_is_durable_and_reentrant_holds_count() {
    let (database, log) = support::monitored_database("lock_durable_reentrant").await;
    let lock = Lock::new(&database, lock_name("job"));
    let first = held(&lock, Duration::from_secs(30)).await;
    let second = held(&lock, Duration::from_secs(30)).await;
    assert_eq!((first.count(), second.count()), (1, 2));
    assert_eq!(first.token(), second.token(), "re-entry keeps the token");
    second.renew().await.unwrap();

    // Another owner cannot take it while held twice, nor once.
    let other = Lock::new(&database, lock_name("job"));
    assert!(matches!(
        other.try_acquire(Duration::from_secs(30)).await.unwrap(),
        Acquired::Busy(_)
    ));
    assert_eq!(second.release().await.unwrap(), 1);
    assert!(matches!(
        other.try_acquire(Duration::from_secs(30)).await.unwrap(),
        Acquired::Busy(_)
    ));
    assert_eq!(first.release().await.unwrap(), 0);
    let next = held(&other, Duration::from_secs(30)).await;
    assert_eq!(
        next.token(),
        2,
        "a new acquisition gets the next fencing token"
    );
    next.release().await.unwrap();

    let writes: Vec<Document> = ["findAndModify", "update"]
        .iter()
        .flat_map(|command| log.named(command))
        .collect();
    assert!(writes.len() >= 7, "{writes:?}");
    writes.iter().for_each(support::assert_durable);
}

#[tokio::test]
async fn release_and_renew_need_the_owner_and_the_token() {
    let database = support::database("lock_wrong_owner").await;
    let ttl = Duration::from_secs(30);
    let a = Lock::new(&database, lock_name("job"));
    let b = Lock::new(&database, lock_name("job"));
    let dba = Lock::new(&database, lock_name("job"));

    let a1 = held(&a, ttl).await;
    assert_eq!(dba.force_release().await.unwrap().token, a1.token());
    let b2 = held(&b, ttl).await;
    assert_eq!(dba.force_release().await.unwrap().token, b2.token());
    // Owner a holds the lock again, with a new token.
    let a3 = held(&a, ttl).await;
    assert_eq!((a1.token(), b2.token(), a3.token()), (1, 2, 3));

    // The right owner with an old token is refused ...
    assert!(matches!(
        a1.renew().await,
        Err(LockError::Lost { token: 1, .. })
    ));
    assert!(matches!(
        a1.release().await,
        Err(LockError::Lost { token: 1, .. })
    ));
    // ... as is another owner.
    assert!(matches!(b2.renew().await, Err(LockError::Lost { .. })));
    assert!(matches!(b2.release().await, Err(LockError::Lost { .. })));

    let state = a.status().await.unwrap().unwrap();
    assert_eq!(
        (state.owner.as_deref(), state.token, state.count),
        (Some(a.owner()), 3, 1),
        "a refused release or renew changed the lock"
    );
    assert!(state.is_held());
    a3.release().await.unwrap();
    assert!(!a.status().await.unwrap().unwrap().is_held());
}

#[tokio::test]
async fn expiry_is_the_servers_and_a_stale_holder_is_fenced_off() {
    let database = support::database("lock_stale_holder").await;
    let paused = Lock::new(&database, lock_name("job"));
    let old = held(&paused, Duration::from_millis(300)).await;
    let next = Lock::new(&database, lock_name("job"));
    // The next holder waits for the server to end the old lease (polling:
    // expiry writes nothing a change stream could see).
    let new = next
        .acquire(
            Duration::from_secs(30),
            &WaitOptions::new(Duration::from_secs(30)),
        )
        .await
        .unwrap();
    assert!(new.token() > old.token());

    // The old holder resumes: it can neither renew nor release ...
    assert!(matches!(old.renew().await, Err(LockError::Lost { .. })));
    let old_token = old.token();
    assert!(matches!(old.release().await, Err(LockError::Lost { .. })));
    // ... and a fenced write with its token is rejected once the new holder wrote.
    let reports = database.collection::<Document>("reports");
    reports.insert_one(doc! { "_id": "r" }).await.unwrap();
    let fenced_write = |token: i64| {
        let reports = reports.clone();
        async move {
            let mut filter = doc! { "_id": "r" };
            filter.extend(fenced_filter("lockToken", token));
            let mut set = doc! { "by": token };
            set.extend(fenced_set("lockToken", token));
            reports
                .update_one(filter, doc! { "$set": set })
                .await
                .unwrap()
                .matched_count
        }
    };
    assert_eq!(fenced_write(new.token()).await, 1);
    assert_eq!(
        fenced_write(old_token).await,
        0,
        "a stale token got through the fence"
    );
    assert_eq!(
        fenced_write(new.token()).await,
        1,
        "the holder can write again"
    );
    let state = next.status().await.unwrap().unwrap();
    assert_eq!(
        (state.owner.as_deref(), state.token),
        (Some(next.owner()), new.token())
    );
    new.release().await.unwrap();
}

#[tokio::test]
async fn a_corrupt_lock_is_reported_and_left_unchanged() {
    let database = support::database("lock_corrupt").await;
    let locks = database.collection::<Document>("locks");
    let corrupt = doc! { "_id": "job", "owner": 42, "token": "seven" };
    locks.insert_one(corrupt.clone()).await.unwrap();
    let error = Lock::new(&database, lock_name("job"))
        .try_acquire(Duration::from_secs(5))
        .await
        .unwrap_err();
    // A corrupt document: left unchanged, and reported as such.
    assert_eq!(error.class(), idmint::ErrorClass::Conflict, "{error}");
    assert!(
        error.to_string().contains("owner is the number 42"),
        "{error}"
    );
    assert_eq!(support::documents(&database, "locks").await, vec![corrupt]);

    for ttl in [Duration::ZERO, Duration::from_secs(86_401)] {
        let error = Lock::new(&database, lock_name("other"))
            .try_acquire(ttl)
            .await
            .unwrap_err();
        assert!(matches!(error, LockError::OutOfRange { .. }), "{error}");
    }
    assert!(LockName::new("a b").is_err());
    assert_eq!(
        support::documents(&database, "locks").await.len(),
        1,
        "bad input wrote something"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_is_handed_the_lock_on_release_not_on_a_poll() {
    let database = support::database("lock_wakeup").await;
    let holder = Lock::new(&database, lock_name("job"));
    let lease = held(&holder, Duration::from_secs(120)).await;

    // The waiter's client counts its completed attempts, so the release comes
    // after its first (failed) attempt for certain.
    let attempts = Arc::new(AtomicUsize::new(0));
    let attempted = Arc::new(tokio::sync::Notify::new());
    let waiter_db = counting_database(&database, attempts.clone(), attempted.clone()).await;
    let waiter = Lock::new(&waiter_db, lock_name("job"));
    // It would poll (refresh its place in line) again only after ten
    // minutes, past its 60 s wait.
    let mut options = WaitOptions::new(Duration::from_secs(60))
        .poll(Duration::from_secs(600), Duration::from_secs(600));
    options.refresh = Duration::from_secs(600);
    let waiting = tokio::spawn(async move {
        let started = std::time::Instant::now();
        let lease = waiter.acquire(Duration::from_secs(30), &options).await;
        (lease, started.elapsed())
    });
    wait::within(wait::PATIENCE, "the waiter's first attempt", async {
        while attempts.load(Ordering::SeqCst) == 0 {
            attempted.notified().await;
        }
    })
    .await;
    let old_token = lease.token();
    lease.release().await.unwrap();
    let (new, waited) = waiting.await.unwrap();
    let new = new.expect("the waiter got the lock");
    // Its only other chance was the last attempt at its 60 s deadline.
    assert!(
        waited < Duration::from_secs(50),
        "woken only at the deadline: {waited:?}"
    );
    // The release handed it the lock; the change stream told it: no write
    // of its own after the one that put it in line.
    assert_eq!(
        attempts.load(Ordering::SeqCst),
        1,
        "one attempt (in line), then handed the lock on release"
    );
    assert!(new.token() > old_token);
    new.release().await.unwrap();
}

async fn counting_database(
    database: &Database,
    attempts: Arc<AtomicUsize>,
    attempted: Arc<tokio::sync::Notify>,
) -> Database {
    use mongodb::event::command::CommandEvent;
    use mongodb::event::EventHandler;
    let mut options = mongodb::options::ClientOptions::parse(support::uri())
        .await
        .unwrap();
    options.command_event_handler = Some(EventHandler::callback(move |event| {
        if let CommandEvent::Succeeded(done) = event {
            if done.command_name == "findAndModify" {
                attempts.fetch_add(1, Ordering::SeqCst);
                attempted.notify_waiters();
                attempted.notify_one();
            }
        }
    }));
    Client::with_options(options)
        .unwrap()
        .database(database.name())
}

// ---- `idmint lock run` as cron jobs use it: separate processes ----

use std::io::{BufRead, BufReader, Write as _};
use std::process::{Child, Command, Stdio};

/// `idmint lock run NAME <flags> -- sh -c SCRIPT`, stdout piped.
fn lock_run(test: &str, name: &str, flags: &[&str], script: &str) -> Command {
    let mut command = support::idmint(test);
    command
        .args(["lock", "run", name])
        .args(flags)
        .args(["--", "sh", "-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

fn first_line(child: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    line.trim().to_string()
}

/// The first line of `child`'s output, read as the numbers it prints
/// (its fencing token, then process ids), `N` of them.
fn first_numbers<const N: usize>(child: &mut Child) -> [i64; N] {
    let line = first_line(child);
    let numbers: Vec<i64> = line
        .split(' ')
        .map(|field| {
            field
                .parse()
                .unwrap_or_else(|_| panic!("not a number in {line:?}"))
        })
        .collect();
    numbers
        .try_into()
        .unwrap_or_else(|_| panic!("not {N} numbers: {line:?}"))
}

/// The state of lock "job", read straight from the server.
fn job_state(runtime: &tokio::runtime::Runtime, database: &mongodb::Database) -> LockState {
    runtime
        .block_on(Lock::new(database, lock_name("job")).status())
        .unwrap()
        .expect("lock job exists")
}

#[test]
fn eight_processes_never_overlap_and_tokens_grow_in_start_order() {
    const TEST: &str = "lock_cli_mutex";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(support::database(TEST));
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("sections");
    // Each critical section appends "token start end" (nanoseconds, one clock: this machine's).
    let script = format!(
        "s=$(date +%s%N); e=$(date +%s%N); echo \"$IDMINT_LOCK_TOKEN $s $e\" >> {}",
        record.display()
    );
    let barrier = Arc::new(std::sync::Barrier::new(8));
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let (barrier, script) = (barrier.clone(), script.clone());
            std::thread::spawn(move || {
                barrier.wait();
                for _ in 0..25 {
                    let mut command =
                        lock_run(TEST, "mutex", &["--ttl", "30", "--wait", "600"], &script);
                    let output = support::run(command.stdin(Stdio::null()));
                    support::assert_exit(&output, 0);
                }
            })
        })
        .collect();
    workers.into_iter().for_each(|w| w.join().unwrap());

    let mut sections: Vec<(i64, u128, u128)> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split(' ').collect();
            (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(sections.len(), 200);
    sections.sort_by_key(|&(_, start, _)| start);
    for pair in sections.windows(2) {
        let ((t0, _, end0), (t1, start1, _)) = (pair[0], pair[1]);
        assert!(start1 > end0, "sections overlap: {pair:?}");
        assert!(t1 > t0, "tokens not increasing in start order: {pair:?}");
    }
}

/// Reads `child`'s stdout to its end in a thread: the receiver gets the
/// text once every process holding the pipe (the wrapper, its COMMAND and
/// whatever that started) is gone. `first_line` must not be used after.
fn read_to_end(child: &mut Child) -> std::sync::mpsc::Receiver<String> {
    let mut stdout = child.stdout.take().unwrap();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut text);
        let _ = sender.send(text);
    });
    receiver
}

/// Gives up on a process that should long be gone (a hang guard, not a
/// speed claim).
const GONE_LONG_AGO: Duration = Duration::from_secs(60);

/// flock's promise: the command cannot outlive the lock. `kill -9` of the
/// wrapper takes COMMAND, and what COMMAND started, along before the server
/// can end the lease (issue 18: the `sleep` still ran 4 s later, after the
/// lease expired).
#[test]
fn a_killed_wrapper_takes_its_command_and_what_it_started_along() {
    const TEST: &str = "lock_cli_kill9";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let database = runtime.block_on(support::database(TEST));
    // 10 s: long enough that the lease is still live, on a loaded machine,
    // when the test has seen every process gone.
    let mut holder = lock_run(
        TEST,
        "job",
        &["--ttl", "10"],
        "sleep 600 & echo $IDMINT_LOCK_TOKEN $$ $!; wait",
    )
    .spawn()
    .unwrap();
    let [old_token, command, started] = first_numbers(&mut holder);
    let (command, started) = (command as u32, started as u32);
    let gone = read_to_end(&mut holder);
    holder.kill().unwrap(); // SIGKILL: no release, no cleanup, no signal passed on
    holder.wait().unwrap();
    // Every process holding the holder's stdout is gone: COMMAND and the
    // `sleep` it started ...
    let outcome = gone.recv_timeout(GONE_LONG_AGO);
    // ... while the server still held the dead holder's lease.
    let state = job_state(&runtime, &database);
    let survivors: Vec<u32> = [command, started]
        .into_iter()
        .filter(|&pid| running(pid))
        .collect();
    survivors.iter().for_each(|&pid| signal(pid, libc::SIGKILL));
    assert!(
        outcome.is_ok() && survivors.is_empty(),
        "processes {survivors:?} outlived the killed wrapper"
    );
    assert_eq!(state.token, old_token);
    assert!(
        state.is_held(),
        "the command was gone only after the lease ended: {state:?}"
    );

    // The next holder gets the lock once the server ends that lease.
    let output = support::run(
        lock_run(
            TEST,
            "job",
            &["--ttl", "5", "--wait", "30"],
            "echo $IDMINT_LOCK_TOKEN",
        )
        .stdin(Stdio::null()),
    );
    support::assert_exit(&output, 0);
    let new_token: i64 = support::stdout(&output).trim().parse().unwrap();
    assert!(new_token > old_token);
}

/// Waits for process `pid` (not necessarily a child of this test) to exit,
/// on the kernel's word (a pidfd becomes readable), for at most `timeout`
/// (a hang guard): whether it did.
fn exits_within(pid: u32, timeout: Duration) -> bool {
    // SAFETY: pidfd_open(2) on a pid; the fd it returns is closed below.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) } as libc::c_int;
    if fd == -1 {
        // ESRCH: gone already.
        return std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
    }
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ready = loop {
        // SAFETY: poll(2) on one pollfd this function owns.
        let ready = unsafe { libc::poll(&mut poll, 1, timeout.as_millis() as libc::c_int) };
        if ready != -1 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
        {
            break ready;
        }
    };
    // SAFETY: the fd pidfd_open returned, closed once.
    unsafe { libc::close(fd) };
    ready == 1
}

/// The guard COMMAND runs under can be killed with the wrapper at once
/// (`kill -9` of both, the OOM killer): nothing is left to kill COMMAND's
/// group then, and COMMAND dies with the guard (Linux `PR_SET_PDEATHSIG`).
/// The wrapper is stopped first so that only the kernel can act.
#[test]
fn a_command_dies_with_its_guard_when_the_wrapper_cannot_act() {
    const TEST: &str = "lock_cli_pdeathsig";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let database = runtime.block_on(support::database(TEST));
    let mut holder = lock_run(
        TEST,
        "job",
        &["--ttl", "30"],
        "echo $IDMINT_LOCK_TOKEN $$ $PPID; exec sleep 600",
    )
    .spawn()
    .unwrap();
    let [token, command, guard] = first_numbers(&mut holder);
    let (command, guard) = (command as u32, guard as u32);
    signal(holder.id(), libc::SIGSTOP);
    signal(guard, libc::SIGKILL);
    let gone = exits_within(command, GONE_LONG_AGO);
    let state = job_state(&runtime, &database);
    if !gone {
        signal(command, libc::SIGKILL);
    }
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert!(gone, "the command outlived its guard");
    assert_eq!(state.token, token);
    assert!(
        state.is_held(),
        "the command was gone only after the lease ended: {state:?}"
    );
}

/// SIGINT, SIGTERM and SIGHUP sent to the wrapper reach COMMAND, whose code
/// the wrapper exits with; what COMMAND left running in its group is killed
/// before the lock is released.
#[test]
fn signals_reach_the_command_and_nothing_outlives_the_release() {
    const TEST: &str = "lock_cli_signals";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let database = runtime.block_on(support::database(TEST));
    for (number, signal_name) in [
        (libc::SIGINT, "INT"),
        (libc::SIGTERM, "TERM"),
        (libc::SIGHUP, "HUP"),
    ] {
        // The background `sleep` ignores SIGINT (an asynchronous list of a
        // non-interactive shell does): it is left behind when the shell exits.
        let script = format!(
            "trap 'echo got {signal_name}; exit 42' {signal_name}; sleep 600 & echo ready; wait"
        );
        let mut command = lock_run(TEST, "job", &["--ttl", "30"], &script);
        // The wrapper keeps a signal ignored when it started (as under
        // `nohup`): start it with the signal's default disposition, whatever
        // the test runner was started with.
        // SAFETY: signal(2) is async-signal-safe, and the closure runs in the
        // child between fork and exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut command, move || {
                libc::signal(number, libc::SIG_DFL);
                Ok(())
            });
        }
        let mut holder = command.spawn().unwrap();
        assert_eq!(first_line(&mut holder), "ready");
        let rest = read_to_end(&mut holder);
        signal(holder.id(), number);
        let exited = exits_within(holder.id(), GONE_LONG_AGO);
        if !exited {
            holder.kill().unwrap();
        }
        let status = holder.wait().unwrap();
        assert!(exited, "SIG{signal_name}: the wrapper did not exit");
        let stderr = {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(holder.stderr.as_mut().unwrap(), &mut text);
            text
        };
        assert_eq!(status.code(), Some(42), "SIG{signal_name}: {stderr}");
        // Nothing holds the holder's stdout any more: the left-behind
        // `sleep` was killed too.
        let rest = rest
            .recv_timeout(GONE_LONG_AGO)
            .unwrap_or_else(|_| panic!("SIG{signal_name}: a process outlived the wrapper"));
        assert_eq!(rest.trim(), format!("got {signal_name}"));
        let state = job_state(&runtime, &database);
        assert!(
            !state.is_held(),
            "SIG{signal_name}: not released: {state:?}"
        );
    }
}

/// A holder cut off from the database (a proxy that stops forwarding while
/// its connections stay open) stops its command at the lease's local
/// deadline, before the server can end the lease and give the lock to the
/// next holder: whatever the driver is doing, and with the grace taken from
/// within the TTL (the command ignores SIGTERM, so only the SIGKILL at the
/// deadline stops it). Issue 18: it ran on 22 s after another process had
/// the lock.
#[test]
fn a_partitioned_holder_stops_its_command_before_its_lease_can_expire() {
    const TEST: &str = "lock_cli_partition";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(support::database(TEST));
    let proxy = crate::support::fault_proxy::FaultProxy::start();
    // 10 s: the safety margin, a tenth, leaves a loaded machine a second
    // between the SIGKILL and the server's end of the lease.
    let mut holder = lock_run(
        TEST,
        "job",
        &["--ttl", "10"],
        "trap '' TERM; echo $IDMINT_LOCK_TOKEN $$; exec sleep 600",
    );
    let mut holder = holder.env("MONGODB_URI", proxy.uri()).spawn().unwrap();
    let [old_token, command] = first_numbers(&mut holder);
    let command = command as u32;
    proxy.partition();

    // The next holder, straight to the server, waits for the server to end
    // the partitioned holder's lease ...
    let mut next = lock_run(
        TEST,
        "job",
        &["--ttl", "60", "--wait", "60"],
        "echo $IDMINT_LOCK_TOKEN; read x",
    )
    .spawn()
    .unwrap();
    let new_token: i64 = first_line(&mut next).parse().unwrap();
    // ... and while it runs, the partitioned holder's command is gone.
    let overlapped = running(command);
    if overlapped {
        signal(command, libc::SIGKILL);
    }
    next.stdin.as_mut().unwrap().write_all(b"done\n").unwrap();
    support::assert_exit(&next.wait_with_output().unwrap(), 0);
    assert!(!overlapped, "two holders ran at once");
    assert!(new_token > old_token);

    let output = holder.wait_with_output().unwrap();
    support::assert_exit(&output, 76);
    let stderr = support::stderr(&output);
    assert!(
        stderr.contains(&format!("fencing token {old_token} is treated as lost"))
            && stderr.contains("SIGTERM now, SIGKILL in"),
        "{stderr}"
    );
    drop(proxy);
}

#[test]
fn a_holder_paused_past_its_ttl_loses_the_lock_and_is_fenced_off() {
    const TEST: &str = "lock_cli_sigstop";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let database = runtime.block_on(support::database(TEST));
    let mut paused = lock_run(
        TEST,
        "job",
        &["--ttl", "1"],
        "echo $IDMINT_LOCK_TOKEN; exec sleep 600",
    )
    .spawn()
    .unwrap();
    let old_token: i64 = first_line(&mut paused).parse().unwrap();
    signal(paused.id(), libc::SIGSTOP);

    // The next holder waits until the server ends the paused one's lease.
    let mut next = lock_run(
        TEST,
        "job",
        &["--ttl", "60", "--wait", "60"],
        "echo $IDMINT_LOCK_TOKEN; read x",
    )
    .spawn()
    .unwrap();
    let new_token: i64 = first_line(&mut next).parse().unwrap();
    assert!(new_token > old_token);

    // Resumed, the paused one finds its lease lost, stops its command and says so.
    signal(paused.id(), libc::SIGCONT);
    let output = paused.wait_with_output().unwrap();
    support::assert_exit(&output, 76);
    let stderr = support::stderr(&output);
    assert!(
        stderr.contains("lost") && stderr.contains(&format!("token {old_token}")),
        "{stderr}"
    );

    // Its fenced write is rejected once the new holder has written.
    runtime.block_on(async {
        let reports = database.collection::<Document>("reports");
        reports.insert_one(doc! { "_id": "r" }).await.unwrap();
        for (token, expected) in [(new_token, 1), (old_token, 0)] {
            let mut filter = doc! { "_id": "r" };
            filter.extend(fenced_filter("lockToken", token));
            let set = fenced_set("lockToken", token);
            let result = reports
                .update_one(filter, doc! { "$set": set })
                .await
                .unwrap();
            assert_eq!(result.matched_count, expected, "token {token}");
        }
        let state = Lock::new(&database, lock_name("job"))
            .status()
            .await
            .unwrap()
            .unwrap();
        assert_eq!(state.token, new_token, "the stale holder changed the lock");
        assert!(state.is_held());
    });
    next.stdin.as_mut().unwrap().write_all(b"done\n").unwrap();
    support::assert_exit(&next.wait_with_output().unwrap(), 0);
}

#[test]
fn a_client_an_hour_ahead_cannot_take_a_live_lock() {
    const TEST: &str = "lock_cli_faketime";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let database = runtime.block_on(support::database(TEST));
    let lease = runtime.block_on(held(
        &Lock::new(&database, lock_name("job")),
        Duration::from_secs(60),
    ));
    let mut command = support::idmint(TEST);
    support::fake_clock(&mut command, "+1h").args([
        "lock", "run", "job", "--wait", "0", "--", "sh", "-c", "date +%s",
    ]);
    let output = support::run(&mut command);
    support::assert_exit(&output, 75);
    assert!(support::stderr(&output).contains("held by another owner"));
    // The fast clock is real: the same client runs commands an hour ahead.
    let ahead = support::run(support::fake_clock(&mut Command::new("date"), "+1h").arg("+%s"));
    let ahead: i64 = support::stdout(&ahead).trim().parse().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!(ahead - now > 3000);
    runtime.block_on(lease.release()).unwrap();
}

// ---- the stored functions getLock/releaseLock, held equal to the Rust path ----

use serde_json::{json, Value};

fn mongosh_lines(test: &str, script: &str) -> Vec<Value> {
    let output = crate::support::mongosh::shell(test, script)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "mongosh: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| line.starts_with('{'))
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn lock_cases() -> Vec<Document> {
    let past = mongodb::bson::DateTime::from_millis(1_000_000);
    let future = mongodb::bson::DateTime::from_millis(i64::MAX / 4);
    vec![
        doc! { "_id": "released", "owner": null, "token": 5_i64, "count": 0_i64, "expiresAt": null },
        doc! { "_id": "expired", "owner": "x", "token": 7_i64, "count": 2_i64, "expiresAt": past },
        doc! { "_id": "live", "owner": "x", "token": 3_i64, "count": 1_i64, "expiresAt": future },
        doc! { "_id": "corrupt", "owner": 42, "token": 1_i64 },
        doc! { "_id": "badtoken", "owner": null, "token": "seven" },
        // A free lock with someone in line is theirs first; one whose only
        // entry lapsed is free for anyone, and the entry is dropped.
        doc! { "_id": "waited", "owner": null, "token": 4_i64, "count": 0_i64, "expiresAt": null,
        "queue": [{ "owner": "w", "ticket": "t", "since": past, "until": future, "ttl": 1000_i64 }] },
        doc! { "_id": "lapsed", "owner": null, "token": 4_i64, "count": 0_i64, "expiresAt": null,
        "queue": [{ "owner": "w", "ticket": "t", "since": past, "until": past, "ttl": 1000_i64 }] },
        doc! { "_id": "badqueue", "owner": null, "token": 4_i64, "queue": [{ "owner": "w" }] },
    ]
}

/// A lock document with what differs by run (owner tokens, times) masked.
fn masked(document: &Document) -> Document {
    let mut document = document.clone();
    for (key, value) in document.iter_mut() {
        match value {
            mongodb::bson::Bson::DateTime(_) => *value = "date".into(),
            mongodb::bson::Bson::String(s) if (key == "owner" || key == "ticket") && s != "x" => {
                *value = "new owner".into()
            }
            _ => {}
        }
    }
    document
}

#[tokio::test]
async fn get_lock_in_mongosh_agrees_with_the_rust_acquire() {
    let rust_db = support::database("lock_conformance_rust").await;
    let js_db = support::database("lock_conformance_js").await;
    idmint::installer::install(&js_db, &Default::default())
        .await
        .unwrap();
    let mut names: Vec<String> = vec!["fresh".into()];
    for case in lock_cases() {
        names.push(case.get_str("_id").unwrap().to_string());
        rust_db
            .collection::<Document>("locks")
            .insert_one(&case)
            .await
            .unwrap();
        js_db
            .collection::<Document>("locks")
            .insert_one(&case)
            .await
            .unwrap();
    }
    let mut rust = Vec::new();
    for name in &names {
        let lock = Lock::new(&rust_db, LockName::new(name.as_str()).unwrap());
        rust.push(match lock.try_acquire(Duration::from_secs(60)).await {
            Ok(Acquired::Held(lease)) => {
                let token = lease.token();
                std::mem::forget(lease);
                json!({ "case": name, "token": token })
            }
            Ok(Acquired::Busy(_)) => json!({ "case": name, "busy": true }),
            Err(error) => {
                json!({ "case": name, "error": error.class() == idmint::ErrorClass::Conflict })
            }
        });
    }
    let script = format!(
        "for (const name of {names}) {{\n\
           try {{ const t = getLock(name, 60000);\n\
                  print(JSON.stringify(t === null ? {{ case: name, busy: true }} : {{ case: name, token: Number(t.split(':')[0]) }})); }}\n\
           catch (e) {{ print(JSON.stringify({{ case: name, error: e.message.includes('corrupt') }})); }}\n\
         }}",
        names = json!(names)
    );
    let js = mongosh_lines("lock_conformance_js", &script);
    assert_eq!(rust, js, "the two implementations disagree");
    let rust_docs: Vec<Document> = support::documents(&rust_db, "locks")
        .await
        .iter()
        .map(masked)
        .collect();
    let js_docs: Vec<Document> = support::documents(&js_db, "locks")
        .await
        .iter()
        .map(masked)
        .collect();
    assert_eq!(rust_docs, js_docs, "they left different documents");
}

#[tokio::test]
async fn mongosh_holders_and_rust_holders_exclude_each_other() {
    const TEST: &str = "lock_mongosh_vs_rust";
    let database = support::database(TEST).await;
    idmint::installer::install(&database, &Default::default())
        .await
        .unwrap();
    let rust = Lock::new(&database, lock_name("shared"));

    let taken = mongosh_lines(
        TEST,
        "print(JSON.stringify({ t: getLock('shared', 60000) }));",
    );
    let shell_token = taken[0]["t"].as_str().unwrap().to_string();
    assert!(shell_token.starts_with("1:"), "{shell_token}");
    assert!(matches!(
        rust.try_acquire(Duration::from_secs(60)).await.unwrap(),
        Acquired::Busy(_)
    ));

    let released = mongosh_lines(
        TEST,
        &format!(
            "print(JSON.stringify({{ wrong: releaseLock('shared', '1:{}'), stale: releaseLock('shared', '0:{}'), \
             right: releaseLock('shared', '{shell_token}') }}));",
            rust.owner(),
            &shell_token[2..]
        ),
    );
    assert_eq!(
        released[0],
        json!({ "wrong": false, "stale": false, "right": true })
    );

    let lease = held(&rust, Duration::from_secs(60)).await;
    assert_eq!(lease.token(), 2);
    let refused = mongosh_lines(
        TEST,
        "print(JSON.stringify({ got: getLock('shared', 60000), freed: releaseLock('shared', '2:ffff') }));",
    );
    assert_eq!(refused[0], json!({ "got": null, "freed": false }));
    lease.release().await.unwrap();
    let again = mongosh_lines(
        TEST,
        "print(JSON.stringify({ t: getLock('shared', 60000) }));",
    );
    assert!(
        again[0]["t"].as_str().unwrap().starts_with("3:"),
        "{again:?}"
    );
}

// ---- library leases: re-entry never shortens, the local deadline ----

/// The lock's `expiresAt` as stored (server clock).
async fn expires_at(database: &Database, lock: &str) -> mongodb::bson::DateTime {
    let document = database
        .collection::<Document>("locks")
        .find_one(doc! { "_id": lock })
        .await
        .unwrap()
        .unwrap();
    *document.get_datetime("expiresAt").unwrap()
}

#[tokio::test]
async fn a_reentrant_acquire_or_renewal_with_a_shorter_ttl_never_shortens_the_lease() {
    let database = support::database("lock_reentry_ttl").await;
    let lock = Lock::new(&database, lock_name("job"));
    let outer = held(&lock, Duration::from_secs(3600)).await;
    let outer_end = expires_at(&database, "job").await;
    let inner = held(&lock, Duration::from_secs(1)).await;
    assert_eq!(inner.count(), 2);
    assert!(
        expires_at(&database, "job").await >= outer_end,
        "a re-entry for 1 s shortened the outer holder's hour"
    );
    inner.renew().await.unwrap();
    assert!(
        expires_at(&database, "job").await >= outer_end,
        "a renewal for 1 s shortened the outer holder's hour"
    );
    // Another owner still finds it held (an hour, not a second).
    let other = Lock::new(&database, lock_name("job"));
    assert!(matches!(
        other.try_acquire(Duration::from_secs(1)).await.unwrap(),
        Acquired::Busy(_)
    ));
    assert_eq!(inner.release().await.unwrap(), 1);
    assert_eq!(outer.release().await.unwrap(), 0);
}

#[tokio::test]
async fn a_lease_fails_closed_at_its_local_deadline_and_when_found_lost() {
    let database = support::database("lock_local_deadline").await;
    let lock = Lock::new(&database, lock_name("job"));
    let before = std::time::Instant::now();
    let lease = held(&lock, Duration::from_secs(60)).await;
    let after = std::time::Instant::now();
    let deadline = lease.deadline().unwrap();
    // The TTL less a tenth from when the acquire was sent (between `before`
    // and `after`), not from when its answer came: never later than the
    // server's expiry can be.
    let ttl_less_margin = Duration::from_secs(54);
    assert!(
        before + ttl_less_margin <= deadline && deadline <= after + ttl_less_margin,
        "deadline {:?} after the start of the acquire",
        deadline - before
    );
    assert!(lease.is_live());
    // A DBA removes the holder: the next renewal finds the lease lost and
    // the lease stops being proved held at once.
    Lock::new(&database, lock_name("job"))
        .force_release()
        .await
        .unwrap();
    assert!(matches!(lease.renew().await, Err(LockError::Lost { .. })));
    assert!(!lease.is_live() && lease.deadline().is_none());
    assert!(matches!(lease.release().await, Err(LockError::Lost { .. })));
}

/// A COMMAND that cannot be started is a one-line error (exit 2), and the
/// lock is released, not left to run out.
#[test]
fn a_command_that_cannot_start_is_one_line_and_releases_the_lock() {
    const TEST: &str = "lock_cli_no_command";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let database = runtime.block_on(support::database(TEST));
    let output = support::run(
        support::idmint(TEST)
            .args(["lock", "run", "job", "--", "no-such-command-idmint-test"])
            .stdin(Stdio::null()),
    );
    support::assert_exit(&output, 2);
    assert_eq!(
        support::stderr(&output).trim(),
        "idmint: error: cannot run \"no-such-command-idmint-test\": No such file or directory (os error 2)"
    );
    let state = job_state(&runtime, &database);
    assert!(!state.is_held(), "{state:?}");
}
