/**
 * The buffered clients: ValueClient and IdClient.
 */

import { parseIds, parseRuns } from "./batches.js";
import { Buffered } from "./buffered.js";
import { IdmintError } from "./errors.js";
import { checkSettings } from "./settings.js";

/** A UUID's canonical text: 8-4-4-4-12 hexadecimal digits. */
const CANONICAL_UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/**
 * Values of an autoinc or segment counter, fetched `batch` at a time with
 * `GET /v1/counters/NAME/ranges` and handed out from memory. Share one per
 * counter. Values a process never takes are gaps, never duplicates.
 * @extends {Buffered<number>}
 */
export class ValueClient extends Buffered {
  /**
   * @param {string | readonly string[]} servers
   * @param {string} counter
   * @param {object} [options]
   */
  constructor(servers, counter, options = {}) {
    const settings = checkSettings(servers, counter, { ...options, prefix: undefined }, { batch: 10_000 });
    if (/** @type {any} */ (options)?.prefix !== undefined) {
      throw new TypeError("unknown option prefix (an IdClient's)");
    }
    super(settings, `v1/counters/${settings.quotedName}/ranges?count=${settings.batch}`, parseRuns);
  }

  /**
   * The next value; waits for the network only when the buffer ran dry.
   * Rejects with IdmintError when the fetch this call waited for failed,
   * ClientClosedError once the client is closed.
   * @returns {Promise<number>}
   */
  next() {
    return this._take();
  }
}

/**
 * Formatted IDs of a counter of any kind, fetched `batch` at a time (at most
 * the server's `--max-count`) with `GET /v1/counters/NAME/ids` and handed out
 * from memory. Share one per counter.
 * @extends {Buffered<string>}
 */
export class IdClient extends Buffered {
  /**
   * @param {string | readonly string[]} servers
   * @param {string} counter
   * @param {object} [options]
   */
  constructor(servers, counter, options = {}) {
    const settings = checkSettings(servers, counter, options, { batch: 100 });
    let path = `v1/counters/${settings.quotedName}/ids?count=${settings.batch}`;
    if (settings.prefix !== null) {
      path += `&prefix=${encodeURIComponent(settings.prefix)}`;
    }
    super(settings, path, parseIds);
  }

  /**
   * The next ID; waits for the network only when the buffer ran dry.
   * @returns {Promise<string>}
   */
  next() {
    return this._take();
  }

  /**
   * The next ID, checked to be a UUID's canonical text (a snowflake counter
   * served with `builtin:uuidv7`), in lower case. Rejects with IdmintError
   * for an ID that is not (the ID is used up either way).
   * @returns {Promise<string>}
   */
  async nextUuid() {
    const id = await this.next();
    if (!CANONICAL_UUID.test(id)) {
      throw new IdmintError(200, `the ID ${id} of ${this.what} is not a UUID`);
    }
    return id.toLowerCase();
  }
}
