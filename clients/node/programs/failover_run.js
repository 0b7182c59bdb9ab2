// Takes from real `idmint serve` instances in many concurrent callers while
// the test that runs it kills, stops, cuts and restarts them; run by
// tests/node_client.rs. Arguments: MODE (`values` or `ids`), counter,
// callers, items per caller and phase, batch, then the instances' URLs.
//
// Phases, the callers joined between them so that the test acts at a point
// the program is known to be at. Before each phase the program prints
// `paused N` and reads a command from stdin: `go [failed=I,J] [answered=K]`
// runs a phase in which every caller takes its items and goes on until each
// instance named `failed` has failed, and each named `answered` has answered,
// since the phase began (instances by position, from 0); `end` ends. No call
// may fail. Then it checks that nothing came twice and prints `taken ok N`
// and `health A/F A/F ...` (answers/failures per instance).

import { createInterface } from "node:readline";
import { performance } from "node:perf_hooks";
import { IdClient, ValueClient } from "idmint-client";

const EVENT_MS = 30_000;

/**
 * @param {ValueClient | IdClient} client
 * @param {unknown[][]} taken
 * @param {number} count
 * @param {() => boolean} done
 */
async function phase(client, taken, count, done) {
  const began = performance.now();
  /** @type {() => void} */
  let open = () => {};
  const gate = new Promise((resolve) => {
    open = () => resolve(undefined);
  });
  const callers = taken.map(async (mine) => {
    await gate;
    let i = 0;
    while (i < count || !done()) {
      mine.push(await client.next()); // a rejection here fails the run
      i += 1;
      if (i >= count && i % 256 === 0 && performance.now() - began > EVENT_MS) {
        throw new Error(`the phase's event did not happen within ${EVENT_MS} ms: ${JSON.stringify(client.health())}`);
      }
    }
  });
  open();
  await Promise.all(callers);
}

/**
 * @param {ValueClient | IdClient} client
 * @param {string[]} words
 */
function condition(client, words) {
  const before = client.health();
  /** @type {number[]} */
  const failed = [];
  /** @type {number[]} */
  const answered = [];
  for (const word of words) {
    const [name, indexes] = word.split("=");
    (name === "failed" ? failed : answered).push(...indexes.split(",").map(Number));
  }
  return () => {
    const now = client.health();
    return failed.every((i) => now[i].failures > before[i].failures) && answered.every((i) => now[i].answers > before[i].answers);
  };
}

const [mode, counter, callersText, perPhaseText, batchText, ...servers] = process.argv.slice(2);
const options = {
  batch: Number(batchText),
  setAsideMs: [100, 1000],
  connectTimeoutMs: 1000,
  requestTimeoutMs: 1000,
  deadlineMs: 20_000,
};
const client = mode === "values" ? new ValueClient(servers, counter, options) : new IdClient(servers, counter, options);
const taken = Array.from({ length: Number(callersText) }, () => /** @type {unknown[]} */ ([]));
const commands = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
let health;
for (let number = 1; ; number += 1) {
  console.log(`paused ${number}`);
  const line = await commands.next();
  const command = line.done ? [] : line.value.split(/\s+/).filter(Boolean);
  if (command.length === 0 || command[0] === "end") {
    break;
  }
  if (command[0] !== "go") {
    throw new Error(`expected go or end on stdin, not ${command}`);
  }
  await phase(client, taken, Number(perPhaseText), condition(client, command.slice(1)));
}
health = client.health();
await client.close();
process.stdin.destroy();
const items = taken.flat();
const unique = new Set(items);
if (unique.size !== items.length) {
  console.error(`${items.length - unique.size} items handed out twice`);
  process.exit(1);
}
console.log(`taken ok ${items.length}`);
console.log(`health ${health.map((h) => `${h.answers}/${h.failures}`).join(" ")}`);
