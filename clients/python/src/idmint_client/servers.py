"""Requests with failover, in the caller's thread (the blocking flavour)."""

from __future__ import annotations

import threading
from typing import List, Optional, Set

from .errors import ClientClosedError
from .failover import Health, InstanceHealth
from .http import Exchange, NoAnswer
from .settings import Settings


class Servers:
    """GETs, and POSTs whose retry is safe, to some instance (see :mod:`.failover`)."""

    def __init__(self, settings: Settings, what: str) -> None:
        self.settings = settings
        self.what = what
        self.health = Health(settings, what)
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._exchanges: Set[Exchange] = set()

    def closed_error(self) -> ClientClosedError:
        return ClientClosedError(f"the idmint client of {self.what} is closed")

    def call(self, method: str, path: str, body: Optional[str] = None) -> str:
        """The body of the first success; raises :class:`IdmintError` or, once
        closed, :class:`ClientClosedError`."""
        attempt = self.health.attempt()
        while True:
            if self._closed.is_set():
                raise self.closed_error()
            step = attempt.step()
            if isinstance(step, float):
                self.settings.clock.sleep(step, self._closed)
                continue
            exchange = Exchange(self.settings, step, method, path, body)
            with self._lock:
                self._exchanges.add(exchange)
            try:
                status, text = exchange.run()
            except NoAnswer as why:
                if self._closed.is_set():
                    raise self.closed_error() from None
                attempt.no_answer(step, str(why))
                continue
            finally:
                with self._lock:
                    self._exchanges.discard(exchange)
            answer = attempt.answer(step, status, text, post=body is not None)
            if answer is not None:
                return answer

    def close(self) -> None:
        """Ends the requests in progress (their callers get ClientClosedError) and any later one."""
        self._closed.set()
        with self._lock:
            exchanges = list(self._exchanges)
        for exchange in exchanges:
            exchange.abort()

    def report(self) -> List[InstanceHealth]:
        return self.health.report()
