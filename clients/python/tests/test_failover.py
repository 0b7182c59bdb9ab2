"""Failover over several instances, against Peers that fail on command and a
FakeClock that moves only when a backoff or the test moves it: the preferred
(first) instance is asked first; a failed one is set aside, for longer at each
failure in a row up to the cap, and asked again once that time is over; every
instance failing is one error at the deadline, naming each without
credentials; an answer every instance would give reaches the caller at once;
the buffer serves while a fetch fails over; the token is sent, URL
credentials never."""

from __future__ import annotations

import socket
import threading
import unittest

from idmint_client import IdmintError, ValueClient
from idmint_client.failover import is_instance_failure

from peer import Counter, FakeClock, Peer, Request, closed_port, wait

PATH = "v1/counters/c/ranges?count=1"
UNAVAILABLE = '{"error":"unavailable","message":"the database is unreachable"}'
POLICY = '{"error":"policy","message":"the policy failed to format or read these IDs"}'


def answering(values: Counter) -> "object":
    return lambda peer, number, request: values.run(1)


def failing(status: int, body: str) -> "object":
    return lambda peer, number, request: (status, body)


class CutInsideHeaders:
    """A raw peer that answers each connection with a status line and part of
    its headers, then closes it: what a connection cut mid-answer looks like."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}/"
        self.cuts = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            with connection:
                connection.recv(65536)
                # Counted before the answer goes: the client acts on it at once.
                self.cuts += 1
                connection.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n")

    def close(self) -> None:
        self._listener.close()


class FailoverTest(unittest.TestCase):
    def test_an_answer_cut_inside_its_headers_is_failed_over_not_taken_as_empty(self) -> None:
        values = Counter()
        cut = CutInsideHeaders()
        with Peer("b", answering(values)) as b:
            client = ValueClient([cut.url, b.url], "c", clock=FakeClock())
            self.assertEqual(client.next(), 1)
            client.close()
            # Set aside after its cut answer; b may have had the next fetch too.
            self.assertEqual(cut.cuts, 1)
            self.assertGreaterEqual(b.count, 1)
        cut.close()

    def test_the_preferred_instance_is_asked_first_and_failed_over_in_order(self) -> None:
        values = Counter()
        with Peer("a", failing(503, UNAVAILABLE)) as a, Peer("b", failing(502, "<html>Bad Gateway</html>")) as b, Peer(
            "c", answering(values)
        ) as c, Peer("d", answering(values)) as d:
            client = ValueClient([a.url, b.url, c.url, d.url], "c", clock=FakeClock())
            self.assertEqual(client._servers.call("GET", PATH), "1 1\n")
            self.assertEqual((a.count, b.count, c.count, d.count), (1, 1, 1, 0))
            # While a and b are set aside, c (the first one up) answers every fetch.
            for _ in range(5):
                client._servers.call("GET", PATH)
            self.assertEqual((a.count, b.count, c.count, d.count), (1, 1, 6, 0))
            client.close()

    def test_a_failed_instance_is_set_aside_and_asked_again_later(self) -> None:
        values = Counter()
        a_answers = [(503, UNAVAILABLE)]
        clock = FakeClock()

        def a_script(peer: Peer, number: int, request: Request) -> "tuple[int, str]":
            return values.run(1) if a_answers[0][0] == 200 else a_answers[0]

        with Peer("a", a_script) as a, Peer("b", answering(values)) as b:
            client = ValueClient([a.url, b.url], "c", set_aside=(1.0, 4.0), clock=clock)
            servers = client._servers
            for failure, expected in enumerate([1.0, 2.0, 4.0, 4.0], start=1):
                servers.call("GET", PATH)
                self.assertEqual(a.count, failure, f"A was not asked first after its set-aside ({failure})")
                set_aside = client.health()[0].set_aside_for
                self.assertEqual(set_aside, expected, f"after {failure} failures in a row")
                clock.advance(set_aside - 0.001)
                for _ in range(20):
                    servers.call("GET", PATH)
                self.assertEqual(a.count, failure, "A was asked while set aside")
                clock.advance(0.001)
            a_answers[0] = (200, "")
            servers.call("GET", PATH)
            self.assertEqual(a.count, 5)
            self.assertEqual(client.health()[0].set_aside_for, 0.0, "A answered and is still set aside")
            a_answers[0] = (500, '{"error":"internal"}')
            servers.call("GET", PATH)
            self.assertEqual(client.health()[0].set_aside_for, 1.0, "an answer did not end the run of failures")
            self.assertEqual(client.health()[1].failures, 0, "B counted failures")
            client.close()

    def test_every_instance_failing_is_one_error_at_the_deadline_without_credentials(self) -> None:
        port = closed_port()
        clock = FakeClock()
        with Peer("a", failing(503, UNAVAILABLE)) as a:
            client = ValueClient(
                [a.url, f"http://app:s3cret@127.0.0.1:{port}/idmint"], "c", deadline=10.0, clock=clock
            )
            start = clock.now()
            with self.assertRaises(IdmintError) as raised:
                client._servers.call("GET", PATH)
            message = str(raised.exception)
            self.assertEqual(raised.exception.status, 0)
            self.assertGreaterEqual(clock.now() - start, 10.0, "it gave up before its deadline")
            self.assertTrue(message.startswith("no idmint serve instance gave counter 'c' within 10 s: "), message)
            self.assertIn(f"{a.url} answered 503: {UNAVAILABLE}", message)
            self.assertIn(f"http://127.0.0.1:{port}/idmint/ failed: ConnectionRefusedError", message)
            self.assertNotIn("s3cret", message)
            self.assertNotIn("app:", message)
            self.assertEqual(raised.exception.body, message)
            self.assertGreaterEqual(a.count, 2, "A was asked only once in 10 s of rounds")
            client.close()

    def test_the_buffer_serves_while_a_fetch_fails_over(self) -> None:
        values = Counter()
        held, release = threading.Event(), threading.Event()
        lock = threading.Lock()
        order: "list[str]" = []

        def script(peer: Peer, number: int, request: Request) -> "tuple[int, str]":
            with lock:
                order.append(peer.name)
                request_number = len(order)
            if request_number == 2:
                held.set()
                wait(release, "the release of the held answer")
                return 503, '{"error":"overloaded"}'
            return values.run(10)

        with Peer("a", script) as a, Peer("b", script) as b:
            client = ValueClient([a.url, b.url], "c", batch=10, clock=FakeClock())
            self.assertEqual([client.next() for _ in range(9)], list(range(1, 10)))
            wait(held, "the background fetch reaching an instance")
            self.assertEqual(client.next(), 10, "the buffer's last value while the fetch is held")
            release.set()
            self.assertEqual(client.next(), 11, "the value after the failover")
            self.assertEqual(order, ["a", "a", "b"])
            client.close()

    def test_an_answer_every_instance_would_give_reaches_the_caller_at_once(self) -> None:
        for status, body in [
            (500, POLICY),
            (404, '{"error":"unknown-counter"}'),
            (401, '{"error":"unauthorized"}'),
            (403, '{"error":"forbidden"}'),
            (409, '{"error":"settled"}'),
            (400, '{"error":"bad-request"}'),
        ]:
            with Peer("a", failing(status, body)) as a, Peer("b", failing(status, body)) as b:
                client = ValueClient([a.url, b.url], "c", clock=FakeClock())
                with self.assertRaises(IdmintError) as raised:
                    client.next()
                self.assertEqual((raised.exception.status, raised.exception.body), (status, body))
                self.assertEqual(a.count + b.count, 1, f"{status} was asked of another instance")
                self.assertEqual([h.failures for h in client.health()], [0, 0], f"{status} set an instance aside")
                client.close()
        for status, body in [(503, UNAVAILABLE), (503, '{"error":"overloaded"}'), (500, '{"error":"internal"}'),
                             (502, "<html>Bad Gateway</html>"), (429, ""), (408, "")]:  # fmt: skip
            self.assertTrue(is_instance_failure(status, body), f"{status} {body} is not failed over")

    def test_the_token_is_sent_and_url_credentials_never(self) -> None:
        values = Counter()
        with Peer("a", answering(values)) as a:
            url = a.url.replace("http://", "http://app:s3cret@") + "base"
            client = ValueClient(url, "my counter", token="t0ken", batch=7)
            self.assertEqual(client.next(), 1)
            client.close()
            # The peer answers one value per fetch, so the next fetch may have
            # started in the background already: every request is checked.
            self.assertGreaterEqual(len(a.requests), 1)
            for request in a.requests:
                self.assertEqual(request.headers.get("authorization"), "Bearer t0ken")
                self.assertEqual(request.path, "/base/v1/counters/my%20counter/ranges?count=7")
                self.assertNotIn("s3cret", repr(request))
        with Peer("b", answering(values)) as b:
            client = ValueClient(b.url, "c")
            client.next()
            self.assertNotIn("authorization", b.requests[0].headers)
            client.close()

    def test_backoffs_between_rounds_double_up_to_their_cap_with_jitter(self) -> None:
        client = ValueClient("http://h:1/", "c", backoff=(0.1, 0.4))
        for round_number, full in [(1, 0.1), (2, 0.2), (3, 0.4), (4, 0.4), (50, 0.4)]:
            waits = [client._servers.health.backoff(round_number) for _ in range(200)]
            self.assertTrue(all(full / 2 <= wait <= full for wait in waits), f"round {round_number}: {waits}")
            self.assertGreater(len(set(waits)), 1, f"round {round_number}: no jitter")
        client.close()

    def test_credentials_of_a_url_are_scrubbed_from_what_is_shown(self) -> None:
        from idmint_client.settings import Instance

        instance = Instance.parse("http://app:s3cret@127.0.0.1:8080/idmint")
        self.assertEqual(instance.shown, "http://127.0.0.1:8080/idmint/")
        self.assertEqual(instance.scrub("failed: app:s3cret@127.0.0.1 refused"), "failed: ***@127.0.0.1 refused")

    def test_bad_settings_are_refused_by_name_without_credentials(self) -> None:
        cases = {
            "none": (lambda: ValueClient([], "c"), "no server URL given"),
            "ftp": (lambda: ValueClient("ftp://idmint/", "c"), "server URL ftp://idmint/ must start with http://"),
            "twice": (
                lambda: ValueClient(["http://h:1/", "http://user:s3cret@h:1"], "c"),
                "server URL http://h:1/ is listed twice",
            ),
            "port": (lambda: ValueClient("http://user:s3cret@h:99999999/", "c"), "a server URL is not a URL"),
            "counter": (lambda: ValueClient("http://h:1/", ""), "no counter given"),
            "batch": (lambda: ValueClient("http://h:1/", "c", batch=0), "batch must be at least 1, not 0"),
            "share": (lambda: ValueClient("http://h:1/", "c", prefetch_share=1.5), "prefetch_share must be more"),
            "deadline": (lambda: ValueClient("http://h:1/", "c", deadline=0), "deadline must be a positive"),
            "set_aside": (lambda: ValueClient("http://h:1/", "c", set_aside=(2, 1)), "set_aside max (1 s) must"),
            "token": (lambda: ValueClient("http://h:1/", "c", token="a b"), "the token must be printable"),
        }
        for name, (build, expected) in cases.items():
            with self.subTest(name), self.assertRaises(ValueError) as refused:
                build()
            self.assertIn(expected, str(refused.exception), name)
            self.assertNotIn("s3cret", str(refused.exception), name)


if __name__ == "__main__":
    unittest.main()
