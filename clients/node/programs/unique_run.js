// Takes from real `idmint serve` instances in many concurrent callers at once;
// run by tests/node_client.rs. Arguments: the instances' URLs (comma
// separated), callers, items per caller, then specs MODE:COUNTER:
//
// - values, ids, uuids: a ValueClient, IdClient, IdClient.nextUuid() shared
//   by CALLERS async callers, all started together behind one gate (a promise
//   opened once every caller waits on it);
// - missing: a counter that does not exist: the 404 must come at once.
//
// Items of one counter must never come twice, across every spec that takes
// from it. Prints `MODE:COUNTER ok N` per spec (`missing:NAME ok 404`).

import { performance } from "node:perf_hooks";
import { IdClient, IdmintError, ValueClient } from "idmint-client";

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/**
 * @param {number} callers
 * @param {number} perCaller
 * @param {() => Promise<unknown>} take
 */
async function together(callers, perCaller, take) {
  /** @type {() => void} */
  let open = () => {};
  const gate = new Promise((resolve) => {
    open = () => resolve(undefined);
  });
  let waiting = 0;
  const all = Array.from({ length: callers }, async () => {
    waiting += 1;
    await gate;
    const mine = [];
    for (let i = 0; i < perCaller; i += 1) {
      mine.push(await take());
    }
    return mine;
  });
  if (waiting !== callers) {
    throw new Error(`${waiting} of ${callers} callers at the gate`);
  }
  open();
  return (await Promise.all(all)).flat();
}

const [urls, callersText, perCallerText, ...specs] = process.argv.slice(2);
const servers = urls.split(",");
const callers = Number(callersText);
const perCaller = Number(perCallerText);
/** @type {Map<string, Set<unknown>>} */
const seen = new Map();
for (const spec of specs) {
  const [mode, counter] = spec.split(":");
  if (mode === "missing") {
    const started = performance.now();
    const missing = new ValueClient(servers, counter, { deadlineMs: 60_000 });
    try {
      await missing.next();
      throw new Error(`${spec}: a counter that does not exist gave a value`);
    } catch (error) {
      if (!(error instanceof IdmintError) || error.kind !== "unknown-counter") {
        throw error;
      }
      if (performance.now() - started >= 30_000) {
        throw new Error("the 404 came only at the deadline");
      }
      console.log(`${spec} ok ${error.status}`);
    } finally {
      await missing.close();
    }
    continue;
  }
  let items;
  if (mode === "values") {
    const client = new ValueClient(servers, counter, { batch: 500 });
    items = await together(callers, perCaller, () => client.next());
    await client.close();
    if (!items.every((item) => Number.isSafeInteger(item))) {
      throw new Error(`${spec}: not whole numbers`);
    }
  } else if (mode === "ids" || mode === "uuids") {
    const client = new IdClient(servers, counter, { batch: 100 });
    items = await together(callers, perCaller, () => (mode === "uuids" ? client.nextUuid() : client.next()));
    await client.close();
    if (mode === "uuids" && !items.every((item) => UUID_V7.test(String(item)))) {
      throw new Error(`${spec}: not UUIDv7s: ${items.slice(0, 3)}`);
    }
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
  const fresh = new Set(items);
  if (fresh.size !== items.length) {
    throw new Error(`${spec}: ${items.length - fresh.size} items handed out twice`);
  }
  const before = seen.get(counter) ?? new Set();
  const twice = items.filter((item) => before.has(item));
  if (twice.length > 0) {
    throw new Error(`${spec}: ${twice.slice(0, 5)} handed out twice across clients`);
  }
  seen.set(counter, new Set([...before, ...items]));
  console.log(`${spec} ok ${items.length}`);
}
