//! `idmint lock run` as cron jobs use it, separate processes against the
//! real server: holders never overlap, a killed or paused wrapper takes its
//! command along or is fenced off, signals reach the command, a partitioned
//! holder stops its command before its lease can expire.

use std::io::{BufRead, BufReader, Write as _};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use idmint::lock::{fenced_filter, fenced_set, Lock, LockState};
use mongodb::bson::{doc, Document};

use crate::support::locks::lock_run;
use crate::support::process::{process_state, running, signal};
use crate::support::wait::{self, PATIENCE};
use crate::support::{self, held, lock_name};

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
        with_default_disposition(&mut command, number);
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

/// A signal that reaches the wrapper just as it has taken the lock, before
/// the guard has started COMMAND, is not lost: the wrapper passes it to
/// COMMAND's group, where only the guard is yet, and the guard hands it on
/// once COMMAND runs. (It was lost: the guard ignored it, and a `lock
/// elect` leader asked to stop in that moment led on.) The moment is made
/// certain: the guard stops itself (a test hook) just before it starts
/// COMMAND, SIGTERM goes to the wrapper then, and the guard is continued
/// once the signal waits in its group.
#[test]
fn a_signal_before_the_command_has_started_still_reaches_it() {
    const TEST: &str = "lock_cli_early_signal";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let database = runtime.block_on(support::database(TEST));
    let mut command = lock_run(
        TEST,
        "job",
        &["--ttl", "30", "--stop-guard-before-command"],
        "exec sleep 600",
    );
    with_default_disposition(&mut command, libc::SIGTERM);
    let mut holder = command.spawn().unwrap();
    let mut guard = None;
    wait::until(PATIENCE, "the guard stopped before COMMAND", || {
        guard = children(holder.id())
            .into_iter()
            .find(|&pid| process_state(pid) == Some('T'));
        guard.is_some()
    });
    let guard = guard.unwrap();
    signal(holder.id(), libc::SIGTERM);
    wait::until(
        PATIENCE,
        "SIGTERM waiting in the guard until COMMAND runs",
        || pending_signals(guard) & (1 << (libc::SIGTERM - 1)) != 0,
    );
    signal(guard, libc::SIGCONT);
    let exited = exits_within(holder.id(), GONE_LONG_AGO);
    if !exited {
        holder.kill().unwrap();
    }
    let status = holder.wait().unwrap();
    assert!(
        exited,
        "COMMAND never got the SIGTERM: the wrapper did not exit"
    );
    assert_eq!(status.code(), Some(128 + libc::SIGTERM));
    let state = job_state(&runtime, &database);
    assert!(!state.is_held(), "not released: {state:?}");
}

/// Starts `command` with signal `number`'s default disposition, whatever
/// the test runner was started with: the wrapper keeps a signal ignored
/// when it started (as under `nohup`).
fn with_default_disposition(command: &mut Command, number: libc::c_int) {
    // SAFETY: signal(2) is async-signal-safe, and the closure runs in the
    // child between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(command, move || {
            libc::signal(number, libc::SIG_DFL);
            Ok(())
        });
    }
}

