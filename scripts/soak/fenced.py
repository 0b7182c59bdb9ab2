"""The COMMAND of the soak's `lock run` holders: writes to a fenced store.

    python3 fenced.py LOCKS_DIR LOCK      (IDMINT_LOCK_TOKEN from lock run)

The store is LOCKS_DIR/LOCK.jsonl, guarded by flock: a write is accepted
only if its token is at least the highest accepted so far (kept in
LOCK.max), as a fenced resource does (docs/locks.md). Each write is a line
{"lock", "token", "event": "start"|"beat"|"end", "t", "accepted", "pid"}:
the COMMAND's own timestamps, from which the checker finds overlaps. A
refused write ends the COMMAND (exit 1): a stale holder stops there.
"""

import fcntl
import json
import os
import random
import sys
import time


def write(directory, lock, token, event):
    path = os.path.join(directory, f"{lock}.jsonl")
    with open(path, "a+", encoding="utf-8") as store:
        fcntl.flock(store, fcntl.LOCK_EX)
        try:
            max_path = os.path.join(directory, f"{lock}.max")
            try:
                with open(max_path, encoding="utf-8") as file:
                    highest = int(file.read().strip() or 0)
            except FileNotFoundError:
                highest = 0
            accepted = token >= highest
            if accepted and token > highest:
                with open(max_path, "w", encoding="utf-8") as file:
                    file.write(str(token))
            store.write(json.dumps({"lock": lock, "token": token, "event": event, "t": time.time(),
                                    "accepted": accepted, "pid": os.getpid()}) + "\n")
            store.flush()
        finally:
            fcntl.flock(store, fcntl.LOCK_UN)
    return accepted


def main():
    directory, lock = sys.argv[1], sys.argv[2]
    token = int(os.environ["IDMINT_LOCK_TOKEN"])
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
