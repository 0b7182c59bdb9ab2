// The buffer's fetches under failure, against a Peer that holds or fails
// answers on command: one fetch in flight for any number of callers; a
// failure reaches the callers of that fetch only (each its own error); a
// failed background fetch is thrown at no one; close() wakes a waiting caller;
// a stalled server is a bounded wait and a named error.

import assert from "node:assert/strict";
import { after, test } from "node:test";

import { ClientClosedError, IdClient, IdmintError, ValueClient } from "../src/index.js";
import { Counter, FakeClock, Peer, Watch, closePeers, deferred, within } from "./peer.js";

after(closePeers);

/**
 * Each call's outcome: its value, or the error it rejected with.
 * @param {Promise<unknown>[]} calls
 */
const outcomes = (calls) =>
  within(Promise.all(calls.map((call) => call.then((value) => value, (error) => error))), "the callers' ends");

test("one fetch serves every waiting caller", async () => {
  const values = new Counter();
  const arrived = deferred();
  const release = deferred();
  const peer = await Peer.start("one", async () => {
    arrived.resolve();
    await release.promise;
    return values.run(10);
  });
  const client = new ValueClient(peer.url, "c", { batch: 10 });
  const watch = new Watch(4);
  client._hooks = watch;
  const takers = [client.next(), client.next(), client.next(), client.next()];
  await within(watch.allWaiting.promise, "four callers waiting on the fetch");
  await within(arrived.promise, "the fetch reaching the server");
  release.resolve();
  const taken = await outcomes(takers);
  assert.deepEqual([...taken].sort(), [1, 2, 3, 4]);
  assert.equal(peer.count, 1, "four waiting callers sent more than one request");
  await client.close();
  await peer.close();
});

test("a thousand callers at once share one fetch at a time, and nothing comes twice", async () => {
  const values = new Counter();
  const peer = await Peer.start("one", () => values.run(50));
  const client = new ValueClient(peer.url, "c", { batch: 50 });
  const watch = new Watch(0);
  client._hooks = watch;
  const taken = await outcomes(Array.from({ length: 1000 }, () => client.next()));
  assert.ok(taken.every((value) => typeof value === "number"), String(taken.find((v) => typeof v !== "number")));
  assert.equal(new Set(taken).size, 1000, "a value came twice");
  // 1000 values are 20 batches of 50, and one more started at 80% of the last.
  assert.ok(peer.count <= 21, `${peer.count} fetches for 1000 values in batches of 50`);
  await watch.landing(peer.count);
  assert.equal(Math.max(...taken), 1000, "values were skipped");
  await client.close();
  await peer.close();
});

test("close() wakes a caller waiting on a stalled fetch", async () => {
  const arrived = deferred();
  const release = deferred();
  const peer = await Peer.start("stalled", async () => {
    arrived.resolve();
    await release.promise;
    return [200, "1 10\n"];
  });
  const client = new ValueClient(peer.url, "c", { batch: 10 });
  const watch = new Watch(1);
  client._hooks = watch;
  const taker = client.next();
  await within(watch.allWaiting.promise, "the caller waiting on the fetch");
  await within(arrived.promise, "the fetch reaching the server");
  await client.close();
  const [outcome] = await outcomes([taker]);
  assert.ok(outcome instanceof ClientClosedError, String(outcome));
  await assert.rejects(client.next(), (/** @type {Error} */ error) => {
    assert.ok(error instanceof ClientClosedError);
    assert.equal(error.message, "the idmint client of counter 'c' is closed");
    return true;
  });
  release.resolve();
  await peer.close();
});

test("a failed background fetch is not thrown at a later caller", async () => {
  const values = new Counter();
  const peer = await Peer.start("flaky", (/** @type {Peer} */ _, /** @type {number} */ number) =>
    number === 2 ? [403, '{"error":"forbidden","message":"not now"}'] : values.run(10),
  );
  const client = new ValueClient(peer.url, "c", { batch: 10 });
  const watch = new Watch(0);
  client._hooks = watch;
  for (let i = 1; i <= 9; i += 1) {
    assert.equal(await client.next(), i);
  }
  assert.equal(await watch.landing(1), null, "the first fetch");
  const background = await watch.landing(2);
  assert.ok(background instanceof IdmintError);
  assert.equal(background.status, 403);
  assert.equal(await client.next(), 10, "the last value of the first batch");
  assert.equal(await client.next(), 11, "the caller after a failed background fetch");
  assert.equal(peer.count, 3);
  await client.close();
  await peer.close();
});