/// The children of process `pid` (of any of its threads).
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|child| child.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// The signals waiting for process `pid` as a whole (`ShdPnd`), bit
/// `n - 1` for signal `n`.
fn pending_signals(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("ShdPnd:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .unwrap_or(0)
}

/// Takes lock "job" for `test` (waiting for the server to end the lease of
/// the holder with fencing token `old_token`), and checks, while it holds
/// it with a larger token, that the old holder's `command` is gone.
fn next_holder_finds_gone(test: &str, command: u32, old_token: i64) {
    let mut next = lock_run(
        test,
        "job",
        &["--ttl", "60", "--wait", "60"],
        "echo $IDMINT_LOCK_TOKEN; read x",
    )
    .spawn()
    .unwrap();
    let new_token: i64 = first_line(&mut next).parse().unwrap();
    let overlapped = running(command);
    if overlapped {
        signal(command, libc::SIGKILL);
    }
    next.stdin.as_mut().unwrap().write_all(b"done\n").unwrap();
    support::assert_exit(&next.wait_with_output().unwrap(), 0);
    assert!(!overlapped, "two holders ran at once");
    assert!(new_token > old_token);
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
    // the partitioned holder's lease, and finds its command gone.
    next_holder_finds_gone(TEST, command, old_token);

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

/// A wrapper stopped with SIGSTOP, which it cannot see, cannot keep its
/// command running past its lease: its guard ends the command at the
/// lease's local deadline, before the server can give the lock to the
/// next holder (before the guard knew the deadline, the `sleep` ran on
/// beside the next holder's command).
#[test]
fn a_stopped_wrapper_cannot_keep_its_command_past_its_lease() {
    const TEST: &str = "lock_cli_sigstop";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(support::database(TEST));
    let mut holder = lock_run(
        TEST,
        "job",
        &["--ttl", "3"],
        "echo $IDMINT_LOCK_TOKEN $$; exec sleep 600",
    )
    .spawn()
    .unwrap();
    let [old_token, command] = first_numbers(&mut holder);
    let command = command as u32;
    signal(holder.id(), libc::SIGSTOP);

    // The next holder waits for the server to end the stopped holder's
    // lease, and finds its command gone.
    next_holder_finds_gone(TEST, command, old_token);

    // Continued, the wrapper finds its lease lost.
    signal(holder.id(), libc::SIGCONT);
    support::assert_exit(&holder.wait_with_output().unwrap(), 76);
}

#[test]
fn a_holder_paused_past_its_ttl_loses_the_lock_and_is_fenced_off() {
    const TEST: &str = "lock_cli_paused";
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

/// A signal to a `lock run` still waiting for the lock, or to a standby of
/// `lock elect`, ends its wait: it leaves the line, and only then exits
/// 128+N, COMMAND not run. (Killed by the signal, it would leave its place
/// for the next in line to wait out, and a lock handed to it in that moment
/// held until its TTL.)
#[test]
fn a_signal_while_waiting_leaves_the_line_before_the_exit() {
    const TEST: &str = "lock_cli_signal_waiting";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let database = runtime.block_on(support::database(TEST));
    let ttl = Duration::from_secs(30);
    for (name, waiter, shared) in [
        ("job", &["run", "--wait", "60"][..], false),
        (
            "permit",
            &["run", "--permits", "1", "--wait", "60"][..],
            true,
        ),
        ("lead", &["elect"][..], false),
    ] {
        // Held by the test: exclusively, or the one permit.
        let lock = Lock::new(&database, lock_name(name));
        let once = idmint::lock::WaitOptions::new(Duration::ZERO);
        let held = runtime
            .block_on(async {
                if shared {
                    lock.acquire_shared(ttl, 1, &once).await
                } else {
                    lock.acquire(ttl, &once).await
                }
            })
            .unwrap();
        let mut command = support::idmint(TEST);
        command
            .args(["lock", waiter[0], name])
            .args(&waiter[1..])
            .args(["--ttl", "30", "--", "sh", "-c", "echo ran"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        with_default_disposition(&mut command, libc::SIGTERM);
        let mut waiting = command.spawn().unwrap();
        let state = || {
            runtime
                .block_on(lock.status())
                .unwrap()
                .expect("the lock exists")
        };
        support::wait::until(Duration::from_secs(60), "the waiter in line", || {
            state().waiters == 1
        });
        signal(waiting.id(), libc::SIGTERM);
        let exited = exits_within(waiting.id(), GONE_LONG_AGO);
        if !exited {
            waiting.kill().unwrap();
        }
        let output = waiting.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(exited, "{name}: the waiter did not exit: {stderr}");
        assert_eq!(
            output.status.code(),
            Some(128 + libc::SIGTERM),
            "{name}: {stderr}"
        );
        assert!(output.stdout.is_empty(), "{name}: COMMAND ran");
        // Its place is gone as it exits, not three seconds later.
        let after = state();
        assert_eq!(after.waiters, 0, "{name}: its place is left: {after:?}");
        runtime.block_on(held.release()).unwrap();
    }
}
