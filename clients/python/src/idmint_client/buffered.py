"""The blocking clients' buffer: batches fetched in a background thread,
items handed out from memory under a lock held for bookkeeping only.

At most one fetch is in flight per client. The taker of the prefetch position
starts it in the background; a taker that finds every item taken waits for the
fetch in flight (starting it if there is none), outside the lock and for a
bounded time. A fetch's failure reaches the takers waiting on it and no one
else: a background fetch that failed leaves nothing behind, and the next taker
that needs items starts a new one.
"""

from __future__ import annotations

import threading
from typing import Callable, Generic, List, Optional, Sequence, TypeVar

from .batches import Batches
from .errors import ClientClosedError, IdmintError
from .failover import InstanceHealth
from .servers import Servers
from .settings import Settings, show

T = TypeVar("T")


class Hooks:
    """What the client's own tests watch; the default does nothing."""

    def waiting(self) -> None:
        """A taker is about to wait for the fetch in flight (the lock is not held)."""

    def landed(self, error: Optional[BaseException]) -> None:
        """A fetch ended: ``error`` is None when it brought items."""


class _Fetch:
    """One fetch: its end, and its error if it failed; settled once."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: Optional[BaseException] = None
        self._lock = threading.Lock()

    def settle(self, error: Optional[BaseException]) -> bool:
        with self._lock:
            if self.done.is_set():
                return False
            self.error = error
            self.done.set()
            return True


class Buffered(Generic[T]):
    """The shared part of :class:`ValueClient` and :class:`IdClient`."""

    def _begin(self, settings: Settings, path: str, parse: Callable[[str, str], Sequence[Sequence[T]]]) -> None:
        self.what = f"counter '{settings.name}'"
        self._servers = Servers(settings, self.what)
        self._path = path
        self._parse = parse
        self._lock = threading.Lock()
        self._batches: Batches[T] = Batches(settings.prefetch_share)
        self._in_flight: Optional[_Fetch] = None
        self._closed = False
        #: A taker's wait for a fetch: its deadline and one request past it.
        self._wait_limit = settings.deadline + settings.request_timeout + 1.0
        self._hooks = Hooks()

    def _take(self) -> T:
        while True:
            with self._lock:
                if self._closed:
                    raise self._servers.closed_error()
                taken = self._batches.take()
                if taken is not None:
                    item, prefetch = taken
                    if prefetch and self._in_flight is None:
                        self._start()
                    return item
                fetch = self._in_flight or self._start()
            self._hooks.waiting()
            self._await(fetch)

    def _start(self) -> _Fetch:
        """Starts the one fetch, in a thread of its own; the lock is held."""
        fetch = _Fetch()
        self._in_flight = fetch
        threading.Thread(target=self._run, args=(fetch,), name=f"idmint fetch of {self.what}", daemon=True).start()
        return fetch

    def _run(self, fetch: _Fetch) -> None:
        batches: Sequence[Sequence[T]] = ()
        error: Optional[BaseException] = None
        try:
            batches = self._parse(self._servers.call("GET", self._path), self.what)
        except BaseException as failed:  # noqa: B902 - handed to the takers waiting
            error = failed
        with self._lock:
            if self._in_flight is fetch:
                self._in_flight = None
            # A failure is not kept: it reaches the takers waiting on this fetch only.
            if error is None and not self._closed:
                self._batches.add(batches)
        # Settled after the items are queued, so that a woken taker finds them.
        if fetch.settle(error):
            self._hooks.landed(error)

    def _await(self, fetch: _Fetch) -> None:
        """Waits for ``fetch``, bounded; its failure is this caller's."""
        if not fetch.done.wait(self._wait_limit):
            raise IdmintError(
                0,
                f"no values of {self.what} within {show(self._wait_limit)}; "
                "the fetch goes on, and the next caller waits for it",
            )
        error = fetch.error
        if isinstance(error, (IdmintError, ClientClosedError)):
            raise error.again()
        if error is not None:
            raise IdmintError(0, f"fetching values of {self.what} failed: {error!r}") from error

    def health(self) -> List[InstanceHealth]:
        """Per instance, for diagnostics: answers, failures, the set-aside in force."""
        return self._servers.report()

    def close(self) -> None:
        """Stops the client: the fetch in flight is abandoned (its waiting callers
        get :class:`ClientClosedError`), no new one starts, and every later call
        raises :class:`ClientClosedError`. Items fetched and not taken are gaps."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            abandoned, self._in_flight = self._in_flight, None
            self._batches.clear()
        self._servers.close()
        if abandoned is not None and abandoned.settle(self._servers.closed_error()):
            self._hooks.landed(abandoned.error)
