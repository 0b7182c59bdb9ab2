// Failover over several instances, against Peers that fail on command and a
// FakeClock that moves only when a backoff or the test moves it: the
// preferred (first) instance is asked first; a failed one is set aside, for
// longer at each failure in a row up to the cap, and asked again once that
// time is over; every instance failing is one error at the deadline, naming
// each without credentials; an answer every instance would give reaches the
// caller at once; an answer cut short (inside its headers, or shorter than its
// Content-Length) is that instance failing; the buffer serves while a fetch
// fails over; the token is sent, URL credentials never.

import assert from "node:assert/strict";
import { after, test } from "node:test";
import { inspect } from "node:util";

import { IdmintError, ValueClient } from "../src/index.js";
import { isInstanceFailure } from "../src/failover.js";
import { Instance } from "../src/settings.js";
import { Counter, FakeClock, Peer, RawPeer, Watch, closePeers, closedPort, deferred, within } from "./peer.js";

after(closePeers);

const PATH = "v1/counters/c/ranges?count=1";
const UNAVAILABLE = '{"error":"unavailable","message":"the database is unreachable"}';
const POLICY = '{"error":"policy","message":"the policy failed to format or read these IDs"}';

const answering = (/** @type {Counter} */ values) => () => values.run(1);
const failing = (/** @type {number} */ status, /** @type {string} */ body) => () => [status, body];

