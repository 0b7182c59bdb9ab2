"""The clock set-asides, backoffs and deadlines are measured on.

The real one is :func:`time.monotonic`; the client's own tests put in one
that moves only when a backoff waits or the test moves it, so that the
failover rules are checked step by step without sleeping. HTTP timeouts and
a taker's wait for a fetch always run on real time.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds from an arbitrary origin."""

    def sleep(self, seconds: float, interrupt: threading.Event) -> None:
        """Waits ``seconds``, or until ``interrupt`` is set."""

    async def asleep(self, seconds: float) -> None:
        """Waits ``seconds`` in an event loop."""


class RealClock:
    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float, interrupt: threading.Event) -> None:
        interrupt.wait(max(0.0, seconds))

    async def asleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


REAL = RealClock()
