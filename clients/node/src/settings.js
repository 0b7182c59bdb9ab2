/**
 * The settings every client shares, checked, and the instances' URLs.
 * Durations are in milliseconds.
 */

import { REAL_CLOCK } from "./clock.js";

/** One `idmint serve` a client may ask: its base URL without credentials. */
export class Instance {
  /**
   * @param {string} scheme "http" or "https"
   * @param {string} host without brackets
   * @param {number} port
   * @param {string} path ending with "/"
   * @param {string[]} secrets the user info the URL was given with (as written, and
   *   as the URL parser encodes it): never sent, scrubbed from messages
   */
  constructor(scheme, host, port, path, secrets) {
    this.scheme = scheme;
    this.host = host;
    this.port = port;
    this.path = path;
    const bracketed = host.includes(":") ? `[${host}]` : host;
    const defaultPort = scheme === "https" ? 443 : 80;
    /** How messages name it: the base URL, which never holds credentials. */
    this.shown = `${scheme}://${bracketed}${port === defaultPort ? "" : `:${port}`}${path}`;
    Object.defineProperty(this, "secrets", { value: secrets, enumerable: false });
    Object.freeze(this);
  }

  /**
   * `text` with the URL's user info, if any, blanked out.
   * @param {string} text
   */
  scrub(text) {
    let scrubbed = text;
    for (const secret of this.secrets) {
      scrubbed = scrubbed.split(secret).join("***");
    }
    return scrubbed;
  }

  /** Keeps credentials out of `util.inspect` and `console.log`. */
  [Symbol.for("nodejs.util.inspect.custom")]() {
    return `Instance(${this.shown})`;
  }

  /**
   * Checks a server URL; an error never repeats credentials it may hold.
   * @param {unknown} url
   */
  static parse(url) {
    if (typeof url !== "string") {
      throw new TypeError("a server URL is not a string");
    }
    const text = url.trim();
    const authority = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/?#]*)/.exec(text)?.[1] ?? "";
    const at = authority.lastIndexOf("@");
    const userinfo = at >= 0 ? authority.slice(0, at) : "";
    let parsed;
    try {
      parsed = new URL(text);
    } catch {
      // Not the URL itself: it may hold a password.
      const port = /:(\d*)$/.exec(authority.slice(at + 1))?.[1];
      const reason = port !== undefined && (port === "" || Number(port) > 65535) ? "a bad port" : "it cannot be read";
      throw new TypeError(`a server URL is not a URL: ${reason}`);
    }
    const scheme = parsed.protocol.replace(/:$/, "").toLowerCase();
    const host = parsed.hostname.replace(/^\[(.*)\]$/, "$1");
    const redacted = `${scheme}://${parsed.host || "?"}${parsed.pathname}`;
    if (scheme !== "http" && scheme !== "https") {
      throw new TypeError(`server URL ${redacted} must start with http:// or https://`);
    }
    if (!host) {
      throw new TypeError(`server URL ${redacted} has no host`);
    }
    if (parsed.search || parsed.hash || text.endsWith("?") || text.endsWith("#")) {
      throw new TypeError(`server URL ${redacted} must have no query or fragment`);
    }
    let path = parsed.pathname || "/";
    if (!path.endsWith("/")) {
      path += "/"; // so that "v1/..." goes below it, not beside it
    }
    const port = parsed.port ? Number(parsed.port) : scheme === "https" ? 443 : 80;
    const secrets = [userinfo, parsed.username && `${parsed.username}:${parsed.password}`, parsed.password]
      .filter((secret) => secret && secret.length > 0)
      .sort((a, b) => b.length - a.length);
    return new Instance(scheme, host, port, path, [...new Set(secrets)]);
  }
}

/**
 * `10 s` or `300 ms`: how messages write a duration given in milliseconds.
 * @param {number} ms
 */
export function show(ms) {
  if (ms % 1000 === 0) {
    return `${ms / 1000} s`;
  }
  return `${Math.round(ms)} ms`;
}

/**
 * @param {string} setting
 * @param {unknown} value
 */
function positive(setting, value) {
  if (typeof value !== "number" || !(value > 0) || !Number.isFinite(value)) {
    throw new RangeError(`${setting} must be a positive number of milliseconds, not ${String(value)}`);
  }
}

/**
 * @param {string} setting
 * @param {unknown} pair
 * @returns {[number, number]}
 */
