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
  // host's StripedCounter::take does (host/core/src/sequence/striping/taker.rs):
  // see takeFromLanes below.
  var MAX_VALUE = 9007199254740991;
  // The host's striping::MAX_LANES and ATTEMPTS (how many lanes a take
  // tries), and its longest pause between two reads of a map that has no
  // live lane.
  var MAX_LANES = 1024;
  var ATTEMPTS = 64;
  var LONGEST_PAUSE_MS = 100;
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
    if (counter.striped !== undefined) return takeFromLanes(counter.striped, 1);
    if (counter.seq + 1 > MAX_VALUE) {
      throw new Error("counter '" + keyName + "' is exhausted: it cannot hand out 1 more value(s) " +
        "without passing " + MAX_VALUE + "; it was left unchanged");
    }
    throw new Error("counter '" + keyName + "' changed while it was read; try again");
  }

  // A lane's take, the host's lane::take_command
  // (host/core/src/sequence/striping/lane.rs): its filter holds only while
  // lane `id` is a well-formed, live (unsealed) lane of `kind` with `count`
  // values left, and its update advances the lane's local value `seq` and
  // computes `last`, the value it stands for (base + (seq - 1) * modulus +
  // residue + 1, from the lane's own b, m and r), on the server.
  // tests/striped_twin.rs holds the two equal, term for term and BSON
  // type for type, and this function's lane take equal to the host's.
  function long(n) {
    return NumberLong(String(n));
  }
  function integerIn(field, min, max) {
    var path = "$" + field;
    // The types readInteger takes: $isNumber would let a decimal through.
    return { $and: [{ $in: [{ $type: path }, ["int", "long", "double"]] }, { $eq: [path, { $trunc: path }] },
      { $gte: [path, long(min)] }, { $lte: [path, long(max)] }] };
  }
  function laneGuard(kind) {
    return { $and: [
      { $eq: ["$kind", "lane"] },
      { $eq: ["$lane.kind", kind] },
      integerIn("lane.generation", 1, MAX_VALUE),
      integerIn("lane.b", 0, MAX_VALUE),
      integerIn("lane.m", 1, MAX_LANES),
      integerIn("lane.r", 0, MAX_LANES - 1),
      { $lt: ["$lane.r", "$lane.m"] },
      integerIn("seq", 0, MAX_VALUE),
      integerIn("last", 0, MAX_VALUE),
      { $eq: ["$last", { $cond: [
        { $eq: ["$seq", 0] },
        "$lane.b",
        { $add: ["$lane.b", { $multiply: [{ $subtract: ["$seq", 1] }, "$lane.m"] }, "$lane.r", 1] }
      ] }] },
      // Live: sealed is null (a missing one is malformed).
      { $eq: [{ $type: "$sealed" }, "null"] }
    ] };
  }
  function takeLane(id, kind, count) {
    return check(db.runCommand({
      findAndModify: "counters",
      query: { _id: id, $expr: { $and: [
        laneGuard(kind),
        { $lte: ["$last", { $subtract: [long(MAX_VALUE), { $multiply: [long(count), "$lane.m"] }] }] }
      ] } },
      update: [{ $set: {
        seq: { $toLong: { $add: ["$seq", long(count)] } },
        last: { $toLong: { $add: [
          "$lane.b",
          { $multiply: [{ $add: ["$seq", long(count - 1)] }, "$lane.m"] },
          "$lane.r",
          1
        ] } }
      } }],
      new: true,
      writeConcern: durable
    }), "take").value;
  }

  // The host's StripedCounter::take for one call: from a random first
  // lane of `map`'s generation, one lane after another, each one take.
  // A lane that takes nothing is read: malformed (or of another kind) or
  // out of values, that is the error, the lane left unchanged; sealed,
  // gone or of another generation (a change of stripes), the map is read
  // again and the next lane tried, after a pause while the map has not
  // moved on. While the map has no live lane (a change under way), it is
  // read again after a pause. After ATTEMPTS lanes, nothing was taken. The
  // values are `last` back by the modulus; one here.
  // A counter whose lanes span deployments is taken from in this
  // deployment's lanes only (its copy of the map says which): a stored
  // function cannot reach another deployment, nor fail over to one.
  function takeFromLanes(map, count) {
    var counters = db.getCollection("counters");
    var turn = Math.floor(Math.random() * map.modulus);
    function localLanes() {
      var residues = [];
      for (var r = 0; r < map.modulus; r++) {
        if (map.placement.length === 0 || map.placement[r] === map.here) residues.push(r);
      }
      if (map.live && residues.length === 0) {
        throw new Error("counter '" + keyName + "': its lanes are in deployments " +
          map.placement.filter(function (d, i) { return map.placement.indexOf(d) === i; }).join(", ") +
          ", none in this one (" + map.here + "): take from it with idmint (--uri NAME=URI for each); " +
          "nothing was taken");
      }
      return residues;
    }
    var pause = 1;
    function wait() {
      sleep(pause);
      pause = Math.min(pause * 2, LONGEST_PAUSE_MS);
    }
    function reload() {
      map = readCounter(keyName, counters.findOne({ _id: keyName }), "striped");
    }
    for (var attempt = 0; attempt < ATTEMPTS; attempt++) {
      if (!map.live) {
        wait();
        reload();
        continue;
      }
      var local = localLanes();
      var id = keyName + "#" + local[turn++ % local.length];
      var after = takeLane(id, map.kind, count);
      if (after !== null) return readCounter(keyName, after, "lane").last;
      var found = counters.findOne({ _id: id });
      if (found !== null) {
        var lane = readCounter(keyName, found, "lane", map.kind);
        var live = !lane.sealed && lane.generation === map.generation;
        var room = Math.max(MAX_VALUE - lane.last, 0);
        if (live && (room - room % lane.m) / lane.m < count) {
          throw new Error("counter '" + keyName + "' is exhausted: it cannot hand out " + count +
            " more value(s) without passing " + MAX_VALUE + "; it was left unchanged");
        }
      }
      var generation = map.generation;
      reload();
      // Sealed and the map not moved on yet: the change is under way.
      if (map.generation === generation) wait();
    }
    throw new Error("counter '" + keyName + "': no live lane after " + ATTEMPTS + " tries: a change of " +
      "stripes is under way or stopped half way (`idmint counter stripes` finishes it); nothing was taken");
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
