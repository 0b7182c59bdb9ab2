"""The failover rules, apart from how requests are sent (threads or asyncio).

Each call asks the first instance (in the order given: the first is the
preferred one) that is not set aside and not yet asked in this round. An
instance that gives no answer, or answers 408, 429 or a 5xx (but 500
``policy``), is set aside for ``set_aside[0]``, doubled at each failure in a
row up to ``set_aside[1]``, and the call goes on at once with the next. An
answer every instance would give (another 4xx: 401, 403, 404, 409 ...; 500
``policy``) ends the call at once. Once every instance failed in a round (or
all are set aside), the call waits a jittered backoff and goes round again,
until its deadline (no request starts after it); then it fails with an
:class:`IdmintError` naming each instance and why. When every instance is set
aside at the start of a round, the one whose set-aside ends first is asked
anyway: waiting for it would only make the caller wait longer.
"""

from __future__ import annotations

import random
import re
import threading
from dataclasses import dataclass
from typing import Dict, List, Optional, Set, Union

from .errors import IdmintError
from .settings import Instance, Settings, show

#: The error kinds of a 5xx that every instance would answer: the policy failed
#: on the values taken (asking another takes fresh values only to fail again).
SHARED_FAILURES = frozenset({"policy"})

_ERROR_KIND = re.compile(r'\A\s*\{\s*"error"\s*:\s*"([a-z-]+)"')


def error_kind(body: str) -> str:
    """The ``error`` of a JSON error body (the service writes it first), or ""."""
    match = _ERROR_KIND.match(body or "")
    return match.group(1) if match else ""


def is_instance_failure(status: int, body: str) -> bool:
    """Whether an answer other than a success is this instance's, worth asking another."""
    if status in (408, 429):
        return True
    return status >= 500 and error_kind(body) not in SHARED_FAILURES


@dataclass(frozen=True)
class InstanceHealth:
    """One instance as the client sees it: for tests and diagnostics."""

    url: str
    answers: int
    failures: int
    #: Seconds it is still set aside for (0: it may be asked).
    set_aside_for: float


class _State:
    def __init__(self) -> None:
        self.failures_in_a_row = 0
        self.set_aside_until = 0.0
        self.set_aside_for = 0.0
        self.last_error = ""
        self.answers = 0
        self.failures = 0


class Health:
    """The instances' health, shared by every call of one client, under a lock
    held for bookkeeping only, never across a request."""

    def __init__(self, settings: Settings, what: str) -> None:
        self.settings = settings
        self.what = what
        self._lock = threading.Lock()
        self._states = {instance: _State() for instance in settings.instances}

    def attempt(self) -> Attempt:
        return Attempt(self, self.settings.clock.now() + self.settings.deadline)

    def pick(self, now: float, tried: Set[Instance]) -> Optional[Instance]:
        """The instance to ask next in a round, or None: the round is over."""
        soonest: Optional[Instance] = None
        with self._lock:
            for instance in self.settings.instances:
                if instance in tried:
                    continue
                state = self._states[instance]
                if state.failures_in_a_row == 0 or state.set_aside_until <= now:
                    return instance
                if soonest is None or state.set_aside_until < self._states[soonest].set_aside_until:
                    soonest = instance
        return soonest if not tried else None

    def answered(self, instance: Instance) -> None:
        with self._lock:
            state = self._states[instance]
            state.failures_in_a_row = 0
            state.set_aside_for = 0.0
            state.answers += 1

    def failed(self, instance: Instance, reason: str) -> None:
        first, most = self.settings.set_aside
        with self._lock:
            state = self._states[instance]
            state.failures_in_a_row += 1
            state.failures += 1
            state.set_aside_for = min(first * 2 ** min(state.failures_in_a_row - 1, 62), most)
            state.set_aside_until = self.settings.clock.now() + state.set_aside_for
            state.last_error = reason

    def backoff(self, round_number: int) -> float:
        """Between half and all of the round's backoff: first, doubled each round, capped."""
        first, most = self.settings.backoff
        backoff = min(first * 2 ** min(round_number - 1, 62), most)
        return backoff / 2 + random.uniform(0, backoff / 2)

    def report(self) -> List[InstanceHealth]:
        now = self.settings.clock.now()
        with self._lock:
            return [
                InstanceHealth(
                    instance.shown,
                    state.answers,
                    state.failures,
                    0.0 if state.failures_in_a_row == 0 else max(0.0, state.set_aside_until - now),
                )
                for instance, state in self._states.items()
            ]

    def summary(self, why: Dict[Instance, str]) -> str:
        now = self.settings.clock.now()
        parts = []
        with self._lock:
            for instance, state in self._states.items():
                if instance in why:
                    parts.append(f"{instance.shown} {why[instance]} (set aside for {show(state.set_aside_for)})")
                elif state.failures_in_a_row > 0 and state.set_aside_until > now:
                    parts.append(f"{instance.shown} not asked: set aside after {state.last_error}")
                else:
                    parts.append(f"{instance.shown} not asked before the deadline")
        return (
            f"no idmint serve instance gave {self.what} within {show(self.settings.deadline)}: "
            + "; ".join(parts)
        )


class Attempt:
    """One call's rounds over the instances. Its driver asks :meth:`step` what
    to do (an instance to ask, or seconds to wait), and reports how the
    instance answered with :meth:`no_answer` or :meth:`answer`."""

    def __init__(self, health: Health, deadline_at: float) -> None:
        self._health = health
        self._deadline_at = deadline_at
        self._tried: Set[Instance] = set()
        self._why: Dict[Instance, str] = {}
        self._round = 0

    def step(self) -> Union[Instance, float]:
        """The instance to ask now, or how long to wait first; raises at the deadline."""
        now = self._health.settings.clock.now()
        remaining = self._deadline_at - now
        if remaining <= 0:
            raise IdmintError(0, self._health.summary(self._why))
        instance = self._health.pick(now, self._tried)
        if instance is None:
            self._round += 1
            self._tried.clear()
            return min(self._health.backoff(self._round), remaining)
        self._tried.add(instance)
        return instance

    def no_answer(self, instance: Instance, reason: str) -> None:
        reason = instance.scrub(reason)
        self._why[instance] = reason
        self._health.failed(instance, reason)

    def answer(self, instance: Instance, status: int, body: str, post: bool) -> Optional[str]:
        """The body of a success; None to go on with another instance; raises an
        answer every instance would give."""
        if status == 200 or (post and 200 <= status < 300):
            self._health.answered(instance)
            return body
        if is_instance_failure(status, body):
            self.no_answer(instance, f"answered {status}: {_shorten(body)}")
            return None
        # The same from every instance (they share one database and its policies).
        self._health.answered(instance)
        raise IdmintError(status, body)


def _shorten(body: str) -> str:
    line = (body or "").strip().replace("\n", " ")
    return line if len(line) <= 200 else line[:200] + "..."