test("an answer cut inside its headers is failed over, not taken as empty", async () => {
  const values = new Counter();
  const cut = await RawPeer.start("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n");
  const b = await Peer.start("b", answering(values));
  const client = new ValueClient([cut.url, b.url], "c", { clock: new FakeClock() });
  assert.equal(await client.next(), 1);
  assert.deepEqual([cut.cuts, b.count], [1, 1]);
  assert.match(client.health()[0].url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
  assert.deepEqual(
    client.health().map((h) => [h.answers, h.failures]),
    [[0, 1], [1, 0]],
  );
  await client.close();
  await Promise.all([cut.close(), b.close()]);
});

test("an answer shorter than its Content-Length is failed over, not taken", async () => {
  const values = new Counter();
  // 1 to 1000 announced, "1 10" arrives: taken, it would hand out 1..10 and b's 1 again.
  const a = await Peer.start("a", () => ({ cutAfter: "1 10", length: 9 }));
  const b = await Peer.start("b", answering(values));
  const client = new ValueClient([a.url, b.url], "c", { clock: new FakeClock(), deadlineMs: 60_000 });
  assert.equal(await client.next(), 1);
  assert.deepEqual([a.count, b.count], [1, 1]);
  assert.deepEqual(
    client.health().map((h) => [h.answers, h.failures]),
    [[0, 1], [1, 0]],
  );
  await client.close();
  await Promise.all([a.close(), b.close()]);
});

test("an answer cut short is named in the final error", async () => {
  const a = await Peer.start("a", () => ({ cutAfter: "1 10", length: 9 }));
  const headers = await RawPeer.start("HTTP/1.1 200 OK\r\ncontent-length: 5\r\n");
  const unframed = await RawPeer.start("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\n1 1\n");
  const chunked = await RawPeer.start("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\n1 1\n\r\n");
  const client = new ValueClient([a.url, headers.url, unframed.url, chunked.url], "c", {
    clock: new FakeClock(),
    deadlineMs: 500,
  });
  const error = await client.next().then(
    () => assert.fail("a cut answer was taken"),
    (/** @type {IdmintError} */ error) => error,
  );
  assert.ok(error instanceof IdmintError);
  assert.equal(error.status, 0);
  assert.ok(error.message.includes(`${a.url} failed: the answer was cut short (5 bytes missing)`), error.message);
  assert.ok(error.message.includes(`${headers.url} failed: the answer was cut short (inside its headers)`), error.message);
  assert.ok(error.message.includes(`${unframed.url} failed: the answer is not framed`), error.message);
  assert.ok(error.message.includes(`${chunked.url} failed: the answer was cut short (set aside`), error.message);
  await client.close();
  await Promise.all([a.close(), headers.close(), unframed.close(), chunked.close()]);
});

test("the preferred instance is asked first and failed over in order", async () => {
  const values = new Counter();
  const a = await Peer.start("a", failing(503, UNAVAILABLE));
  const b = await Peer.start("b", failing(502, "<html>Bad Gateway</html>"));
  const c = await Peer.start("c", answering(values));
  const d = await Peer.start("d", answering(values));
  const client = new ValueClient([a.url, b.url, c.url, d.url], "c", { clock: new FakeClock() });
  assert.equal(await client._servers.call("GET", PATH), "1 1\n");
  assert.deepEqual([a.count, b.count, c.count, d.count], [1, 1, 1, 0]);
  // While a and b are set aside, c (the first one up) answers every fetch.
  for (let i = 0; i < 5; i += 1) {
    await client._servers.call("GET", PATH);
  }
  assert.deepEqual([a.count, b.count, c.count, d.count], [1, 1, 6, 0]);
  await client.close();
  await Promise.all([a, b, c, d].map((peer) => peer.close()));
});

test("a failed instance is set aside and asked again later", async () => {
  const values = new Counter();
  let aAnswer = [503, UNAVAILABLE];
  const clock = new FakeClock();
  const a = await Peer.start("a", () => (aAnswer[0] === 200 ? values.run(1) : aAnswer));
  const b = await Peer.start("b", answering(values));
  const client = new ValueClient([a.url, b.url], "c", { setAsideMs: [1000, 4000], clock });
  const servers = client._servers;
  const expectations = [1000, 2000, 4000, 4000];
  for (const [index, expected] of expectations.entries()) {
    const failure = index + 1;
    await servers.call("GET", PATH);
    assert.equal(a.count, failure, `A was not asked first after its set-aside (${failure})`);
    const setAside = client.health()[0].setAsideForMs;
    assert.equal(setAside, expected, `after ${failure} failures in a row`);
    clock.advance(setAside - 1);
    for (let i = 0; i < 20; i += 1) {
      await servers.call("GET", PATH);
    }
    assert.equal(a.count, failure, "A was asked while set aside");
    clock.advance(1);
  }
  aAnswer = [200, ""];
  await servers.call("GET", PATH);
  assert.equal(a.count, 5);
  assert.equal(client.health()[0].setAsideForMs, 0, "A answered and is still set aside");
  aAnswer = [500, '{"error":"internal"}'];
  await servers.call("GET", PATH);
  assert.equal(client.health()[0].setAsideForMs, 1000, "an answer did not end the run of failures");
  assert.equal(client.health()[1].failures, 0, "B counted failures");
  await client.close();
  await Promise.all([a.close(), b.close()]);
});

test("every instance failing is one error at the deadline, without credentials", async () => {
  const port = await closedPort();
  const clock = new FakeClock();
  const a = await Peer.start("a", failing(503, UNAVAILABLE));
  const client = new ValueClient([a.url, `http://app:s3cret@127.0.0.1:${port}/idmint`], "c", {
    deadlineMs: 10_000,
    clock,
  });
  const start = clock.now();
  const error = await client._servers.call("GET", PATH).then(
    () => assert.fail("no error"),
    (/** @type {IdmintError} */ error) => error,
  );
  assert.ok(error instanceof IdmintError);
  assert.equal(error.status, 0);
  assert.ok(clock.now() - start >= 10_000, "it gave up before its deadline");
  const message = error.message;
  assert.ok(message.startsWith("no idmint serve instance gave counter 'c' within 10 s: "), message);
  assert.ok(message.includes(`${a.url} answered 503: ${UNAVAILABLE}`), message);
  assert.ok(message.includes(`http://127.0.0.1:${port}/idmint/ failed: ECONNREFUSED`), message);
  for (const shown of [message, inspect(error), inspect(client, { depth: 10 }), JSON.stringify(client.health())]) {
    assert.ok(!shown.includes("s3cret"), shown);
    assert.ok(!shown.includes("app:"), shown);
  }
  assert.equal(error.body, message);
  assert.ok(a.count >= 2, "A was asked only once in 10 s of rounds");
  await client.close();
  await a.close();
});

test("the buffer serves while a fetch fails over", async () => {
  const values = new Counter();
  const held = deferred();
  const release = deferred();
  /** @type {string[]} */
  const order = [];
  const script = async (/** @type {Peer} */ peer) => {
    order.push(peer.name);
    if (order.length === 2) {
      held.resolve();
      await release.promise;
      return [503, '{"error":"overloaded"}'];
    }
    return values.run(10);
  };
  const a = await Peer.start("a", script);
  const b = await Peer.start("b", script);
  const client = new ValueClient([a.url, b.url], "c", { batch: 10, clock: new FakeClock() });
  const taken = [];
  for (let i = 0; i < 9; i += 1) {
    taken.push(await client.next());
  }
  assert.deepEqual(taken, [1, 2, 3, 4, 5, 6, 7, 8, 9]);
  await within(held.promise, "the background fetch reaching an instance");
  assert.equal(await client.next(), 10, "the buffer's last value while the fetch is held");
  release.resolve();
  assert.equal(await client.next(), 11, "the value after the failover");
  assert.deepEqual(order, ["a", "a", "b"]);
  await client.close();
  await Promise.all([a.close(), b.close()]);
});

test("the next fetch starts when 80% of the batch is used", async () => {
  const values = new Counter();
  const peer = await Peer.start("one", () => values.run(10));
  const client = new ValueClient(peer.url, "c", { batch: 10 });
  const watch = new Watch(0);
  client._hooks = watch;
  for (let i = 1; i <= 8; i += 1) {
    assert.equal(await client.next(), i);
  }
  assert.equal(peer.count, 1, "a fetch started before 80% of the batch was used");
  assert.equal(await client.next(), 9);
  assert.equal(await watch.landing(2), null, "the fetch started by the 9th value");
  assert.equal(peer.count, 2);
  await client.close();
  await peer.close();
});

test("an answer every instance would give reaches the caller at once", async () => {
  for (const [status, body] of /** @type {[number, string][]} */ ([
    [500, POLICY],
    [404, '{"error":"unknown-counter"}'],
    [401, '{"error":"unauthorized"}'],
    [403, '{"error":"forbidden"}'],
    [409, '{"error":"settled"}'],
    [400, '{"error":"bad-request"}'],
  ])) {
    const a = await Peer.start("a", failing(status, body));
    const b = await Peer.start("b", failing(status, body));
    const client = new ValueClient([a.url, b.url], "c", { clock: new FakeClock() });
    const error = await client.next().then(
      () => assert.fail("no error"),
      (/** @type {IdmintError} */ error) => error,
    );
    assert.ok(error instanceof IdmintError);
    assert.deepEqual([error.status, error.body], [status, body]);
    assert.equal(a.count + b.count, 1, `${status} was asked of another instance`);
    assert.deepEqual(
      client.health().map((h) => h.failures),
      [0, 0],
      `${status} set an instance aside`,
    );
    await client.close();
    await Promise.all([a.close(), b.close()]);
  }
  for (const [status, body] of /** @type {[number, string][]} */ ([
    [503, UNAVAILABLE],
    [503, '{"error":"overloaded"}'],
    [500, '{"error":"internal"}'],
    [502, "<html>Bad Gateway</html>"],
    [429, ""],
    [408, ""],
  ])) {
    assert.ok(isInstanceFailure(status, body), `${status} ${body} is not failed over`);
  }
});

test("the token is sent and URL credentials never", async () => {
  const values = new Counter();
  const a = await Peer.start("a", answering(values));
  const url = `${a.url.replace("http://", "http://app:s3cret@")}base`;
  const client = new ValueClient(url, "my counter", { token: "t0ken", batch: 7 });
  assert.equal(await client.next(), 1);
  await client.close();
  // The peer answers one value per fetch, so the next fetch may have started
  // in the background already: every request is checked.
  assert.ok(a.requests.length >= 1);
  for (const request of a.requests) {
    assert.equal(request.headers.authorization, "Bearer t0ken");
    assert.equal(request.path, "/base/v1/counters/my%20counter/ranges?count=7");
    assert.ok(!JSON.stringify(request).includes("s3cret"), JSON.stringify(request));
    assert.ok(!JSON.stringify(request).includes("YXBwOnMzY3JldA"), "credentials sent as Basic auth");
  }
  await a.close();
  const b = await Peer.start("b", answering(values));
  const plain = new ValueClient(b.url, "c");
  await plain.next();
  assert.equal(b.requests[0].headers.authorization, undefined);
  await plain.close();
  await b.close();
});

test("backoffs between rounds double up to their cap, with jitter", async () => {
  const client = new ValueClient("http://h:1/", "c", { backoffMs: [100, 400] });
  for (const [round, full] of [[1, 100], [2, 200], [3, 400], [4, 400], [50, 400]]) {
    const waits = Array.from({ length: 200 }, () => client._servers.health.backoff(round));
    assert.ok(waits.every((wait) => full / 2 <= wait && wait <= full), `round ${round}: ${waits}`);
    assert.ok(new Set(waits).size > 1, `round ${round}: no jitter`);
  }
  await client.close();
});

test("credentials of a URL are scrubbed from what is shown", () => {
  const instance = Instance.parse("http://app:s3cret@127.0.0.1:8080/idmint");
  assert.equal(instance.shown, "http://127.0.0.1:8080/idmint/");
  assert.equal(instance.scrub("failed: app:s3cret@127.0.0.1 refused"), "failed: ***@127.0.0.1 refused");
  assert.ok(!inspect(instance, { showHidden: true }).includes("s3cret"));
  assert.equal(Instance.parse("https://[::1]/").shown, "https://[::1]/");
  assert.equal(Instance.parse("https://[::1]:8443").host, "::1");
});

test("bad settings are refused by name, without credentials", () => {
  const cases = {
    none: [() => new ValueClient([], "c"), "no server URL given"],
    ftp: [() => new ValueClient("ftp://idmint/", "c"), "server URL ftp://idmint/ must start with http://"],
    twice: [() => new ValueClient(["http://h:1/", "http://user:s3cret@h:1"], "c"), "server URL http://h:1/ is listed twice"],
    port: [() => new ValueClient("http://user:s3cret@h:99999999/", "c"), "a server URL is not a URL"],
    query: [() => new ValueClient("http://user:s3cret@h:1/?x", "c"), "server URL http://h:1/ must have no query"],
    counter: [() => new ValueClient("http://h:1/", ""), "no counter given"],
    batch: [() => new ValueClient("http://h:1/", "c", { batch: 0 }), "batch must be at least 1, not 0"],
    share: [() => new ValueClient("http://h:1/", "c", { prefetchShare: 1.5 }), "prefetchShare must be more"],
    deadline: [() => new ValueClient("http://h:1/", "c", { deadlineMs: 0 }), "deadlineMs must be a positive"],
    setAside: [() => new ValueClient("http://h:1/", "c", { setAsideMs: [2000, 1000] }), "setAsideMs max (1 s) must"],
    token: [() => new ValueClient("http://h:1/", "c", { token: "a b" }), "the token must be printable"],
    unknown: [() => new ValueClient("http://h:1/", "c", { deadline: 5 }), "unknown option deadline"],
  };
  for (const [name, [build, expected]] of Object.entries(cases)) {
    assert.throws(/** @type {() => unknown} */ (build), (/** @type {Error} */ error) => {
      assert.ok(error.message.includes(/** @type {string} */ (expected)), `${name}: ${error.message}`);
      assert.ok(!error.message.includes("s3cret"), name);
      return true;
    });
  }
});
