"""The harness against its own failures: a 30-minute run once ran out of file
descriptors (every Popen kept with its pipes) and went on reporting "valid"
while its takers had stopped and the database could not be restarted. Run by
`scripts/soak.sh --self-test`."""

import argparse
import contextlib
import io
import json
import os
import http.server
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cluster import open_fds, reap, spawn  # noqa: E402
from ids import CREATE, SPANNING_KINDS, SPANNING_SNOWFLAKE  # noqa: E402
import soak  # noqa: E402
import workload  # noqa: E402


def quietly(function, *args):
    with contextlib.redirect_stdout(io.StringIO()):
        return function(*args)


class SpawnedProcessesLeaveNothingOpen(unittest.TestCase):
    def test_a_reaped_process_holds_no_descriptor(self):
        before = open_fds()
        for _ in range(200):
            process = spawn(["true"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.PIPE)
            reap(process)
        # Two pipes per process left open would be 400 more.
        self.assertLess(open_fds() - before, 10)


class HarnessFailuresFailTheRun(unittest.TestCase):
    def run_dir(self, faults, meta_errors=()):
        out = tempfile.mkdtemp(prefix="soak-harness-test-")
        self.made = getattr(self, "made", []) + [out]
        os.makedirs(os.path.join(out, "logs"))
        with open(os.path.join(out, "faults.jsonl"), "w", encoding="utf-8") as file:
            for fault in faults:
                file.write(json.dumps(fault) + "\n")
        meta = {"seed": 1, "minutes": 1, "start": 1000.0, "end": 1060.0,
                "harness_errors": list(meta_errors)}
        with open(os.path.join(out, "meta.json"), "w", encoding="utf-8") as file:
            json.dump(meta, file)
        return out, meta

    def fault(self, detail, name="kill-db"):
        return {"fault": name, "target": "db", "start": 1010.0, "end": 1012.0, "detail": detail}

    def tearDown(self):
        for path in getattr(self, "made", []):
            subprocess.run(["rm", "-rf", path], check=False)

    def test_a_fault_that_could_not_be_injected_exits_2(self):
        out, meta = self.run_dir([self.fault("killed and restarted"),
                                  self.fault("error: OSError: [Errno 24] Too many open files")])
        self.assertEqual(quietly(soak.finish, out, meta), 2)
        with open(os.path.join(out, "result.json"), encoding="utf-8") as file:
            errors = json.load(file)["harness_errors"]
        self.assertEqual(len(errors), 1)
        self.assertIn("Too many open files", errors[0])

    def test_a_database_not_restarted_exits_2(self):
        out, meta = self.run_dir([self.fault("exited by itself (status 3); restart failed: "
                                             "the database server did not restart", "db-exited")])
        self.assertEqual(quietly(soak.finish, out, meta), 2)

    def test_a_driver_that_died_exits_2(self):
        out, meta = self.run_dir([], ["1010.000 thread cli-seq-autoinc died: OSError: ..."])
        self.assertEqual(quietly(soak.finish, out, meta), 2)

    def test_a_clean_run_exits_0(self):
        out, meta = self.run_dir([self.fault("killed and restarted")])
        self.assertEqual(quietly(soak.finish, out, meta), 0)

    def takes(self, directory, values):
        """One driver's autoinc takes (cli-seq), a second apart."""
        os.makedirs(os.path.join(directory, "logs"), exist_ok=True)
        with open(os.path.join(directory, "logs", "cli-seq-autoinc.jsonl"), "w",
                  encoding="utf-8") as file:
            for i, raw in enumerate(values):
                file.write(json.dumps({"path": "cli-seq", "kind": "autoinc", "counter": "c",
                                       "t0": 1001.0 + i, "t1": 1001.5 + i, "status": "ok",
                                       "n": len(raw), "raw": raw, "scope": "cli"}) + "\n")

    def with_canary(self, canary_values):
        out, meta = self.run_dir([self.fault("killed and restarted")])
        meta["canary"] = "duplicate"
        self.takes(out, [[1, 2], [3]])
        self.takes(os.path.join(out, "canary"), canary_values)
        return out, meta

    def test_a_value_twice_exits_1(self):
        out, meta = self.run_dir([])
        self.takes(out, [[1, 2], [2, 3]])
        self.assertEqual(quietly(soak.finish, out, meta), 1)

    def test_a_canary_that_shows_a_value_twice_leaves_a_clean_run_valid(self):
        out, meta = self.with_canary([[1, 2], [2, 3]])
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            self.assertEqual(soak.finish(out, meta), 0)
        self.assertIn("1 of them twice", printed.getvalue())
        with open(os.path.join(out, "canary", "result.json"), encoding="utf-8") as file:
            canary = json.load(file)
        self.assertEqual((canary["duplicated"], canary["valid"]), (1, False))
        with open(os.path.join(out, "result.json"), encoding="utf-8") as file:
            self.assertTrue(json.load(file)["valid"], "the canary's values are not the run's")

    def test_a_canary_that_shows_no_value_twice_fails_the_harness(self):
        out, meta = self.with_canary([[1, 2], [3]])
        self.assertEqual(quietly(soak.finish, out, meta), 2)
        with open(os.path.join(out, "result.json"), encoding="utf-8") as file:
            errors = json.load(file)["harness_errors"]
        self.assertEqual(len(errors), 1)
        self.assertIn("canary", errors[0])


class SpanningCounters(unittest.TestCase):
    def test_each_has_three_takers_the_nemesis_picks_from(self):
        takers, serves, _ = soak.names(argparse.Namespace(java=False, node=False))
        for kind in SPANNING_KINDS:
            for path in ("cli-seq", "cli-next", "stream"):
                self.assertIn(f"{path}-{kind}", takers)
        self.assertIn("serve-3", serves)

    def test_each_is_striped_across_both_deployments_and_restriped(self):
        for kind in SPANNING_KINDS:
            self.assertEqual(CREATE[kind][-2:], ["--stripes", "eu:2,us:2"], kind)
            self.assertIn(kind, soak.RESTRIPE_PERIOD)
            self.assertEqual(len(soak.SPANNING_LAYOUTS[kind]), 2)
        self.assertEqual(len(set(soak.PREFIX.values())), len(soak.PREFIX))

    def test_the_spanning_snowflake_takers_lease_briefly(self):
        self.assertEqual(workload._lease(SPANNING_SNOWFLAKE), ["--lease-ttl", "3"])
        self.assertEqual(workload._lease("snowflake"), [])


class LockedOverHttp(unittest.TestCase):
    """The HTTP lock holder writes only while it can prove its lease: a
    renewal that never answers ends its hold by the acquire's lease_ms."""

    def test_a_holder_whose_renewal_never_answers_writes_nothing_past_its_lease(self):
        stalled = threading.Event()

        class Service(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                self.rfile.read(int(self.headers["Content-Length"]))
                if self.path.endswith("/renew"):
                    stalled.wait(10)  # an instance stopped: no answer
                    return
                body = json.dumps({"lease": "l1.x.7.3000.0.o", "token": 7, "lease_ms": 1500})
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Service)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        out = tempfile.mkdtemp(prefix="soak-http-lock-test-")
        os.makedirs(os.path.join(out, "locks"))
        try:
            serve = SimpleNamespace(name="serve-0", port=server.server_address[1])
            holder = workload.HttpLockHolder(0, "l", [serve], out, None, 1)
            # A long hold (past the TTL), so that only renewals could keep it.
            holder.rng = SimpleNamespace(choice=lambda items: items[0], random=lambda: 0.0,
                                         uniform=lambda low, high: high)
            began = time.time()
            rc, why = holder._hold()  # noqa: SLF001 - one hold, as run() makes them
            with open(os.path.join(out, "locks", "l.jsonl"), encoding="utf-8") as file:
                writes = [json.loads(line) for line in file]
        finally:
            stalled.set()
            server.shutdown()
            subprocess.run(["rm", "-rf", out], check=False)
        self.assertEqual(rc, 76, why)
        self.assertEqual(writes[0]["event"], "start")
        self.assertGreater(len(writes), 5, "it wrote while its lease was proved")
        last = max(write["t"] for write in writes)
        self.assertLess(last - began, 1.5, "a write after the lease_ms counted from the acquire")


if __name__ == "__main__":
    unittest.main()
