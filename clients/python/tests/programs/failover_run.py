"""Takes from real ``idmint serve`` instances in many threads while the test
that runs it kills, stops, cuts and restarts them; run by
tests/python_client.rs. Arguments: MODE (``values`` or ``ids``), counter,
threads, items per thread and phase, batch, then the instances' URLs.

Phases, the threads joined between them so that the test acts at a point the
program is known to be at. Before each phase the program prints ``paused N``
and reads a command from stdin: ``go [failed=I,J] [answered=K]`` runs a phase
in which every thread takes its items and goes on until each instance named
``failed`` has failed, and each named ``answered`` has answered, since the
phase began (instances by position, from 0); ``end`` ends. No call may fail.
Then it checks that nothing came twice and prints ``taken ok N`` and
``health A/F A/F ...`` (answers/failures per instance)."""

from __future__ import annotations

import sys
import threading
import time
from typing import Callable, List, Sequence, Union

from idmint_client import IdClient, ValueClient

EVENT_SECONDS = 30.0


def phase(client: Union[ValueClient, IdClient], taken: List[List[object]], count: int,
          done: Callable[[], bool]) -> None:  # fmt: skip
    start = threading.Barrier(len(taken))
    began = time.monotonic()
    errors: List[BaseException] = []

    def run(mine: List[object]) -> None:
        try:
            start.wait(EVENT_SECONDS)
            i = 0
            while i < count or not done():
                mine.append(client.next())  # an exception here fails the run
                i += 1
                if i >= count and i % 256 == 0 and time.monotonic() - began > EVENT_SECONDS:
                    raise AssertionError(f"the phase's event did not happen within {EVENT_SECONDS} s: "
                                         f"{client.health()}")  # fmt: skip
        except BaseException as error:
            errors.append(error)

    workers = [threading.Thread(target=run, args=(mine,)) for mine in taken]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if errors:
        raise errors[0]


def condition(client: Union[ValueClient, IdClient], words: Sequence[str]) -> Callable[[], bool]:
    before = client.health()
    failed: List[int] = []
    answered: List[int] = []
    for word in words:
        name, _, indexes = word.partition("=")
        (failed if name == "failed" else answered).extend(int(i) for i in indexes.split(","))

    def done() -> bool:
        now = client.health()
        return all(now[i].failures > before[i].failures for i in failed) and all(
            now[i].answers > before[i].answers for i in answered
        )

    return done


def main() -> None:
    mode, counter = sys.argv[1], sys.argv[2]
    threads, per_phase, batch = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    servers = sys.argv[6:]
    options = dict(batch=batch, set_aside=(0.1, 1.0), connect_timeout=1.0, request_timeout=1.0, deadline=20.0)
    client: Union[ValueClient, IdClient]
    client = ValueClient(servers, counter, **options) if mode == "values" else IdClient(servers, counter, **options)  # type: ignore[arg-type]
    taken: List[List[object]] = [[] for _ in range(threads)]
    number = 0
    with client:
        while True:
            number += 1
            print(f"paused {number}", flush=True)
            command = sys.stdin.readline().split()
            if not command or command[0] == "end":
                break
            assert command[0] == "go", f"expected go or end on stdin, not {command}"
            phase(client, taken, per_phase, condition(client, command[1:]))
        health = client.health()
    items = [item for mine in taken for item in mine]
    unique = set(items)
    if len(unique) != len(items):
        raise SystemExit(f"{len(items) - len(unique)} items handed out twice")
    print(f"taken ok {len(items)}")
    print("health " + " ".join(f"{h.answers}/{h.failures}" for h in health))


if __name__ == "__main__":
    main()
