"""Numbers of a gap-free series (invoices): reserved, then confirmed or voided.

Not fetched in batches: a number not used must be voided, so none is taken
ahead. Every call fails over like a fetch and is safe to send again: a reserve
carries a client key (the caller's, or a random one per call), so a reserve
whose answer was lost answers the number reserved the first time and takes
none; a confirm or void sent again answers ``already``. A number confirmed
otherwise, voided or expired is refused at once (409 ``settled``); one never
reserved, or no such series, is a 404.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Dict, Optional, Tuple, Union

from .clients import _Closing
from .construct import SeriesArgs
from .errors import IdmintError
from .failover import InstanceHealth
from .servers import Servers
from .settings import Settings

Ttl = Union[float, timedelta]


@dataclass(frozen=True)
class Reservation:
    """A number reserved: ``state`` is ``reserved`` (for a client key's earlier
    reservation, what it is now); ``deadline`` the server's RFC 3339 time until
    which it may be confirmed; ``reused`` whether an earlier call with the same
    client key reserved it; ``period`` "" for a series without periods."""

    series: str
    period: str
    number: int
    state: str
    deadline: str
    reused: bool


@dataclass(frozen=True)
class Settled:
    """A number confirmed or voided; ``already``: it was so already (a call sent
    again), nothing was written."""

    series: str
    period: str
    number: int
    state: str
    reference: Optional[str]
    reason: Optional[str]
    already: bool


class SeriesCalls:
    """The routes, bodies and answers of a series, whichever flavour sends them."""

    def __init__(self, settings: Settings) -> None:
        self.what = f"series '{settings.name}'"
        self.path = f"v1/series/{settings.quoted_name}/reservations"

    def reserve(self, ttl: Ttl, client_key: Optional[str]) -> Tuple[str, str]:
        seconds = int(ttl.total_seconds() if isinstance(ttl, timedelta) else ttl)
        key = client_key if client_key is not None else str(uuid.uuid4())
        return self.path, json.dumps({"ttl_s": seconds, "client_key": key})

    def settle(self, reservation: Reservation, action: str, field: str, text: str) -> Tuple[str, str]:
        body: Dict[str, Any] = {field: text}
        if reservation.period:
            body["period"] = reservation.period
        return f"{self.path}/{reservation.number}/{action}", json.dumps(body)

    def reservation(self, answer: str) -> Reservation:
        fields = self._object(answer)
        return Reservation(
            self._text(fields, "series"), _text_or(fields, "period", "") or "", self._number(fields),
            self._text(fields, "state"), self._text(fields, "deadline"), fields.get("reused") is True,
        )  # fmt: skip

    def settled(self, answer: str) -> Settled:
        fields = self._object(answer)
        return Settled(
            self._text(fields, "series"), _text_or(fields, "period", "") or "", self._number(fields),
            self._text(fields, "state"), _text_or(fields, "reference", None),
            _text_or(fields, "reason", None), fields.get("already") is True,
        )  # fmt: skip

    def _object(self, answer: str) -> Dict[str, Any]:
        try:
            fields = json.loads(answer)
        except ValueError:
            fields = None
        if not isinstance(fields, dict):
            raise IdmintError(200, f"not an answer about {self.what}: {answer}")
        return fields

    def _text(self, fields: Dict[str, Any], name: str) -> str:
        value = fields.get(name)
        if not isinstance(value, str):
            raise IdmintError(200, f'an answer about {self.what} without "{name}"')
        return value

    def _number(self, fields: Dict[str, Any]) -> int:
        value = fields.get("number")
        if isinstance(value, bool) or not isinstance(value, int):
            raise IdmintError(200, f"an answer about {self.what} without a number")
        return value


def _text_or(fields: Dict[str, Any], name: str, otherwise: Optional[str]) -> Optional[str]:
    value = fields.get(name)
    return value if isinstance(value, str) else otherwise


class SeriesClient(SeriesArgs, _Closing):
    """A gap-free series of ``idmint serve``. Thread-safe: share one per series."""

    def _begin(self, settings: Settings) -> None:
        self._calls = SeriesCalls(settings)
        self._servers = Servers(settings, self._calls.what)

    def reserve(self, ttl: Ttl, client_key: Optional[str] = None) -> Reservation:
        """Reserves the next number for ``ttl`` (whole seconds, 1 s to 7 days)
        under ``client_key`` (1 to 128 characters; a random one when None): a
        reserve with a key already used answers that reservation, ``reused``,
        and takes none."""
        path, body = self._calls.reserve(ttl, client_key)
        return self._calls.reservation(self._servers.call("POST", path, body))

    def confirm(self, reservation: Reservation, reference: str) -> Settled:
        """Confirms a reserved number with the business reference, before its deadline."""
        path, body = self._calls.settle(reservation, "confirm", "reference", reference)
        return self._calls.settled(self._servers.call("POST", path, body))

    def void(self, reservation: Reservation, reason: str) -> Settled:
        """Voids a reserved number with a reason (kept for the audit)."""
        path, body = self._calls.settle(reservation, "void", "reason", reason)
        return self._calls.settled(self._servers.call("POST", path, body))

    def health(self) -> list[InstanceHealth]:
        return self._servers.report()

    def close(self) -> None:
        """Ends the calls in progress and any later one."""
        self._servers.close()
