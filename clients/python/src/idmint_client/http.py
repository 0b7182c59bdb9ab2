"""One HTTP/1.1 exchange with one instance, bounded in time and abortable."""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
from typing import Dict, Optional, Tuple

from .settings import Instance, Settings, show

#: The ``User-Agent`` the client sends.
USER_AGENT = "idmint-python-client/0.1"


class NoAnswer(Exception):
    """The instance gave no answer: why, in words fit for the final summary."""


class Exchange:
    """A request to one instance and its answer.

    ``connect_timeout`` bounds the connection; ``request_timeout`` the whole
    exchange, answer included (each read is given what is left of it).
    :meth:`abort` (from another thread, at ``close()``) ends it at once.
    """

    def __init__(self, settings: Settings, instance: Instance, method: str, path: str, body: Optional[str]) -> None:
        self._settings = settings
        self._instance = instance
        self._method = method
        self._target = instance.path + path
        self._body = body
        self._lock = threading.Lock()
        self._connection: Optional[http.client.HTTPConnection] = None
        self._aborted = False

    def run(self) -> Tuple[int, str]:
        """The answer's status and body; raises :class:`NoAnswer`."""
        settings, instance = self._settings, self._instance
        started = time.monotonic()
        connection: http.client.HTTPConnection
        if instance.scheme == "https":
            connection = http.client.HTTPSConnection(
                instance.host, instance.port, timeout=settings.connect_timeout, context=ssl.create_default_context()
            )
        else:
            connection = http.client.HTTPConnection(instance.host, instance.port, timeout=settings.connect_timeout)
        with self._lock:
            if self._aborted:
                raise NoAnswer("aborted: the client is closed")
            self._connection = connection
        try:
            try:
                connection.connect()
            except (socket.timeout, TimeoutError):
                raise NoAnswer(f"failed: no connection within {_show(settings.connect_timeout)}") from None
            # No "Connection: close": a kept-alive answer is framed (Content-Length or
            # chunks), so that an answer cut short is told from a whole one.
            headers: Dict[str, str] = {"User-Agent": USER_AGENT}
            if self._body is None:
                headers["Accept"] = "text/plain"
            else:
                headers["Accept"] = "application/json"
                headers["Content-Type"] = "application/json"
            if settings.token is not None:
                headers["Authorization"] = f"Bearer {settings.token}"
            self._left(connection, started)
            connection.request(self._method, self._target, body=self._body, headers=headers)
            self._left(connection, started)
            response = connection.getresponse()
            if not response.chunked and response.length is None:
                # Every answer of idmint serve is framed; one that is not was
                # cut inside its headers (http.client ends them at the EOF).
                raise NoAnswer("failed: the answer was cut short (inside its headers)")
            chunks = []
            while True:
                self._left(connection, started)
                chunk = response.read(65536)
                if not chunk:
                    break
                chunks.append(chunk)
            if response.length:  # what Content-Length announced and never came
                raise NoAnswer(f"failed: the answer was cut short ({response.length} bytes missing)")
            return response.status, b"".join(chunks).decode("utf-8", errors="replace")
        except NoAnswer:
            raise
        except (socket.timeout, TimeoutError):
            raise NoAnswer(f"no answer within {_show(settings.request_timeout)}") from None
        except (OSError, http.client.HTTPException, ValueError) as error:
            if self._aborted:
                raise NoAnswer("aborted: the client is closed") from None
            detail = str(error)
            raise NoAnswer(f"failed: {type(error).__name__}" + (f": {detail}" if detail else "")) from None
        finally:
            connection.close()

    def _left(self, connection: http.client.HTTPConnection, started: float) -> None:
        """Gives the socket's next operation what is left of the request timeout."""
        left = self._settings.request_timeout - (time.monotonic() - started)
        if left <= 0:
            raise NoAnswer(f"no answer within {_show(self._settings.request_timeout)}")
        if connection.sock is not None:
            connection.sock.settimeout(left)

    def abort(self) -> None:
        """Ends the exchange from another thread: its socket is shut both ways."""
        with self._lock:
            self._aborted = True
            connection = self._connection
        sock = connection.sock if connection is not None else None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


_show = show
