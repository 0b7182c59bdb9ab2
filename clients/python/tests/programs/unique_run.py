"""Takes from real ``idmint serve`` instances in many threads (and tasks) at
once; run by tests/python_client.rs. Arguments: the instances' URLs (comma
separated), threads, items per thread, then specs ``MODE:COUNTER``:

- ``values``, ``ids``, ``uuids``: a ValueClient, IdClient, IdClient.next_uuid()
  shared by THREADS threads, started together at a threading.Barrier;
- ``async-values``, ``async-ids``: the asyncio flavour, THREADS tasks;
- ``missing``: a counter that does not exist: the 404 must come at once.

Items of one counter must never come twice, across every spec that takes from
it. Prints ``MODE:COUNTER ok N`` per spec (``missing:NAME ok 404``)."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
import uuid
from typing import Callable, Dict, List, Set

from idmint_client import IdClient, IdmintError, ValueClient
from idmint_client.aio import AsyncIdClient, AsyncValueClient


def in_threads(threads: int, per_thread: int, take: Callable[[], object]) -> List[object]:
    start = threading.Barrier(threads)
    taken: List[List[object]] = [[] for _ in range(threads)]
    errors: List[BaseException] = []

    def run(index: int) -> None:
        try:
            start.wait(30)
            mine = taken[index]
            for _ in range(per_thread):
                mine.append(take())
        except BaseException as error:
            errors.append(error)

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if errors:
        raise errors[0]
    return [item for items in taken for item in items]


async def in_tasks(tasks: int, per_task: int, take: Callable[[], "asyncio.Future[object]"]) -> List[object]:
    async def run() -> List[object]:
        return [await take() for _ in range(per_task)]

    results = await asyncio.gather(*(run() for _ in range(tasks)))
    return [item for items in results for item in items]


def main() -> None:
    servers = sys.argv[1].split(",")
    threads, per_thread = int(sys.argv[2]), int(sys.argv[3])
    seen: Dict[str, Set[object]] = {}
    for spec in sys.argv[4:]:
        mode, counter = spec.split(":", 1)
        if mode == "missing":
            started = time.monotonic()
            with ValueClient(servers, counter, deadline=60) as missing:
                try:
                    missing.next()
                    raise SystemExit(f"{spec}: a counter that does not exist gave a value")
                except IdmintError as error:
                    assert error.kind == "unknown-counter", error
                    assert time.monotonic() - started < 30, "the 404 came only at the deadline"
                    print(f"{spec} ok {error.status}", flush=True)
            continue
        items: List[object]
        if mode == "values":
            with ValueClient(servers, counter, batch=500) as values:
                items = in_threads(threads, per_thread, values.next)
        elif mode in ("ids", "uuids"):
            with IdClient(servers, counter, batch=100) as ids:
                items = in_threads(threads, per_thread, ids.next_uuid if mode == "uuids" else ids.next)
            if mode == "uuids":
                assert all(isinstance(i, uuid.UUID) and i.version == 7 for i in items), "not UUIDv7s"
        elif mode == "async-values":
            async def take_values() -> List[object]:
                async with AsyncValueClient(servers, counter, batch=500) as client:
                    return await in_tasks(threads, per_thread, client.next)  # type: ignore[arg-type]

            items = asyncio.run(take_values())
        elif mode == "async-ids":
            async def take_ids() -> List[object]:
                async with AsyncIdClient(servers, counter, batch=100) as client:
                    return await in_tasks(threads, per_thread, client.next)  # type: ignore[arg-type]

            items = asyncio.run(take_ids())
        else:
            raise SystemExit(f"unknown mode {mode}")
        before = seen.setdefault(counter, set())
        fresh = set(items)
        if len(fresh) != len(items):
            raise SystemExit(f"{spec}: {len(items) - len(fresh)} items handed out twice")
        twice = before & fresh
        if twice:
            raise SystemExit(f"{spec}: {sorted(map(str, twice))[:5]} handed out twice across clients")
        before |= fresh
        print(f"{spec} ok {len(items)}", flush=True)


if __name__ == "__main__":
    main()
