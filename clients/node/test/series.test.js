// SeriesClient against Peers: the bodies it sends, a reserve failed over with
// its client key, a refusal (409) at once, a random key per reserve.

import assert from "node:assert/strict";
import { after, test } from "node:test";

import { IdmintError, SeriesClient } from "../src/index.js";
import { FakeClock, Peer, closePeers } from "./peer.js";

after(closePeers);

const RESERVED = {
  series: "inv",
  period: "2026",
  number: 7,
  state: "reserved",
  deadline: "2026-01-01T00:05:00Z",
  reused: false,
};

test("a reserve fails over with its client key, and settles", async () => {
  const a = await Peer.start("a", () => [503, '{"error":"unavailable"}']);
  const b = await Peer.start("b", (/** @type {Peer} */ _, /** @type {number} */ __, /** @type {{path: string}} */ request) => {
    if (request.path.endsWith("/reservations")) {
      return [201, JSON.stringify(RESERVED)];
    }
    if (request.path.endsWith("/7/confirm")) {
      return [200, JSON.stringify({ ...RESERVED, state: "confirmed", reference: "INV-7", already: false })];
    }
    return [409, '{"error":"settled","message":"number 7 is confirmed"}'];
  });
  const series = new SeriesClient([a.url, b.url], "inv", { clock: new FakeClock() });
  const reservation = await series.reserve(300, "order-7");
  assert.deepEqual([reservation.number, reservation.period, reservation.reused], [7, "2026", false]);
  const sent = [...a.requests, ...b.requests].map((request) => JSON.parse(request.body));
  assert.deepEqual(sent, [{ ttl_s: 300, client_key: "order-7" }, { ttl_s: 300, client_key: "order-7" }], "the retry changed its key");
  assert.equal(b.requests[0].path, "/v1/series/inv/reservations");
  assert.equal(b.requests[0].headers["content-type"], "application/json");
  const settled = await series.confirm(reservation, "INV-7");
  assert.deepEqual([settled.state, settled.reference, settled.already], ["confirmed", "INV-7", false]);
  assert.deepEqual(JSON.parse(b.requests.at(-1)?.body ?? ""), { reference: "INV-7", period: "2026" });
  const before = a.count + b.count;
  await assert.rejects(series.void(reservation, "cancelled"), (/** @type {IdmintError} */ error) => {
    assert.ok(error instanceof IdmintError);
    assert.deepEqual([error.status, error.kind], [409, "settled"]);
    return true;
  });
  assert.equal(a.count + b.count, before + 1, "a 409 was asked of another instance");
  assert.deepEqual(JSON.parse(b.requests.at(-1)?.body ?? ""), { reason: "cancelled", period: "2026" });
  await series.close();
  await Promise.all([a.close(), b.close()]);
});

test("a reserve without a key sends a random one", async () => {
  const a = await Peer.start("a", () => [201, JSON.stringify(RESERVED)]);
  const series = new SeriesClient(a.url, "inv");
  await series.reserve(60);
  await series.reserve(60);
  const keys = a.requests.map((request) => JSON.parse(request.body).client_key);
  assert.equal(new Set(keys).size, 2, `two reserves sent keys ${keys}`);
  await series.close();
  await a.close();
});
