"""SeriesClient against Peers: the bodies it sends, a reserve failed over with
its client key, a refusal (409) at once."""

from __future__ import annotations

import json
import unittest

from idmint_client import IdmintError, SeriesClient

from peer import FakeClock, Peer, Request

RESERVED = {"series": "inv", "period": "2026", "number": 7, "state": "reserved",
            "deadline": "2026-01-01T00:05:00Z", "reused": False}  # fmt: skip


class SeriesTest(unittest.TestCase):
    def test_reserve_fails_over_with_its_client_key_and_settles(self) -> None:
        def b_script(peer: Peer, number: int, request: Request) -> "tuple[int, str]":
            if request.path.endswith("/reservations"):
                return 201, json.dumps(RESERVED)
            if request.path.endswith("/7/confirm"):
                return 200, json.dumps({**RESERVED, "state": "confirmed", "reference": "INV-7", "already": False})
            return 409, '{"error":"settled","message":"number 7 is confirmed"}'

        with Peer("a", lambda peer, number, request: (503, '{"error":"unavailable"}')) as a, Peer("b", b_script) as b:
            series = SeriesClient([a.url, b.url], "inv", clock=FakeClock())
            reservation = series.reserve(300, "order-7")
            self.assertEqual((reservation.number, reservation.period, reservation.reused), (7, "2026", False))
            sent = [json.loads(request.body) for request in a.requests + b.requests]
            self.assertEqual(sent, [{"ttl_s": 300, "client_key": "order-7"}] * 2, "the retry changed its key")
            self.assertEqual(b.requests[0].path, "/v1/series/inv/reservations")
            settled = series.confirm(reservation, "INV-7")
            self.assertEqual((settled.state, settled.reference, settled.already), ("confirmed", "INV-7", False))
            self.assertEqual(json.loads(b.requests[-1].body), {"reference": "INV-7", "period": "2026"})
            before = a.count + b.count
            with self.assertRaises(IdmintError) as refused:
                series.void(reservation, "cancelled")
            self.assertEqual((refused.exception.status, refused.exception.kind), (409, "settled"))
            self.assertEqual(a.count + b.count, before + 1, "a 409 was asked of another instance")
            self.assertEqual(json.loads(b.requests[-1].body), {"reason": "cancelled", "period": "2026"})
            series.close()

    def test_a_reserve_without_a_key_sends_a_random_one(self) -> None:
        with Peer("a", lambda peer, number, request: (201, json.dumps(RESERVED))) as a:
            series = SeriesClient(a.url, "inv")
            series.reserve(60)
            series.reserve(60)
            keys = [json.loads(request.body)["client_key"] for request in a.requests]
            self.assertEqual(len(set(keys)), 2, f"two reserves sent keys {keys}")
            series.close()


if __name__ == "__main__":
    unittest.main()
