"""The soak's checker: a pure function over what the clients recorded.

Inputs (see `load`): attempt records, one JSON object per line, written by
the workload drivers; the fenced store's records of the lock holders'
COMMANDs; the faults the nemesis injected; the run's start and end.

An attempt record: {"path", "kind", "counter", "t0", "t1", "status":
"ok"|"fail"|"unknown", "n": values asked (null: unknown), "raw": [raw keys
acknowledged], "scope": order scope or null, "err"?}. A raw key is an int or
a [first, value] pair (ids.py). Values printed by a process that was then
killed are acknowledged (the client read them) inside an unknown attempt.

A lock record: {"lock", "token", "event": "start"|"beat"|"end", "t",
"accepted": bool, "pid"}, in the order the store took them (under flock).
"""

import csv
import json
import math
import os
from collections import Counter, defaultdict

from ids import MAXVAL, SPANNING_KINDS, order_key, unique_key
from schedule import FAULTS

# Kinds whose values leave gaps only where an answer was lost
# (docs/counter-kinds.md, "gaps"): a gap larger than the attempts that got no
# (or an error) answer could have taken is a lost value.
GAP_CHECKED = ("autoinc", "periodic")

# A path whose acknowledgements are usually further apart than this (the
# stored JavaScript twins, under contention) is left out of recovery times.
SPARSE = 1.0

# The faults that take the spanning counters' deployment us away (its server
# killed, or partitioned off by its proxy).
US_DOWN = ("kill-db-us", "partition-us")


def _row(record):
    return f"{record['path']}/{record['kind']}"


def _example(record):
    return {key: record.get(key) for key in ("path", "kind", "counter", "t0", "t1", "status", "scope")}


def check_values(attempts):
    """Counts, duplicates, order violations, gaps, malformed IDs, values out
    of a cyclic counter's range and IDs written twice, of the attempts."""
    rows = defaultdict(lambda: {"attempted": 0, "ok": 0, "fail": 0, "unknown": 0, "values": 0})
    malformed = []
    seen = {}
    duplicates = []
    out_of_range = []
    seen_ids = {}
    duplicate_ids = []
    last_in_scope = {}
    order = []
    by_counter = defaultdict(lambda: {"kind": None, "values": defaultdict(set), "unanswered": 0,
                                      "unbounded": False})
    for record in attempts:
        row = rows[_row(record)]
        row["attempted"] += 1
        row[record["status"]] += 1
        raw_values = record.get("raw") or []
        row["values"] += len(raw_values)
        if record.get("unreadable"):
            malformed.append({"t": record["t1"], "record": _example(record),
                              "err": record.get("err")})
        counter = by_counter[record["counter"]]
        counter["kind"] = record["kind"]
        if record["status"] != "ok":
            asked = record.get("n")
            if asked is None:
                counter["unbounded"] = True
            else:
                counter["unanswered"] += max(0, asked - len(raw_values))
        for text in record.get("ids") or []:
            key = (record["counter"], text)
            if key in seen_ids:
                duplicate_ids.append({"id": list(key), "t": record["t1"], "first": seen_ids[key],
                                      "second": _example(record)})
            else:
                seen_ids[key] = _example(record)
        top = MAXVAL.get(record["kind"])
        for raw in raw_values:
            if top is not None and not (isinstance(raw, list) and isinstance(raw[1], int)
                                        and 0 <= raw[1] <= top):
                out_of_range.append({"key": [record["counter"], *(raw if isinstance(raw, list)
                                                                    else [raw])],
                                     "maxval": top, "t": record["t1"],
                                     "record": _example(record)})
            key = unique_key(record["kind"], record["counter"], raw)
            if key in seen:
                duplicates.append({"key": list(key), "t": record["t1"], "first": seen[key],
                                   "second": _example(record)})
            else:
                seen[key] = _example(record)
            if record["kind"] in GAP_CHECKED:
                group = raw[0] if isinstance(raw, list) else ""
                value = raw[1] if isinstance(raw, list) else raw
                counter["values"][group].add(value)
            scope = record.get("scope")
            if scope is not None:
                scope = f"{scope}:{record['counter']}"  # order is promised per counter
                now = order_key(raw)
                before = last_in_scope.get(scope)
                if before is not None and now <= before[0]:
                    order.append({"scope": scope, "t": record["t1"], "before": list(before[0]),
                                  "after": list(now), "before_t": before[1],
                                  "record": _example(record)})
                last_in_scope[scope] = (now, record["t1"])
    gaps = {}
    lost = []
    for name, counter in sorted(by_counter.items()):
        if counter["kind"] not in GAP_CHECKED or not counter["values"]:
            continue
        missing = 0
        for values in counter["values"].values():
            missing += max(values) - len(values)  # values start at 1 in each period
        bound = None if counter["unbounded"] else counter["unanswered"]
        gaps[name] = {"missing": missing, "unanswered_bound": bound}
        if bound is not None and missing > bound:
            lost.append({"counter": name, "missing": missing, "unanswered_bound": bound, "t": None})
    return dict(rows), duplicates, order, gaps, lost, malformed, out_of_range, duplicate_ids


