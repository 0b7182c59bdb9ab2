/**
 * Requests with failover (see failover.js): GETs, and POSTs whose retry is safe.
 */

import { ClientClosedError } from "./errors.js";
import { Health } from "./failover.js";
import { Exchange, NoAnswer } from "./http.js";

export class Servers {
  /**
   * @param {ReturnType<typeof import("./settings.js").checkSettings>} settings
   * @param {string} what
   */
  constructor(settings, what) {
    this.settings = settings;
    this.what = what;
    this.health = new Health(settings, what);
    this.closing = new AbortController();
    /** @type {Set<Exchange>} */
    this.exchanges = new Set();
  }

  get closed() {
    return this.closing.signal.aborted;
  }

  closedError() {
    return new ClientClosedError(`the idmint client of ${this.what} is closed`);
  }

  /**
   * The body of the first success; rejects with IdmintError or, once closed,
   * ClientClosedError.
   * @param {string} method
   * @param {string} path
   * @param {string | null} [body]
   * @returns {Promise<string>}
   */
  async call(method, path, body = null) {
    const attempt = this.health.attempt();
    for (;;) {
      if (this.closed) {
        throw this.closedError();
      }
      const step = attempt.step();
      if (typeof step === "number") {
        await this.settings.clock.sleep(step, this.closing.signal);
        continue;
      }
      const exchange = new Exchange(this.settings, step, method, path, body);
      this.exchanges.add(exchange);
      let answer;
      try {
        answer = await exchange.run();
      } catch (error) {
        if (this.closed) {
          throw this.closedError();
        }
        if (!(error instanceof NoAnswer)) {
          throw error;
        }
        attempt.noAnswer(step, error.message);
        continue;
      } finally {
        this.exchanges.delete(exchange);
      }
      const text = attempt.answer(step, answer.status, answer.text, body !== null);
      if (text !== null) {
        return text;
      }
    }
  }

  /** Ends the requests in progress (their callers get ClientClosedError) and any later one. */
  close() {
    this.closing.abort();
    for (const exchange of [...this.exchanges]) {
      exchange.abort();
    }
  }

  report() {
    return this.health.report();
  }
}
