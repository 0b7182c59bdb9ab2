/**
 * One HTTP/1.1 exchange with one instance, bounded in time and abortable,
 * with `node:http`/`node:https` (a fresh connection per exchange, closed
 * when it ends, so that an idle client holds no socket).
 */

import http from "node:http";
import https from "node:https";
import { show } from "./settings.js";

/** The `User-Agent` the client sends. */
export const USER_AGENT = "idmint-node-client/0.1";

/** The instance gave no answer: why, in words fit for the final summary. */
export class NoAnswer extends Error {
  /** @param {string} why */
  constructor(why) {
    super(why);
    this.name = "NoAnswer";
  }
}

/**
 * A request to one instance and its answer.
 *
 * `connectTimeoutMs` bounds the connection; `requestTimeoutMs` the whole
 * exchange, answer included. `abort()` (at `close()`) ends it at once.
 */
export class Exchange {
  /**
   * @param {ReturnType<typeof import("./settings.js").checkSettings>} settings
   * @param {import("./settings.js").Instance} instance
   * @param {string} method
   * @param {string} path
   * @param {string | null} body
   */
  constructor(settings, instance, method, path, body) {
    this.settings = settings;
    this.instance = instance;
    this.method = method;
    this.target = instance.path + path;
    this.body = body;
    this.aborted = false;
    /** @type {((why: NoAnswer) => void) | null} */
    this.fail = null;
  }

  /**
   * The answer's status and body; rejects with NoAnswer.
   * @returns {Promise<{status: number, text: string}>}
   */
  run() {
    const { settings, instance } = this;
    return new Promise((resolve, reject) => {
      if (this.aborted) {
        reject(new NoAnswer("aborted: the client is closed"));
        return;
      }
      /** @type {Record<string, string>} */
      const headers = {
        "User-Agent": USER_AGENT,
        // Not "Connection: close" (node's default without an agent): a kept-alive
        // answer is framed (Content-Length or chunks), so that an answer cut short
        // is told from a whole one. The socket is closed when the exchange ends.
        Connection: "keep-alive",
        Accept: this.body === null ? "text/plain" : "application/json",
      };
      let payload;
      if (this.body !== null) {
        payload = Buffer.from(this.body, "utf8");
        headers["Content-Type"] = "application/json";
        headers["Content-Length"] = String(payload.length);
      }
      if (settings.token !== null) {
        headers.Authorization = `Bearer ${settings.token}`;
      }
      const transport = instance.scheme === "https" ? https : http;
      let settled = false;
      /** @type {import("node:http").ClientRequest} */
      let request;
      const finish = (/** @type {NoAnswer | null} */ error, /** @type {any} */ answer) => {
        if (settled) {
          return;
        }
        settled = true;
        clearTimeout(connectTimer);
        clearTimeout(requestTimer);
        this.fail = null;
        request.destroy();
        if (error !== null) {
          reject(error);
        } else {
          resolve(answer);
        }
      };
      this.fail = (why) => finish(why);
      const connectTimer = setTimeout(
        () => finish(new NoAnswer(`failed: no connection within ${show(settings.connectTimeoutMs)}`)),
        settings.connectTimeoutMs,
      );
      const requestTimer = setTimeout(
        () => finish(new NoAnswer(`no answer within ${show(settings.requestTimeoutMs)}`)),
        settings.requestTimeoutMs,
      );
      request = transport.request({
        host: instance.host,
        port: instance.port,
        method: this.method,
        path: this.target,
        headers,
        agent: false,
      });
      request.on("socket", (socket) => {
        socket.once("connect", () => clearTimeout(connectTimer));
        socket.once("secureConnect", () => clearTimeout(connectTimer));
      });
      request.on("error", (/** @type {NodeJS.ErrnoException} */ error) => {
        if (this.aborted) {
          finish(new NoAnswer("aborted: the client is closed"));
        } else if (error.code === "ECONNRESET" && error.message === "socket hang up") {
          finish(new NoAnswer("failed: the answer was cut short (inside its headers)"));
        } else {
          finish(new NoAnswer(`failed: ${error.code ? `${error.code}: ` : ""}${error.message}`));
        }
      });
      request.on("response", (response) => {
        const length = response.headers["content-length"];
        const chunked = /\bchunked\b/i.test(response.headers["transfer-encoding"] ?? "");
        if (length === undefined && !chunked) {
          // Every answer of idmint serve is framed; one that is not ends at
          // the connection's end, where a cut would go unnoticed.
          finish(new NoAnswer("failed: the answer is not framed (no Content-Length, not chunked)"));
          return;
        }
        /** @type {Buffer[]} */
        const chunks = [];
        let received = 0;
        response.on("data", (/** @type {Buffer} */ chunk) => {
          chunks.push(chunk);
          received += chunk.length;
        });
        response.on("end", () => {
          if (!response.complete) {
            finish(cut(length, received));
            return;
          }
          finish(null, { status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") });
        });
        // A connection closed before the answer's end ("aborted"): a cut.
        response.on("error", () => finish(this.aborted ? new NoAnswer("aborted: the client is closed") : cut(length, received)));
        response.on("close", () => finish(this.aborted ? new NoAnswer("aborted: the client is closed") : cut(length, received)));
      });
      request.end(payload);
    });
  }

  /** Ends the exchange at once: its socket is destroyed. */
  abort() {
    this.aborted = true;
    this.fail?.(new NoAnswer("aborted: the client is closed"));
  }
}

/**
 * @param {string | undefined} length
 * @param {number} received
 */
function cut(length, received) {
  if (length !== undefined && Number(length) > received) {
    return new NoAnswer(`failed: the answer was cut short (${Number(length) - received} bytes missing)`);
  }
  return new NoAnswer("failed: the answer was cut short");
}
