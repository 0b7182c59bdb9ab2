/**
 * The clock set-asides, backoffs and deadlines are measured on.
 *
 * The real one is `performance.now()`; the client's own tests put in one that
 * moves only when a backoff waits or the test moves it, so that the failover
 * rules are checked step by step without sleeping. HTTP timeouts and a
 * caller's wait for a fetch always run on real time.
 *
 * A clock is `{ now(): number, sleep(ms: number, signal: AbortSignal): Promise<void> }`,
 * in milliseconds; `sleep` resolves early (never rejects) once `signal` is aborted.
 */

import { performance } from "node:perf_hooks";

export const REAL_CLOCK = Object.freeze({
  now() {
    return performance.now();
  },
  /**
   * @param {number} ms
   * @param {AbortSignal} signal
   * @returns {Promise<void>}
   */
  sleep(ms, signal) {
    return new Promise((resolve) => {
      if (signal.aborted) {
        resolve();
        return;
      }
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      signal.addEventListener("abort", done, { once: true });
    });
  },
});
