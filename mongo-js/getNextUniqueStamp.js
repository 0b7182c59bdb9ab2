function (keyName, clientMicros) {
  // idmint's cyclic sequence, the JavaScript twin of the host's pipeline update
  // (host/core/src/sequence/kinds/cyclic/mod.rs); tests/conformance.rs holds
  // the two equal.
  //
  // Counter documents live in `counters`: {_id, kind?, val, maxval, ts?, prefix?}
  // (kind absent or "cyclic"); readCounter, stored beside this function,
  // checks them as the host does.
  // Returns {ts, val}: the next value, val + 1, or 0 once val has reached
  // maxval, and `ts`, the microsecond timestamp the counter issues with it,
  // max(clientMicros, ts + (wrapped ? 1 : 0)). The pair only grows, so it is
  // what makes an ID unique: a value alone repeats after a wrap, and a
  // caller's own clock may be frozen or behind. clientMicros defaults to this
  // shell's clock (milliseconds * 1000). getNextUniqueSeq returns its val.
  //
  // An optimistic retry loop: read the counter, then update it on the
  // condition that it is unchanged; another client winning the race means
  // reading again. Runs in mongosh and the legacy mongo shell.
  var MAX_ATTEMPTS = 10000;
  var counters = db.getCollection("counters");
  var now = (clientMicros === undefined || clientMicros === null) ? Date.now() * 1000 : Number(clientMicros);

  for (var attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    var doc = counters.findOne({ _id: keyName });
    var counter = readCounter(keyName, doc, "cyclic");
    var val = counter.val, maxval = counter.maxval, ts = counter.ts, hasTs = counter.hasTs;

    var wrapped = val >= maxval;
    var nextVal = wrapped ? 0 : val + 1;
    var nextTs = Math.max(now, ts + (wrapped ? 1 : 0));

    var unchanged = { _id: keyName, kind: doc.kind === undefined ? { $exists: false } : doc.kind,
      val: doc.val, maxval: doc.maxval, ts: hasTs ? doc.ts : { $exists: false } };
    var result = db.runCommand({
      update: "counters",
      updates: [{ q: unchanged, u: { $set: { val: NumberLong(String(nextVal)), ts: NumberLong(String(nextTs)) } } }],
      writeConcern: { w: "majority", j: true }
    });
    if (!result.ok) throw new Error("update of counter '" + keyName + "' failed: " + result.errmsg);
    if (result.writeErrors && result.writeErrors.length > 0) {
      throw new Error("update of counter '" + keyName + "' failed: " + result.writeErrors[0].errmsg);
    }
    if (result.writeConcernError) {
      throw new Error("update of counter '" + keyName + "' not durable: " + result.writeConcernError.errmsg);
    }
    if (result.n === 1) return { ts: nextTs, val: nextVal };
    // Another client changed the counter first: read it again.
  }
  throw new Error("counter '" + keyName + "' is too contended: " + MAX_ATTEMPTS +
    " conditional updates in a row lost the race");
}
