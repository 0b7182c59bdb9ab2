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
  // One atomic findAndModify, as the host takes a value: its query matches
  // only a well-formed cyclic counter, so a malformed one is never modified,
  // and the update computes val and ts from the document as the server holds
  // it, so concurrent callers queue on the document instead of racing (an
  // optimistic read-then-update loop starved under contention: seconds per
  // value beside the host's takers). Runs in mongosh and the legacy mongo
  // shell, against MongoDB 4.2+ (pipeline updates).
  //
  // A striped counter (its document the map, kind "striped"; see
  // docs/design/striped-counters.md) is taken from one of its cyclic lanes
  // as the host's StripedCounter::take does
  // (host/core/src/sequence/striping/taker.rs), by takeFromLanes, stored
  // beside this function: `val` is the lane's `last`, the value (not the
  // lane's local value), and `ts` the lane's, which moves by the rule above
  // with clientMicros; tests/striped_twin_cases.rs holds it equal to the host's.
  var MAX_ATTEMPTS = 100;
  var now = (clientMicros === undefined || clientMicros === null) ? Date.now() * 1000 : Number(clientMicros);

  function integral(field, min) {
    return { $and: [{ $in: [{ $type: field }, ["int", "long", "double"]] },
      { $eq: [field, { $trunc: field }] }, { $gte: [field, min] }] };
  }
  var wellFormed = { $and: [
    integral("$val", 0),
    integral("$maxval", 1),
    { $or: [{ $eq: [{ $type: "$ts" }, "missing"] }, integral("$ts", 0)] },
    wellFormedPrefixes()
  ] };
  var wrapped = { $gte: ["$val", "$maxval"] };
  // One $set stage: both fields are computed from the document before it.
  var advance = [{ $set: {
    val: { $cond: [wrapped, NumberLong("0"), { $toLong: { $add: ["$val", 1] } }] },
    ts: { $toLong: { $max: [NumberLong(String(now)),
      { $add: [{ $ifNull: ["$ts", 0] }, { $cond: [wrapped, 1, 0] }] }] } }
  } }];

  for (var attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    var result = db.runCommand({
      findAndModify: "counters",
      query: { _id: keyName, kind: { $in: [null, "cyclic"] }, $expr: wellFormed },
      update: advance,
      new: true,
      writeConcern: { w: "majority", j: true, wtimeout: 10000 }
    });
    if (!result.ok) throw new Error("update of counter '" + keyName + "' failed: " + result.errmsg);
    if (result.writeConcernError) {
      throw new Error("update of counter '" + keyName + "' not durable: " + result.writeConcernError.errmsg);
    }
    if (result.value !== null && result.value !== undefined) {
      var after = readCounter(keyName, result.value, "cyclic");
      return { ts: after.ts, val: after.val };
    }
    // Nothing matched: say why (missing, malformed, another kind), leaving
    // the document as it is, or take from the lanes of a striped counter;
    // a counter well-formed by now was replaced between the two: take
    // again.
    var counter = readCounter(keyName, db.getCollection("counters").findOne({ _id: keyName }), "cyclic", "cyclic");
    if (counter.striped !== undefined) {
      var lane = takeFromLanes(keyName, counter.striped, now);
      return { ts: lane.ts, val: lane.last };
    }
  }
  throw new Error("counter '" + keyName + "' changed while it was read, " + MAX_ATTEMPTS +
    " times in a row; try again");
}
