"""The nemesis' schedule: made from the seed alone (and the run's length and
the names of its targets), so that a rerun with the same seed repeats it."""

import math
import random

# Each fault kind, and what it does (nemesis.py carries it out).
FAULTS = {
    "kill-taker": "kill -9 of a CLI taker, a stream, mongosh, or the Java, Python or Node.js client",
    "kill-serve": "kill -9 of an idmint serve instance, restarted after DURATION",
    "kill-db": "kill -9 of the database server, restarted on its data after DURATION",
    "stop-taker": "SIGSTOP of a taker for DURATION, then SIGCONT",
    "stop-serve": "SIGSTOP of a serve instance for DURATION, then SIGCONT",
    "stop-db": "SIGSTOP of the database server for DURATION, then SIGCONT",
    "partition": "the partition proxy stops forwarding, connections left open, for DURATION",
    "kill-db-us": "kill -9 of the second database server (the spanning counter's deployment us), "
                  "restarted on its data after DURATION",
    "partition-us": "the proxy in front of the second database server stops forwarding, "
                    "connections left open, for DURATION",
    "cut": "the cutting proxy cuts connections mid-answer for DURATION",
    "slow-clients": "12 connections to a serve instance that dribble or never read, DURATION",
    "clock-back": "the database server's clock stepped back by SECONDS (for good)",
    "clock-freeze": "the database server's clock frozen for DURATION, then going on from there",
    "tstp-lock": "Ctrl-Z (SIGTSTP) of a lock run for DURATION, then SIGCONT",
    "kill-lock": "kill -9 of a lock run (its guard kills COMMAND)",
    "freeze-holder": "SIGSTOP of a lock run and its COMMAND together past the lease (8-10 s), "
                     "as a frozen machine: the case the fencing token is for",
}

WARM_UP = 12.0
COOL_DOWN = 12.0
SLOT = 9.0
FREEZE = (8.0, 10.0)  # freeze-holder: past the soak's 5 s lock TTL
JITTER = 1.05  # each fault starts up to a tenth of a slot late: a twentieth on average


def make_schedule(seed, seconds, takers, serves, holders):
    """The list of faults: {"at" (s from the start), "fault", "target",
    "duration", "seconds"?}, one after another, none overlapping. Every fault
    kind comes once before any comes twice, in a seeded order; a run packs
    them closer (down to 5 s apart) so that it holds whole rounds, and no
    more: each kind once in 2 minutes, twice in 5."""
    rng = random.Random(seed)
    last = seconds - COOL_DOWN
    window = max(0.0, last - WARM_UP)
    rounds = max(1, math.ceil(window / (len(FAULTS) * SLOT + FREEZE[1])))
    # A freeze-holder lasts longer than a slot: leave room for one a round.
    slot = max(5.0, min(SLOT, (window - rounds * FREEZE[1]) / (rounds * len(FAULTS) * JITTER)))
    schedule = []
    round_ = []
    t = WARM_UP
    while True:
        if not round_:
            round_ = list(FAULTS)
            rng.shuffle(round_)
        fault = round_.pop(0)
        at = t + rng.uniform(0.0, slot / 10)
        duration = round(rng.uniform(2.0, min(6.0, slot / 2)), 2)
        event = {"at": round(at, 2), "fault": fault, "duration": duration, "target": None}
        if fault in ("kill-taker", "stop-taker"):
            event["target"] = rng.choice(takers)
        elif fault in ("kill-serve", "stop-serve", "slow-clients"):
            event["target"] = rng.choice(serves)
        elif fault in ("kill-db", "stop-db", "clock-back", "clock-freeze"):
            event["target"] = "db"
        elif fault == "partition":
            event["target"] = "proxy-partition"
        elif fault == "kill-db-us":
            event["target"] = "db-us"
        elif fault == "partition-us":
            event["target"] = "proxy-us"
        elif fault == "cut":
            event["target"] = "proxy-cut"
        elif fault in ("tstp-lock", "kill-lock", "freeze-holder"):
            event["target"] = rng.choice(holders)
        if fault in ("kill-taker", "kill-lock", "clock-back"):
            event["duration"] = 0.0
        if fault == "freeze-holder":
            event["duration"] = round(rng.uniform(*FREEZE), 2)
        if fault == "clock-back":
            event["seconds"] = rng.randint(5, 30)
        if at + event["duration"] > last or len(schedule) == rounds * len(FAULTS):
            return schedule
        schedule.append(event)
        t = at + max(slot, event["duration"] + slot / 2)
