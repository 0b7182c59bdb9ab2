/**
 * The failover rules, apart from how requests are sent.
 *
 * Each call asks the first instance (in the order given: the first is the
 * preferred one) that is not set aside and not yet asked in this round. An
 * instance that gives no answer, or answers 408, 429 or a 5xx (but 500
 * `policy`), is set aside for `setAsideMs[0]`, doubled at each failure in a
 * row up to `setAsideMs[1]`, and the call goes on at once with the next. An
 * answer every instance would give (another 4xx: 401, 403, 404, 409 ...; 500
 * `policy`) ends the call at once. Once every instance failed in a round (or
 * all are set aside), the call waits a jittered backoff and goes round again,
 * until its deadline (no request starts after it); then it fails with an
 * IdmintError naming each instance and why. When every instance is set aside
 * at the start of a round, the one whose set-aside ends first is asked
 * anyway: waiting for it would only make the caller wait longer.
 */

import { IdmintError } from "./errors.js";
import { show } from "./settings.js";

/** The error kinds of a 5xx that every instance would answer: the policy
 * failed on the values taken (asking another takes fresh values only to fail
 * again). */
export const SHARED_FAILURES = new Set(["policy"]);

const ERROR_KIND = /^\s*\{\s*"error"\s*:\s*"([a-z-]+)"/;

/**
 * The `error` of a JSON error body (the service writes it first), or "".
 * @param {string} body
 */
export function errorKind(body) {
  return ERROR_KIND.exec(body ?? "")?.[1] ?? "";
}

/**
 * Whether an answer other than a success is this instance's, worth asking another.
 * @param {number} status
 * @param {string} body
 */
export function isInstanceFailure(status, body) {
  if (status === 408 || status === 429) {
    return true;
  }
  return status >= 500 && !SHARED_FAILURES.has(errorKind(body));
}

/** @param {string} body */
function shorten(body) {
  const line = (body ?? "").trim().replaceAll("\n", " ");
  return line.length <= 200 ? line : `${line.slice(0, 200)}...`;
}

/**
 * The instances' health, shared by every call of one client.
 */
export class Health {
  /**
   * @param {ReturnType<typeof import("./settings.js").checkSettings>} settings
   * @param {string} what
   */
  constructor(settings, what) {
    this.settings = settings;
    this.what = what;
    /** @type {Map<import("./settings.js").Instance, {failuresInARow: number, setAsideUntil: number, setAsideFor: number, lastError: string, answers: number, failures: number}>} */
    this.states = new Map(
      settings.instances.map((instance) => [
        instance,
        { failuresInARow: 0, setAsideUntil: 0, setAsideFor: 0, lastError: "", answers: 0, failures: 0 },
      ]),
    );
  }

  attempt() {
    return new Attempt(this, this.settings.clock.now() + this.settings.deadlineMs);
  }

  /**
   * The instance to ask next in a round, or null: the round is over.
   * @param {number} now
   * @param {Set<import("./settings.js").Instance>} tried
   */
  pick(now, tried) {
    let soonest = null;
    for (const instance of this.settings.instances) {
      if (tried.has(instance)) {
        continue;
      }
      const state = /** @type {any} */ (this.states.get(instance));
      if (state.failuresInARow === 0 || state.setAsideUntil <= now) {
        return instance;
      }
      if (soonest === null || state.setAsideUntil < /** @type {any} */ (this.states.get(soonest)).setAsideUntil) {
        soonest = instance;
      }
    }
    return tried.size === 0 ? soonest : null;
  }

  /** @param {import("./settings.js").Instance} instance */
  answered(instance) {
    const state = /** @type {any} */ (this.states.get(instance));
    state.failuresInARow = 0;
    state.setAsideFor = 0;
    state.answers += 1;
  }

  /**
   * @param {import("./settings.js").Instance} instance
   * @param {string} reason
   */
  failed(instance, reason) {
    const [first, most] = this.settings.setAsideMs;
    const state = /** @type {any} */ (this.states.get(instance));
    state.failuresInARow += 1;
    state.failures += 1;
    state.setAsideFor = Math.min(first * 2 ** Math.min(state.failuresInARow - 1, 62), most);
    state.setAsideUntil = this.settings.clock.now() + state.setAsideFor;
    state.lastError = reason;
  }

  /**
   * Between half and all of the round's backoff: first, doubled each round, capped.
   * @param {number} round from 1
   */
  backoff(round) {
    const [first, most] = this.settings.backoffMs;
    const backoff = Math.min(first * 2 ** Math.min(round - 1, 62), most);
    return backoff / 2 + Math.random() * (backoff / 2);
  }

  /** Per instance, for tests and diagnostics. */
  report() {
    const now = this.settings.clock.now();
    return [...this.states].map(([instance, state]) =>
      Object.freeze({
        url: instance.shown,
        answers: state.answers,
        failures: state.failures,
        setAsideForMs: state.failuresInARow === 0 ? 0 : Math.max(0, state.setAsideUntil - now),
      }),
    );
  }

  /** @param {Map<import("./settings.js").Instance, string>} why */
  summary(why) {
    const now = this.settings.clock.now();
    const parts = [];
    for (const [instance, state] of this.states) {
      const reason = why.get(instance);
      if (reason !== undefined) {
        parts.push(`${instance.shown} ${reason} (set aside for ${show(state.setAsideFor)})`);
      } else if (state.failuresInARow > 0 && state.setAsideUntil > now) {
        parts.push(`${instance.shown} not asked: set aside after ${state.lastError}`);
      } else {
        parts.push(`${instance.shown} not asked before the deadline`);
      }
    }
    return `no idmint serve instance gave ${this.what} within ${show(this.settings.deadlineMs)}: ${parts.join("; ")}`;
  }
}

/**
 * One call's rounds over the instances. Its driver asks `step()` what to do
 * (an instance to ask, or milliseconds to wait), and reports how the instance
 * answered with `noAnswer()` or `answer()`.
 */
export class Attempt {
  /**
   * @param {Health} health
   * @param {number} deadlineAt
   */
  constructor(health, deadlineAt) {
    this.health = health;
    this.deadlineAt = deadlineAt;
    /** @type {Set<import("./settings.js").Instance>} */
    this.tried = new Set();
    /** @type {Map<import("./settings.js").Instance, string>} */
    this.why = new Map();
    this.round = 0;
  }

  /**
   * The instance to ask now, or how long to wait first (a number); throws at the deadline.
   * @returns {import("./settings.js").Instance | number}
   */
  step() {
    const now = this.health.settings.clock.now();
    const remaining = this.deadlineAt - now;
    if (remaining <= 0) {
      throw new IdmintError(0, this.health.summary(this.why));
    }
    const instance = this.health.pick(now, this.tried);
    if (instance === null) {
      this.round += 1;
      this.tried.clear();
      return Math.min(this.health.backoff(this.round), remaining);
    }
    this.tried.add(instance);
    return instance;
  }

  /**
   * @param {import("./settings.js").Instance} instance
   * @param {string} reason
   */
  noAnswer(instance, reason) {
    const scrubbed = instance.scrub(reason);
    this.why.set(instance, scrubbed);
    this.health.failed(instance, scrubbed);
  }

  /**
   * The body of a success; null to go on with another instance; throws an
   * answer every instance would give.
   * @param {import("./settings.js").Instance} instance
   * @param {number} status
   * @param {string} body
   * @param {boolean} post
   */
  answer(instance, status, body, post) {
    if (status === 200 || (post && status >= 200 && status < 300)) {
      this.health.answered(instance);
      return body;
    }
    if (isInstanceFailure(status, body)) {
      this.noAnswer(instance, `answered ${status}: ${shorten(body)}`);
      return null;
    }
    // The same from every instance (they share one database and its policies).
    this.health.answered(instance);
    throw new IdmintError(status, body);
  }
}
