"""The constructors every flavour of a client shares, blocking and asyncio:
each checks its settings (:meth:`Settings.check`, a ``ValueError`` naming the
one that is wrong) and hands them to the flavour's ``_begin``."""

from __future__ import annotations

from typing import Callable, Optional, Sequence, Tuple
from urllib.parse import quote

from .batches import parse_ids, parse_runs
from .clock import Clock
from .settings import Servers as ServerUrls
from .settings import Settings


def ids_path(settings: Settings, prefix: Optional[str]) -> str:
    path = f"v1/counters/{settings.quoted_name}/ids?count={settings.batch}"
    return path if prefix is None else path + "&prefix=" + quote(prefix, safe="")


def ranges_path(settings: Settings) -> str:
    return f"v1/counters/{settings.quoted_name}/ranges?count={settings.batch}"


class BufferedArgs:
    """A flavour's buffer starts from its settings, the path it fetches and
    how an answer becomes batches: the flavour's buffer class comes before
    its constructor in the client's bases, so that its ``_begin`` is found
    first."""

    def _begin(self, settings: Settings, path: str, parse: Callable[[str, str], Sequence[Sequence[object]]]) -> None:
        raise NotImplementedError


class ValueArgs(BufferedArgs):
    """The constructor of ``ValueClient`` and ``AsyncValueClient``."""

    def __init__(
        self,
        servers: ServerUrls,
        counter: str,
        *,
        token: Optional[str] = None,
        batch: int = 10_000,
        prefetch_share: float = 0.2,
        connect_timeout: float = 2.0,
        request_timeout: float = 5.0,
        deadline: float = 10.0,
        set_aside: Tuple[float, float] = (1.0, 30.0),
        backoff: Tuple[float, float] = (0.05, 1.0),
        clock: Optional[Clock] = None,
    ) -> None:
        settings = Settings.check(
            servers, counter, token=token, batch=batch, prefetch_share=prefetch_share,
            connect_timeout=connect_timeout, request_timeout=request_timeout, deadline=deadline,
            set_aside=set_aside, backoff=backoff, clock=clock,
        )  # fmt: skip
        self._begin(settings, ranges_path(settings), parse_runs)


class IdArgs(BufferedArgs):
    """The constructor of ``IdClient`` and ``AsyncIdClient``."""

    def __init__(
        self,
        servers: ServerUrls,
        counter: str,
        *,
        prefix: Optional[str] = None,
        token: Optional[str] = None,
        batch: int = 100,
        prefetch_share: float = 0.2,
        connect_timeout: float = 2.0,
        request_timeout: float = 5.0,
        deadline: float = 10.0,
        set_aside: Tuple[float, float] = (1.0, 30.0),
        backoff: Tuple[float, float] = (0.05, 1.0),
        clock: Optional[Clock] = None,
    ) -> None:
        settings = Settings.check(
            servers, counter, token=token, batch=batch, prefetch_share=prefetch_share,
            connect_timeout=connect_timeout, request_timeout=request_timeout, deadline=deadline,
            set_aside=set_aside, backoff=backoff, clock=clock,
        )  # fmt: skip
        self._begin(settings, ids_path(settings, prefix), parse_ids)


class SeriesArgs:
    """The constructor of ``SeriesClient`` and ``AsyncSeriesClient``."""

    def __init__(
        self,
        servers: ServerUrls,
        series: str,
        *,
        token: Optional[str] = None,
        connect_timeout: float = 2.0,
        request_timeout: float = 5.0,
        deadline: float = 10.0,
        set_aside: Tuple[float, float] = (1.0, 30.0),
        backoff: Tuple[float, float] = (0.05, 1.0),
        clock: Optional[Clock] = None,
    ) -> None:
        settings = Settings.check(
            servers, series, what="series", token=token, connect_timeout=connect_timeout,
            request_timeout=request_timeout, deadline=deadline, set_aside=set_aside, backoff=backoff, clock=clock,
        )  # fmt: skip
        self._begin(settings)

    def _begin(self, settings: Settings) -> None:
        raise NotImplementedError
