"""The workload drivers: each a thread that takes values one way and
records every attempt (checker.py says the record's shape).

- CliLoop: `idmint seq` or `idmint next` in a loop, one process a request;
- Stream: one `idmint next --stream`, restarted when it dies;
- HttpClient: plain HTTP (http.client) on /values and /ids of the serve
  instances;
- Mongosh: the stored JavaScript twins (cyclic, autoinc, periodic) in one
  long-lived mongosh;
- LockHolder: `idmint lock run` whose COMMAND (fenced.py) writes to the
  fenced store;
- HttpLockHolder: a lock held over HTTP (`serve`'s acquire, renew and
  release, through any instance), writing to the fenced store while it can
  prove its lease.

A driver's `current` is the process the nemesis kills or stops.
"""

import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time

import fenced
from cluster import reap, signal_group, spawn
from ids import (CYCLIC_KINDS, IDS_RECORDED, POLICY, SPANNING_CYCLIC, SPANNING_LEASE_TTL,
                 SPANNING_SNOWFLAKE, UNORDERED, UnreadableId, base_kind, parse_id,
                 parse_seq_line)

HERE = os.path.dirname(os.path.abspath(__file__))

# Kinds whose values increase in the order the server handed them out, so
# along any one client's sequential requests (docs/counter-kinds.md, "order");
# the others increase only within one process.
SERVER_ORDERED = ("cyclic", "autoinc", "periodic")


class Recorder:
    """Appends JSON lines to one file, from any thread."""

    def __init__(self, path):
        self.file = open(path, "a", encoding="utf-8", buffering=1)
        self.lock = threading.Lock()

    def write(self, record):
        line = json.dumps(record, separators=(",", ":"))
        with self.lock:
            self.file.write(line + "\n")

    def close(self):
        with self.lock:
            self.file.close()


class Driver(threading.Thread):
    """A workload thread; stop() asks it to finish its attempt and end."""

    def __init__(self, name, seed):
        super().__init__(name=name, daemon=True)
        self.stopping = threading.Event()
        self.current = None
        self.rng = random.Random(seed)

    def stop(self):
        self.stopping.set()

    # The nemesis' handles.
    def kill9(self):
        return signal_group(self.current, signal.SIGKILL)

    def pause(self):
        return signal_group(self.current, signal.SIGSTOP)

    def resume(self):
        return signal_group(self.current, signal.SIGCONT)


def _scope(kind, name, process):
    """Where a client's values must increase: along all its requests for a
    kind ordered by the server, within one process for the others, nowhere
    for an unordered one (None)."""
    if kind in UNORDERED:
        return None
    return name if kind in SERVER_ORDERED else f"{name}#{process}"


def _lease(kind):
    """The options that give a taker of the spanning snowflake counter its
    short worker lease (none for any other kind)."""
    return ["--lease-ttl", SPANNING_LEASE_TTL] if kind == SPANNING_SNOWFLAKE else []


def _status(returncode, timed_out):
    if timed_out or returncode < 0:
        return "unknown"  # no answer: killed, or given up on
    return "ok" if returncode == 0 else "fail"


class CliLoop(Driver):
    """`idmint seq|next COUNTER --count N` in a loop."""

    def __init__(self, mode, kind, counter, prefix, idmint, env, out, seed):
        super().__init__(f"cli-{mode}-{kind}", seed)
        self.mode, self.kind, self.counter, self.prefix = mode, kind, counter, prefix
        self.idmint, self.env = idmint, env
        self.recorder = Recorder(os.path.join(out, "logs", f"{self.name}.jsonl"))
        self.invocations = 0

    def run(self):
        while not self.stopping.is_set():
            count = self.rng.randint(1, 20)
            args = [self.idmint, self.mode, self.counter, "--count", str(count),
                    *_lease(self.kind)]
            if self.mode == "next":
                args += ["--policy", POLICY[self.kind]]
            elif self.kind == SPANNING_CYCLIC:
                args.append("--json")  # each value with its timestamp
            self.invocations += 1
            scope = _scope(self.kind, self.name, self.invocations)
            t0 = time.time()
            process = spawn(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env)
            self.current = process
            timed_out = []
            timer = threading.Timer(30, lambda: timed_out.append(signal_group(process,
                                                                              signal.SIGKILL)))
            timer.start()
            raw, ids, err = [], [], None
            for line in process.stdout:
                text = line.decode(errors="replace").strip()
                if not text:
                    continue
                try:
                    raw.append(parse_seq_line(self.kind, text) if self.mode == "seq"
                               else parse_id(self.kind, self.prefix, text))
                    if self.mode == "next":
                        ids.append(text)
                except (UnreadableId, ValueError, KeyError) as error:
                    err = f"unreadable: {error}"
            stderr = process.stderr.read().decode(errors="replace").strip()
            returncode = reap(process)
            timer.cancel()
            status = _status(returncode, bool(timed_out))
            record = {"path": f"cli-{self.mode}", "kind": self.kind, "counter": self.counter,
                      "t0": t0, "t1": time.time(), "status": status, "n": count, "raw": raw,
                      "scope": scope, "rc": returncode}
            if self.kind in IDS_RECORDED and self.mode == "next":
                record["ids"] = ids
            if err or (status != "ok" and stderr):
                record["err"] = err or stderr[-300:]
            if err:
                record["unreadable"] = True
            self.recorder.write(record)
            self.stopping.wait(self.rng.uniform(0.05, 0.3))
        self.recorder.close()


