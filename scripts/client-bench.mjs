// Values/s and IDs/s through the Node.js client against raw HTTP from Node,
// one caller each, for docs/BENCHMARKS.md (scripts/client-bench.py's twin).
//
//   node scripts/client-bench.mjs --server http://127.0.0.1:8080/ --values tickets --ids orders
//
// Prints one JSON object: per mode, values (or IDs) per second.

import http from "node:http";
import { parseArgs } from "node:util";
import { IdClient, ValueClient } from "../clients/node/src/index.js";

const { values: args } = parseArgs({
  options: {
    server: { type: "string" },
    values: { type: "string" },
    ids: { type: "string" },
    seconds: { type: "string", default: "3" },
    "value-batch": { type: "string", default: "10000" },
    "id-batch": { type: "string", default: "1000" },
  },
});
const seconds = Number(args.seconds);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

async function timed(take) {
  let count = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  while (performance.now() < deadline) {
    for (let i = 0; i < 100; i += 1) {
      await take();
    }
    count += 100;
  }
  return count / ((performance.now() - started) / 1000);
}

function get(path) {
  return new Promise((resolve, reject) => {
    const request = http.get(new URL(path, args.server), { agent, headers: { Accept: "text/plain" } },
      (response) => {
        let body = "";
        response.setEncoding("utf8");
        response.on("data", (chunk) => { body += chunk; });
        response.on("end", () => resolve(body));
      });
    request.on("error", reject);
  });
}

function raw(path, parse) {
  const pending = [];
  return async () => {
    if (pending.length === 0) {
      pending.push(...parse(await get(path)).reverse());
    }
    return pending.pop();
  };
}

const runs = (body) => body.split("\n").filter(Boolean).flatMap((line) => {
  const [first, last] = line.split(" ").map(Number);
  return Array.from({ length: last - first + 1 }, (_, i) => first + i);
});
const lines = (body) => body.split("\n").filter(Boolean);

const results = {};
const values = new ValueClient([args.server], args.values, { batch: Number(args["value-batch"]) });
results.client_values = await timed(() => values.next());
await values.close();
results.raw_values = await timed(raw(`v1/counters/${args.values}/ranges?count=${args["value-batch"]}`, runs));
const ids = new IdClient([args.server], args.ids, { batch: Number(args["id-batch"]) });
results.client_ids = await timed(() => ids.next());
await ids.close();
results.raw_ids = await timed(raw(`v1/counters/${args.ids}/ids?count=${args["id-batch"]}`, lines));
results.client_over_raw_values = results.client_values / results.raw_values;
results.client_over_raw_ids = results.client_ids / results.raw_ids;
agent.destroy();
console.log(JSON.stringify(Object.fromEntries(
  Object.entries(results).map(([key, value]) => [key, Math.round(value * 1000) / 1000]))));
