/**
 * The errors a client rejects with.
 */

/**
 * A call to `idmint serve` failed.
 *
 * Either an instance gave an answer every instance would give (the counter
 * does not exist, the token may not use it, a bad request, the policy failed
 * on the values taken: 500 `policy`): then `status` is its HTTP status and
 * `body` its JSON error body. Or no instance answered within the client's
 * deadline: then `status` is 0 and `body` (the message too) names each
 * instance, without credentials, and why it failed.
 */
export class IdmintError extends Error {
  /**
   * @param {number} status
   * @param {string} body
   * @param {string} [message]
   * @param {{cause?: unknown}} [options]
   */
  constructor(status, body, message, options) {
    super(message ?? (status === 0 ? body : `idmint serve answered ${status}: ${body}`), options);
    this.name = "IdmintError";
    /** @type {number} */
    this.status = status;
    /** @type {string} */
    this.body = body;
  }

  /** The `error` of a JSON error body (`unknown-counter`, `policy`...), or "". */
  get kind() {
    let parsed;
    try {
      parsed = JSON.parse(this.body);
    } catch {
      return "";
    }
    const kind = parsed !== null && typeof parsed === "object" && !Array.isArray(parsed) ? parsed.error : undefined;
    return typeof kind === "string" ? kind : "";
  }

  /** The same failure as a new error, for another caller of the same fetch. */
  again() {
    return new IdmintError(this.status, this.body, this.message, { cause: this });
  }
}

/** The client was closed: no call on it succeeds any more. */
export class ClientClosedError extends Error {
  /**
   * @param {string} message
   * @param {{cause?: unknown}} [options]
   */
  constructor(message, options) {
    super(message, options);
    this.name = "ClientClosedError";
  }

  again() {
    return new ClientClosedError(this.message, { cause: this });
  }
}
