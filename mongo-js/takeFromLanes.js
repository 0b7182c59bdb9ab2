function (keyName, map, clientMicros, count) {
  // A striped counter's take (docs/design/striped-counters.md), shared by
  // the stored twins whose counters can be striped, stored beside this
  // function: getNextSequence (autoinc lanes), getNextUniqueStamp (cyclic
  // lanes) and getNextPeriodic (periodic lanes). It is the host's
  // StripedCounter::take (host/core/src/sequence/striping/taker.rs) of
  // `count` values from one lane (default 1; more only from autoinc and
  // periodic lanes: getNextPeriodic's count), and each lane's take the
  // host's lane::take_command (striping/lane.rs) for that count;
  // tests/striped_twin_cases.rs holds them equal, term for term and BSON type
  // for type.
  //
  // `map` is counter `keyName`'s map as readCounter (beside this function)
  // reads it: {kind, generation, base, modulus, live, placement, here,
  // incarnation}, and a periodic counter's {period, zone}, which its
  // lanes' take names as constants (a server's $dateToString takes its
  // zone from a constant only). clientMicros is the caller's clock in
  // microseconds, below which a cyclic lane issues no timestamp (the
  // other lanes do not read it). Returns the lane after the take as readCounter reads it: `last`
  // is the last value taken (the `count` values are the ones `m` apart up
  // to it, a periodic lane's all in its `current` period), and a cyclic
  // lane's `ts` the timestamp issued with it. Throws, taking nothing, when
  // no lane can be taken from.
  var MAX_VALUE = 9007199254740991;
  // The host's MAX_MAXVAL (a cyclic counter's largest maxval) and the
  // largest BSON long, the bound of a cyclic lane's ts.
  var MAX_MAXVAL = 9007199254740990;
  var MAX_LONG = "9223372036854775807";
  // The host's striping::MAX_LANES and ATTEMPTS (how many lanes a take
  // tries), and its longest pause between two reads of a map that has no
  // live lane.
  var MAX_LANES = 1024;
  var ATTEMPTS = 64;
  var LONGEST_PAUSE_MS = 100;
  // The values one call takes, from one lane: a cyclic lane's take is
  // the one-value rule only.
  var COUNT = (count === undefined || count === null) ? 1 : count;
  if (map.kind === "cyclic" && COUNT !== 1) {
    throw new Error("takeFromLanes takes one value a call from cyclic lanes, not " + COUNT);
  }
  var durable = { w: "majority", j: true, wtimeout: 10000 };
  var counters = db.getCollection("counters");

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

  // A 64-bit integer, as the host writes its constants (n: a number, or
  // the decimal text of one past 2^53).
  function long(n) {
    return NumberLong(String(n));
  }
  // The host's integer_in (host/core/src/sequence/counter/fields.rs).
  function integerIn(field, min, max) {
    var path = "$" + field;
    // The types readInteger takes: $isNumber would let a decimal through.
    return { $and: [{ $in: [{ $type: path }, ["int", "long", "double"]] }, { $eq: [path, { $trunc: path }] },
      { $gte: [path, long(min)] }, { $lte: [path, long(max)] }] };
  }
  // The host's PeriodUnit::ALL, label_regex and ZONE_PATTERN
  // (kinds/periodic): the units, the regular expression of each unit's
  // labels ("": none yet), and what a zone's name is made of.
  var UNITS = ["day", "month", "year"];
  var LABEL_REGEX = {
    day: "^$|^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$",
    month: "^$|^[0-9]{4}-(0[1-9]|1[0-2])$",
    year: "^$|^[0-9]{4}$"
  };
  var LABEL_FORMAT = { day: "%Y-%m-%d", month: "%Y-%m", year: "%Y" };
  var ZONE_PATTERN = "^[A-Za-z0-9_+/:-]{1,64}$";
  // The host's label_regex_of: the regular expression of the labels of
  // the unit at field path `unit`, on the server.
  function labelRegexOf(unit) {
    return { $switch: {
      branches: UNITS.map(function (each) { return { case: { $eq: [unit, each] }, then: LABEL_REGEX[each] }; }),
      default: "^$"
    } };
  }
  // The host's now_label: the label of the server's $$NOW in `zone`.
  function nowLabel(unit, zone) {
    return { $dateToString: { format: LABEL_FORMAT[unit], date: "$$NOW", timezone: zone } };
  }
  // The host's periodic_last: the value a periodic lane's local value
  // `seq` (an expression) stands for in its `current` period, above b in
  // its base period, above 0 in a later one.
  function periodicLast(seq) {
    var base = function () { return { $cond: [{ $eq: ["$current", "$lane.base_period"] }, "$lane.b", long(0)] }; };
    return { $cond: [
      { $eq: [seq, 0] },
      base(),
      { $add: [base(), { $multiply: [{ $subtract: [seq, 1] }, "$lane.m"] }, "$lane.r", 1] }
    ] };
  }
  // The host's lane::guard: true only while the document is a
  // well-formed, live (unsealed) lane of `kind`, as readCounter reads one.
  function laneGuard(kind) {
    var terms = [
      { $eq: ["$kind", "lane"] },
      { $eq: ["$lane.kind", kind] },
      integerIn("lane.generation", 1, MAX_VALUE),
      integerIn("lane.b", 0, MAX_VALUE),
      integerIn("lane.m", 1, MAX_LANES),
      integerIn("lane.r", 0, MAX_LANES - 1),
      { $lt: ["$lane.r", "$lane.m"] },
      integerIn("last", 0, MAX_VALUE)
    ];
    if (kind === "cyclic") {
      terms.push(
        integerIn("lane.top", 1, MAX_MAXVAL),
        integerIn("maxval", 0, MAX_MAXVAL),
        // maxval = floor((top - r) / m), in exact integer terms:
        // maxval * m + r <= top < (maxval + 1) * m + r.
        { $lte: [{ $add: [{ $multiply: ["$maxval", "$lane.m"] }, "$lane.r"] }, "$lane.top"] },
        { $lt: ["$lane.top", { $add: [{ $multiply: [{ $add: ["$maxval", 1] }, "$lane.m"] }, "$lane.r"] }] },
        integerIn("val", 0, MAX_MAXVAL),
        { $lte: ["$val", "$maxval"] },
        integerIn("ts", 0, MAX_LONG),
        { $eq: ["$last", { $add: ["$lane.r", { $multiply: ["$val", "$lane.m"] }] }] }
      );
    } else if (kind === "periodic") {
      var string = function (field) { return { $eq: [{ $type: "$" + field }, "string"] }; };
      var label = function (field) {
        return { $and: [string(field), { $regexMatch: { input: "$" + field, regex: labelRegexOf("$lane.period") } }] };
      };
      terms.push(
        { $in: ["$lane.period", UNITS] },
        { $and: [string("lane.zone"), { $regexMatch: { input: "$lane.zone", regex: ZONE_PATTERN } }] },
        label("lane.base_period"),
        label("current"),
        { $gte: ["$current", "$lane.base_period"] },
        integerIn("seq", 0, MAX_VALUE),
        // A later period than the base's has a value.
        { $or: [{ $eq: ["$current", "$lane.base_period"] }, { $gte: ["$seq", 1] }] },
        { $eq: ["$last", periodicLast("$seq")] }
      );
    } else {
      terms.push(
        integerIn("seq", 0, MAX_VALUE),
        { $eq: ["$last", { $cond: [
          { $eq: ["$seq", 0] },
          "$lane.b",
          { $add: ["$lane.b", { $multiply: [{ $subtract: ["$seq", 1] }, "$lane.m"] }, "$lane.r", 1] }
        ] }] }
      );
    }
    // Live: sealed is null (a missing one is malformed).
    terms.push({ $eq: [{ $type: "$sealed" }, "null"] });
    return { $and: terms };
  }
  // The host's lane::take_command for COUNT values: its filter holds
  // only while lane `id` is a well-formed live lane of the lanes `of`
  // (the map: its kind, a periodic counter's unit and zone) with COUNT
  // values left (an autoinc one; a periodic one: in the period now, or a
  // new period), and of the map's counter (the host's lane::of_counter);
  // its update advances the lane's local value and computes `last`, the
  // value it stands for, on the server. An autoinc lane: seq + COUNT,
  // and last = b + (seq - 1) * m + r + 1. A cyclic lane (one
  // value): the cyclic counter's one-value rule on its local val (the
  // host's cyclic::one_value: wrapped = val >= maxval; val = wrapped ? 0 :
  // val + 1; ts = max(client, ts + (wrapped ? 1 : 0))), and last = r +
  // val * m. A periodic lane: the label of the server's now in the zone;
  // a later one than `current` starts again (current = now, seq =
  // COUNT), else seq + COUNT; last as an autoinc lane's, above b in the
  // base period, above 0 in a later one.
  function takeLane(id, of) {
    var kind = of.kind;
    var query;
    var update;
    if (kind === "periodic") {
      var now = nowLabel(of.period, of.zone);
      // The host's under_period_ceiling (kinds/periodic/lanes.rs): a
      // periodic lane of a counter across deployments takes only in a
      // period up to its `ceiling_period` and up to its `ceiling` (none: no
      // bound), which only the host raises.
      query = { _id: id, $expr: { $and: [
        laneGuard(kind),
        { $eq: ["$lane.period", of.period] },
        { $eq: ["$lane.zone", of.zone] },
        { $or: [
          { $gt: [now, "$current"] },
          { $lte: ["$last", { $subtract: [long(MAX_VALUE), { $multiply: [long(COUNT), "$lane.m"] }] }] }
        ] },
        { $or: [
          { $eq: [{ $type: "$ceiling" }, "missing"] },
          { $and: [
            { $lte: [{ $max: [now, "$current"] }, "$ceiling_period"] },
            { $lte: [
              { $cond: [
                { $gt: [now, "$current"] },
                { $add: [{ $multiply: [long(COUNT - 1), "$lane.m"] }, "$lane.r", long(1)] },
                { $add: ["$last", { $multiply: [long(COUNT), "$lane.m"] }] }
              ] },
              "$ceiling"
            ] }
          ] }
        ] }
      ] } };
      update = [
        { $replaceWith: { $mergeObjects: ["$$ROOT", { $let: {
          vars: { now: nowLabel(of.period, of.zone) },
          in: { $cond: [
            { $gt: ["$$now", "$current"] },
            { current: "$$now", seq: { $toLong: long(COUNT) } },
            { seq: { $toLong: { $add: ["$seq", long(COUNT)] } } }
          ] }
        } }] } },
        { $set: { last: { $toLong: periodicLast("$seq") } } }
      ];
    } else if (kind === "cyclic") {
      // The host's under_time_ceiling (kinds/cyclic/lanes.rs): a cyclic
      // lane of a counter across deployments issues timestamps only up to
      // its `ceiling` (none: no bound), which only the host raises; a
      // take of one moves its ts to max(client, ts) + 2 at most.
      query = { _id: id, $expr: { $and: [
        laneGuard(kind),
        { $lte: [
          { $add: [{ $max: [long(clientMicros), "$ts"] }, long(2)] },
          { $ifNull: ["$ceiling", long(MAX_LONG)] }
        ] }
      ] } };
      update = [
        { $replaceWith: { $mergeObjects: ["$$ROOT", { $let: {
          vars: { wrapped: { $gte: ["$val", "$maxval"] } },
          in: {
            val: { $cond: ["$$wrapped", long(0), { $toLong: { $add: ["$val", long(1)] } }] },
            ts: { $toLong: { $max: [
              long(clientMicros),
              { $add: [{ $ifNull: ["$ts", long(0)] }, { $cond: ["$$wrapped", long(1), long(0)] }] }
            ] } }
          }
        } }] } },
        { $set: { last: { $toLong: { $add: ["$lane.r", { $multiply: ["$val", "$lane.m"] }] } } } }
      ];
    } else {
      // The host's under_ceiling: an autoinc lane of a counter across
      // deployments hands out values only up to its `ceiling` (none: no
      // bound), which only the host raises, once another deployment has
      // recorded it: this twin cannot raise it and refuses past it.
      query = { _id: id, $expr: { $and: [
        laneGuard(kind),
        { $lte: ["$last", { $subtract: [long(MAX_VALUE), { $multiply: [long(COUNT), "$lane.m"] }] }] },
        { $lte: [
          { $add: ["$last", { $multiply: [long(COUNT), "$lane.m"] }] },
          { $ifNull: ["$ceiling", long(MAX_VALUE)] }
        ] }
      ] } };
      update = [{ $set: {
        seq: { $toLong: { $add: ["$seq", long(COUNT)] } },
        last: { $toLong: { $add: [
          "$lane.b",
          { $multiply: [{ $add: ["$seq", long(COUNT - 1)] }, "$lane.m"] },
          "$lane.r",
          1
        ] } }
      } }];
    }
    // The host's lane::of_counter: lane.incarnation the map's or none (a
    // lane written before incarnations), none when the map has none; a
    // lane of another counter of the name matches nothing.
    query["lane.incarnation"] = (of.incarnation === undefined || of.incarnation === null) ? null
      : { $in: [of.incarnation, null] };
    return check(db.runCommand({
      findAndModify: "counters",
      query: query,
      update: update,
      new: true,
      writeConcern: durable
    }), "take").value;
  }

  // From a random first lane of `map`'s generation, one lane after
  // another, each one take. A lane that takes nothing is read: malformed
  // (or of another kind) or out of values, that is the error, the lane
  // left unchanged; sealed, gone or of another generation (a change of
  // stripes), the map is read again and the next lane tried, after a pause
  // while the map has not moved on. While the map has no live lane (a
  // change under way), it is read again after a pause. After ATTEMPTS
  // lanes, nothing was taken.
  // A counter whose lanes span deployments is taken from in this
  // deployment's lanes only (its copy of the map says which): a stored
  // function cannot reach another deployment, nor fail over to one.
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
    var after = takeLane(id, map);
    if (after !== null) return readCounter(keyName, after, "lane");
    var found = counters.findOne({ _id: id });
    if (found !== null) {
      var lane = readCounter(keyName, found, "lane", map.kind);
      var live = !lane.sealed && lane.generation === map.generation;
      var ceiling = (found.ceiling === undefined || found.ceiling === null) ? null : Number(found.ceiling);
      // A cyclic lane never runs out; its ceiling bounds its timestamps.
      if (live && lane.kind === "cyclic" && ceiling !== null &&
          Math.max(Number(clientMicros), Number(found.ts)) + 2 > ceiling) {
        throw new Error("counter '" + keyName + "': lane " + id + " is at its ceiling " +
          ceiling + ": it is raised only once another deployment of the counter " +
          "has recorded a higher one; nothing was taken");
      }
      if (live && lane.kind !== "cyclic") {
        var room = Math.max(MAX_VALUE - lane.last, 0);
        if ((room - room % lane.m) / lane.m < COUNT) {
          throw new Error("counter '" + keyName + "' is exhausted: it cannot hand out " + COUNT +
            " more value(s) without passing " + MAX_VALUE + "; it was left unchanged");
        }
        // At its ceiling: only the host raises it (see takeLane). A periodic
        // lane's period may be past its ceiling's, which its server's clock
        // says: one with room that refused is at its ceiling.
        if (ceiling !== null && (lane.kind === "periodic" || Number(lane.last) + COUNT * lane.m > ceiling)) {
          throw new Error("counter '" + keyName + "': lane " + id + " is at its ceiling " +
            ceiling + ": it is raised only once another deployment of the counter " +
            "has recorded a higher one; nothing was taken");
        }
      }
    }
    var generation = map.generation;
    reload();
    // Sealed and the map not moved on yet: the change is under way.
    if (map.generation === generation) wait();
  }
  throw new Error("counter '" + keyName + "': no live lane after " + ATTEMPTS + " tries: a change of " +
    "stripes is under way or stopped half way (the next take finishes it once every deployment it " +
    "needs answers; `idmint counter stripes NAME --resume` does it by hand); nothing was taken");
}
