#!/usr/bin/env python3
"""Values/s and IDs/s through the Python client against raw HTTP from Python,
one thread each, for docs/BENCHMARKS.md. Needs a running `idmint serve` and
two counters: a segment (or autoinc) counter for values and any counter for
IDs.

    scripts/client-bench.py --server http://127.0.0.1:8080/ --values tickets --ids orders

Prints one JSON object: per mode, values (or IDs) per second over --seconds.
"""

import argparse
import http.client
import json
import os
import sys
import time
from urllib.parse import urlsplit

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "clients", "python", "src"))

from idmint_client import IdClient, ValueClient  # noqa: E402


def timed(seconds, take):
    """How many `take()` calls returned per second for `seconds`."""
    count, started = 0, time.perf_counter()
    deadline = started + seconds
    while time.perf_counter() < deadline:
        for _ in range(100):
            take()
        count += 100
    return count / (time.perf_counter() - started)


def raw(server, path):
    """A keep-alive connection's GET of `path`, answer body as text."""
    parts = urlsplit(server)
    connection = http.client.HTTPConnection(parts.hostname, parts.port)

    def get():
        connection.request("GET", path, headers={"Accept": "text/plain"})
        return connection.getresponse().read().decode()
    return get


def raw_values(server, counter, batch):
    """Values handed out from `ranges` answers, fetched as they run out."""
    get = raw(server, f"/v1/counters/{counter}/ranges?count={batch}")
    pending = []

    def take():
        if not pending:
            for line in get().splitlines():
                first, last = map(int, line.split())
                pending.extend(range(last, first - 1, -1))
        return pending.pop()
    return take


def raw_ids(server, counter, batch):
    get = raw(server, f"/v1/counters/{counter}/ids?count={batch}")
    pending = []

    def take():
        if not pending:
            pending.extend(reversed(get().splitlines()))
        return pending.pop()
    return take


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--values", required=True, help="a segment or autoinc counter")
    parser.add_argument("--ids", required=True, help="a counter the server formats")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--value-batch", type=int, default=10_000)
    parser.add_argument("--id-batch", type=int, default=1000)
    args = parser.parse_args()
    results = {}
    with ValueClient([args.server], args.values, batch=args.value_batch) as values:
        results["client_values"] = timed(args.seconds, values.next)
    results["raw_values"] = timed(args.seconds, raw_values(args.server, args.values,
                                                           args.value_batch))
    with IdClient([args.server], args.ids, batch=args.id_batch) as ids:
        results["client_ids"] = timed(args.seconds, ids.next)
    results["raw_ids"] = timed(args.seconds, raw_ids(args.server, args.ids, args.id_batch))
    results["client_over_raw_values"] = results["client_values"] / results["raw_values"]
    results["client_over_raw_ids"] = results["client_ids"] / results["raw_ids"]
    print(json.dumps({key: round(value, 3) for key, value in results.items()}))


if __name__ == "__main__":
    main()