function pairOf(setting, pair) {
  if (!Array.isArray(pair) || pair.length !== 2) {
    throw new RangeError(`${setting} must be [first, max] in milliseconds`);
  }
  const [first, most] = pair;
  positive(`${setting} first`, first);
  positive(`${setting} max`, most);
  if (most < first) {
    throw new RangeError(`${setting} max (${show(most)}) must be at least its first (${show(first)})`);
  }
  return [first, most];
}

const KNOWN = new Set([
  "token",
  "batch",
  "prefetchShare",
  "connectTimeoutMs",
  "requestTimeoutMs",
  "deadlineMs",
  "setAsideMs",
  "backoffMs",
  "clock",
  "prefix",
]);

/**
 * What a client is built with, checked: the settings, or a TypeError or
 * RangeError naming the one that is wrong.
 *
 * @param {string | readonly string[]} servers
 * @param {string} name
 * @param {Record<string, unknown>} options
 * @param {{what?: string, batch?: number}} defaults
 */
export function checkSettings(servers, name, options, { what = "counter", batch = 1 } = {}) {
  const urls = typeof servers === "string" ? [servers] : Array.isArray(servers) ? [...servers] : null;
  if (urls === null) {
    throw new TypeError('servers must be a URL or an array of URLs: ["http://idmint:8080/", ...]');
  }
  if (urls.length === 0) {
    throw new TypeError('no server URL given: ["http://idmint:8080/", ...] needs at least one');
  }
  /** @type {Instance[]} */
  const instances = [];
  for (const url of urls) {
    const instance = Instance.parse(url);
    if (instances.some((other) => other.shown === instance.shown)) {
      throw new TypeError(`server URL ${instance.shown} is listed twice`);
    }
    instances.push(instance);
  }
  if (typeof name !== "string" || name === "") {
    throw new TypeError(`no ${what} given: its name is required`);
  }
  const given = options ?? {};
  for (const key of Object.keys(given)) {
    if (!KNOWN.has(key)) {
      throw new TypeError(`unknown option ${key}`);
    }
  }
  const token = given.token ?? null;
  if (token !== null && (typeof token !== "string" || !/^[\x21-\x7e]+$/.test(token))) {
    throw new TypeError("the token must be printable ASCII without spaces (null for none)");
  }
  const size = given.batch ?? batch;
  if (!Number.isSafeInteger(size) || /** @type {number} */ (size) < 1) {
    throw new RangeError(`batch must be at least 1, not ${String(size)}`);
  }
  const share = given.prefetchShare ?? 0.2;
  if (typeof share !== "number" || !(share > 0 && share <= 1)) {
    throw new RangeError(`prefetchShare must be more than 0 and at most 1, not ${String(share)}`);
  }
  const connectTimeoutMs = given.connectTimeoutMs ?? 2000;
  const requestTimeoutMs = given.requestTimeoutMs ?? 5000;
  const deadlineMs = given.deadlineMs ?? 10000;
  positive("connectTimeoutMs", connectTimeoutMs);
  positive("requestTimeoutMs", requestTimeoutMs);
  positive("deadlineMs", deadlineMs);
  const setAsideMs = pairOf("setAsideMs", given.setAsideMs ?? [1000, 30000]);
  const backoffMs = pairOf("backoffMs", given.backoffMs ?? [50, 1000]);
  const clock = /** @type {import("./clock.js").REAL_CLOCK} */ (given.clock ?? REAL_CLOCK);
  if (typeof clock.now !== "function" || typeof clock.sleep !== "function") {
    throw new TypeError("clock must have now() and sleep(ms, signal)");
  }
  const prefix = given.prefix ?? null;
  if (prefix !== null && typeof prefix !== "string") {
    throw new TypeError("prefix must be a string (null for the counter's)");
  }
  return Object.freeze({
    instances: Object.freeze(instances),
    name,
    quotedName: encodeURIComponent(name),
    token: /** @type {string | null} */ (token),
    batch: /** @type {number} */ (size),
    prefetchShare: share,
    connectTimeoutMs: /** @type {number} */ (connectTimeoutMs),
    requestTimeoutMs: /** @type {number} */ (requestTimeoutMs),
    deadlineMs: /** @type {number} */ (deadlineMs),
    setAsideMs,
    backoffMs,
    clock,
    prefix: /** @type {string | null} */ (prefix),
  });
}
