// The soak's Node.js workload, SoakClient.java's twin: callers taking values
// of a segment counter from a ValueClient and IDs of a cyclic counter from an
// IdClient (clients/node), over every serve instance, until stdin closes.
// Prints one line per call with the times it began and returned:
// "V BEGAN ENDED VALUE", "I BEGAN ENDED ID", or "E BEGAN ENDED V|I MESSAGE"
// for a call that threw. Arguments: segment counter, cyclic counter, its
// prefix, callers per client, server URLs...

import { IdClient, ValueClient } from "../../clients/node/src/index.js";

const [segment, cyclic, prefix, callers, ...servers] = process.argv.slice(2);
const values = new ValueClient(servers, segment, { batch: 50 });
const ids = new IdClient(servers, cyclic, { prefix, batch: 20 });
let stopping = false;
const now = () => Date.now() / 1000;
const pause = () => new Promise((resolve) => setTimeout(resolve, 40));

async function loop(take, letter) {
  while (!stopping) {
    const began = now();
    try {
      const taken = await take();
      process.stdout.write(`${letter} ${began} ${now()} ${taken}\n`);
    } catch (error) {
      const message = String(error?.message ?? error).replace(/\n/g, " ");
      process.stdout.write(`E ${began} ${now()} ${letter} ${message}\n`);
    }
    await pause();
  }
}

// Each client has callers of its own: a wait for one client's next batch is
// that path's alone, not the other's.
for (let i = 0; i < 2 * Number(callers); i += 1) {
  if (i % 2 === 0) {
    loop(() => values.next(), "V");
  } else {
    loop(() => ids.next(), "I");
  }
}
process.stdin.resume();
process.stdin.on("end", () => {
  stopping = true;
  process.exit(0);
});
