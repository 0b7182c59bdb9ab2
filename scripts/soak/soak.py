"""The soak: every kind, every client path and every fault at once, checked.

    soak.py --bin IDMINT --server-bin SECANTUSD --mongosh MONGOSH
            [--minutes M] [--seed S] [--out DIR]
    soak.py --check DIR     the checker again, on a kept run
    soak.py --self-test     the checker's own tests (planted violations)

scripts/soak.sh installs the tools and builds idmint, then runs this.
Exit: 0 valid, 1 invalid (a duplicate, loss, order violation, lock overlap
or fencing violation), 2 the harness itself failed or its input was refused,
130 interrupted.
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import unittest
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ left in the source tree

import checker  # noqa: E402
import report  # noqa: E402
from cluster import (DbServer, Proxy, Serve, harness_error, harness_errors,  # noqa: E402
                     kill_all, open_fds, set_pgid_file, spawn)
from ids import (BASE_KIND, CREATE, KINDS, MAXVAL, SPANNING, SPANNING_CYCLIC,  # noqa: E402
                 SPANNING_KINDS, SPANNING_LEASE_TTL, SPANNING_PERIODIC, SPANNING_SNOWFLAKE)
from nemesis import Nemesis, Supervisor  # noqa: E402
from schedule import FAULTS, make_schedule  # noqa: E402
from workload import (CHANGE_TIMEOUT_S, CliLoop, HttpClient, JavaClient, PythonClient,  # noqa: E402
                      NodeClient, LockHolder, HttpLockHolder, Mongosh, Changes, Recorder,
                      SeriesLoop, Stream)

REPO = os.path.dirname(os.path.dirname(HERE))
SERIES = "soak-invoices"
PREFIX = {"cyclic": "CY-", "autoinc": "AI-", "segment": "SG-", "snowflake": "SF-",
          "periodic": "PD-", "striped": "ST-", SPANNING: "SP-", SPANNING_CYCLIC: "SC-",
          SPANNING_SNOWFLAKE: "SN-", SPANNING_PERIODIC: "SY-"}
# The spanning counter's lanes: deployment eu is the first database server
# (reached directly), us the second (reached through its partition proxy).
DEPLOYMENTS = ("eu", "us")
# Its changes of stripes, in turn: each needs both deployments to answer.
SPANNING_STRIPES = ("eu:1,us:3", "eu:2,us:2")
# The spanning cyclic counter's, the same layouts, every 22 s (out of step
# with the autoinc one's): a cyclic counter has at most maxval + 1 lanes.
SPANNING_CYCLIC_STRIPES = SPANNING_STRIPES
assert all(sum(int(part.split(":")[1]) for part in layout.split(","))
           <= MAXVAL[SPANNING_CYCLIC] + 1 for layout in SPANNING_CYCLIC_STRIPES)
# Each spanning counter's layouts, in turn: the snowflake and periodic ones
# between the same two (4 lanes; a snowflake counter has at most one lane per
# worker id, 1024 of them).
SPANNING_LAYOUTS = {SPANNING: SPANNING_STRIPES, SPANNING_CYCLIC: SPANNING_CYCLIC_STRIPES,
                    SPANNING_SNOWFLAKE: SPANNING_STRIPES, SPANNING_PERIODIC: SPANNING_STRIPES}
# How often each spanning counter's stripes change (s), each out of step
# with the others'.
RESTRIPE_PERIOD = {SPANNING: 25.0, SPANNING_CYCLIC: 22.0, SPANNING_SNOWFLAKE: 23.0,
                   SPANNING_PERIODIC: 21.0}
# The lock workloads, by lock: each holder's `idmint lock` arguments before
# its --ttl (a plain lock, a semaphore of 2 permits among 3 holders, a
# read-write lock with 2 readers and a writer, an election of 2).
LOCKS = {
    "soak-lock-a": [["run"]] * 2,
    "soak-lock-b": [["run"]] * 2,
    "soak-sem": [["run", "--permits", "2"]] * 3,
    "soak-rw": [["run", "--shared"], ["run", "--shared"], ["run"]],
    "soak-elect": [["elect", "--id", "elect-0"], ["elect", "--id", "elect-1"]],
}
# File descriptors the harness may hold: a few hundred in a healthy run of any
# length (logs, pipes of the processes running, sockets); more is a leak, which
# would end in spawns and restarts failing.
FD_BOUND = 1000
# The lock two apps hold over HTTP (HttpLockHolder).
HTTP_LOCK = "soak-http"
# The canary (--canary MODE): an autoinc counter in a database of its own,
# taken by processes of the deliberately broken build with the break on,
# beside the run and under its faults; its records are checked apart, in
# OUT/canary. A run whose canary shows no value twice could not have caught
# that bug: the harness failed.
CANARY_DB = "soak-canary"
CANARY_COUNTER = ("soak-canary", "CA-")
# The canary's two streams' rate each (values a second): takes that overlap
# often enough to repeat values within seconds, and little load beside the
# run's (two processes; CLI loops, a process a call, cost the loaded first
# server and the machine more).
CANARY_RATE = 10


class Cluster:
    """What the nemesis reaches: the processes by name."""

    def __init__(self):
        self.db = None  # the first database server: every counter's, deployment eu
        self.dbs = {}  # both, by name: "db" and "db-us"
        self.proxies = {}
        self.serves = {}
        self.takers = {}
        self.holders = {}
        self.slow_counter = "soak-segment"


def log(message):
    print(f"soak: {message}", flush=True)


def idmint_ok(idmint, env, *args):
    result = subprocess.run([idmint, *args], env=env, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"idmint {' '.join(args)} exited {result.returncode}: {result.stderr}")
    return result.stdout


# How long after the nemesis stops (and the changes of stripes stop being
# asked for) every striped counter's map must be live again, with no change
# under way: a change a deployment's death stopped half way is finished by
# the takers still running or by `counter show`, with no person acting, once
# it made no progress for its patience (5 s, or four times its slowest
# write: 10-20 s on a loaded machine) and then in the time a change takes
# there (up to 20-30 s).
SETTLE_S = 60.0


def settle_changes(idmint, counters, changers, out):
    """Stops the drivers that ask for changes of stripes (their last command
    answered), then reads each striped counter's map (`counter show --json`
    across the deployments) until it is live with no change under way. Per
    counter: the seconds that took, or null with what the map said last if
    it never did within SETTLE_S."""
    for changer in changers:
        changer.stop()
    for changer in changers:
        changer.join(timeout=CHANGE_TIMEOUT_S + 10)
    settled, last = {}, {}
    began = time.time()
    # Every map read, for the one that does not settle: who claimed what, when.
    trail = Recorder(os.path.join(out, "settle.jsonl"))
    while len(settled) < len(counters):
        for name, env in counters:
            if name in settled:
                continue
            result = subprocess.run([idmint, "counter", "show", name, "--json"], env=env,
                                    capture_output=True, text=True, timeout=60)
            last[name] = (result.stdout or result.stderr).strip()
            striped = None
            if result.returncode == 0:
                striped = json.loads(result.stdout).get("striped") or {}
                if striped.get("live") and "change" not in striped:
                    settled[name] = {"settled_after_s": round(time.time() - began, 1)}
            trail.write({"t": time.time(), "counter": name, "rc": result.returncode,
                         "striped": striped, "err": result.stderr.strip()[-300:]})
        if time.time() - began >= SETTLE_S:
            break
        time.sleep(0.5)
    trail.close()
    for name, _ in counters:
        settled.setdefault(name, {"settled_after_s": None, "last": last.get(name, "")[-300:]})
    return settled


def names(args):
    """The targets' names, fixed before anything starts (the schedule is
    made from them)."""
    takers = [f"cli-seq-{k}" for k in KINDS if k != "cyclic"] + [f"cli-next-{k}" for k in KINDS]
    takers += [f"stream-{k}" for k in KINDS] + ["mongosh"]
    if args.java:
        takers.append("java")
    takers.append("python")
    if args.node:
        takers.append("node")
    for kind in SPANNING_KINDS:
        takers += [f"cli-seq-{kind}", f"cli-next-{kind}", f"stream-{kind}"]
    serves = [f"serve-{i}" for i in range(4)]
    holders = [f"lock-{lock}-{i}" for lock, shapes in LOCKS.items() for i in range(len(shapes))]
    return takers, serves, holders


def require_broken_build(args, option):
    """Refuses a binary without the breaks of a deliberately broken build
    (src/broken.rs in the idmint crate, the soak-broken feature)."""
    version = subprocess.run([args.bin, "--version"], capture_output=True, text=True).stdout
    if "soak-broken" not in version:
        # Bad input, refused before anything starts: exit 2 as argparse's
        # own refusals, never 1, which says a run was invalid.
        print(f"soak: {option} needs a build with the soak-broken feature; "
              f"{args.bin} is not one ({version.strip()!r})", file=sys.stderr)
        sys.exit(2)


def use_broken_build(args):
    """Picks the break of a deliberately broken build for every process of
    the run."""
    require_broken_build(args, "--broken")
    os.environ["IDMINT_SOAK_BROKEN"] = args.broken
    log(f"a deliberately broken idmint ({args.broken}): {args.bin}")


def canary_drivers(args, env, out):
    """The canary's takers (--canary): two streams of the broken build with
    its break on, their records in OUT/canary/logs. Seeded apart, so that
    every other driver's seeds and the schedule stay as they were; not
    targets of the nemesis."""
    directory = os.path.join(out, "canary")
    os.makedirs(os.path.join(directory, "logs"), exist_ok=True)
    rng = random.Random(args.seed + 4)
    return [Stream("autoinc", *CANARY_COUNTER, args.bin, env, directory, rng.random(),
                   rate=CANARY_RATE, name=f"canary-stream-{i}")
            for i in range(2)]


def check_canary(out, meta, faults):
    """The canary's verdict (None: the run had no canary), written to
    OUT/canary/result.json."""
    if not meta.get("canary"):
        return None
    directory = os.path.join(out, "canary")
    result = checker.check(checker.load_attempts(os.path.join(directory, "logs")), [], faults,
                           meta["start"], meta["end"])
    result["canary"] = meta["canary"]
    with open(os.path.join(directory, "result.json"), "w", encoding="utf-8") as file:
        json.dump(result, file, indent=1)
    return result


def check_digit_policy():
    """The check-digit policy component the tests build, if it is there."""
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target"))
    path = os.path.join(target, "policy-fixtures", "wasm32-wasip2", "release",
                        "idmint_policy_check_digit.wasm")
    return path if os.path.exists(path) else None


def wait_for_all(futures):
    """Waits for every one of the setup's steps started side by side; the
    first that failed, raised (after the others ended: nothing of the setup
    is left running when the harness stops)."""
    errors = [future.exception() for future in futures]
    for error in errors:
        if error is not None:
            raise error


def build_java(out):
    """Compiles the Java client and SoakClient.java; the classes' directory."""
    classes = os.path.join(out, "java-classes")
    sources = [os.path.join(root, name)
               for root, _, files in os.walk(os.path.join(REPO, "clients", "java", "src"))
               for name in files if name.endswith(".java")]
    subprocess.run(["javac", "--release", "17", "-d", classes, *sources,
                    os.path.join(HERE, "SoakClient.java")], check=True)
    return classes


