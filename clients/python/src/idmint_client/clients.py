"""The blocking buffered clients: :class:`ValueClient` and :class:`IdClient`."""

from __future__ import annotations

import re
import uuid
from types import TracebackType
from typing import Optional, Tuple, Type, TypeVar
from urllib.parse import quote

from .batches import parse_ids, parse_runs
from .buffered import Buffered
from .clock import Clock
from .errors import IdmintError
from .settings import Servers as ServerUrls
from .settings import Settings

_Self = TypeVar("_Self", bound="_Closing")

#: A UUID's canonical text: 8-4-4-4-12 hexadecimal digits.
CANONICAL_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


class _Closing:
    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(
        self, kind: Optional[Type[BaseException]], error: Optional[BaseException], trace: Optional[TracebackType]
    ) -> None:
        self.close()


def ids_path(settings: Settings, prefix: Optional[str]) -> str:
    path = f"v1/counters/{settings.quoted_name}/ids?count={settings.batch}"
    return path if prefix is None else path + "&prefix=" + quote(prefix, safe="")


def ranges_path(settings: Settings) -> str:
    return f"v1/counters/{settings.quoted_name}/ranges?count={settings.batch}"


def as_uuid(id_text: str, what: str) -> uuid.UUID:
    if not CANONICAL_UUID.fullmatch(id_text):
        raise IdmintError(200, f"the ID {id_text} of {what} is not a UUID")
    return uuid.UUID(id_text)


class ValueClient(Buffered[int], _Closing):
    """Values of an autoinc or segment counter, fetched ``batch`` at a time with
    ``GET /v1/counters/NAME/ranges`` and handed out from memory. Thread-safe:
    share one per counter. Values a process never takes are gaps, never
    duplicates."""

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
        super().__init__(settings, ranges_path(settings), parse_runs)

    def next(self) -> int:
        """The next value; waits for the network only when the buffer ran dry.

        Raises :class:`IdmintError` when the fetch this call waited for failed,
        :class:`ClientClosedError` once the client is closed."""
        return self._take()


class IdClient(Buffered[str], _Closing):
    """Formatted IDs of a counter of any kind, fetched ``batch`` at a time (at
    most the server's ``--max-count``) with ``GET /v1/counters/NAME/ids`` and
    handed out from memory. Thread-safe: share one per counter."""

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
        super().__init__(settings, ids_path(settings, prefix), parse_ids)

    def next(self) -> str:
        """The next ID; waits for the network only when the buffer ran dry."""
        return self._take()

    def next_uuid(self) -> uuid.UUID:
        """The next ID as a :class:`uuid.UUID`, for a counter whose IDs are UUIDs
        (a snowflake counter served with ``builtin:uuidv7``). Raises
        :class:`IdmintError` for an ID that is not a UUID's canonical text (the
        ID is used up either way)."""
        return as_uuid(self.next(), self.what)
