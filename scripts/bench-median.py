#!/usr/bin/env python3
"""The median of several `idmint bench --json` runs, as one run.

    scripts/bench-median.py RUN.json RUN.json RUN.json > docs/bench-baseline.json

Each figure (mode and concurrency) of the output is the run whose ops/s is the
median of that figure's runs (the middle one; with an even count, the lower of
the two middle ones), whole, so that the output is a run `idmint bench
--baseline` reads like any other. A figure missing from some runs is the
median of those that have it. One run on this shared machine moves by 15-35%
from the next (docs/BENCHMARKS.md); the median of three is the steadier
baseline.
"""

import json
import sys


def median_run(runs):
    figures = {}
    for run in runs:
        for result in run["results"]:
            figures.setdefault((result["mode"], result["concurrency"]), []).append(result)
    results = []
    for key in sorted(figures, key=lambda k: (k[1], first_seen(runs, k))):
        ordered = sorted(figures[key], key=lambda r: r["ops_per_sec"])
        results.append(ordered[(len(ordered) - 1) // 2])
    return {"results": results}


def first_seen(runs, key):
    """Where figure `key` first appears in the runs, to keep their order."""
    position = 0
    for run in runs:
        for result in run["results"]:
            if (result["mode"], result["concurrency"]) == key:
                return position
            position += 1
    return position


def main(paths):
    if len(paths) < 2:
        print("usage: bench-median.py RUN.json RUN.json [RUN.json ...]", file=sys.stderr)
        return 2
    runs = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                run = json.load(f)
            run["results"]
        except (OSError, ValueError, KeyError, TypeError) as error:
            print(f"bench-median.py: {path}: not a bench run ({error})", file=sys.stderr)
            return 2
        runs.append(run)
    json.dump(median_run(runs), sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
