"""The errors a client raises."""

from __future__ import annotations

import json
from typing import Any, Optional


class IdmintError(Exception):
    """A call to ``idmint serve`` failed.

    Either an instance gave an answer every instance would give (the counter
    does not exist, the token may not use it, a bad request, the policy failed
    on the values taken: 500 ``policy``): then :attr:`status` is its HTTP status
    and :attr:`body` its JSON error body. Or no instance answered within the
    client's deadline: then :attr:`status` is 0 and :attr:`body` (the message
    too) names each instance, without credentials, and why it failed.
    """

    def __init__(self, status: int, body: str, message: Optional[str] = None) -> None:
        if message is None:
            message = body if status == 0 else f"idmint serve answered {status}: {body}"
        super().__init__(message)
        self.status = status
        self.body = body

    @property
    def message(self) -> str:
        return str(self.args[0])

    @property
    def kind(self) -> str:
        """The error kind of a JSON error body (``unknown-counter``, ``policy``...), or ""."""
        try:
            parsed: Any = json.loads(self.body)
        except ValueError:
            return ""
        kind = parsed.get("error") if isinstance(parsed, dict) else None
        return kind if isinstance(kind, str) else ""

    def again(self) -> IdmintError:
        """The same failure as a new exception, for another caller of the same fetch."""
        copy = IdmintError(self.status, self.body, self.message)
        copy.__cause__ = self
        return copy


class ClientClosedError(RuntimeError):
    """The client was closed: no call on it succeeds any more."""

    def again(self) -> ClientClosedError:
        copy = ClientClosedError(str(self))
        copy.__cause__ = self
        return copy
