"""Carries out the schedule (schedule.py), one fault at a time, and records
each as {"fault", "target", "start", "end", "detail"} in OUT/faults.jsonl."""

import threading
import time

from workload import slow_clients


class Supervisor(threading.Thread):
    """Restarts the database server if it exits with nobody asking (not a
    fault of the schedule: a harness event), and records it as fault
    "db-exited" with its exit status, so that a run goes on and says so."""

    def __init__(self, db, recorder):
        super().__init__(name="supervisor", daemon=True)
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
                    detail = f"exited by itself (status {status}); restarted: see db.log"
                except RuntimeError as error:
                    detail = f"exited by itself (status {status}); restart failed: {error}"
            self.recorder.write({"fault": "db-exited", "target": "db", "start": start,
                                 "end": time.time(), "detail": detail})


class Nemesis(threading.Thread):
    def __init__(self, schedule, start, cluster, recorder):
        super().__init__(name="nemesis", daemon=True)
        self.schedule, self.start_time, self.cluster, self.recorder = (schedule, start, cluster,
                                                                        recorder)
        self.stopping = threading.Event()
        self.healing = []  # what undoes the fault in progress, if stopped midway

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
        if fault == "kill-taker":
            return "killed" if c.takers[target].kill9() else "no process running"
        if fault == "stop-taker":
            driver = c.takers[target]
            if not driver.pause():
                return "no process running"
            self.hold(duration)
            driver.resume()
            return "stopped and continued"
        if fault == "kill-serve":
            serve = c.serves[target]
            serve.kill9()
            self.hold(duration)
            serve.start()
            return "killed and restarted"
        if fault == "stop-serve":
            serve = c.serves[target]
            serve.stop()
            self.hold(duration)
            serve.cont()
            return "stopped and continued"
        if fault == "slow-clients":
            opened = slow_clients(c.serves[target], c.slow_counter, duration)
            return f"{opened} slow connections"
        if fault == "kill-db":
            with c.db.lock:
                c.db.kill9()
                self.hold(duration)
                c.db.restart()
            return "killed and restarted"
        if fault == "stop-db":
            c.db.stop()
            self.hold(duration)
            c.db.cont()
            return "stopped and continued"
        if fault == "partition":
            c.proxies["proxy-partition"].tell("partition on")
            self.hold(duration)
            c.proxies["proxy-partition"].tell("partition off")
            return "partitioned and healed"
        if fault == "cut":
            c.proxies["proxy-cut"].tell("cut on")
            self.hold(duration)
            c.proxies["proxy-cut"].tell("cut off")
            return "cutting, then not"
        if fault == "clock-back":
            if not c.db.faketime:
                return "no libfaketime: skipped"
            c.db.clock_back(event["seconds"])
            return f"stepped back {event['seconds']} s (now {c.db.offset} s behind)"
        if fault == "clock-freeze":
            if not c.db.faketime:
                return "no libfaketime: skipped"
            frozen = c.db.freeze()
            self.hold(duration)
            c.db.thaw(frozen)
            return f"frozen, then on from there ({c.db.offset} s behind)"
        if fault == "tstp-lock":
            holder = c.holders[target]
            if not holder.tstp():
                return "no lock run running"
            self.hold(duration)
            holder.resume()
            return "stopped (SIGTSTP) and continued"
        if fault == "freeze-holder":
            holder = c.holders[target]
            frozen = holder.freeze()
            if not frozen:
                return "no lock run running"
            self.hold(duration)
            holder.thaw(frozen)
            return f"froze {len(frozen)} processes (lock run, its guard, COMMAND) and continued"
        if fault == "kill-lock":
            return "killed" if c.holders[target].kill9() else "no lock run running"
        raise ValueError(f"unknown fault {fault}")
