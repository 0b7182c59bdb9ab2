function (keyName, count) {
  // idmint's periodic counter: values that restart at 1 at each period
  // boundary (a day, a month or a year in the counter's time zone), decided
  // by the server's clock. The JavaScript twin of the host's
  // host/core/src/sequence/kinds/periodic/mod.rs: it sends the findAndModify
  // `idmint pipeline` prints (the host's update, with the guard in the
  // query); tests/conformance.rs holds the two equal.
  //
  // Counter documents live in `counters`: {_id, kind: "periodic", period,
  // zone, current, seq, prefix?}. Takes `count` values (default 1) in one
  // atomic update, written with majority + journal, and returns
  // {period: LABEL, values: [first, ..., last]}: the period the server's
  // clock is in (or, if that clock went back, the later period the counter
  // is already in) and the values in it. The query only matches a
  // well-formed counter of the period and zone read just before, with values
  // left; anything else is left as it is, nothing comes back, and
  // readCounter (stored beside this function) says what is wrong, in the
  // host's words.
  //
  // A striped counter (its document the map, kind "striped"; see
  // docs/design/striped-counters.md) is taken from one of its periodic
  // lanes as the host's Sequence::take does (StripedCounter::take,
  // host/core/src/sequence/striping/taker.rs), by takeFromLanes, stored
  // beside this function: the `count` values in one take of one lane (1
  // to MAX_BLOCK, the host's most per request), in the lane's period by
  // this server's clock, `m` apart up to the lane's `last` (another
  // lane's values of that period lie between them); tests/striped_twin_cases.rs
  // holds it equal to the host's. Taking them one value a call instead
  // would hand out values of different lanes, and across a period
  // boundary of different periods, which one {period, values} cannot say.
  var MAX_VALUE = 9007199254740991;
  // The host's MAX_BLOCK: the most values one take from lanes hands out.
  var MAX_BLOCK = 1000;
  var MAX_ATTEMPTS = 10;
  var n = (count === undefined || count === null) ? 1 : Number(count);
  if (!(n >= 1 && n <= MAX_VALUE) || Math.floor(n) !== n) {
    throw new Error("cannot take " + count + " values of counter '" + keyName + "': ask for 1 to " + MAX_VALUE);
  }
  var FORMATS = { year: "%Y", month: "%Y-%m", day: "%Y-%m-%d" };
  var LABELS = {
    day: "^$|^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$",
    month: "^$|^[0-9]{4}-(0[1-9]|1[0-2])$",
    year: "^$|^[0-9]{4}$"
  };
  var ZONE = "^[A-Za-z0-9_+/:-]{1,64}$";

  function integerIn(path, min, max) {
    // The types readInteger takes: $isNumber would let a decimal through.
    return { $and: [{ $in: [{ $type: path }, ["int", "long", "double"]] }, { $eq: [path, { $trunc: path }] },
      { $gte: [path, NumberLong(String(min))] }, { $lte: [path, NumberLong(String(max))] }] };
  }
  // The host's document::well_formed::<Periodic>(): the common terms, then
  // the kind's guard.
  function wellFormed() {
    return { $and: [
      { $eq: [{ $ifNull: ["$kind", "cyclic"] }, "periodic"] },
      wellFormedPrefixes(),
      { $in: ["$period", ["day", "month", "year"]] },
      { $and: [{ $eq: [{ $type: "$zone" }, "string"] }, { $regexMatch: { input: "$zone", regex: ZONE } }] },
      { $and: [{ $eq: [{ $type: "$current" }, "string"] }, { $regexMatch: { input: "$current", regex: { $switch: {
        branches: ["day", "month", "year"].map(function (unit) {
          return { case: { $eq: ["$period", unit] }, then: LABELS[unit] };
        }),
        default: "^$"
      } } } }] },
      integerIn("$seq", 0, MAX_VALUE)
    ] };
  }
  function nowLabel(period, zone) {
    return { $dateToString: { format: FORMATS[period], date: "$$NOW", timezone: zone } };
  }

  // The `n` values of one lane of striped counter `keyName` whose map is
  // `map`, and their period.
  function takeStriped(map) {
    if (n > MAX_BLOCK) {
      throw new Error("cannot take " + n + " values of counter '" + keyName + "' at once: at most " +
        MAX_BLOCK + " per request");
    }
    var lane = takeFromLanes(keyName, map, undefined, n);
    var values = [];
    for (var k = n - 1; k >= 0; k--) values.push(lane.last - k * lane.m);
    return { period: lane.current, values: values };
  }

  for (var attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    var counter = readCounter(keyName, db.getCollection("counters").findOne({ _id: keyName }), "periodic",
      "periodic");
    if (counter.striped !== undefined) return takeStriped(counter.striped);
    var result = db.runCommand({
      findAndModify: "counters",
      query: { _id: keyName, $expr: { $and: [wellFormed(), { $and: [
        { $eq: ["$period", counter.period] },
        { $eq: ["$zone", counter.zone] },
        { $or: [
          { $gt: [nowLabel(counter.period, counter.zone), "$current"] },
          { $lte: ["$seq", NumberLong(String(MAX_VALUE - n))] }
        ] }
      ] }] } },
      update: [{ $replaceWith: { $cond: [
        { $and: [wellFormed(), { $eq: ["$period", counter.period] }, { $eq: ["$zone", counter.zone] }] },
        { $let: {
          vars: { now: nowLabel(counter.period, counter.zone) },
          in: { $cond: [
            { $gt: ["$$now", "$current"] },
            { $mergeObjects: ["$$ROOT", { current: "$$now", seq: { $toLong: NumberLong(String(n)) } }] },
            { $mergeObjects: ["$$ROOT", { seq: { $toLong: { $add: ["$seq", NumberLong(String(n))] } } }] }
          ] }
        } },
        "$$ROOT"
      ] } }],
      new: true,
      writeConcern: { w: "majority", j: true, wtimeout: 10000 }
    });
    if (!result.ok) throw new Error("advance of counter '" + keyName + "' failed: " + result.errmsg);
    if (result.writeConcernError) {
      throw new Error("advance of counter '" + keyName + "' not durable: " + result.writeConcernError.errmsg);
    }
    if (result.value === null) {
      // Nothing matched: say why (missing, corrupt, of another kind), or
      // the current period has no values left; else the counter changed
      // under us (its period or zone too, or it was striped): read it
      // again.
      var now = readCounter(keyName, db.getCollection("counters").findOne({ _id: keyName }), "periodic",
        "periodic");
      if (now.striped === undefined && now.period === counter.period && now.zone === counter.zone &&
        now.seq + n > MAX_VALUE) {
        throw new Error("counter '" + keyName + "' is exhausted: it cannot hand out " + n +
          " more value(s) without passing " + MAX_VALUE + "; it was left unchanged");
      }
      continue;
    }
    // Matched, so advanced: the values are the last n of its period.
    var after = readCounter(keyName, result.value, "periodic");
    var values = [];
    for (var v = after.seq - n + 1; v <= after.seq; v++) values.push(v);
    return { period: after.current, values: values };
  }
  throw new Error("counter '" + keyName + "' is too contended: " + MAX_ATTEMPTS +
    " conditional updates in a row lost the race");
}