def evaluate(out):
    result = checker.check_dir(out)
    runs_path = os.path.join(out, "lockruns.jsonl")
    runs = Counter()
    if os.path.exists(runs_path):
        for record in checker.read_jsonl(runs_path):
            runs[str(record["rc"])] += 1
    result["lock_runs"] = dict(runs)
    return result


def faults_not_injected(out):
    """Faults the nemesis failed to inject, or a database server the
    supervisor failed to restart: the harness' failures, from faults.jsonl."""
    path = os.path.join(out, "faults.jsonl")
    if not os.path.exists(path):
        return []
    return [f"{f['start']:.3f} {f['fault']} on {f['target']}: {f['detail']}"
            for f in checker.read_jsonl(path)
            if f["detail"].startswith("error:") or "restart failed" in f["detail"]]


def finish(out, meta):
    result = evaluate(out)
    result["seed"] = meta.get("seed")
    result["minutes"] = meta.get("minutes")
    result["harness_errors"] = meta.get("harness_errors", []) + faults_not_injected(out)
    result["harness_fds_max"] = meta.get("harness_fds_max")
    attempts, _, faults, _ = checker.load(out)
    canary = check_canary(out, meta, faults)
    if canary is not None and not canary["duplicated"]:
        result["harness_errors"].append(
            f"the canary's deliberately broken takes (IDMINT_SOAK_BROKEN={meta['canary']}) "
            f"gave no value twice in {canary['totals']['acknowledged_values']} values: this run "
            f"could not have caught that bug")
    with open(os.path.join(out, "result.json"), "w", encoding="utf-8") as file:
        json.dump(result, file, indent=1)
    with open(os.path.join(out, "timeline.svg"), "w", encoding="utf-8") as file:
        file.write(report.svg(attempts, faults, meta["start"], meta["end"],
                              f"idmint soak, seed {meta.get('seed')}, {meta.get('minutes')} min"))
    print(report.table(result))
    print(f"soak: result {os.path.join(out, 'result.json')}, timeline "
          f"{os.path.join(out, 'timeline.svg')}")
    if canary is not None:
        first = canary["first_violation"]
        print(f"soak: canary ({meta['canary']}, a deliberately broken build's autoinc takes): "
              f"{canary['totals']['acknowledged_values']} values, {canary['duplicated']} of them "
              f"twice"
              + (f", the first at +{first['example']['t'] - meta['start']:.1f} s"
                 if first and first["violation"] == "duplicate" and first["example"].get("t")
                 else "")
              + f" ({'caught, as it must be' if canary['duplicated'] else 'NOT caught'}; "
              f"{os.path.join(out, 'canary', 'result.json')})")
    if not result["valid"]:
        first = result["first_violation"]
        at = first["example"].get("t")
        when = f" at +{at - meta['start']:.1f} s" if at else ""
        print(f"soak: INVALID: first {first['violation']}{when}: {json.dumps(first['example'])}")
        print("soak: faults around it: " + ("; ".join(first["faults_around"]) or "none"))
        return 1
    if result["harness_errors"]:
        print(f"soak: HARNESS FAILED ({len(result['harness_errors'])} errors): the run proves "
              f"nothing; first: {result['harness_errors'][0]}")
        return 2
    return 0


