"""The settings every client shares, checked, and the instances' URLs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple, Union
from urllib.parse import quote, urlsplit

from .clock import REAL, Clock


@dataclass(frozen=True)
class Instance:
    """One ``idmint serve`` a client may ask: its base URL without credentials."""

    scheme: str
    host: str
    port: int
    path: str
    #: The user info the URL was given with: never sent, scrubbed from messages.
    userinfo: str

    @property
    def shown(self) -> str:
        """How messages name it: the base URL, which never holds credentials."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        port = "" if self.port == default else f":{self.port}"
        return f"{self.scheme}://{host}{port}{self.path}"

    def scrub(self, text: str) -> str:
        """``text`` with the URL's user info, if any, blanked out."""
        if not self.userinfo:
            return text
        return text.replace(self.userinfo, "***")

    @staticmethod
    def parse(url: str) -> Instance:
        """Checks a server URL; an error never repeats credentials it may hold."""
        if not isinstance(url, str):
            raise ValueError("a server URL is not a string")
        try:
            parts = urlsplit(url.strip())
            port = parts.port
        except ValueError as error:
            # Not the URL itself: it may hold a password.
            raise ValueError(f"a server URL is not a URL: {_reason(error)}") from None
        scheme = parts.scheme.lower()
        userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
        host = parts.hostname or ""
        path = parts.path or "/"
        redacted = f"{scheme + '://' if scheme else ''}{host or '?'}{':' + str(port) if port else ''}{parts.path}"
        if scheme not in ("http", "https"):
            raise ValueError(f"server URL {redacted} must start with http:// or https://")
        if not host:
            raise ValueError(f"server URL {redacted} has no host")
        if parts.query or parts.fragment or url.rstrip().endswith(("?", "#")):
            raise ValueError(f"server URL {redacted} must have no query or fragment")
        if not path.endswith("/"):
            path += "/"  # so that "v1/..." goes below it, not beside it
        default = 443 if scheme == "https" else 80
        return Instance(scheme, host, port or default, path, userinfo)


def _reason(error: ValueError) -> str:
    text = str(error)
    return "a bad port" if "port" in text.lower() else "it cannot be read"


Seconds = float
Servers = Union[str, Sequence[str]]


@dataclass(frozen=True)
class Settings:
    """What a client is built with, checked; durations in seconds."""

    instances: Tuple[Instance, ...]
    name: str
    token: Optional[str]
    batch: int
    prefetch_share: float
    connect_timeout: Seconds
    request_timeout: Seconds
    deadline: Seconds
    set_aside: Tuple[Seconds, Seconds]
    backoff: Tuple[Seconds, Seconds]
    clock: Clock

    @property
    def quoted_name(self) -> str:
        return quote(self.name, safe="")

    @staticmethod
    def check(
        servers: Servers,
        name: str,
        *,
        what: str = "counter",
        token: Optional[str] = None,
        batch: int = 1,
        prefetch_share: float = 0.2,
        connect_timeout: Seconds = 2.0,
        request_timeout: Seconds = 5.0,
        deadline: Seconds = 10.0,
        set_aside: Tuple[Seconds, Seconds] = (1.0, 30.0),
        backoff: Tuple[Seconds, Seconds] = (0.05, 1.0),
        clock: Optional[Clock] = None,
    ) -> Settings:
        """The settings, or a ``ValueError`` naming the one that is wrong."""
        urls = [servers] if isinstance(servers, str) else list(servers)
        if not urls:
            raise ValueError('no server URL given: servers=["http://idmint:8080/", ...] needs at least one')
        instances: list[Instance] = []
        for url in urls:
            instance = Instance.parse(url)
            if any(other.shown == instance.shown for other in instances):
                raise ValueError(f"server URL {instance.shown} is listed twice")
            instances.append(instance)
        if not isinstance(name, str) or not name:
            raise ValueError(f"no {what} given: its name is required")
        if token is not None and (not token or any(not 0x21 <= ord(c) <= 0x7E for c in token)):
            raise ValueError("the token must be printable ASCII without spaces (None for none)")
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise ValueError(f"batch must be at least 1, not {batch}")
        if not (isinstance(prefetch_share, (int, float)) and 0 < prefetch_share <= 1):
            raise ValueError(f"prefetch_share must be more than 0 and at most 1, not {prefetch_share}")
        for setting, value in (
            ("connect_timeout", connect_timeout),
            ("request_timeout", request_timeout),
            ("deadline", deadline),
        ):
            _positive(setting, value)
        for setting, (first, most) in (("set_aside", set_aside), ("backoff", backoff)):
            _positive(f"{setting} first", first)
            _positive(f"{setting} max", most)
            if most < first:
                raise ValueError(f"{setting} max ({most} s) must be at least its first ({first} s)")
        return Settings(
            tuple(instances),
            name,
            token,
            batch,
            float(prefetch_share),
            float(connect_timeout),
            float(request_timeout),
            float(deadline),
            (float(set_aside[0]), float(set_aside[1])),
            (float(backoff[0]), float(backoff[1])),
            clock or REAL,
        )


def _positive(setting: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or math.isinf(value):
        raise ValueError(f"{setting} must be a positive number of seconds, not {value}")


def show(seconds: float) -> str:
    """``10 s`` or ``300 ms``: how messages write a duration."""
    if seconds == int(seconds):
        return f"{int(seconds)} s"
    return f"{round(seconds * 1000)} ms"
