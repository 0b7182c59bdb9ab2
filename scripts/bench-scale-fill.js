// mongosh script for scripts/bench-scale.sh: adds counters BENCH_FILL_FROM
// to BENCH_FILL_TO - 1 to database IDMINT_DB, in the shape `idmint counter
// create` writes: counter i is named "k" + i in six digits, owns the one
// prefix "K" + the same digits + "-" (its default), and is cyclic (maxval
// 99) when i is even, autoinc when odd; its prefix's claim goes into the
// prefix history (`prefixes`), as a create writes it. Batches of 5,000.
const target = db.getSiblingDB(process.env.IDMINT_DB);
const from = Number(process.env.BENCH_FILL_FROM);
const to = Number(process.env.BENCH_FILL_TO);
const digits = (i) => String(i).padStart(6, "0");
const batch = 5000;
const zero = NumberLong("0");
const maxval = NumberLong("99");
for (let start = from; start < to; start += batch) {
  const counters = [];
  const claims = [];
  const since = new Date();
  for (let i = start; i < Math.min(start + batch, to); i++) {
    const name = "k" + digits(i);
    const prefix = "K" + digits(i) + "-";
    counters.push(i % 2 === 0
      ? { _id: name, kind: "cyclic", val: zero, maxval, prefix, prefixes: [prefix] }
      : { _id: name, kind: "autoinc", seq: zero, prefix, prefixes: [prefix] });
    claims.push({ _id: prefix, counter: name, state: "owned", since });
  }
  target.prefixes.insertMany(claims, { ordered: false });
  target.counters.insertMany(counters, { ordered: false });
}
print(`${target.counters.countDocuments({})} counters, ${target.prefixes.countDocuments({})} prefix claims`);
