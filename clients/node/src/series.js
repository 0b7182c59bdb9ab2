/**
 * Numbers of a gap-free series (invoices): reserved, then confirmed or voided.
 *
 * Not fetched in batches: a number not used must be voided, so none is taken
 * ahead. Every call fails over like a fetch and is safe to send again: a
 * reserve carries a client key (the caller's, or a random one per call), so a
 * reserve whose answer was lost answers the number reserved the first time and
 * takes none; a confirm or void sent again answers `already`. A number
 * confirmed otherwise, voided or expired is refused at once (409 `settled`);
 * one never reserved, or no such series, is a 404.
 */

import { randomUUID } from "node:crypto";
import { IdmintError } from "./errors.js";
import { Servers } from "./servers.js";
import { checkSettings } from "./settings.js";

/**
 * @param {unknown} fields
 * @param {string} name
 */
function textOr(fields, name) {
  const value = /** @type {Record<string, unknown>} */ (fields)[name];
  return typeof value === "string" ? value : null;
}

/** A gap-free series of `idmint serve`. Share one per series. */
export class SeriesClient {
  /**
   * @param {string | readonly string[]} servers
   * @param {string} series
   * @param {object} [options]
   */
  constructor(servers, series, options = {}) {
    const settings = checkSettings(servers, series, options, { what: "series" });
    if (/** @type {any} */ (options)?.batch !== undefined || /** @type {any} */ (options)?.prefix !== undefined) {
      throw new TypeError("a SeriesClient takes no batch or prefix: its numbers are reserved one at a time");
    }
    this.what = `series '${settings.name}'`;
    this._path = `v1/series/${settings.quotedName}/reservations`;
    this._servers = new Servers(settings, this.what);
  }

  /**
   * Reserves the next number for `ttlSeconds` (whole seconds, 1 s to 7 days)
   * under `clientKey` (1 to 128 characters; a random one when omitted): a
   * reserve with a key already used answers that reservation, `reused`, and
   * takes none.
   * @param {number} ttlSeconds
   * @param {string} [clientKey]
   */
  async reserve(ttlSeconds, clientKey) {
    if (typeof ttlSeconds !== "number" || !Number.isFinite(ttlSeconds)) {
      throw new TypeError(`ttlSeconds must be a number of seconds, not ${String(ttlSeconds)}`);
    }
    const key = clientKey ?? randomUUID();
    const body = JSON.stringify({ ttl_s: Math.trunc(ttlSeconds), client_key: key });
    const fields = this._object(await this._servers.call("POST", this._path, body));
    return Object.freeze({
      series: this._text(fields, "series"),
      period: textOr(fields, "period") ?? "",
      number: this._number(fields),
      state: this._text(fields, "state"),
      deadline: this._text(fields, "deadline"),
      reused: fields.reused === true,
    });
  }

  /**
   * Confirms a reserved number with the business reference, before its deadline.
   * @param {{number: number, period: string}} reservation
   * @param {string} reference
   */
  confirm(reservation, reference) {
    return this._settle(reservation, "confirm", "reference", reference);
  }

  /**
   * Voids a reserved number with a reason (kept for the audit).
   * @param {{number: number, period: string}} reservation
   * @param {string} reason
   */
  void(reservation, reason) {
    return this._settle(reservation, "void", "reason", reason);
  }

  /**
   * @param {{number: number, period: string}} reservation
   * @param {string} action
   * @param {string} field
   * @param {string} text
   */
  async _settle(reservation, action, field, text) {
    /** @type {Record<string, string>} */
    const body = { [field]: text };
    if (reservation.period) {
      body.period = reservation.period;
    }
    const path = `${this._path}/${reservation.number}/${action}`;
    const fields = this._object(await this._servers.call("POST", path, JSON.stringify(body)));
    return Object.freeze({
      series: this._text(fields, "series"),
      period: textOr(fields, "period") ?? "",
      number: this._number(fields),
      state: this._text(fields, "state"),
      reference: textOr(fields, "reference"),
      reason: textOr(fields, "reason"),
      already: fields.already === true,
    });
  }

  /** @param {string} answer */
  _object(answer) {
    let fields;
    try {
      fields = JSON.parse(answer);
    } catch {
      fields = null;
    }
    if (fields === null || typeof fields !== "object" || Array.isArray(fields)) {
      throw new IdmintError(200, `not an answer about ${this.what}: ${answer}`);
    }
    return /** @type {Record<string, unknown>} */ (fields);
  }

  /**
   * @param {Record<string, unknown>} fields
   * @param {string} name
   */
  _text(fields, name) {
    const value = fields[name];
    if (typeof value !== "string") {
      throw new IdmintError(200, `an answer about ${this.what} without "${name}"`);
    }
    return value;
  }

  /** @param {Record<string, unknown>} fields */
  _number(fields) {
    const value = fields.number;
    if (!Number.isSafeInteger(value)) {
      throw new IdmintError(200, `an answer about ${this.what} without a number`);
    }
    return /** @type {number} */ (value);
  }

  /** Per instance, for diagnostics. */
  health() {
    return this._servers.report();
  }

  /**
   * Ends the calls in progress and any later one.
   * @returns {Promise<void>}
   */
  async close() {
    this._servers.close();
  }
}
