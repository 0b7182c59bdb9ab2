function (keyName, options) {
  // idmint's auto-increment sequence (seed 002), the JavaScript twin of the
  // host's host/core/src/sequence/kinds/autoinc/mod.rs; tests/conformance.rs holds the two
  // equal.
  //
  // Counter documents live in `counters`: {_id, kind: "autoinc", seq, prefix?},
  // seq being the last value handed out. Returns the next value, seq + 1, from
  // one atomic findAndModify (seq + 1 as a 64-bit integer) whose query only matches a well-formed
  // counter that has values left, so a malformed one is never modified; then
  // readCounter (stored beside this function) says what is wrong with it.
  //
  // options.upsert: create a missing counter, its first value options.start
  // (default 1); many shells doing so at once all succeed with distinct values.
  // It is the document the host creates on first use (`idmint seq --upsert`):
  // {_id, kind: "autoinc", seq, prefixes: []}, a counter that owns no prefix
  // (raw values only, so it never claims another counter's; `idmint counter
  // prefix add` gives it one). A counter that exists is taken from.
  //
  // A striped counter (its document the map, kind "striped"; see
  // docs/design/striped-counters.md) is taken from one of its lanes as the
  // host's StripedCounter::take does (host/core/src/sequence/striping/taker.rs),
  // by takeFromLanes, stored beside this function; the value is the lane's
  // `last`.
  var MAX_VALUE = 9007199254740991;
  var upsert = options !== undefined && options !== null && options.upsert === true;
  var start = upsert && options.start !== undefined ? Number(options.start) : 1;
  if (!(start >= 1 && start <= MAX_VALUE) || Math.floor(start) !== start) {
    throw new Error("invalid counter setting: start " + start + " is out of range 1..=" + MAX_VALUE);
  }
  var durable = { w: "majority", j: true, wtimeout: 10000 };

  function check(result, what) {
    if (!result.ok) throw new Error(what + " of counter '" + keyName + "' failed: " + result.errmsg);
    if (result.writeErrors && result.writeErrors.length > 0) {
      var error = new Error(what + " of counter '" + keyName + "' failed: " + result.writeErrors[0].errmsg);
      error.code = result.writeErrors[0].code;
      throw error;
    }
    if (result.writeConcernError) {
      throw new Error(what + " of counter '" + keyName + "' not durable: " + result.writeConcernError.errmsg);
    }
    return result;
  }

  function take() {
    var result = check(db.runCommand({
      findAndModify: "counters",
      query: {
        _id: keyName,
        kind: "autoinc",
        seq: { $gte: 0, $lte: MAX_VALUE - 1 },
        // The types readInteger takes: $isNumber would let a decimal through.
        $expr: { $and: [{ $in: [{ $type: "$seq" }, ["int", "long", "double"]] }, { $eq: ["$seq", { $trunc: "$seq" }] },
          wellFormedPrefixes() ] }
      },
      // As the host writes it: always a 64-bit integer, whatever type seq had.
      update: [{ $set: { seq: { $toLong: { $add: ["$seq", 1] } } } }],
      new: true,
      writeConcern: durable
    }), "advance");
    if (result.value !== null) return readCounter(keyName, result.value, "autoinc").seq;
    // Nothing matched: say why, leaving the document as it is, or take
    // from the lanes of a striped counter.
    var doc = db.getCollection("counters").findOne({ _id: keyName });
    if (doc === null) return null;
    var counter = readCounter(keyName, doc, "autoinc", "autoinc");
    if (counter.striped !== undefined) return takeFromLanes(keyName, counter.striped).last;
    if (counter.seq + 1 > MAX_VALUE) {
      throw new Error("counter '" + keyName + "' is exhausted: it cannot hand out 1 more value(s) " +
        "without passing " + MAX_VALUE + "; it was left unchanged");
    }
    throw new Error("counter '" + keyName + "' changed while it was read; try again");
  }

  var value = take();
  if (value !== null) return value;
  if (!upsert) readCounter(keyName, null, "autoinc");
  // Created with its first value taken; a duplicate key means another shell
  // created it first: take from that one.
  try {
    check(db.runCommand({
      insert: "counters",
      documents: [{ _id: keyName, kind: "autoinc", seq: NumberLong(String(start)), prefixes: [] }],
      writeConcern: durable
    }), "create");
    return start;
  } catch (e) {
    if (e.code !== 11000) throw e;
  }
  value = take();
  if (value === null) readCounter(keyName, null, "autoinc");
  return value;
}
