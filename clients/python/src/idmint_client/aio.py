"""The asyncio flavour: :class:`AsyncValueClient`, :class:`AsyncIdClient`,
:class:`AsyncSeriesClient`, with the blocking clients' behaviour.

Each HTTP exchange runs in a worker thread (:func:`asyncio.to_thread`), the
same :class:`~idmint_client.http.Exchange` the blocking clients use: the
standard library has no HTTP client for asyncio, and one exchange per batch is
rare enough that a thread per exchange costs nothing worth saving. Everything
else (the buffer, the one fetch in flight, the failover rounds and their
backoffs) runs in the event loop, without locks: a client belongs to the loop
it is first used in.
"""

from __future__ import annotations

import asyncio
import uuid
from types import TracebackType
from typing import Callable, Generic, List, Optional, Sequence, Set, Type, TypeVar

from .batches import Batches
from .buffered import Hooks
from .clients import as_uuid
from .construct import IdArgs, SeriesArgs, ValueArgs
from .errors import ClientClosedError, IdmintError
from .failover import Health, InstanceHealth
from .http import Exchange, NoAnswer
from .series import Reservation, SeriesCalls, Settled, Ttl
from .settings import Settings, show

__all__ = ["AsyncValueClient", "AsyncIdClient", "AsyncSeriesClient"]

T = TypeVar("T")
_Self = TypeVar("_Self", bound="_AsyncClosing")


class _AsyncClosing:
    async def aclose(self) -> None:
        raise NotImplementedError

    async def __aenter__(self: _Self) -> _Self:
        return self

    async def __aexit__(
        self, kind: Optional[Type[BaseException]], error: Optional[BaseException], trace: Optional[TracebackType]
    ) -> None:
        await self.aclose()


class AsyncServers:
    """:class:`~idmint_client.servers.Servers` for an event loop."""

    def __init__(self, settings: Settings, what: str) -> None:
        self.settings = settings
        self.what = what
        self.health = Health(settings, what)
        self._closed = False
        self._exchanges: Set[Exchange] = set()

    def closed_error(self) -> ClientClosedError:
        return ClientClosedError(f"the idmint client of {self.what} is closed")

    async def call(self, method: str, path: str, body: Optional[str] = None) -> str:
        attempt = self.health.attempt()
        while True:
            if self._closed:
                raise self.closed_error()
            step = attempt.step()
            if isinstance(step, float):
                await self.settings.clock.asleep(step)
                continue
            exchange = Exchange(self.settings, step, method, path, body)
            self._exchanges.add(exchange)
            try:
                status, text = await asyncio.to_thread(exchange.run)
            except NoAnswer as why:
                if self._closed:
                    raise self.closed_error() from None
                attempt.no_answer(step, str(why))
                continue
            finally:
                self._exchanges.discard(exchange)
            answer = attempt.answer(step, status, text, post=body is not None)
            if answer is not None:
                return answer

    def close(self) -> None:
        self._closed = True
        for exchange in list(self._exchanges):
            exchange.abort()


class _Fetch:
    def __init__(self) -> None:
        self.done = asyncio.Event()
        self.error: Optional[BaseException] = None
        self.task: Optional["asyncio.Task[None]"] = None

    def settle(self, error: Optional[BaseException]) -> bool:
        if self.done.is_set():
            return False
        self.error = error
        self.done.set()
        return True


class AsyncBuffered(Generic[T]):
    """The buffer of :mod:`idmint_client.buffered`, in an event loop: the fetch
    is a task, takers wait on it (bounded), its failure is theirs only."""

    def _begin(self, settings: Settings, path: str, parse: Callable[[str, str], Sequence[Sequence[T]]]) -> None:
        self.what = f"counter '{settings.name}'"
        self._servers = AsyncServers(settings, self.what)
        self._path = path
        self._parse = parse
        self._batches: Batches[T] = Batches(settings.prefetch_share)
        self._in_flight: Optional[_Fetch] = None
        self._closed = False
        self._wait_limit = settings.deadline + settings.request_timeout + 1.0
        self._hooks = Hooks()

    async def _take(self) -> T:
        while True:
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
            await self._await(fetch)

    def _start(self) -> _Fetch:
        fetch = _Fetch()
        self._in_flight = fetch
        fetch.task = asyncio.get_running_loop().create_task(self._run(fetch))
        return fetch

    async def _run(self, fetch: _Fetch) -> None:
        batches: Sequence[Sequence[T]] = ()
        error: Optional[BaseException] = None
        try:
            batches = self._parse(await self._servers.call("GET", self._path), self.what)
        except asyncio.CancelledError:
            error = self._servers.closed_error()
        except Exception as failed:
            error = failed
        if self._in_flight is fetch:
            self._in_flight = None
        if error is None and not self._closed:
            self._batches.add(batches)
        if fetch.settle(error):
            self._hooks.landed(error)

    async def _await(self, fetch: _Fetch) -> None:
        try:
            await asyncio.wait_for(fetch.done.wait(), self._wait_limit)
        except asyncio.TimeoutError:
            raise IdmintError(
                0,
                f"no values of {self.what} within {show(self._wait_limit)}; "
                "the fetch goes on, and the next caller waits for it",
            ) from None
        error = fetch.error
        if isinstance(error, (IdmintError, ClientClosedError)):
            raise error.again()
        if error is not None:
            raise IdmintError(0, f"fetching values of {self.what} failed: {error!r}") from error

    def health(self) -> List[InstanceHealth]:
        return self._servers.health.report()

    async def aclose(self) -> None:
        """As the blocking ``close()``: the fetch in flight is abandoned, its
        waiting callers and every later call get :class:`ClientClosedError`."""
        if self._closed:
            return
        self._closed = True
        abandoned, self._in_flight = self._in_flight, None
        self._batches.clear()
        self._servers.close()
        if abandoned is not None:
            if abandoned.settle(self._servers.closed_error()):
                self._hooks.landed(abandoned.error)
            if abandoned.task is not None:
                abandoned.task.cancel()


class AsyncValueClient(AsyncBuffered[int], ValueArgs, _AsyncClosing):
    """:class:`~idmint_client.ValueClient` for asyncio: ``await client.next()``."""

    async def next(self) -> int:
        return await self._take()


class AsyncIdClient(AsyncBuffered[str], IdArgs, _AsyncClosing):
    """:class:`~idmint_client.IdClient` for asyncio: ``await client.next()``."""

    async def next(self) -> str:
        return await self._take()

    async def next_uuid(self) -> uuid.UUID:
        return as_uuid(await self.next(), self.what)


class AsyncSeriesClient(SeriesArgs, _AsyncClosing):
    """:class:`~idmint_client.SeriesClient` for asyncio."""

    def _begin(self, settings: Settings) -> None:
        self._calls = SeriesCalls(settings)
        self._servers = AsyncServers(settings, self._calls.what)

    async def reserve(self, ttl: Ttl, client_key: Optional[str] = None) -> Reservation:
        path, body = self._calls.reserve(ttl, client_key)
        return self._calls.reservation(await self._servers.call("POST", path, body))

    async def confirm(self, reservation: Reservation, reference: str) -> Settled:
        path, body = self._calls.settle(reservation, "confirm", "reference", reference)
        return self._calls.settled(await self._servers.call("POST", path, body))

    async def void(self, reservation: Reservation, reason: str) -> Settled:
        path, body = self._calls.settle(reservation, "void", "reason", reason)
        return self._calls.settled(await self._servers.call("POST", path, body))

    def health(self) -> List[InstanceHealth]:
        return self._servers.health.report()

    async def aclose(self) -> None:
        self._servers.close()

