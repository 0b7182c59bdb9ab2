"""The buffer's fetches under failure, against a Peer that holds or fails
answers on command: one fetch in flight for any number of takers, waited on
outside the lock and for a bounded time; a failure reaches the takers of that
fetch only; close() wakes a waiting taker."""

from __future__ import annotations

import threading
import unittest
from typing import List

from idmint_client import ClientClosedError, IdmintError, ValueClient

from peer import EVENT_SECONDS, Counter, Peer, Request, Watch, wait


class Takers:
    """Threads that each call ``take`` once, their outcomes collected."""

    def __init__(self, count: int, take: "object") -> None:
        self.outcomes: List[object] = []
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, args=(take,), daemon=True) for _ in range(count)]
        for thread in self._threads:
            thread.start()

    def _run(self, take: "object") -> None:
        try:
            outcome: object = take()  # type: ignore[operator]
        except BaseException as error:
            outcome = error
        with self._lock:
            self.outcomes.append(outcome)

    def join(self) -> List[object]:
        for thread in self._threads:
            thread.join(EVENT_SECONDS)
            if thread.is_alive():
                raise AssertionError(f"a taker did not end within {EVENT_SECONDS} s")
        return self.outcomes


class FetchTest(unittest.TestCase):
    def test_one_fetch_serves_every_waiting_taker(self) -> None:
        values = Counter()
        arrived, release = threading.Event(), threading.Event()

        def script(peer: Peer, number: int, request: Request) -> "tuple[int, str]":
            arrived.set()
            wait(release, "the release of the held answer")
            return values.run(10)

        with Peer("one", script) as peer:
            client = ValueClient(peer.url, "c", batch=10)
            watch = Watch(4)
            client._hooks = watch
            takers = Takers(4, client.next)
            wait(watch.all_waiting, "four takers waiting on the fetch, none holding the lock,")
            wait(arrived, "the fetch reaching the server")
            release.set()
            self.assertEqual(sorted(takers.join()), [1, 2, 3, 4])  # type: ignore[type-var]
            self.assertEqual(peer.count, 1, "four waiting takers sent more than one request")
            client.close()

    def test_close_wakes_a_taker_waiting_on_a_stalled_fetch(self) -> None:
        arrived, release = threading.Event(), threading.Event()

        def script(peer: Peer, number: int, request: Request) -> "tuple[int, str]":
            arrived.set()
            wait(release, "the release of the held answer")
            return 200, "1 10\n"

        with Peer("stalled", script) as peer:
            client = ValueClient(peer.url, "c", batch=10)
            watch = Watch(1)
            client._hooks = watch
            takers = Takers(1, client.next)
            wait(watch.all_waiting, "the taker waiting on the fetch")
            wait(arrived, "the fetch reaching the server")
            closer = threading.Thread(target=client.close)
            closer.start()
            closer.join(EVENT_SECONDS)
            self.assertFalse(closer.is_alive(), "close() waited for the held fetch")
            [outcome] = takers.join()
            self.assertIsInstance(outcome, ClientClosedError)
            with self.assertRaisesRegex(ClientClosedError, "^the idmint client of counter 'c' is closed$"):
                client.next()
            release.set()

    def test_a_failed_background_fetch_is_not_thrown_at_a_later_taker(self) -> None:
        values = Counter()

        def script(peer: Peer, number: int, request: Request) -> "tuple[int, str]":
            if number == 2:
                return 403, '{"error":"forbidden","message":"not now"}'
            return values.run(10)

        with Peer("flaky", script) as peer:
            client = ValueClient(peer.url, "c", batch=10)
            watch = Watch(0)
            client._hooks = watch
            self.assertEqual([client.next() for _ in range(9)], list(range(1, 10)))
            self.assertIsNone(watch.landing(1), "the first fetch")
            background = watch.landing(2)
            self.assertIsInstance(background, IdmintError)
            self.assertEqual(getattr(background, "status", None), 403)
            self.assertEqual(client.next(), 10, "the last value of the first batch")
            self.assertEqual(client.next(), 11, "the taker after a failed background fetch")
            self.assertEqual(peer.count, 3)
            client.close()

    def test_a_failure_reaches_the_takers_of_that_fetch_only(self) -> None:
        values = Counter()
        release = threading.Event()
        unknown = '{"error":"unknown-counter","message":"counter \'c\' does not exist"}'

        def script(peer: Peer, number: int, request: Request) -> "tuple[int, str]":
            if number == 1:
                wait(release, "the release of the held answer")
                return 404, unknown
            return values.run(10)

        with Peer("failing", script) as peer:
            client = ValueClient(peer.url, "c", batch=10)
            watch = Watch(2)
            client._hooks = watch
            takers = Takers(2, client.next)
            wait(watch.all_waiting, "two takers waiting on the fetch")
            release.set()
            outcomes = takers.join()
            self.assertEqual(len(outcomes), 2)
            for outcome in outcomes:
                self.assertIsInstance(outcome, IdmintError)
                assert isinstance(outcome, IdmintError)
                self.assertEqual((outcome.status, outcome.body, outcome.kind), (404, unknown, "unknown-counter"))
            self.assertIsNot(outcomes[0], outcomes[1], "two takers were given one exception object")
            self.assertEqual(client.next(), 1, "the call after a failed fetch")
            self.assertEqual(peer.count, 2)
            client.close()

    def test_a_stalled_server_is_a_bounded_wait_and_a_named_error(self) -> None:
        release = threading.Event()

        def script(peer: Peer, number: int, request: Request) -> "tuple[int, str]":
            wait(release, "the end of the stalled-server test")
            return 500, "released"

        with Peer("silent", script) as peer:
            client = ValueClient(peer.url, "c", request_timeout=0.1, deadline=0.3, backoff=(0.01, 0.02))
            with self.assertRaises(IdmintError) as raised:
                client.next()
            release.set()
            self.assertEqual(raised.exception.status, 0)
            self.assertIn("within 300 ms", str(raised.exception))
            self.assertIn(f"{peer.url} no answer within 100 ms", str(raised.exception))
            client.close()


if __name__ == "__main__":
    unittest.main()
