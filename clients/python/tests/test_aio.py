"""The asyncio flavour: one fetch in flight for every waiting task, a failure
to the tasks of that fetch only, failover in order, close() waking a waiter."""

from __future__ import annotations

import asyncio
import threading
import unittest

from idmint_client import ClientClosedError, IdmintError
from idmint_client.aio import AsyncIdClient, AsyncValueClient

from peer import Counter, FakeClock, Peer, Request, Watch, wait


class AsyncTest(unittest.IsolatedAsyncioTestCase):
    async def test_one_fetch_serves_every_waiting_task(self) -> None:
        values = Counter()
        arrived, release = threading.Event(), threading.Event()

        def script(peer: Peer, number: int, request: Request) -> "tuple[int, str]":
            arrived.set()
            wait(release, "the release of the held answer")
            return values.run(10)

        with Peer("one", script) as peer:
            client = AsyncValueClient(peer.url, "c", batch=10)
            watch = Watch(4)
            client._hooks = watch
            takers = [asyncio.create_task(client.next()) for _ in range(4)]
            await asyncio.to_thread(wait, watch.all_waiting, "four tasks waiting")
            await asyncio.to_thread(wait, arrived, "the fetch reaching the server")
            release.set()
            self.assertEqual(sorted(await asyncio.gather(*takers)), [1, 2, 3, 4])
            self.assertEqual(peer.count, 1)
            await client.aclose()

    async def test_a_failure_reaches_its_takers_only_and_fails_over_in_order(self) -> None:
        values = Counter()

        def b_script(peer: Peer, number: int, request: Request) -> "tuple[int, str]":
            if number == 1:
                return 404, '{"error":"unknown-counter"}'
            first = int(values.run(3)[1].split()[0])
            return 200, "".join(f"B-{value}\n" for value in range(first, first + 3))

        with Peer("a", lambda peer, number, request: (503, '{"error":"unavailable"}')) as a, Peer("b", b_script) as b:
            async with AsyncIdClient([a.url, b.url], "c", batch=3, clock=FakeClock()) as client:
                results = await asyncio.gather(client.next(), client.next(), return_exceptions=True)
                self.assertTrue(all(isinstance(r, IdmintError) and r.status == 404 for r in results), results)
                self.assertEqual((a.count, b.count), (1, 1), "not a, then b, once each")
                ids = [await client.next() for _ in range(3)]
                self.assertEqual(len(set(ids)), 3)
                self.assertEqual(a.count, 1, "a was asked while set aside")
            with self.assertRaises(ClientClosedError):
                await client.next()

    async def test_close_wakes_a_task_waiting_on_a_stalled_fetch(self) -> None:
        arrived, release = threading.Event(), threading.Event()

        def script(peer: Peer, number: int, request: Request) -> "tuple[int, str]":
            arrived.set()
            wait(release, "the release")
            return 200, "1 10\n"

        with Peer("stalled", script) as peer:
            client = AsyncValueClient(peer.url, "c", batch=10)
            taker = asyncio.create_task(client.next())
            await asyncio.to_thread(wait, arrived, "the fetch reaching the server")
            await client.aclose()
            with self.assertRaisesRegex(ClientClosedError, "is closed"):
                await asyncio.wait_for(taker, 30)
            release.set()


if __name__ == "__main__":
    unittest.main()
