function (keyName, clientMicros) {
  // idmint's cyclic sequence, the JavaScript twin of the host's pipeline update
  // (host/src/sequence/cyclic.rs); tests/conformance.rs holds the two equal.
  //
  // Counter documents live in `counters`: {_id, val, maxval, ts?, prefix?}.
  // Returns the next value: val + 1, or 0 once val has reached maxval. It also
  // moves `ts`, the microsecond timestamp issued with the value, to
  // max(clientMicros, ts + (wrapped ? 1 : 0)), so that (ts, val) only grows.
  // clientMicros defaults to this shell's clock (milliseconds * 1000).
  //
  // An optimistic retry loop: read the counter, then update it on the
  // condition that it is unchanged; another client winning the race means
  // reading again. Runs in mongosh and the legacy mongo shell.
  var MAX_ATTEMPTS = 10000;
  var counters = db.getCollection("counters");
  var now = (clientMicros === undefined || clientMicros === null) ? Date.now() * 1000 : Number(clientMicros);

  function corrupt(reason) {
    return new Error("counter '" + keyName + "' is corrupt: " + reason +
      "; it was left unchanged, fix or recreate it");
  }
  // Worded as the host words it (host/src/sequence/counter_doc.rs).
  function describe(value) {
    if (value === null) return "null";
    if (typeof value === "string") return value.length <= 40 ? "the string " + JSON.stringify(value) : "a string";
    if (typeof value === "boolean") return "the boolean " + value;
    if (typeof value === "number") return "the number " + value;
    if (Array.isArray(value)) return "an array";
    if (value instanceof Date) return "a date";
    if (value && value._bsontype) {
      if (value._bsontype === "Long" || value._bsontype === "Int32" || value._bsontype === "Double") {
        return "the number " + value.toString();
      }
      return "of BSON type " + value._bsontype;
    }
    return "a document";
  }
  function readInteger(doc, field) {
    var value = doc[field];
    if (value === undefined) throw corrupt(field + " is missing");
    // 64-bit integers arrive as Long (mongosh) or NumberLong (legacy shell).
    if (value !== null && typeof value === "object" && typeof value.toNumber === "function") {
      value = value.toNumber();
    }
    if (typeof value !== "number") throw corrupt(field + " is " + describe(value) + ", not a number");
    if (Math.floor(value) !== value) throw corrupt(field + " is " + value + ", not an integer");
    if (value < 0) throw corrupt(field + " is " + value + ", it must not be negative");
    return value;
  }

  for (var attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    var doc = counters.findOne({ _id: keyName });
    if (doc === null) {
      throw new Error("counter '" + keyName + "' does not exist (create it with `idmint counter create " +
        keyName + "`)");
    }
    var val = readInteger(doc, "val");
    var maxval = readInteger(doc, "maxval");
    if (maxval < 1) throw corrupt("maxval is " + maxval + ", it must be at least 1");
    var hasTs = doc.ts !== undefined;
    var ts = hasTs ? readInteger(doc, "ts") : 0;
    if (doc.prefix !== undefined && doc.prefix !== null && typeof doc.prefix !== "string") {
      throw corrupt("prefix is " + describe(doc.prefix) + ", not a string");
    }

    var wrapped = val >= maxval;
    var nextVal = wrapped ? 0 : val + 1;
    var nextTs = Math.max(now, ts + (wrapped ? 1 : 0));

    var unchanged = { _id: keyName, val: doc.val, maxval: doc.maxval, ts: hasTs ? doc.ts : { $exists: false } };
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
    if (result.n === 1) return nextVal;
    // Another client changed the counter first: read it again.
  }
  throw new Error("counter '" + keyName + "' is too contended: " + MAX_ATTEMPTS +
    " conditional updates in a row lost the race");
}
