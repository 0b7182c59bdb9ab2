/**
 * An HTTP peer inside the test process, standing in for `idmint serve` where a
 * test needs a server that fails, stalls or cuts its answer on command: the
 * client's own behaviour is what those tests are about, not the service's.
 * Not a test file: helpers for *.test.js.
 */

import http from "node:http";
import net from "node:net";

/** How long a test waits for an event before it fails (a bound, not a pause). */
export const EVENT_MS = 30_000;

/** The peers not closed yet. @type {Set<{close(): Promise<unknown>}>} */
const OPEN = new Set();

/** Closes every peer still open (a test that failed half-way left them): `after(closePeers)`. */
export async function closePeers() {
  await Promise.all([...OPEN].map((peer) => peer.close()));
}

/** A promise and its resolve, to hold or release something on command. */
export function deferred() {
  /** @type {(value?: any) => void} */
  let resolve = () => {};
  const promise = new Promise((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/**
 * `promise`, or a failure naming `what` if it does not settle within EVENT_MS.
 * @template T
 * @param {Promise<T>} promise
 * @param {string} what
 * @returns {Promise<T>}
 */
export async function within(promise, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${EVENT_MS} ms`)), EVENT_MS);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Answers each request with `await script(peer, number, request)`: a
 * `[status, text]` pair (framed with Content-Length), or `{cutAfter: BODY,
 * length: N}` for an answer that announces N bytes and is cut after BODY.
 * `number` counts this peer's requests from 1.
 */
export class Peer {
  /**
   * @param {string} name
   * @param {(peer: Peer, number: number, request: {method: string, path: string, headers: Record<string, string | string[] | undefined>, body: string}) => any} script
   */
  constructor(name, script) {
    this.name = name;
    this.script = script;
    /** @type {{method: string, path: string, headers: Record<string, string | string[] | undefined>, body: string}[]} */
    this.requests = [];
    /** @type {Set<import("node:net").Socket>} */
    this.sockets = new Set();
    this.server = http.createServer(async (incoming, outgoing) => {
      const chunks = [];
      for await (const chunk of incoming) {
        chunks.push(chunk);
      }
      const request = {
        method: incoming.method ?? "",
        path: incoming.url ?? "",
        headers: incoming.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      };
      this.requests.push(request);
      let reply;
      try {
        reply = await this.script(this, this.requests.length, request);
      } catch (error) {
        reply = [599, `the peer's script failed: ${String(error)}`];
      }
      if (outgoing.destroyed) {
        return; // the client gave up on this request
      }
      if (!Array.isArray(reply)) {
        const body = Buffer.from(reply.cutAfter);
        outgoing.writeHead(200, { "Content-Type": "text/plain", "Content-Length": String(reply.length) });
        outgoing.write(body, () => outgoing.socket?.destroy());
        return;
      }
      const [status, text] = reply;
      const data = Buffer.from(text);
      outgoing.writeHead(status, { "Content-Type": "text/plain", "Content-Length": String(data.length) });
      outgoing.end(data);
    });
    this.server.on("connection", (socket) => {
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
    });
    this.url = "";
    OPEN.add(this);
  }

  /** Starts a peer, once it listens. */
  static async start(/** @type {string} */ name, /** @type {any} */ script) {
    const peer = new Peer(name, script);
    await new Promise((resolve) => peer.server.listen(0, "127.0.0.1", () => resolve(undefined)));
    const address = /** @type {import("node:net").AddressInfo} */ (peer.server.address());
    peer.url = `http://127.0.0.1:${address.port}/`;
    return peer;
  }

  get count() {
    return this.requests.length;
  }

  async close() {
    OPEN.delete(this);
    for (const socket of this.sockets) {
      socket.destroy();
    }
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** The values peers hand out, shared by peers. */
export class Counter {
  constructor() {
    this.nextValue = 1;
  }

  /** @param {number} count */
  run(count) {
    const first = this.nextValue;
    this.nextValue += count;
    return [200, `${first} ${first + count - 1}\n`];
  }
}

/**
 * A raw peer that answers each connection with `bytes` (then closes it): what
 * a connection cut mid-answer looks like.
 */
export class RawPeer {
  /** @param {string} bytes */
  constructor(bytes) {
    this.cuts = 0;
    this.server = net.createServer((socket) => {
      socket.once("data", () => {
        this.cuts += 1;
        socket.end(bytes);
      });
      socket.on("error", () => {});
    });
    this.url = "";
    OPEN.add(this);
  }

  static async start(/** @type {string} */ bytes) {
    const peer = new RawPeer(bytes);
    await new Promise((resolve) => peer.server.listen(0, "127.0.0.1", () => resolve(undefined)));
    const address = /** @type {import("node:net").AddressInfo} */ (peer.server.address());
    peer.url = `http://127.0.0.1:${address.port}/`;
    return peer;
  }

  close() {
    OPEN.delete(this);
    return new Promise((resolve) => this.server.close(resolve));
  }
}

/** A port nothing listens on. */
export async function closedPort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(undefined)));
  const { port } = /** @type {import("node:net").AddressInfo} */ (server.address());
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A clock that moves only when a backoff waits (by the wait's length, at once) or the test moves it. */
export class FakeClock {
  constructor() {
    this.nowMs = 1_000_000;
  }

  now() {
    return this.nowMs;
  }

  /** @param {number} ms */
  advance(ms) {
    this.nowMs += ms;
  }

  /** @param {number} ms */
  async sleep(ms) {
    this.advance(ms);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** Hooks that record the takers that start waiting and the fetches that end. */
export class Watch {
  /** @param {number} waiters */
  constructor(waiters) {
    this.waiters = waiters;
    this.allWaiting = deferred();
    if (waiters === 0) {
      this.allWaiting.resolve();
    }
    /** @type {unknown[]} */
    this.landings = [];
    /** @type {{number: number, resolve: (error: unknown) => void}[]} */
    this.expected = [];
  }

  waiting() {
    this.waiters -= 1;
    if (this.waiters <= 0) {
      this.allWaiting.resolve();
    }
  }

  /** @param {unknown} error */
  landed(error) {
    this.landings.push(error);
    for (const wanted of this.expected.filter((wanted) => wanted.number <= this.landings.length)) {
      wanted.resolve(this.landings[wanted.number - 1]);
    }
    this.expected = this.expected.filter((wanted) => wanted.number > this.landings.length);
  }

  /**
   * The `number`-th fetch's end (from 1): its error or null, waited for.
   * @param {number} number
   */
  landing(number) {
    if (this.landings.length >= number) {
      return Promise.resolve(this.landings[number - 1]);
    }
    return within(
      new Promise((resolve) => this.expected.push({ number, resolve })),
      `the end of fetch ${number}`,
    );
  }
}
