"""The COMMAND of the soak's `lock run` holders: writes to a fenced store.

    python3 fenced.py LOCKS_DIR LOCK      (IDMINT_LOCK_TOKEN from lock run)

The store is LOCKS_DIR/LOCK.jsonl, guarded by flock: a write is accepted
only if its token is at least the highest accepted so far (kept in
LOCK.max), as a fenced resource does (docs/locks.md); a shared holder's (a
semaphore's permit, a reader: IDMINT_LOCK_MODE=shared), which others hold
beside it, only if it is at least the highest exclusive holder's (LOCK.xmax).
Each write is a line {"lock", "token", "event": "start"|"beat"|"end", "t",
"accepted", "pid", "mode", "permits"}: the COMMAND's own timestamps, from
which the checker finds overlaps. A refused write ends the COMMAND (exit 1):
a stale holder stops there.
"""

import fcntl
import json
import os
import random
import sys
import time


def _read(path):
    try:
        with open(path, encoding="utf-8") as file:
            return int(file.read().strip() or 0)
    except FileNotFoundError:
        return 0


def _write(path, value):
    with open(path, "w", encoding="utf-8") as file:
        file.write(str(value))


def store(directory, lock, token, event, mode="exclusive", permits=0):
    path = os.path.join(directory, f"{lock}.jsonl")
    with open(path, "a+", encoding="utf-8") as store:
        fcntl.flock(store, fcntl.LOCK_EX)
        try:
            max_path = os.path.join(directory, f"{lock}.max")
            xmax_path = os.path.join(directory, f"{lock}.xmax")
            highest = _read(max_path)
            if mode == "shared":
                accepted = token >= _read(xmax_path)
            else:
                accepted = token >= highest
                if accepted and token > _read(xmax_path):
                    _write(xmax_path, token)
            if accepted and token > highest:
                _write(max_path, token)
            store.write(json.dumps({"lock": lock, "token": token, "event": event, "t": time.time(),
                                    "accepted": accepted, "pid": os.getpid(), "mode": mode,
                                    "permits": permits}) + "\n")
            store.flush()
        finally:
            fcntl.flock(store, fcntl.LOCK_UN)
    return accepted


def main():
    directory, lock = sys.argv[1], sys.argv[2]
    token = int(os.environ["IDMINT_LOCK_TOKEN"])
    mode = os.environ.get("IDMINT_LOCK_MODE", "exclusive")
    permits = int(os.environ.get("IDMINT_LOCK_PERMITS", "0"))

    def write(directory, lock, token, event):
        return store(directory, lock, token, event, mode, permits)

    if not write(directory, lock, token, "start"):
        sys.exit(1)
    # Mostly short holds; one in six outlasts the soak's 5 s TTL, so that
    # only renewals keep it (a lock run that did not renew would let the
    # next holder in while this one writes).
    hold = random.uniform(5.5, 7.0) if random.random() < 1 / 6 else random.uniform(0.3, 1.2)
    end = time.monotonic() + hold
    while time.monotonic() < end:
        time.sleep(0.05)
        if not write(directory, lock, token, "beat"):
            sys.exit(1)
    if not write(directory, lock, token, "end"):
        sys.exit(1)


if __name__ == "__main__":
    main()