def audit_series(idmint, env, out):
    """The gap-free series' register at the end (`series audit --csv`, in
    series/register.csv) and the audit's exit code and findings; asked again
    while the database is still coming back (exit 3)."""
    deadline = time.time() + 60
    while True:
        result = subprocess.run([idmint, "series", "audit", SERIES, "--csv"], env=env,
                                capture_output=True, text=True, timeout=60, check=False)
        if result.returncode != 3 or time.time() > deadline:
            break
        time.sleep(1)
    with open(os.path.join(out, "series", "register.csv"), "w", encoding="utf-8") as file:
        file.write(result.stdout)
    log(f"series audit: exit {result.returncode}")
    return {"rc": result.returncode, "stderr": result.stderr[-2000:]}


def across(deployments, first):
    """The spanning counter's deployments as NAME=URI, `first` the preferred."""
    order = [first] + [name for name in DEPLOYMENTS if name != first]
    return [f"{name}={deployments[name]}" for name in order]


def start_second_server(args, out, cluster, proxy_seed):
    """The database server of deployment us, and the proxy that partitions it."""
    db_us = DbServer(args.server_bin, out, name="db-us")
    db_us.start()
    cluster.dbs[db_us.name] = db_us
    cluster.proxies["proxy-us"] = Proxy("proxy-us", db_us.port, proxy_seed, out)
    log(f"second database server (deployment us) on {db_us.uri()} (data {db_us.data}), "
        f"through proxy-us {cluster.proxies['proxy-us'].uri()}")
    return db_us


