"""Carries out the schedule (schedule.py), one fault at a time, and records
each as {"fault", "target", "start", "end", "detail"} in OUT/faults.jsonl."""

import os
import threading
import time

from workload import slow_clients


class Supervisor(threading.Thread):
    """Restarts a database server if it exits with nobody asking (not a
    fault of the schedule: a harness event), and records it as fault
    "db-exited" on the server's name with its exit status, so that a run
    goes on and says so. One watches each server."""

    def __init__(self, db, recorder):
        super().__init__(name=f"supervisor-{db.name}", daemon=True)
        self.db, self.recorder = db, recorder
        self.stopping = threading.Event()

    def stop(self):
        self.stopping.set()

    def run(self):
        while not self.stopping.wait(0.5):
            with self.db.lock:
                status = self.db.exited_unasked()
                if status is None:
                    continue
                start = time.time()
                self.db.exits += 1
                try:
                    self.db.restart()
                    detail = (f"exited by itself (status {status}); restarted: see "
                              f"{os.path.basename(self.db.log)}")
                except RuntimeError as error:
                    detail = f"exited by itself (status {status}); restart failed: {error}"
            self.recorder.write({"fault": "db-exited", "target": self.db.name, "start": start,
                                 "end": time.time(), "detail": detail})


class Nemesis(threading.Thread):
    def __init__(self, schedule, start, cluster, recorder):
        super().__init__(name="nemesis", daemon=True)
        self.schedule, self.start_time, self.cluster, self.recorder = (schedule, start, cluster,
                                                                        recorder)
        self.stopping = threading.Event()

    def stop(self):
        self.stopping.set()

    def hold(self, seconds):
        self.stopping.wait(seconds)

    def run(self):
        for event in self.schedule:
            wait = self.start_time + event["at"] - time.time()
            if wait > 0 and self.stopping.wait(wait):
                return
            if self.stopping.is_set():
                return
            start = time.time()
            try:
                detail = self.apply(event)
            except Exception as error:  # noqa: BLE001 - recorded, the run goes on
                detail = f"error: {type(error).__name__}: {error}"
            record = {"fault": event["fault"], "target": event["target"], "start": start,
                      "end": time.time(), "detail": detail}
            if event["target"] in self.cluster.holders:
                record["lock"] = self.cluster.holders[event["target"]].lock
            self.recorder.write(record)

    def apply(self, event):
        fault, target, duration = event["fault"], event["target"], event["duration"]
        c = self.cluster
        if fault in ("clock-back", "clock-freeze") and not c.db.faketime:
            return "no libfaketime: skipped"
        if fault == "kill-taker":
            return "killed" if c.takers[target].kill9() else "no process running"
        if fault == "kill-lock":
            return "killed" if c.holders[target].kill9() else "no lock run running"
        if fault == "slow-clients":
            opened = slow_clients(c.serves[target], c.slow_counter, duration)
            return f"{opened} slow connections"
        if fault == "clock-back":
            c.db.clock_back(event["seconds"])
            return f"stepped back {event['seconds']} s (now {c.db.offset} s behind)"
        if fault in ("kill-db", "kill-db-us"):
            db = c.dbs[target]
            with db.lock:  # its supervisor does not restart it meanwhile
                return self.window((db.kill9, lambda _: db.restart(),
                                    "killed and restarted", None), duration)
        return self.window(self.windows(target)[fault], duration)

    def window(self, fault, duration):
        """A fault that lasts: begin(), `duration` seconds, end(what begin
        returned); its detail. A fault with an `absent` text checks begin's
        result: falsy, there was nothing to fault (no process running)."""
        begin, end, done, absent = fault
        begun = begin()
        if absent is not None and not begun:
            return absent
        self.hold(duration)
        end(begun)
        return done(begun) if callable(done) else done

    def windows(self, target):
        """Each lasting fault on `target`: (begin, end, detail, absent)."""
        c = self.cluster
        taker, serve = c.takers.get(target), c.serves.get(target)
        holder, proxy = c.holders.get(target), c.proxies.get(target)
        return {
            "stop-taker": (lambda: taker.pause(), lambda _: taker.resume(),
                           "stopped and continued", "no process running"),
            "kill-serve": (lambda: serve.kill9(), lambda _: serve.start(),
                           "killed and restarted", None),
            "stop-serve": (lambda: serve.stop(), lambda _: serve.cont(),
                           "stopped and continued", None),
            "stop-db": (c.db.stop, lambda _: c.db.cont(), "stopped and continued", None),
            "partition": (lambda: proxy.tell("partition on"),
                          lambda _: proxy.tell("partition off"), "partitioned and healed", None),
            "partition-us": (lambda: proxy.tell("partition on"),
                             lambda _: proxy.tell("partition off"), "partitioned and healed",
                             None),
            "cut": (lambda: proxy.tell("cut on"), lambda _: proxy.tell("cut off"),
                    "cutting, then not", None),
            "clock-freeze": (c.db.freeze, c.db.thaw,
                             lambda _: f"frozen, then on from there ({c.db.offset} s behind)",
                             None),
            "tstp-lock": (lambda: holder.tstp(), lambda _: holder.resume(),
                          "stopped (SIGTSTP) and continued", "no lock run running"),
            "freeze-holder": (lambda: holder.freeze(), lambda frozen: holder.thaw(frozen),
                              lambda frozen: f"froze {len(frozen)} processes (lock run, its "
                                             f"guard, COMMAND) and continued",
                              "no lock run running"),
        }