test("a failure reaches the callers of that fetch only", async () => {
  const values = new Counter();
  const release = deferred();
  const unknown = `{"error":"unknown-counter","message":"counter 'c' does not exist"}`;
  const peer = await Peer.start("failing", async (/** @type {Peer} */ _, /** @type {number} */ number) => {
    if (number === 1) {
      await release.promise;
      return [404, unknown];
    }
    return values.run(10);
  });
  const client = new ValueClient(peer.url, "c", { batch: 10 });
  const watch = new Watch(2);
  client._hooks = watch;
  const takers = [client.next(), client.next()];
  await within(watch.allWaiting.promise, "two callers waiting on the fetch");
  release.resolve();
  const results = await outcomes(takers);
  for (const outcome of results) {
    assert.ok(outcome instanceof IdmintError, String(outcome));
    assert.deepEqual([outcome.status, outcome.body, outcome.kind], [404, unknown, "unknown-counter"]);
  }
  assert.notEqual(results[0], results[1], "two callers were given one error object");
  assert.equal(await client.next(), 1, "the call after a failed fetch");
  assert.equal(peer.count, 2);
  await client.close();
  await peer.close();
});

test("a stalled server is a bounded wait and a named error", async () => {
  const release = deferred();
  const peer = await Peer.start("silent", async () => {
    await release.promise;
    return [500, "released"];
  });
  const client = new ValueClient(peer.url, "c", { requestTimeoutMs: 100, deadlineMs: 300, backoffMs: [10, 20] });
  const [error] = await outcomes([client.next()]);
  release.resolve();
  assert.ok(error instanceof IdmintError, String(error));
  assert.equal(error.status, 0);
  assert.ok(error.message.includes("within 300 ms"), error.message);
  assert.ok(error.message.includes(`${peer.url} no answer within 100 ms`), error.message);
  await client.close();
  await peer.close();
});

test("IDs fail over in order and a UUID is checked", async () => {
  const a = await Peer.start("a", () => [503, '{"error":"unavailable"}']);
  const b = await Peer.start("b", (/** @type {Peer} */ _, /** @type {number} */ number) =>
    number === 1
      ? [404, '{"error":"unknown-counter"}']
      : [200, "0192f1c4-7b5e-7a3e-9c1d-2f6b8e4a0c11\nB-2\n0192F1C4-7B5E-7A3E-9C1D-2F6B8E4A0C13\n"],
  );
  const client = new IdClient([a.url, b.url], "c", { batch: 3, prefix: "B-", clock: new FakeClock() });
  const results = await outcomes([client.next(), client.next()]);
  assert.ok(results.every((r) => r instanceof IdmintError && r.status === 404), String(results));
  assert.deepEqual([a.count, b.count], [1, 1], "not a, then b, once each");
  assert.equal(b.requests[0].path, "/v1/counters/c/ids?count=3&prefix=B-");
  assert.equal(await client.nextUuid(), "0192f1c4-7b5e-7a3e-9c1d-2f6b8e4a0c11");
  await assert.rejects(client.nextUuid(), /the ID B-2 of counter 'c' is not a UUID/);
  assert.equal(await client.nextUuid(), "0192f1c4-7b5e-7a3e-9c1d-2f6b8e4a0c13");
  assert.equal(a.count, 1, "a was asked while set aside");
  await client.close();
  await assert.rejects(client.next(), ClientClosedError);
  await Promise.all([a.close(), b.close()]);
});

test("values beyond Number.MAX_SAFE_INTEGER are refused, never rounded", async () => {
  const peer = await Peer.start("big", () => [200, "9007199254740990 9007199254740993\n"]);
  const client = new ValueClient(peer.url, "c", { batch: 4 });
  await assert.rejects(client.next(), (/** @type {IdmintError} */ error) => {
    assert.equal(error.status, 200);
    assert.match(error.message, /beyond Number.MAX_SAFE_INTEGER/);
    return true;
  });
  await client.close();
  await peer.close();
});
