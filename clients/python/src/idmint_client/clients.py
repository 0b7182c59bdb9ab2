"""The blocking buffered clients: :class:`ValueClient` and :class:`IdClient`."""

from __future__ import annotations

import re
import uuid
from types import TracebackType
from typing import Optional, Type, TypeVar

from .buffered import Buffered
from .construct import IdArgs, ValueArgs
from .errors import IdmintError

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


def as_uuid(id_text: str, what: str) -> uuid.UUID:
    if not CANONICAL_UUID.fullmatch(id_text):
        raise IdmintError(200, f"the ID {id_text} of {what} is not a UUID")
    return uuid.UUID(id_text)


class ValueClient(Buffered[int], ValueArgs, _Closing):
    """Values of an autoinc or segment counter, fetched ``batch`` at a time with
    ``GET /v1/counters/NAME/ranges`` and handed out from memory. Thread-safe:
    share one per counter. Values a process never takes are gaps, never
    duplicates."""

    def next(self) -> int:
        """The next value; waits for the network only when the buffer ran dry.

        Raises :class:`IdmintError` when the fetch this call waited for failed,
        :class:`ClientClosedError` once the client is closed."""
        return self._take()


class IdClient(Buffered[str], IdArgs, _Closing):
    """Formatted IDs of a counter of any kind, fetched ``batch`` at a time (at
    most the server's ``--max-count``) with ``GET /v1/counters/NAME/ids`` and
    handed out from memory. Thread-safe: share one per counter."""

    def next(self) -> str:
        """The next ID; waits for the network only when the buffer ran dry."""
        return self._take()

    def next_uuid(self) -> uuid.UUID:
        """The next ID as a :class:`uuid.UUID`, for a counter whose IDs are UUIDs
        (a snowflake counter served with ``builtin:uuidv7``). Raises
        :class:`IdmintError` for an ID that is not a UUID's canonical text (the
        ID is used up either way)."""
        return as_uuid(self.next(), self.what)