# How soon after a freeze ends a holder frozen whole may still write: the
# moments before its guard, continued with it, stops its COMMAND.
FROZEN_GRACE = 1.0


def check_locks(records, faults=()):
    """Overlaps (two tokens of one lock running at once, by the COMMANDs'
    own timestamps) and fencing violations (a write accepted after a higher
    token's).

    An overlap is *fenced*, and no violation, when its older holder was
    frozen whole (a freeze-holder fault: `lock run` and COMMAND stopped
    together past the lease, the case docs/locks.md leaves to the fencing
    token), the newer holder took the lock during that freeze, and every write
    the older one made from then on was refused by the store."""
    spans = defaultdict(dict)
    writes = defaultdict(list)
    highest, highest_exclusive = {}, {}
    shared = {}
    permits = {}
    fencing = []
    fenced_off = 0
    for record in records:
        lock, token = record["lock"], record["token"]
        mode = record.get("mode", "exclusive")
        if mode == "shared":
            shared[(lock, token)] = True
            if record.get("permits"):
                permits[lock] = record["permits"]
        span = spans[lock].setdefault(token, [record["t"], record["t"]])
        span[0] = min(span[0], record["t"])
        span[1] = max(span[1], record["t"])
        writes[(lock, token)].append((record["t"], record["accepted"]))
        if record["accepted"]:
            # A shared holder is stale only behind a newer exclusive one.
            bound = (highest_exclusive if mode == "shared" else highest).get(lock)
            if bound is not None and token < bound:
                fencing.append({"lock": lock, "token": token, "after_token": bound,
                                "t": record["t"]})
            highest[lock] = max(highest.get(lock, token), token)
            if mode != "shared":
                highest_exclusive[lock] = max(highest_exclusive.get(lock, token), token)
        else:
            fenced_off += 1
    freezes = [f for f in faults if f["fault"] == "freeze-holder" and f.get("lock")]

    def fenced(lock, older, newer_start):
        if any(accepted for t, accepted in writes[(lock, older)] if t >= newer_start):
            return False
        return any(f["lock"] == lock and f["start"] <= newer_start <= f["end"] + 1.0
                   for f in freezes)

    overlaps, fenced_overlaps = [], []
    for lock, by_token in sorted(spans.items()):
        ordered = sorted(by_token.items(), key=lambda item: item[1][0])
        for i, (token, (start, end)) in enumerate(ordered):
            for other, (other_start, other_end) in ordered[i + 1:]:
                if other_start >= end:
                    break
                # Shared holders (permits, readers) hold side by side; a
                # semaphore's count is checked below.
                if shared.get((lock, token)) and shared.get((lock, other)):
                    continue
                overlap = {"lock": lock, "tokens": [token, other], "t": other_start,
                           "spans": [[start, end], [other_start, other_end]]}
                (fenced_overlaps if fenced(lock, token, other_start) else overlaps).append(overlap)
    def frozen_through(lock, token):
        """The span of a shared holder frozen whole past its lease up to its
        last write before the freeze, when every write it made after came
        within FROZEN_GRACE of the thaw (its guard, continued with it,
        stopped it at once); None otherwise. A permit has no fence that
        could refuse those last writes (docs/locks.md says so)."""
        times = sorted(t for t, _ in writes[(lock, token)])
        for freeze in freezes:
            if freeze["lock"] != lock:
                continue
            before = [t for t in times if t < freeze["start"]]
            # The fault's end is recorded once every process was continued:
            # its first writes after the thaw may come just before it.
            after = [t for t in times if t >= freeze["start"]]
            if before and after and \
                    freeze["end"] - FROZEN_GRACE <= after[0] and \
                    after[-1] <= freeze["end"] + FROZEN_GRACE:
                return [times[0], before[-1]]
        return None

    # A semaphore: never more holders at once than its permits.
    for lock, most in sorted(permits.items()):
        counted = {}
        for token, span in spans[lock].items():
            frozen = frozen_through(lock, token)
            if frozen is not None and frozen != span:
                fenced_overlaps.append({"lock": lock, "token": token, "frozen": True})
            counted[token] = frozen or span
        # An end sorts before a start at the same time (one holder leaving
        # as the next comes is no overlap), so a span of one write (a holder
        # killed just after it) ends a hair after it began, not before.
        events = sorted([(start, 1, token) for token, (start, _) in counted.items()]
                        + [(max(end, start + 1e-6), -1, token)
                           for token, (start, end) in counted.items()],
                        key=lambda event: (event[0], event[1]))
        holding = set()
        for t, step, token in events:
            if step < 0:
                holding.discard(token)
                continue
            holding.add(token)
            if len(holding) > most:
                overlaps.append({"lock": lock, "tokens": sorted(holding), "t": t,
                                 "permits": most})
    holds = sum(len(by_token) for by_token in spans.values())
    return ({"holds": holds, "fenced_off": fenced_off, "fenced_overlaps": len(fenced_overlaps)},
            overlaps, fencing)


