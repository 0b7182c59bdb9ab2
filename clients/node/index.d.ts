// Hand-written declarations of the public API of idmint-client.

/** A clock in milliseconds (tests put in one that moves on command). */
export interface Clock {
  now(): number;
  /** Resolves after `ms`, or early once `signal` is aborted; never rejects. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

/** The settings every client shares; durations in milliseconds. */
export interface ClientOptions {
  /** The bearer token (`--tokens`, `--tokens-from-db`); printable ASCII without spaces. */
  token?: string | null;
  /** One request to one instance must connect within this (default 2000). */
  connectTimeoutMs?: number;
  /** One request to one instance, answer included (default 5000). */
  requestTimeoutMs?: number;
  /** One call, failover included, before its callers get an error (default 10000). */
  deadlineMs?: number;
  /** A failed instance is left out for the first, doubled per failure in a row, up to the max (default [1000, 30000]). */
  setAsideMs?: readonly [first: number, max: number];
  /** The pause between rounds once every instance failed: first, doubled, max (default [50, 1000]). */
  backoffMs?: readonly [first: number, max: number];
  /** For tests. */
  clock?: Clock;
}

export interface BufferedOptions extends ClientOptions {
  /** Values or IDs per request (default 10,000 values, 100 IDs). */
  batch?: number;
  /** The next fetch starts when this share of the last fetch is left (default 0.2). */
  prefetchShare?: number;
}

export interface IdClientOptions extends BufferedOptions {
  /** The IDs' prefix (default: the counter's). */
  prefix?: string | null;
}

/** One base URL, or several: the first is the preferred one. */
export type Servers = string | readonly string[];

/** One instance as the client sees it. */
export interface InstanceHealth {
  /** Its base URL, without credentials. */
  readonly url: string;
  readonly answers: number;
  readonly failures: number;
  /** How much longer it is set aside (0: it may be asked). */
  readonly setAsideForMs: number;
}

/**
 * A call to `idmint serve` failed: `status` and the JSON error `body` of an
 * answer every instance would give, or status 0 and a summary naming each
 * instance (without credentials) when none answered within the deadline.
 */
export class IdmintError extends Error {
  constructor(status: number, body: string, message?: string, options?: { cause?: unknown });
  readonly status: number;
  readonly body: string;
  /** The `error` of a JSON error body (`unknown-counter`, `policy`...), or "". */
  readonly kind: string;
  /** The same failure as a new error. */
  again(): IdmintError;
}

/** A call on a closed client. */
export class ClientClosedError extends Error {
  constructor(message: string, options?: { cause?: unknown });
  again(): ClientClosedError;
}

declare abstract class Buffered<T> {
  /** `counter 'NAME'`, as messages say. */
  readonly what: string;
  /** The next item; waits for the network only when the buffer ran dry. */
  next(): Promise<T>;
  /** Per instance, for diagnostics. */
  health(): InstanceHealth[];
  /** Aborts the fetch in flight (its callers get ClientClosedError); every later call rejects. */
  close(): Promise<void>;
}

/** Values of an autoinc or segment counter (`/ranges`), in batches. */
export class ValueClient extends Buffered<number> {
  constructor(servers: Servers, counter: string, options?: BufferedOptions);
}

/** Formatted IDs of a counter of any kind (`/ids`), in batches. */
export class IdClient extends Buffered<string> {
  constructor(servers: Servers, counter: string, options?: IdClientOptions);
  /** The next ID, checked to be a UUID's canonical text, in lower case. */
  nextUuid(): Promise<string>;
}

/** A number reserved. */
export interface Reservation {
  readonly series: string;
  /** "" for a series without periods. */
  readonly period: string;
  readonly number: number;
  /** `reserved` (for a client key's earlier reservation, what it is now). */
  readonly state: string;
  /** RFC 3339: until when it may be confirmed. */
  readonly deadline: string;
  /** An earlier call with the same client key reserved it. */
  readonly reused: boolean;
}

/** A number confirmed or voided. */
export interface Settled {
  readonly series: string;
  readonly period: string;
  readonly number: number;
  readonly state: string;
  readonly reference: string | null;
  readonly reason: string | null;
  /** It was so already (a call sent again): nothing was written. */
  readonly already: boolean;
}

/** A gap-free series: reserve, then confirm or void; every call safe to send again. */
export class SeriesClient {
  constructor(servers: Servers, series: string, options?: ClientOptions);
  readonly what: string;
  /** Reserves the next number for `ttlSeconds` under `clientKey` (a random one when omitted). */
  reserve(ttlSeconds: number, clientKey?: string): Promise<Reservation>;
  confirm(reservation: Pick<Reservation, "number" | "period">, reference: string): Promise<Settled>;
  void(reservation: Pick<Reservation, "number" | "period">, reason: string): Promise<Settled>;
  health(): InstanceHealth[];
  close(): Promise<void>;
}