class SeriesLoop(Driver):
    """`idmint series next SERIES --reference REF --json` in a loop: a
    gap-free series numbered in transactions of their own under the faults.
    Each attempt is recorded with its reference and, when answered, the
    number; the checker holds them to the audit's register at the end (none
    missing, none twice, each answered number confirmed with its
    reference)."""

    def __init__(self, index, series, idmint, env, out, seed):
        super().__init__(f"series-next-{index}", seed)
        self.series, self.idmint, self.env = series, idmint, env
        self.recorder = Recorder(os.path.join(out, "series", f"{self.name}.jsonl"))

    def run(self):
        attempt = 0
        while not self.stopping.is_set():
            attempt += 1
            reference = f"{self.name}-{attempt}"
            t0 = time.time()
            process = spawn([self.idmint, "series", "next", self.series, "--reference", reference,
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=self.env)
            self.current = process
            timed_out = []
            # A take waits up to 30 s for a series another transaction holds.
            timer = threading.Timer(45, lambda: timed_out.append(signal_group(process,
                                                                              signal.SIGKILL)))
            timer.start()
            stdout = process.stdout.read().decode(errors="replace")
            stderr = process.stderr.read().decode(errors="replace").strip()
            returncode = reap(process)
            timer.cancel()
            record = {"t0": t0, "t1": time.time(), "reference": reference,
                      "status": _status(returncode, bool(timed_out)), "rc": returncode}
            if record["status"] == "ok":
                try:
                    record["number"] = json.loads(stdout)["number"]
                except (ValueError, KeyError, TypeError):
                    record["status"] = "unknown"
                    record["err"] = f"unreadable answer: {stdout[-200:]}"
            elif stderr:
                record["err"] = stderr[-300:]
            self.recorder.write(record)
            self.stopping.wait(self.rng.uniform(0.05, 0.3))
        self.recorder.close()


class Stream(Driver):
    """One `idmint next COUNTER --stream`, restarted after it dies."""

    def __init__(self, kind, counter, prefix, idmint, env, out, seed, rate=40, follow_db=False,
                 name=None):
        super().__init__(name or (f"stream-swap-{kind}" if follow_db else f"stream-{kind}"), seed)
        self.kind, self.counter, self.prefix = kind, counter, prefix
        self.idmint, self.env, self.rate = idmint, env, rate
        # --policy-from-db: the policy the database names, swapped live.
        self.policy = ["--policy-from-db"] if follow_db else ["--policy", POLICY[kind]]
        self.path = "stream-swap" if follow_db else "stream"
        self.recorder = Recorder(os.path.join(out, "logs", f"{self.name}.jsonl"))
        self.incarnations = 0
        self.shutdown_s = None

    def run(self):
        while not self.stopping.is_set():
            self.incarnations += 1
            scope = _scope(self.kind, self.name, self.incarnations)
            process = spawn([self.idmint, "next", self.counter, "--stream", "--rate",
                             str(self.rate), *self.policy, *_lease(self.kind)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env)
            self.current = process
            stopper = threading.Thread(target=self._interrupt_on_stop, args=(process,),
                                       daemon=True)
            stopper.start()
            t0 = time.time()
            for line in process.stdout:
                text = line.decode(errors="replace").strip()
                if not text:
                    continue
                now = time.time()
                record = {"path": self.path, "kind": self.kind, "counter": self.counter,
                          "t0": t0, "t1": now, "status": "ok", "n": 1, "scope": scope}
                if self.path == "stream-swap":
                    record["id"] = text  # which policy wrote it shows
                if self.kind in IDS_RECORDED:
                    record["ids"] = [text]
                try:
                    record["raw"] = [parse_id(self.kind, self.prefix, text)]
                except UnreadableId as error:
                    record.update(raw=[], status="fail", err=str(error), unreadable=True)
                self.recorder.write(record)
                t0 = now
            stderr = process.stderr.read().decode(errors="replace").strip()
            returncode = reap(process)
            if returncode != 0 or not self.stopping.is_set():
                # What it had taken and not printed: with --rate it takes one
                # value at a time, so at most the one in flight.
                self.recorder.write({"path": self.path, "kind": self.kind, "counter": self.counter,
                                     "t0": t0, "t1": time.time(),
                                     "status": _status(returncode, False), "n": 1, "raw": [],
                                     "scope": scope, "rc": returncode, "err": stderr[-300:]})
                self.stopping.wait(0.5)
        self.recorder.close()

    def _interrupt_on_stop(self, process):
        while process.poll() is None:
            if self.stopping.wait(0.2):
                began = time.monotonic()
                signal_group(process, signal.SIGCONT)
                process.send_signal(signal.SIGINT)
                try:
                    process.wait(timeout=15)
                    self.shutdown_s = round(time.monotonic() - began, 3)
                except subprocess.TimeoutExpired:
                    signal_group(process, signal.SIGKILL)
                return


def _http_raw(kind, prefix, route, body):
    """The raw keys of an answer, and the IDs as written (None: values)."""
    data = json.loads(body)
    if route == "ids":
        return [parse_id(kind, prefix, text) for text in data["ids"]], list(data["ids"])
    return _http_values(kind, data), None


def _http_values(kind, data):
    values = data["values"]
    if kind in CYCLIC_KINDS:
        return [[ts, value] for ts, value in zip(data["timestamps_micros"], values)]
    if base_kind(kind) == "periodic":
        return [[period, value] for period, value in zip(data["periods"], values)]
    return list(values)


class HttpClient(Driver):
    """Sequential plain-HTTP requests to a random serve instance."""

    def __init__(self, index, counters, serves, out, seed):
        super().__init__(f"http-{index}", seed)
        self.counters, self.serves = counters, serves
        self.recorder = Recorder(os.path.join(out, "logs", f"{self.name}.jsonl"))

    def run(self):
        while not self.stopping.is_set():
            kind = self.rng.choice(list(self.counters))
            counter, prefix = self.counters[kind]
            route = self.rng.choice(["values", "ids"])
            serve = self.rng.choice(self.serves)
            count = self.rng.randint(1, 10)
            generation = serve.generation
            t0 = time.time()
            status, raw, ids, err = "unknown", [], None, None
            try:
                connection = http.client.HTTPConnection("127.0.0.1", serve.port, timeout=8)
                connection.request("GET", f"/v1/counters/{counter}/{route}?count={count}")
                response = connection.getresponse()
                body = response.read()
                connection.close()
                if response.status == 200:
                    (raw, ids), status = _http_raw(kind, prefix, route, body), "ok"
                else:
                    status, err = "fail", f"{response.status} {body[:200].decode(errors='replace')}"
            except ConnectionRefusedError as error:
                status, err = "fail", f"refused: {error}"
            except (OSError, http.client.HTTPException) as error:
                status, err = "unknown", f"{type(error).__name__}: {error}"
            except (UnreadableId, KeyError, ValueError) as error:
                status, err = "fail", f"unreadable: {error}"
            if kind in UNORDERED:
                scope = None
            elif kind in SERVER_ORDERED:
                scope = self.name
            elif serve.generation == generation:
                scope = f"{self.name}/{serve.name}#{generation}"
            else:
                scope = None
            record = {"path": f"http-{route}", "kind": kind, "counter": counter, "t0": t0,
                      "t1": time.time(), "status": status, "n": count, "raw": raw,
                      "scope": scope, "serve": serve.name}
            if kind in IDS_RECORDED and ids is not None:
                record["ids"] = ids
            if err:
                record["err"] = err
                if err.startswith("unreadable"):
                    record["unreadable"] = True
            self.recorder.write(record)
            self.stopping.wait(self.rng.uniform(0.0, 0.05))
        self.recorder.close()


MONGOSH_SCRIPT = """
load(%(loader)s);
const kinds = %(kinds)s;
let i = 0;
while (true) {
  const [k, c] = kinds[i++ %% kinds.length];
  const n = k === "periodic" ? 1 + Math.floor(Math.random() * 5) : 1;
  print(JSON.stringify({b: k, n: n}));
  const t0 = Date.now() / 1000;
  try {
    let r;
    if (k === "cyclic") { const s = getNextUniqueStamp(c); r = [[Number(s.ts), Number(s.val)]]; }
    else if (k === "autoinc") { r = [Number(getNextSequence(c))]; }
    else { const p = getNextPeriodic(c, n); r = p.values.map(v => [p.period, Number(v)]); }
    print(JSON.stringify({k: k, n: n, t0: t0, t1: Date.now() / 1000, r: r}));
  } catch (e) {
    print(JSON.stringify({k: k, n: n, t0: t0, t1: Date.now() / 1000, e: String(e && e.message || e)}));
  }
  sleep(40);
}
"""


# How long a twin's call in mongosh may go unanswered before mongosh is
# killed and started again (its call recorded unknown and "stalled").
STALL_S = 60


class Mongosh(Driver):
    """The stored JavaScript twins, called in turn from one mongosh."""

    def __init__(self, mongosh, uri, counters, loader, out, seed):
        super().__init__("mongosh", seed)
        self.mongosh, self.uri, self.counters, self.loader = mongosh, uri, counters, loader
        self.recorder = Recorder(os.path.join(out, "logs", f"{self.name}.jsonl"))

    def run(self):
        kinds = [[kind, self.counters[kind][0]] for kind in ("cyclic", "autoinc", "periodic")]
        script = MONGOSH_SCRIPT % {"loader": json.dumps(self.loader), "kinds": json.dumps(kinds)}
        while not self.stopping.is_set():
            process = spawn([self.mongosh, "--quiet", "--norc", self.uri, "--eval", script],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            self.current = process
            watcher = threading.Thread(target=self._kill_on_stop, args=(process,), daemon=True)
            watcher.start()
            begun = None
            stall = None
            for line in process.stdout:
                try:
                    item = json.loads(line)
                except ValueError:
                    continue
                if stall is not None:
                    stall.cancel()
                if "b" in item:
                    begun = (item["b"], item["n"], time.time())
                    # mongosh itself can hang for good on a call whose server
                    # was killed (a plain findOne does too): give up on it.
                    stall = threading.Timer(STALL_S, self._stalled, args=(process,))
                    stall.start()
                    continue
                kind = item["k"]
                record = {"path": "mongosh", "kind": kind, "counter": self.counters[kind][0],
                          "t0": item["t0"], "t1": time.time(), "n": item["n"],
                          "scope": self.name}
                if "r" in item:
                    record.update(status="ok", raw=item["r"])
                else:
                    record.update(status="fail", raw=[], err=item["e"][-300:])
                self.recorder.write(record)
                begun = None
            if stall is not None:
                stall.cancel()
            reap(process)
            if begun is not None:
                kind, count, t0 = begun
                record = {"path": "mongosh", "kind": kind, "counter": self.counters[kind][0],
                          "t0": t0, "t1": time.time(), "status": "unknown", "n": count,
                          "raw": [], "scope": self.name}
                if time.time() - t0 >= STALL_S:
                    record["err"] = f"stalled: no answer in {STALL_S} s, mongosh killed"
                    record["stalled"] = True
                self.recorder.write(record)
            self.stopping.wait(0.5)
        self.recorder.close()

    def _stalled(self, process):
        signal_group(process, signal.SIGCONT)
        signal_group(process, signal.SIGKILL)

    def _kill_on_stop(self, process):
        while process.poll() is None:
            if self.stopping.wait(0.2):
                # Let the call in flight finish: its answer is printed at once.
                time.sleep(0.3)
                signal_group(process, signal.SIGCONT)
                signal_group(process, signal.SIGKILL)
                return


class LockHolder(Driver):
    """`idmint lock run LOCK` (or `lock elect LOCK`; `shape`: the command and
    its flags, e.g. ["run", "--permits", "2"]) in a loop; its COMMAND writes
    to the fenced store (fenced.py). Exit codes: 0 held and done, 75 not had
    within --wait, 76 lease lost while COMMAND ran."""

    def __init__(self, lock, index, shape, idmint, env, out, runs, seed):
        super().__init__(f"lock-{lock}-{index}", seed)
        self.lock, self.idmint, self.env = lock, idmint, env
        self.shape = shape
        self.locks_dir = os.path.join(out, "locks")
        self.runs = runs

    def stop(self):
        # The run under way ends now, as an operator's SIGTERM ends it (a
        # run waiting in line gives up; a holding one passes it on to
        # COMMAND and releases), not after up to its --wait and its hold.
        super().stop()
        _signal_pid(self.current, signal.SIGTERM)

    def kill9(self):
        # The holder alone, as a crash of `lock run`: its guard kills COMMAND.
        return _signal_pid(self.current, signal.SIGKILL)

    def tstp(self):
        return _signal_pid(self.current, signal.SIGTSTP)

    def resume(self):
        return _signal_pid(self.current, signal.SIGCONT)

    def freeze(self):
        """SIGSTOP to `lock run` and every process under it, as a machine
        frozen whole; the pids stopped."""
        if self.current is None or self.current.poll() is not None:
            return []
        pids = _descendants(self.current.pid)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass
        return pids

    @staticmethod
    def thaw(pids):
        for pid in pids:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass

    def run(self):
        while not self.stopping.is_set():
            t0 = time.time()
            command, flags = self.shape[0], self.shape[1:]
            # A candidate waits for the lead as long as it takes.
            wait = ["--wait", "8"] if command == "run" else []
            process = spawn([self.idmint, "lock", command, self.lock, *flags, "--ttl", "5", *wait,
                             "--", sys.executable, os.path.join(HERE, "fenced.py"),
                             self.locks_dir, self.lock],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=self.env)
            self.current = process
            stderr = process.stderr.read().decode(errors="replace").strip()
            returncode = reap(process)
            self.runs.write({"holder": self.name, "lock": self.lock, "t0": t0, "t1": time.time(),
                             "rc": returncode, "err": stderr[-300:]})
            self.stopping.wait(self.rng.uniform(0.0, 0.3))


class HttpLockHolder(Driver):
    """A lock held over HTTP, as an app with no idmint library holds one:
    acquire through a random serve instance, renew through a random one
    (the service keeps nothing of a lease), release; meanwhile it writes to
    the fenced store (fenced.py's) as a COMMAND does, but only while it can
    prove its lease: until the `lease_ms` of the last acquire or renewal
    that answered, counted from when that request was *sent*. A renewal that
    does not answer in time (an instance stopped, cut off from the database)
    ends the hold, with no write after. Records each hold in lockruns.jsonl
    as LockHolder does: rc 0 held and done, 75 not had within the wait, 76
    the lease lost or no longer proved."""

    TTL_MS = 3000

    def __init__(self, index, lock, serves, out, runs, seed):
        super().__init__(f"http-lock-{index}", seed)
        self.lock, self.serves, self.runs = lock, serves, runs
        self.locks_dir = os.path.join(out, "locks")

    def _post(self, route, body, timeout):
        """(status, answer) of POST /v1/locks/LOCK/ROUTE to a random
        instance; (None, why) when none came within `timeout` seconds."""
        serve = self.rng.choice(self.serves)
        try:
            connection = http.client.HTTPConnection("127.0.0.1", serve.port,
                                                    timeout=max(0.05, timeout))
            connection.request("POST", f"/v1/locks/{self.lock}/{route}", json.dumps(body),
                               {"Content-Type": "application/json"})
            response = connection.getresponse()
            text = response.read().decode(errors="replace")
            connection.close()
            return response.status, text
        except (OSError, http.client.HTTPException) as error:
            return None, f"{serve.name}: {type(error).__name__}: {error}"

    def _hold(self):
        """One hold: (rc, why)."""
        sent = time.monotonic()
        status, text = self._post("acquire", {"ttl_ms": self.TTL_MS, "wait_ms": 2000}, 6.0)
        if status != 200:
            return 75, f"acquire: {status} {text[:200]}"
        lease = json.loads(text)
        deadline = sent + lease["lease_ms"] / 1000
        renew_at = sent + self.TTL_MS / 3000
        token = lease["token"]

        def write(event):
            # Only while the lease is proved: checked right before each write.
            if time.monotonic() >= deadline:
                return None
            return fenced.store(self.locks_dir, self.lock, token, event)

        if not write("start"):
            return 76, "not proved at its start, or fenced off"
        # Mostly short holds; one in five outlasts the TTL, so that only
        # renewals keep it.
        hold = (self.rng.uniform(3.5, 5.0) if self.rng.random() < 0.2
                else self.rng.uniform(0.3, 1.2))
        end = time.monotonic() + hold
        while time.monotonic() < end:
            now = time.monotonic()
            if now >= renew_at:
                status, text = self._post("renew", {"lease": lease["lease"]}, deadline - now)
                if status == 200:
                    deadline = now + json.loads(text)["lease_ms"] / 1000
                    renew_at = now + self.TTL_MS / 3000
                elif status == 409:
                    return 76, f"renew: {text[:200]}"
                else:
                    renew_at = time.monotonic() + 0.2
            if not write("beat"):
                return 76, "lease no longer proved (no renewal answered in time)"
            time.sleep(0.05)
        if not write("end"):
            return 76, "lease no longer proved at its end"
        status, text = self._post("release", {"lease": lease["lease"]}, 3.0)
        return (0, "") if status == 200 else (0, f"release: {status} {text[:200]}")

    def run(self):
        while not self.stopping.is_set():
            t0 = time.time()
            rc, why = self._hold()
            self.runs.write({"holder": self.name, "lock": self.lock, "t0": t0, "t1": time.time(),
                             "rc": rc, "err": why})
            self.stopping.wait(self.rng.uniform(0.0, 0.3))


def _descendants(root):
    """root and every process under it, from /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as file:
                stat = file.read()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def _signal_pid(process, sig):
    if process is None or process.poll() is not None:
        return False
    try:
        os.kill(process.pid, sig)
        return True
    except ProcessLookupError:
        return False


def slow_clients(serve, counter, seconds, count=12):
    """Connections to serve that dribble a header or pipeline requests and
    never read their answers, held for `seconds`."""
    sockets = []
    request = (f"GET /v1/counters/{counter}/values?count=1 HTTP/1.1\r\nHost: soak\r\n\r\n"
               .encode())
    for i in range(count):
        try:
            sock = socket.create_connection(("127.0.0.1", serve.port), timeout=2)
            sock.setblocking(False)
            if i % 2 == 0:
                try:
                    sock.send(request * 200)  # pipelined, never read
                except (BlockingIOError, OSError):
                    pass
            sockets.append(sock)
        except OSError:
            pass
    end = time.monotonic() + seconds
    byte = 0
    header = b"GET /healthz HTTP/1.1\r\nHost: soak\r\n"
    while time.monotonic() < end:
        for i, sock in enumerate(sockets):
            if i % 2 == 1:
                try:
                    sock.send(header[byte % len(header):byte % len(header) + 1])  # dribbled
                except (BlockingIOError, OSError):
                    pass
        byte += 1
        time.sleep(0.5)
    for sock in sockets:
        sock.close()
    return len(sockets)


# How long a change's command (`counter stripes --set`, a policy swap) may
# run before the harness kills it: past the command's own patience (it goes
# on finishing its change for 30 s, and a try on a loaded machine takes 20 s
# and more), so that the harness does not leave a change half way itself.
CHANGE_TIMEOUT_S = 120


class Changes(Driver):
    """Every `period` seconds, the next of `commands` (idmint arguments), in
    turn, moving on only once one succeeds; each attempt recorded beside the
    faults as `event` on `target`, with its exit status `rc` (null: no answer
    in CHANGE_TIMEOUT_S). Six of them run: the live policy swap (activate the stored
    check-digit policy, roll it back) under the clients that follow the
    database, and the changes of the striped and the four spanning counters'
    lanes under their takers (a spanning one's fails, named, while a
    deployment it spans does not answer, and is made again later)."""

    def __init__(self, name, event, target, commands, idmint, env, faults, period):
        super().__init__(name, 0)
        self.event, self.target, self.commands = event, target, commands
        self.idmint, self.env, self.faults, self.period = idmint, env, faults, period

    def run(self):
        turn = 0
        while not self.stopping.wait(self.period):
            command = self.commands[turn % len(self.commands)]
            start = time.time()
            returncode = None
            try:
                result = subprocess.run([self.idmint, *command], env=self.env,
                                        capture_output=True, text=True, timeout=CHANGE_TIMEOUT_S)
                returncode = result.returncode
                if returncode == 0:
                    turn += 1
                detail = (result.stdout or result.stderr).strip()[:200]
            except subprocess.TimeoutExpired:
                detail = f"idmint {' '.join(command)}: no answer in {CHANGE_TIMEOUT_S} s"
            self.faults.write({"fault": self.event, "target": self.target, "start": start,
                               "end": time.time(), "detail": detail, "rc": returncode})


class ClientProcess(Driver):
    """A client library's soak program (SoakClient.java, soak_client.py): its
    ValueClient (a segment counter) and IdClient (a cyclic counter), each in
    threads of its own, over every serve instance; restarted when it dies.
    A call's time is from its start to its return (a wait for the client's
    next batch included). Batches prefetched and not handed out are gaps,
    which these two kinds allow. `program` is the command before the
    program's own arguments; its records' paths are NAME-value and NAME-id."""

    def __init__(self, name, program, counters, serves, out, seed, threads=3):
        super().__init__(name, seed)
        self.program, self.counters, self.serves, self.threads = program, counters, serves, threads
        self.recorder = Recorder(os.path.join(out, "logs", f"{self.name}.jsonl"))

    def run(self):
        segment, _ = self.counters["segment"]
        cyclic, prefix = self.counters["cyclic"]
        value_path, id_path = f"{self.name}-value", f"{self.name}-id"
        while not self.stopping.is_set():
            process = spawn([*self.program, segment, cyclic, prefix,
                             str(self.threads)] + [s.url() + "/" for s in self.serves],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
            self.current = process
            closer = threading.Thread(target=self._close_on_stop, args=(process,), daemon=True)
            closer.start()
            for line in process.stdout:
                parts = line.decode(errors="replace").strip().split(" ", 4)
                if len(parts) < 4:
                    continue
                began, ended = float(parts[1]), float(parts[2])
                if parts[0] == "V":
                    record = {"path": value_path, "kind": "segment", "counter": segment,
                              "status": "ok", "raw": [int(parts[3])]}
                elif parts[0] == "I":
                    record = {"path": id_path, "kind": "cyclic", "counter": cyclic,
                              "status": "ok"}
                    try:
                        record["raw"] = [parse_id("cyclic", prefix, parts[3])]
                    except UnreadableId as error:
                        record.update(raw=[], status="fail", err=str(error), unreadable=True)
                else:
                    is_value = parts[3] == "V"
                    record = {"path": value_path if is_value else id_path,
                              "kind": "segment" if is_value else "cyclic",
                              "counter": segment if is_value else cyclic, "status": "fail",
                              "raw": [], "err": parts[4][-300:] if len(parts) > 4 else ""}
                record.update(t0=began, t1=ended, n=1, scope=None)
                self.recorder.write(record)
            returncode = reap(process)
            if not self.stopping.is_set():
                for path, kind in ((value_path, "segment"), (id_path, "cyclic")):
                    self.recorder.write({"path": path, "kind": kind,
                                         "counter": self.counters[kind][0], "t0": time.time(),
                                         "t1": time.time(), "status": "unknown", "n": None,
                                         "raw": [], "scope": None, "rc": returncode})
                self.stopping.wait(0.5)
        self.recorder.close()

    def _close_on_stop(self, process):
        while process.poll() is None:
            if self.stopping.wait(0.2):
                signal_group(process, signal.SIGCONT)
                try:
                    process.stdin.close()
                    process.wait(timeout=10)
                except (OSError, subprocess.TimeoutExpired):
                    signal_group(process, signal.SIGKILL)
                return


class JavaClient(ClientProcess):
    """SoakClient.java, the Java client's soak program."""

    def __init__(self, classes, counters, serves, out, seed):
        super().__init__("java", ["java", "-cp", classes, "SoakClient"], counters, serves, out,
                         seed)


class PythonClient(ClientProcess):
    """soak_client.py, the Python client's soak program (clients/python from
    the source tree, not installed)."""

    def __init__(self, counters, serves, out, seed):
        program = [sys.executable, os.path.join(os.path.dirname(__file__), "soak_client.py")]
        super().__init__("python", program, counters, serves, out, seed)


class NodeClient(ClientProcess):
    """soak_client.mjs, the Node.js client's soak program (clients/node from
    the source tree)."""

    def __init__(self, counters, serves, out, seed):
        program = ["node", os.path.join(os.path.dirname(__file__), "soak_client.mjs")]
        super().__init__("node", program, counters, serves, out, seed)
