/**
 * The buffered clients' shared part: batches fetched in the background, items
 * handed out from memory.
 *
 * At most one fetch is in flight per client. The taker of the prefetch
 * position starts it in the background; a taker that finds every item taken
 * waits for the fetch in flight (starting it if there is none), for a bounded
 * time. A fetch's failure reaches the takers waiting on it and no one else: a
 * background fetch that failed leaves nothing behind, and the next taker that
 * needs items starts a new one.
 */

import { Batches } from "./batches.js";
import { ClientClosedError, IdmintError } from "./errors.js";
import { Servers } from "./servers.js";
import { show } from "./settings.js";

/** What the client's own tests watch; the default does nothing. */
export const NO_HOOKS = Object.freeze({
  /** A taker is about to wait for the fetch in flight. */
  waiting() {},
  /** A fetch ended: `error` is null when it brought items. @param {unknown} error */
  landed(error) {}, // eslint-disable-line no-unused-vars
});

/** One fetch: its end, and its error if it failed; settled once. */
class Fetch {
  constructor() {
    this.settled = false;
    /** @type {unknown} */
    this.error = null;
    /** @type {() => void} */
    this.resolve = () => {};
    /** Resolves (never rejects) once settled. @type {Promise<void>} */
    this.done = new Promise((resolve) => {
      this.resolve = resolve;
    });
  }

  /** @param {unknown} error */
  settle(error) {
    if (this.settled) {
      return false;
    }
    this.settled = true;
    this.error = error;
    this.resolve();
    return true;
  }
}

/**
 * @template T
 */
export class Buffered {
  /**
   * @param {ReturnType<typeof import("./settings.js").checkSettings>} settings
   * @param {string} path
   * @param {(body: string, what: string) => {length: number, at(index: number): any}[]} parse
   */
  constructor(settings, path, parse) {
    /** What messages call it: `counter 'orders'`. */
    this.what = `counter '${settings.name}'`;
    this._servers = new Servers(settings, this.what);
    this._path = path;
    this._parse = parse;
    /** @type {Batches<T>} */
    this._batches = new Batches(settings.prefetchShare);
    /** @type {Fetch | null} */
    this._inFlight = null;
    this._closed = false;
    /** A taker's wait for a fetch: its deadline and one request past it. */
    this._waitLimitMs = settings.deadlineMs + settings.requestTimeoutMs + 1000;
    this._hooks = NO_HOOKS;
  }

  /** @returns {Promise<T>} */
  async _take() {
    for (;;) {
      if (this._closed) {
        throw this._servers.closedError();
      }
      const taken = this._batches.take();
      if (taken !== undefined) {
        const [item, prefetch] = taken;
        if (prefetch && this._inFlight === null) {
          this._start();
        }
        return item;
      }
      const fetch = this._inFlight ?? this._start();
      this._hooks.waiting();
      await this._await(fetch);
    }
  }

  _start() {
    const fetch = new Fetch();
    this._inFlight = fetch;
    void this._run(fetch);
    return fetch;
  }

  /** @param {Fetch} fetch */
  async _run(fetch) {
    let batches = [];
    let error = null;
    try {
      batches = this._parse(await this._servers.call("GET", this._path), this.what);
    } catch (failed) {
      error = failed;
    }
    if (this._inFlight === fetch) {
      this._inFlight = null;
    }
    // A failure is not kept: it reaches the takers waiting on this fetch only.
    if (error === null && !this._closed) {
      this._batches.add(batches);
    }
    // Settled after the items are queued, so that a woken taker finds them.
    if (fetch.settle(error)) {
      this._hooks.landed(error);
    }
  }

  /**
   * Waits for `fetch`, bounded; its failure is this caller's.
   * @param {Fetch} fetch
   */
  async _await(fetch) {
    if (!fetch.settled) {
      /** @type {NodeJS.Timeout | undefined} */
      let timer;
      const late = new Promise((resolve) => {
        timer = setTimeout(() => resolve(true), this._waitLimitMs);
      });
      const timedOut = await Promise.race([fetch.done.then(() => false), late]);
      clearTimeout(timer);
      if (timedOut) {
        throw new IdmintError(
          0,
          `no values of ${this.what} within ${show(this._waitLimitMs)}; ` +
            "the fetch goes on, and the next caller waits for it",
        );
      }
    }
    const error = fetch.error;
    if (error instanceof IdmintError || error instanceof ClientClosedError) {
      throw error.again();
    }
    if (error !== null) {
      throw new IdmintError(0, `fetching values of ${this.what} failed: ${String(error)}`, undefined, {
        cause: error,
      });
    }
  }

  /** Per instance, for diagnostics: answers, failures, the set-aside in force. */
  health() {
    return this._servers.report();
  }

  /**
   * Stops the client: the fetch in flight is abandoned (its waiting callers get
   * ClientClosedError), no new one starts, and every later call rejects with
   * ClientClosedError. Items fetched and not taken are gaps.
   * @returns {Promise<void>}
   */
  async close() {
    if (this._closed) {
      return;
    }
    this._closed = true;
    const abandoned = this._inFlight;
    this._inFlight = null;
    this._batches.clear();
    this._servers.close();
    if (abandoned !== null && abandoned.settle(this._servers.closedError())) {
      this._hooks.landed(abandoned.error);
    }
  }
}
