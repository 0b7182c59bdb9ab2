"""What a buffered client hands out, and how answers become batches.

:class:`Batches` is bookkeeping only, without a lock of its own: the blocking
clients hold theirs around it, the asyncio clients run it in their event loop.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Deque, Generic, Iterable, List, Optional, Sequence, Tuple, TypeVar

from .errors import IdmintError

T = TypeVar("T")


class Batches(Generic[T]):
    """The batch being handed out (a ``range`` of values, or a list of IDs) and
    those queued after it; the position whose taker starts the next fetch: where
    ``prefetch_share`` of the last fetch is left, counting what is queued."""

    def __init__(self, prefetch_share: float) -> None:
        self._share = prefetch_share
        self._batch: Sequence[T] = ()
        self._next = 0
        self._prefetch_at = -1
        self._queued: Deque[Sequence[T]] = deque()
        self._queued_items = 0
        self._last_fetched = 0

    def take(self) -> Optional[Tuple[T, bool]]:
        """The next item, and whether its taker should start the next fetch;
        None when every item fetched is taken."""
        while True:
            position = self._next
            if position < len(self._batch):
                self._next = position + 1
                return self._batch[position], position == self._prefetch_at
            if not self._queued:
                return None
            self._install()

    def add(self, batches: Iterable[Sequence[T]]) -> None:
        """Queues what a fetch brought."""
        total = 0
        for batch in batches:
            if len(batch) > 0:
                self._queued.append(batch)
                total += len(batch)
        self._queued_items += total
        self._last_fetched = total

    def clear(self) -> None:
        self._batch, self._next, self._prefetch_at = (), 0, -1
        self._queued.clear()
        self._queued_items = 0

    def _install(self) -> None:
        batch = self._queued.popleft()
        self._queued_items -= len(batch)
        threshold = math.ceil(self._share * self._last_fetched)
        prefetch_at = max(0, len(batch) + self._queued_items - threshold)
        self._batch, self._next = batch, 0
        self._prefetch_at = prefetch_at if prefetch_at < len(batch) else -1


def parse_runs(body: str, what: str) -> List[range]:
    """``FIRST LAST`` per line (the ``ranges`` route); anything else is the server's mistake, named."""
    runs: List[range] = []
    for line in body.split("\n"):
        if not line:
            continue
        first_text, _, last_text = line.partition(" ")
        try:
            first, last = int(first_text), int(last_text)
            if last < first:
                raise ValueError("the run ends before it starts")
        except ValueError as error:
            raise IdmintError(200, f"not a run of values of {what}: {line!r} ({error})") from None
        runs.append(range(first, last + 1))
    if not runs:
        raise IdmintError(200, f"an answer with no values of {what}")
    return runs


def parse_ids(body: str, what: str) -> List[List[str]]:
    """One ID per line (the ``ids`` route), as one batch."""
    ids = [line.rstrip("\r") for line in body.split("\n") if line.rstrip("\r")]
    if not ids:
        raise IdmintError(200, f"an answer with no IDs of {what}")
    return [ids]
