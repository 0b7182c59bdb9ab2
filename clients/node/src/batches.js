/**
 * What a buffered client hands out, and how answers become batches.
 */

import { IdmintError } from "./errors.js";

/**
 * A run of values FIRST..LAST, handed out as numbers.
 */
class Run {
  /**
   * @param {number} first
   * @param {number} last
   */
  constructor(first, last) {
    this.first = first;
    this.length = last - first + 1;
  }

  /** @param {number} index */
  at(index) {
    return this.first + index;
  }
}

/** A list of IDs. */
class List {
  /** @param {string[]} items */
  constructor(items) {
    this.items = items;
    this.length = items.length;
  }

  /** @param {number} index */
  at(index) {
    return this.items[index];
  }
}

/**
 * The batch being handed out and those queued after it; the position whose
 * taker starts the next fetch: where `prefetchShare` of the last fetch is
 * left, counting what is queued.
 * @template T
 */
export class Batches {
  /** @param {number} share */
  constructor(share) {
    this.share = share;
    /** @type {{length: number, at(index: number): any} | null} */
    this.batch = null;
    this.next = 0;
    this.prefetchAt = -1;
    /** @type {{length: number, at(index: number): any}[]} */
    this.queued = [];
    this.queuedItems = 0;
    this.lastFetched = 0;
  }

  /**
   * The next item, and whether its taker should start the next fetch;
   * undefined when every item fetched is taken.
   * @returns {[T, boolean] | undefined}
   */
  take() {
    for (;;) {
      const position = this.next;
      if (this.batch !== null && position < this.batch.length) {
        this.next = position + 1;
        return [this.batch.at(position), position === this.prefetchAt];
      }
      if (this.queued.length === 0) {
        return undefined;
      }
      this.install();
    }
  }

  /**
   * Queues what a fetch brought.
   * @param {{length: number, at(index: number): any}[]} batches
   */
  add(batches) {
    let total = 0;
    for (const batch of batches) {
      if (batch.length > 0) {
        this.queued.push(batch);
        total += batch.length;
      }
    }
    this.queuedItems += total;
    this.lastFetched = total;
  }

  clear() {
    this.batch = null;
    this.next = 0;
    this.prefetchAt = -1;
    this.queued = [];
    this.queuedItems = 0;
  }

  install() {
    const batch = /** @type {{length: number, at(index: number): any}} */ (this.queued.shift());
    this.queuedItems -= batch.length;
    const threshold = Math.ceil(this.share * this.lastFetched);
    const prefetchAt = Math.max(0, batch.length + this.queuedItems - threshold);
    this.batch = batch;
    this.next = 0;
    this.prefetchAt = prefetchAt < batch.length ? prefetchAt : -1;
  }
}

const DIGITS = /^(0|[1-9][0-9]*)$/;

/**
 * `FIRST LAST` per line (the `ranges` route); anything else is the server's
 * mistake, named. A value beyond Number.MAX_SAFE_INTEGER is refused, never
 * rounded (rounding would hand out one number twice).
 * @param {string} body
 * @param {string} what
 */
export function parseRuns(body, what) {
  const runs = [];
  for (const raw of body.split("\n")) {
    const line = raw.replace(/\r$/, "");
    if (!line) {
      continue;
    }
    const [firstText, lastText, ...rest] = line.split(" ");
    let problem = "";
    if (rest.length > 0 || !DIGITS.test(firstText ?? "") || !DIGITS.test(lastText ?? "")) {
      problem = "not two whole numbers";
    } else if (!Number.isSafeInteger(Number(lastText))) {
      problem = "beyond Number.MAX_SAFE_INTEGER";
    } else if (Number(lastText) < Number(firstText)) {
      problem = "the run ends before it starts";
    }
    if (problem) {
      throw new IdmintError(200, `not a run of values of ${what}: ${JSON.stringify(line)} (${problem})`);
    }
    runs.push(new Run(Number(firstText), Number(lastText)));
  }
  if (runs.length === 0) {
    throw new IdmintError(200, `an answer with no values of ${what}`);
  }
  return runs;
}

/**
 * One ID per line (the `ids` route), as one batch.
 * @param {string} body
 * @param {string} what
 */
export function parseIds(body, what) {
  const ids = body
    .split("\n")
    .map((line) => line.replace(/\r$/, ""))
    .filter((line) => line.length > 0);
  if (ids.length === 0) {
    throw new IdmintError(200, `an answer with no IDs of ${what}`);
  }
  return [new List(ids)];
}
