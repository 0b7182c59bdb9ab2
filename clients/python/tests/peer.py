"""An HTTP peer inside the test process, standing in for ``idmint serve``
where a test needs a server that fails, or holds an answer, on command: the
client's own behaviour is what those tests are about, not the service's."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Dict, List, Optional, Tuple

#: How long a test waits for an event before it fails.
EVENT_SECONDS = 30.0


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: Dict[str, str]
    body: str


Reply = Tuple[int, str]
Script = Callable[["Peer", int, Request], Reply]


class Peer:
    """Answers each request with ``script(peer, number, request)``; ``number``
    counts this peer's requests from 1."""

    def __init__(self, name: str, script: Script) -> None:
        self.name = name
        self.script = script
        self.requests: List[Request] = []
        self._lock = threading.Lock()
        peer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self._answer()

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                request = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with peer._lock:
                    peer.requests.append(request)
                    number = len(peer.requests)
                try:
                    status, text = peer.script(peer, number, request)
                except Exception as error:  # the test's own mistake, shown
                    status, text = 599, f"the peer's script failed: {error!r}"
                data = text.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up on this request

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), name=f"peer-{name}", daemon=True)
        self._thread.start()

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Peer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()




class Counter:
    """The values a peer hands out, shared by peers, thread-safe."""

    def __init__(self) -> None:
        self._next = 1
        self._lock = threading.Lock()

    def run(self, count: int) -> Reply:
        with self._lock:
            first, self._next = self._next, self._next + count
        return 200, f"{first} {first + count - 1}\n"


def wait(event: threading.Event, what: str) -> None:
    if not event.wait(EVENT_SECONDS):
        raise AssertionError(f"{what} did not happen within {EVENT_SECONDS} s")


def closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class FakeClock:
    """A clock that moves only when a backoff waits (by the wait's length, at
    once) or the test moves it."""

    def __init__(self) -> None:
        self._now = 1_000_000.0
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds

    def sleep(self, seconds: float, interrupt: threading.Event) -> None:
        self.advance(seconds)

    async def asleep(self, seconds: float) -> None:
        self.advance(seconds)
        await asyncio.sleep(0)


class Watch:
    """Hooks that record the takers that start waiting and the fetches that end."""

    def __init__(self, waiters: int) -> None:
        self._waiters = waiters
        self._lock = threading.Lock()
        self.all_waiting = threading.Event()
        self.landings: "list[Optional[BaseException]]" = []
        self.landed_event = threading.Condition(self._lock)
        if waiters == 0:
            self.all_waiting.set()

    def waiting(self) -> None:
        with self._lock:
            self._waiters -= 1
            if self._waiters <= 0:
                self.all_waiting.set()

    def landed(self, error: Optional[BaseException]) -> None:
        with self._lock:
            self.landings.append(error)
            self.landed_event.notify_all()

    def landing(self, number: int) -> Optional[BaseException]:
        """The ``number``-th fetch's end (from 1), waited for."""
        with self._lock:
            if not self.landed_event.wait_for(lambda: len(self.landings) >= number, EVENT_SECONDS):
                raise AssertionError(f"fetch {number} did not end within {EVENT_SECONDS} s")
            return self.landings[number - 1]