def spanning_drivers(args, kind, counter, env_across, serve, out, faults, seed_rng, index,
                     next_env=None):
    """A spanning counter's takers (the nemesis' targets: a `seq` loop
    preferring eu, a `next` loop and a stream preferring us; the `next` loop
    in `next_env` if given), and its HTTP client `index` (on `serve`, which
    prefers us) and restriper."""
    name, prefix = counter
    takers = [CliLoop("seq", kind, name, prefix, args.bin, env_across("eu"), out,
                      seed_rng.random()),
              CliLoop("next", kind, name, prefix, args.bin, next_env or env_across("us"), out,
                      seed_rng.random()),
              Stream(kind, name, prefix, args.bin, env_across("us"), out, seed_rng.random())]
    http = HttpClient(index, {kind: counter}, [serve], out, seed_rng.random())
    restriper = Changes(f"restriper-{kind}", "restripe", name,
                        [["counter", "stripes", name, "--set", layout]
                         for layout in SPANNING_LAYOUTS[kind]],
                        args.bin, env_across("eu"), faults, period=RESTRIPE_PERIOD[kind])
    return takers, [http, restriper]


def run(args):
    out = os.path.abspath(args.out)
    os.makedirs(os.path.join(out, "logs"), exist_ok=True)
    os.makedirs(os.path.join(out, "locks"), exist_ok=True)
    os.makedirs(os.path.join(out, "series"), exist_ok=True)
    set_pgid_file(os.path.join(out, "pgids"))
    seconds = args.minutes * 60
    takers, serves, holders = names(args)
    schedule = make_schedule(args.seed, seconds, takers, serves, holders)
    with open(os.path.join(out, "schedule.json"), "w", encoding="utf-8") as file:
        json.dump({"seed": args.seed, "minutes": args.minutes, "faults": FAULTS,
                   "schedule": schedule}, file, indent=1)
    log(f"seed {args.seed}, {args.minutes} min, out {out}; schedule "
        f"({len(schedule)} faults, OUT/schedule.json):")
    for event in schedule:
        extra = f" {event['seconds']} s" if "seconds" in event else ""
        print(f"  +{event['at']:7.2f}s  {event['fault']:<13} {event['target'] or '':<22} "
              f"{event['duration']:.2f} s{extra}", flush=True)
    counts = Counter(event["fault"] for event in schedule)
    log("faults by kind: " + ", ".join(f"{k} {counts.get(k, 0)}" for k in FAULTS))

    cluster = Cluster()
    meta = {"seed": args.seed, "minutes": args.minutes, "bin": args.bin, "canary": args.canary}
    drivers = []
    interrupted = threading.Event()

    def on_signal(signum, _frame):
        if interrupted.is_set():
            kill_all()
            os._exit(130)
        log(f"signal {signum}: stopping (again to kill everything at once)")
        interrupted.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    def on_thread_error(hook):
        harness_error(f"thread {hook.thread.name if hook.thread else '?'} died: "
                      f"{hook.exc_type.__name__}: {hook.exc_value}")
        threading.__excepthook__(hook)

    threading.excepthook = on_thread_error
    nemesis = None
    supervisors = []
    # The setup's steps that wait on nothing else run side by side (javac,
    # the two installs, the counters of each deployment): about 12 s less
    # than one after another, with nothing else changed.
    setup = ThreadPoolExecutor(max_workers=6, thread_name_prefix="setup")
    try:
        java_classes = setup.submit(build_java, out) if args.java else None
        cluster.db = db = DbServer(args.server_bin, out)
        cluster.dbs[db.name] = db
        if not db.faketime:
            log("libfaketime not found: the clock faults are skipped")
        db.start()
        log(f"database server on {db.uri()} (data {db.data})")
        proxy_seed = random.Random(args.seed).randrange(2**32)
        for name in ("proxy-partition", "proxy-cut"):
            cluster.proxies[name] = Proxy(name, db.port, proxy_seed, out)
        uris = {"direct": db.uri(), "partition": cluster.proxies["proxy-partition"].uri(),
                "cut": cluster.proxies["proxy-cut"].uri()}
        db_us = start_second_server(args, out, cluster, proxy_seed)
        deployments = {"eu": db.uri(), "us": cluster.proxies["proxy-us"].uri()}
        base = dict(os.environ, IDMINT_DB="soak", IDMINT_SERVER_TIMEOUT="3")
        base.pop("IDMINT_POLICY", None)
        base.pop("MONGODB_URIS", None)

        def env(route):
            return dict(base, MONGODB_URI=uris[route])

        def env_across(first):
            env = dict(base, MONGODB_URIS=" ".join(across(deployments, first)))
            env.pop("MONGODB_URI", None)  # beside named ones, an unnamed URI is an error
            return env

        canary_env = (dict(base, MONGODB_URI=uris["direct"], IDMINT_DB=CANARY_DB,
                           IDMINT_SOAK_BROKEN=args.canary) if args.canary else None)

        def prepare_canary():
            idmint_ok(args.bin, canary_env, "install")
            idmint_ok(args.bin, canary_env, "counter", "create", CANARY_COUNTER[0],
                      *CREATE["autoinc"], "--prefix", CANARY_COUNTER[1])

        wait_for_all([setup.submit(idmint_ok, args.bin, env("direct"), "install"),
                      setup.submit(idmint_ok, args.bin, dict(base, MONGODB_URI=db_us.uri()),
                                   "install")]
                     + ([setup.submit(prepare_canary)] if args.canary else []))
        counters = {kind: (f"soak-{kind}", PREFIX[kind]) for kind in KINDS}
        spanning_counters = {kind: (f"soak-{kind}", PREFIX[kind]) for kind in SPANNING_KINDS}
        swap_policy = check_digit_policy()

        def first_deployment():
            for kind in KINDS:
                idmint_ok(args.bin, env("direct"), "counter", "create", counters[kind][0],
                          *CREATE[kind], "--prefix", PREFIX[kind])
            # A gap-free series, numbered in transactions under the faults.
            idmint_ok(args.bin, env("direct"), "series", "create", SERIES)
            if swap_policy:
                idmint_ok(args.bin, env("direct"), "policy", "push", swap_policy)

        # The spanning counters, each created across both deployments, beside
        # the first deployment's own counters.
        wait_for_all([setup.submit(first_deployment)]
                     + [setup.submit(idmint_ok, args.bin, env_across("eu"), "counter", "create",
                                     spanning_counters[kind][0], *CREATE[kind],
                                     "--prefix", PREFIX[kind])
                        for kind in SPANNING_KINDS])
        for i, route in enumerate(["direct", "partition", "cut"]):
            # serve-0 follows the database's policy, swapped live (below).
            serve = Serve(i, args.bin, [uris[route]], base, out,
                          follow_db=i == 0 and swap_policy is not None)
            serve.start()
            cluster.serves[serve.name] = serve
        log("3 serve instances: " + ", ".join(f"{s.name} {s.url()} (db {r})" for s, r in
                                               zip(cluster.serves.values(),
                                                   ["direct", "partition", "cut"])))
        # Those three serve the single-deployment counters; a fourth, given
        # both deployments (us preferred), serves the spanning counters (its
        # snowflake worker leases as short as their CLI takers').
        one_deployment_serves = list(cluster.serves.values())
        spanning_serve = Serve(3, args.bin, across(deployments, "us"), base, out,
                               extra=["--lease-ttl", SPANNING_LEASE_TTL])
        spanning_serve.start()
        cluster.serves[spanning_serve.name] = spanning_serve
        log(f"{spanning_serve.name} {spanning_serve.url()} (deployments us, eu) for "
            + ", ".join(f"{spanning_counters[kind][0]} ({BASE_KIND[kind]}"
                        + (f", maxval {MAXVAL[kind]}" if kind in MAXVAL else "")
                        + (f", lease {SPANNING_LEASE_TTL} s" if kind == SPANNING_SNOWFLAKE else "")
                        + f", lanes {CREATE[kind][-1]})" for kind in SPANNING_KINDS))
        routes = ["direct", "partition", "cut"]
        seed_rng = random.Random(args.seed + 1)
        for i, kind in enumerate(k for k in KINDS if k != "cyclic"):
            d = CliLoop("seq", kind, *counters[kind], args.bin, env(routes[i % 3]), out,
                        seed_rng.random())
            cluster.takers[d.name] = d
        for i, kind in enumerate(KINDS):
            d = CliLoop("next", kind, *counters[kind], args.bin, env(routes[(i + 1) % 3]), out,
                        seed_rng.random())
            cluster.takers[d.name] = d
        for i, kind in enumerate(KINDS):
            d = Stream(kind, *counters[kind], args.bin, env(routes[(i + 2) % 3]), out,
                       seed_rng.random())
            cluster.takers[d.name] = d
        mongosh_uri = uris["cut"].replace("/?", "/soak?", 1) + "&serverSelectionTimeoutMS=3000"
        if args.java:
            d = JavaClient(java_classes.result(), counters, one_deployment_serves, out,
                           seed_rng.random())
            cluster.takers[d.name] = d
        d = PythonClient(counters, one_deployment_serves, out, seed_rng.random())
        cluster.takers[d.name] = d
        if args.node:
            d = NodeClient(counters, one_deployment_serves, out, seed_rng.random())
            cluster.takers[d.name] = d
        faults = Recorder(os.path.join(out, "faults.jsonl"))
        if swap_policy:
            swap_stream = Stream("cyclic", *counters["cyclic"], args.bin, env("direct"), out,
                                 seed_rng.random(), follow_db=True)
        else:
            log("no check-digit policy built (the tests build it): no live policy swap")
        d = Mongosh(args.mongosh, mongosh_uri, counters,
                    os.path.join(REPO, "mongo-js", "shell", "idmint-loader.js"), out,
                    seed_rng.random())
        cluster.takers[d.name] = d
        runs = Recorder(os.path.join(out, "lockruns.jsonl"))
        for i, holder in enumerate(holders):
            lock, index = holder[len("lock-"):].rsplit("-", 1)
            d = LockHolder(lock, int(index), LOCKS[lock][int(index)], args.bin,
                           env(routes[i % 2]), out, runs, seed_rng.random())
            cluster.holders[d.name] = d
        drivers = list(cluster.takers.values()) + list(cluster.holders.values())
        drivers += [HttpClient(i, counters, one_deployment_serves, out, seed_rng.random())
                    for i in range(3)]
        # A lock held over HTTP by two apps, through the serve instances:
        # not a target of the nemesis (the instances are), and its own seeds,
        # so that the other drivers' and the schedule stay as they were.
        http_lock_rng = random.Random(args.seed + 3)
        drivers += [HttpLockHolder(i, HTTP_LOCK, one_deployment_serves, out, runs,
                                   http_lock_rng.random())
                    for i in range(2)]
        # The spanning cyclic and snowflake counters' `next` loops run on the
        # first server's faked wall clock (its clock file, through
        # libfaketime): stepped back and frozen with it by clock-back and
        # clock-freeze, while every other taker's clock and the second
        # server's stay true. A cyclic lane's timestamps and a snowflake
        # ID's time are the taker's clock's; a periodic counter's period is
        # the server's, and an autoinc counter has no time.
        clocked = dict(env_across("us"), **db.clock_env())
        on_faked_clock = (SPANNING_CYCLIC, SPANNING_SNOWFLAKE)
        for index, kind in enumerate(SPANNING_KINDS, start=3):
            takers_of, others = spanning_drivers(
                args, kind, spanning_counters[kind], env_across, spanning_serve, out, faults,
                seed_rng, index, next_env=clocked if kind in on_faked_clock else None)
            for d in takers_of:
                cluster.takers[d.name] = d
            drivers += takers_of + others
        names_clocked = ", ".join(f"cli-next-{kind}" for kind in on_faked_clock)
        if db.clock_env():
            log(f"{names_clocked} run on the first server's faked clock (stepped back and "
                f"frozen by clock-back and clock-freeze): {db.clock_file}")
        else:
            log(f"libfaketime not found: {names_clocked} run on the true clock")
        assert sorted(cluster.takers) == sorted(takers)
        if swap_policy:
            # Not a target of the nemesis: the schedule stays the same without it.
            swapper = Changes("policy-swapper", "policy-swap", "policies",
                              [["policy", "activate", "1"], ["policy", "rollback"]],
                              args.bin, env("direct"), faults, period=15.0)
            drivers += [swap_stream, swapper]
        # The striped counter's lanes change under its takers: 3 to 2 to 4 to
        # 3 lanes, a new generation each time.
        drivers.append(Changes("restriper", "restripe", counters["striped"][0],
                               [["counter", "stripes", counters["striped"][0], "--set", str(n)]
                                for n in (2, 4, 3)],
                               args.bin, env("direct"), faults, period=20.0))
        # Its own seeds, so that the other drivers' stay as they were.
        series_rng = random.Random(args.seed + 2)
        drivers += [SeriesLoop(i, SERIES, args.bin, env(route), out, series_rng.random())
                    for i, route in enumerate(["direct", "cut"])]
        if args.canary:
            drivers += canary_drivers(args, canary_env, out)
            log(f"canary: {CANARY_COUNTER[0]} (autoinc, database {CANARY_DB}) taken by two "
                f"streams of {CANARY_RATE} values a second with IDMINT_SOAK_BROKEN={args.canary}: "
                f"checked apart, it must show values twice (OUT/canary)")
        meta["start"] = time.time()
        for driver in drivers:
            driver.start()
        supervisors = [Supervisor(d, faults) for d in cluster.dbs.values()]
        for supervisor in supervisors:
            supervisor.start()
        nemesis = Nemesis(schedule, meta["start"], cluster, faults)
        nemesis.start()
        log(f"running {len(drivers)} drivers for {args.minutes} min")
        end = meta["start"] + seconds
        meta["harness_fds_max"] = 0
        while not interrupted.is_set() and time.time() < end:
            interrupted.wait(min(10.0, max(0.0, end - time.time())))
            fds = open_fds()
            if fds > FD_BOUND >= meta["harness_fds_max"]:
                harness_error(f"the harness holds {fds} file descriptors (a leak)")
            meta["harness_fds_max"] = max(meta["harness_fds_max"], fds)
            if not interrupted.is_set():
                log(f"{int(time.time() - meta['start'])} s, harness fds {fds}")
        nemesis.stop()
        nemesis.join(timeout=60)
        meta["end"] = time.time()
        log("waiting for every striped counter's changes of stripes to finish")
        meta["changes_at_end"] = settle_changes(
            args.bin, [(counters["striped"][0], env("direct"))]
            + [(spanning_counters[kind][0], env_across("eu")) for kind in SPANNING_KINDS],
            [d for d in drivers if isinstance(d, Changes)], out)
        meta["db_exits_unasked"] = db.exits
        meta["db_us_exits_unasked"] = db_us.exits
        log("stopping the drivers")
        for driver in drivers:
            driver.stop()
        for driver in drivers:
            driver.join(timeout=40)
        meta["series_audit"] = audit_series(args.bin, env("direct"), out)
        meta["shutdown_s"] = {d.name: d.shutdown_s for d in drivers if isinstance(d, Stream)}
        meta["harness_errors"] = harness_errors()
        for serve in cluster.serves.values():
            serve.cont()
            meta["shutdown_s"][serve.name] = serve.shutdown()
        with open(os.path.join(out, "meta.json"), "w", encoding="utf-8") as file:
            json.dump(meta, file, indent=1)
    except Exception as error:  # noqa: BLE001 - the harness failed: say so, clean up
        log(f"harness error: {type(error).__name__}: {error}")
        raise
    finally:
        setup.shutdown(wait=True, cancel_futures=True)
        if nemesis is not None:
            nemesis.stop()
        for supervisor in supervisors:
            supervisor.stop()
        for supervisor in supervisors:
            supervisor.join(timeout=10)
        for driver in drivers:
            driver.stop()
        for proxy in cluster.proxies.values():
            proxy.tell("partition off")
        kill_all()
        if not args.keep_data:
            for server in cluster.dbs.values():
                subprocess.run(["rm", "-rf", server.data], check=False)
    if interrupted.is_set():
        log("interrupted: checking what was recorded")
    code = finish(out, meta)
    return 130 if interrupted.is_set() and code == 0 else code


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--out", default=None)
    parser.add_argument("--bin", help="the idmint binary")
    parser.add_argument("--server-bin", help="secantusd-rs")
    parser.add_argument("--mongosh", help="mongosh")
    parser.add_argument("--keep-data", action="store_true", help="keep the database's data dir")
    parser.add_argument("--broken", choices=["duplicate", "lock"],
                        help="run a deliberately broken build (feature soak-broken): the run must be "
                             "invalid")
    parser.add_argument("--canary", choices=["duplicate"],
                        help="beside the run, a counter of its own taken by the deliberately "
                             "broken build with this break on (feature soak-broken), checked "
                             "apart: the run fails (2) unless the canary shows a value twice")
    parser.add_argument("--no-java", action="store_true", help="leave the Java client out")
    parser.add_argument("--check", metavar="DIR", help="only check a kept run's directory")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        suite = unittest.defaultTestLoader.discover(HERE, pattern="test_*.py")
        ok = unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful()
        sys.exit(0 if ok else 1)
    if args.check:
        with open(os.path.join(args.check, "meta.json"), encoding="utf-8") as file:
            sys.exit(finish(args.check, json.load(file)))
    if not (args.bin and args.server_bin and args.mongosh):
        parser.error("--bin, --server-bin and --mongosh are needed (scripts/soak.sh gives them)")
    args.java = bool(shutil.which("javac") and shutil.which("java")) and not args.no_java
    args.node = bool(shutil.which("node"))
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(2**31)
    if args.out is None:
        args.out = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                f"idmint-soak-{args.seed}-{int(time.time())}")
    if args.broken and args.canary:
        parser.error("--broken and --canary: the canary is a broken build beside a sound run")
    if args.canary:
        require_broken_build(args, "--canary")
    if args.broken:
        use_broken_build(args)
    else:
        # A build with the breaks compiled in (scripts/test.sh runs one
        # binary for both soaks) has them all off unless this picks one.
        os.environ.pop("IDMINT_SOAK_BROKEN", None)
    try:
        sys.exit(run(args))
    except Exception:  # noqa: BLE001
        import traceback
        traceback.print_exc()
        sys.exit(2)


if __name__ == "__main__":
    main()