def availability(attempts, start, end, by=_row):
    """Per row (or per path), the share of whole seconds of the run in which
    it acknowledged at least one value."""
    seconds = max(1, math.floor(end - start))
    acked = defaultdict(set)
    for record in attempts:
        if record.get("raw"):
            acked[by(record)].add(math.floor(record["t1"] - start))
    return {row: round(len({s for s in secs if 0 <= s < seconds}) / seconds, 3)
            for row, secs in acked.items()}


# How long after a fault ends its effects are still counted as its own: a
# restarted server's election and the clients' reconnections.
RECOVERY_GRACE = 3.0


def availability_outside_faults(attempts, faults, start, end, grace=RECOVERY_GRACE):
    """Per path: the share of the run's whole seconds outside every injected
    fault (and `grace` seconds after it) in which it acknowledged a value, how
    many such seconds there were, and for the seconds in which it
    acknowledged nothing, which faults they overlapped (fault: seconds; a
    second outside every fault is counted as "none"). Events recorded beside
    the faults that are not faults (changes of stripes, policy swaps) are the
    product working, not faults, and count as outside. The silent seconds
    outside the faults are told apart (`silent_outside`): those the path
    spent waiting for one call's answer (`in_a_call`) and those between its
    calls; `call_s` is the path's call time outside the faults (median,
    90th percentile, max), which a second in a call is owed to."""
    seconds = max(1, math.floor(end - start))
    during = defaultdict(set)
    for fault in faults:
        if fault["fault"] not in FAULTS:
            continue
        first = max(0, math.floor(fault["start"] - start))
        last = min(seconds - 1, math.floor(fault["end"] + grace - start))
        for second in range(first, last + 1):
            during[second].add(fault["fault"])
    acked = defaultdict(set)
    calls = defaultdict(list)
    for record in attempts:
        acked[record["path"]]
        calls[record["path"]].append((record["t0"], record["t1"]))
        if record.get("raw"):
            acked[record["path"]].add(math.floor(record["t1"] - start))
    out = {}
    for path, secs in sorted(acked.items()):
        outside = [second for second in range(seconds) if second not in during]
        overlapped = defaultdict(int)
        for second in range(seconds):
            if second in secs:
                continue
            for fault in sorted(during.get(second, {"none"})):
                overlapped[fault] += 1
        spans = sorted(calls[path])
        silent = [second for second in outside if second not in secs]
        in_a_call = sum(1 for second in silent
                        if _in_a_call(spans, start + second, start + second + 1))
        times = sorted(t1 - t0 for t0, t1 in spans
                       if math.floor(t0 - start) not in during
                       and math.floor(t1 - start) not in during)
        out[path] = {
            "availability": round(sum(1 for second in outside if second in secs)
                                  / max(1, len(outside)), 3),
            "seconds": len(outside),
            "down_during": dict(sorted(overlapped.items())),
            "silent_outside": {"in_a_call": in_a_call, "between_calls": len(silent) - in_a_call},
            "call_s": ({"median": round(times[len(times) // 2], 3),
                        "p90": round(times[int(len(times) * 0.9)], 3),
                        "max": round(times[-1], 3)} if times else None),
        }
    return out


def _in_a_call(spans, begin, end):
    """Whether one call of `spans` ((t0, t1) sorted by t0) was under way
    from `begin` to `end` whole."""
    return any(t0 <= begin and t1 >= end for t0, t1 in spans if t0 <= begin)


def recovery(attempts, faults, window=3.0):
    """For each fault, how long after it ended every client path that was
    acknowledging values just before it (within `window` seconds)
    acknowledged one again (null: not before the run ended)."""
    acks = defaultdict(list)
    for record in attempts:
        if record.get("raw"):
            acks[record["path"]].append(record["t1"])
    for path, times in list(acks.items()):
        times.sort()
        gaps = sorted(b - a for a, b in zip(times, times[1:]))
        if not gaps or gaps[len(gaps) // 2] > SPARSE:
            del acks[path]  # too sparse to time a recovery by
    out = []
    for fault in faults:
        worst, worst_row = 0.0, None
        for row, times in acks.items():
            before = [t for t in times if fault["start"] - window <= t < fault["start"]]
            if not before:
                continue
            after = next((t for t in times if t >= fault["end"]), None)
            took = None if after is None else after - fault["end"]
            if took is None or (worst is not None and took > worst):
                worst, worst_row = took, row
            if took is None:
                break
        out.append({"fault": fault["fault"], "target": fault.get("target"), "start": fault["start"],
                    "end": fault["end"], "recovery_s": None if worst is None else round(worst, 3),
                    "slowest": worst_row})
    return out


def spanning(attempts, faults):
    """For each counter spanning two deployments (the autoinc one; the
    cyclic one, whose values are (timestamp, value) pairs; the snowflake
    one, whose values are its IDs; the periodic one, whose values are
    (period, value) pairs): its kind; the values acknowledged;
    those of attempts answered while its deployment us was down (inside a
    kill-db-us or partition-us fault: values of eu's lanes), the attempts
    answered then and how many of them got no values; and its changes of
    stripes made and failed (which need us too), and of those failed how many
    stopped half way (the rest were refused at their start, nothing changed):
    a change stopped half way is finished by the next take once us answers."""
    down = [(f["start"], f["end"]) for f in faults if f["fault"] in US_DOWN]
    out = {}
    for record in attempts:
        if record["kind"] not in SPANNING_KINDS:
            continue
        counter = out.setdefault(record["counter"], {
            "kind": record["kind"], "values": 0, "values_while_us_down": 0,
            "attempts_while_us_down": 0, "failed_while_us_down": 0, "restripes": 0,
            "restripes_failed": 0, "restripes_half_way": 0})
        values = len(record.get("raw") or [])
        counter["values"] += values
        if any(start <= record["t1"] <= end for start, end in down):
            counter["values_while_us_down"] += values
            counter["attempts_while_us_down"] += 1
            counter["failed_while_us_down"] += record["status"] != "ok"
    for fault in faults:
        if fault["fault"] == "restripe" and fault.get("target") in out:
            counter = out[fault["target"]]
            counter["restripes"] += 1
            counter["restripes_failed"] += fault.get("rc") != 0
            counter["restripes_half_way"] += (fault.get("rc") != 0
                                              and "stopped half way" in (fault.get("detail") or ""))
    return out


def _faults_around(faults, t, start, before=10.0, after=2.0):
    """The faults from `before` seconds before t to `after` after it, their
    times in seconds from the run's start."""
    return [f"{f['fault']}({f.get('target')}) +{f['start'] - start:.1f}..+{f['end'] - start:.1f} s"
            for f in faults if f["start"] - after <= t and f["end"] + before >= t]


def changes_left_half_way(changes_at_end, end):
    """The striped counters whose map was not live again, with no change
    under way, within the bound after the nemesis stopped (soak.py's
    settle_changes): a change of stripes that did not finish itself in
    time. Reported beside the verdict, not part of it."""
    return [{"counter": name, "t": end, "last": state.get("last", "")}
            for name, state in sorted((changes_at_end or {}).items())
            if state.get("settled_after_s") is None]


def check_series(records, register, audit):
    """The gap-free series against its register at the end: the audit
    found it whole (none missing: exit 0); no number was answered to two
    takes (none twice); every number a take was answered is confirmed with
    that take's reference (none lost or given to another). Returns a
    summary and the violations."""
    violations = []
    if audit is None:
        return {"checked": False}, violations
    if audit.get("rc") != 0:
        violations.append(("series-not-whole", {"t": None, "audit_exit": audit.get("rc"),
                                                "findings": audit.get("stderr", "")[-500:]}))
    confirmed = {}
    for row in register:
        if row.get("state") == "confirmed":
            confirmed[int(row["number"])] = row.get("reference")
    answered = {}
    counts = Counter(record["status"] for record in records)
    for record in sorted(records, key=lambda r: r["t1"]):
        if record["status"] != "ok":
            continue
        number = record["number"]
        if number in answered:
            violations.append(("series-twice", {"t": record["t1"], "number": number,
                                                "first": answered[number],
                                                "second": record["reference"]}))
            continue
        answered[number] = record["reference"]
        if confirmed.get(number) != record["reference"]:
            violations.append(("series-lost", {"t": record["t1"], "number": number,
                                               "reference": record["reference"],
                                               "register": confirmed.get(number)}))
    summary = {"checked": True, "numbers": len(register), "confirmed": len(confirmed),
               "answered": len(answered), "attempts": dict(sorted(counts.items())),
               "audit_exit": audit.get("rc")}
    return summary, violations


def check(attempts, lock_records, faults, start, end, shutdown=None, changes_at_end=None,
          series=None):
    """The verdict of one run, as result.json holds it. `series`: the gap-free
    series' takes, its register and its audit ((records, rows, audit)), if the
    run had one."""
    (rows, duplicates, order, gaps, lost, malformed, out_of_range,
     duplicate_ids) = check_values(attempts)
    locks, overlaps, fencing = check_locks(lock_records, faults)
    avail = availability(attempts, start, end)
    path_avail = availability(attempts, start, end, by=lambda record: record["path"])
    recoveries = recovery(attempts, faults)
    by_type = defaultdict(list)
    for item in recoveries:
        by_type[item["fault"]].append(item["recovery_s"])
    faults_summary = {}
    for fault, times in sorted(by_type.items()):
        known = sorted(t for t in times if t is not None)
        faults_summary[fault] = {
            "injected": len(times),
            "recovery_max_s": known[-1] if known else None,
            "recovery_median_s": known[(len(known) - 1) // 2] if known else None,
            "not_recovered": sum(1 for t in times if t is None),
        }
    for row, counts in rows.items():
        counts["availability"] = avail.get(row, 0.0)
    violations = ([("duplicate", d) for d in duplicates] + [("order", o) for o in order]
                  + [("malformed", m) for m in malformed]
                  + [("out-of-range", x) for x in out_of_range]
                  + [("duplicate-id", d) for d in duplicate_ids]
                  + [("lost", x) for x in lost] + [("overlap", o) for o in overlaps]
                  + [("fencing", f) for f in fencing])
    series_summary, series_violations = check_series(*(series or ([], [], None)))
    violations += series_violations
    first = None
    if violations:
        timed = [v for v in violations if v[1].get("t") is not None]
        what, example = min(timed, key=lambda v: v[1]["t"]) if timed else violations[0]
        first = {"violation": what, "example": example,
                 "faults_around": (_faults_around(faults, example["t"], start)
                                   if example.get("t") else [])}
    totals = {
        "attempted": sum(r["attempted"] for r in rows.values()),
        "acknowledged_values": sum(r["values"] for r in rows.values()),
        "ok": sum(r["ok"] for r in rows.values()),
        "fail": sum(r["fail"] for r in rows.values()),
        "unknown": sum(r["unknown"] for r in rows.values()),
    }
    return {
        "valid": not violations,
        "seconds": round(end - start, 1),
        "totals": totals,
        "duplicated": len(duplicates),
        "order_violations": len(order),
        "malformed": len(malformed),
        "out_of_range": len(out_of_range),
        "duplicated_ids": len(duplicate_ids),
        "lost": sum(x["missing"] - x["unanswered_bound"] for x in lost),
        "lock_overlaps": len(overlaps),
        "fencing_violations": len(fencing),
        "locks": locks,
        "series": series_summary,
        "gaps": gaps,
        "rows": dict(sorted(rows.items())),
        "path_availability": dict(sorted(path_avail.items())),
        "path_availability_outside_faults": availability_outside_faults(attempts, faults,
                                                                        start, end),
        "silent_rows": sorted(row for row, r in rows.items() if r["values"] == 0),
        "stalled": sorted({a["path"] for a in attempts if a.get("stalled")}),
        "stalled_calls": sum(1 for a in attempts if a.get("stalled")),
        "faults": faults_summary,
        "spanning": spanning(attempts, faults),
        "recoveries": recoveries,
        "shutdown_s": shutdown or {},
        "changes_at_end": changes_at_end or {},
        # Not a violation of a promise about values: a liveness finding,
        # reported (docs/RELIABILITY.md: the one-deployment striped counter
        # of seed 1 can still churn past the bound).
        "changes_left_half_way": changes_left_half_way(changes_at_end, end),
        "first_violation": first,
        "examples": {"duplicates": duplicates[:5], "order": order[:5], "lost": lost[:5],
                     "malformed": malformed[:5], "out_of_range": out_of_range[:5],
                     "duplicate_ids": duplicate_ids[:5],
                     "overlaps": overlaps[:5], "fencing": fencing[:5]},
    }


def read_jsonl(path):
    with open(path, encoding="utf-8") as file:
        for line in file:
            line = line.strip()
            if line:
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by a kill -9 of its writer


def load_series(out, meta):
    """The gap-free series' takes, register and audit of a run's directory
    (None: the run had no series)."""
    directory = os.path.join(out, "series")
    if not os.path.isdir(directory) or "series_audit" not in meta:
        return None
    records = []
    for name in sorted(os.listdir(directory)):
        if name.endswith(".jsonl"):
            records.extend(read_jsonl(os.path.join(directory, name)))
    register = []
    path = os.path.join(directory, "register.csv")
    if os.path.exists(path):
        with open(path, encoding="utf-8", newline="") as file:
            register = list(csv.DictReader(file))
    return records, register, meta["series_audit"]


def load_attempts(logs):
    """Every attempt the drivers of a `logs` directory recorded."""
    attempts = []
    for name in sorted(os.listdir(logs)):
        if name.endswith(".jsonl"):
            attempts.extend(read_jsonl(os.path.join(logs, name)))
    return attempts


def load(out):
    """Reads a run's directory: (attempts, lock records, faults, meta)."""
    attempts = load_attempts(os.path.join(out, "logs"))
    lock_records = []
    locks = os.path.join(out, "locks")
    if os.path.isdir(locks):
        for name in sorted(os.listdir(locks)):
            if name.endswith(".jsonl"):
                lock_records.extend(read_jsonl(os.path.join(locks, name)))
    faults_path = os.path.join(out, "faults.jsonl")
    faults = list(read_jsonl(faults_path)) if os.path.exists(faults_path) else []
    with open(os.path.join(out, "meta.json"), encoding="utf-8") as file:
        meta = json.load(file)
    return attempts, lock_records, faults, meta


def check_dir(out):
    attempts, lock_records, faults, meta = load(out)
    return check(attempts, lock_records, faults, meta["start"], meta["end"], meta.get("shutdown_s"),
                 meta.get("changes_at_end"), load_series(out, meta))
