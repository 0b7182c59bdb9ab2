function (keyName, doc, expectedKind, lanesKind) {
  // idmint's counter document rules, the JavaScript twin of the host's
  // readers (host/core/src/sequence/document.rs and each kind's folder,
  // host/core/src/sequence/kinds/), shared by getNextUniqueSeq (cyclic),
  // getNextSequence (autoinc) and getNextPeriodic (periodic);
  // tests/conformance.rs holds them equal.
  //
  // Reads counter `doc` (found under _id `keyName`), checks that it is a
  // well-formed counter of `expectedKind`, and returns its fields: cyclic
  // {val, maxval, ts, hasTs}, autoinc {seq}, periodic {period, zone, current,
  // seq}. Throws, worded as the host words it, when it is missing, corrupt,
  // or of another kind.
  //
  // A striped counter (docs/design/striped-counters.md) is a map, the
  // document `keyName` with kind "striped", and its lanes, documents
  // `keyName#r` with kind "lane" (host/core/src/sequence/striping/):
  // - a lane is never read as a counter, and a map is refused as the
  //   host's kind readers refuse it, unless the caller takes from the
  //   lanes of `lanesKind` counters (getNextSequence: "autoinc",
  //   getNextUniqueStamp: "cyclic", getNextPeriodic: "periodic"): then
  //   the map is read as the host opens it (the map, its lanes' kind and
  //   that kind's fields, the prefixes) and returned with `striped`, the
  //   map {kind, generation, base, basePeriod, modulus, live, placement,
  //   spans, here, incarnation} and what its lanes are made of (the
  //   host's LaneOf, read from the map's own fields): a cyclic counter's
  //   {top}, a segment counter's {step}, a periodic counter's {period,
  //   zone}, a snowflake counter's {layout} (no stored function takes from
  //   snowflake lanes: their IDs are made in the leasing process); the
  //   map of a counter of a kind that cannot be striped is refused as the
  //   host refuses it, and of another kind that can as the host's kind
  //   readers do;
  // - expectedKind "striped": the map alone, as the host's taker reads it
  //   again (striping/taker.rs, read_map);
  // - expectedKind "lane": `doc` is a lane of counter `keyName`, read as
  //   striping/lane.rs reads it: {kind, generation, b, m, r, last, sealed}
  //   and an autoinc lane's {seq}, a cyclic lane's {top, maxval, val, ts},
  //   a periodic lane's {period, zone, basePeriod, current, seq} (labels,
  //   "" for none); given `lanesKind` (its map's), a lane of another kind
  //   is corrupt.
  var MAX_VALUE = 9007199254740991;
  var MAX_LANES = 1024;
  // The host's MAX_MAXVAL (kinds/cyclic), and the largest BSON long.
  var MAX_MAXVAL = 9007199254740990;
  var MAX_LONG = 9223372036854775807;
  // The host's segment MAX_STEP.
  var MAX_STEP = 100000000;
  // The kinds whose counters can be striped (the host's STRIPABLE).
  var STRIPABLE = ["autoinc", "segment", "cyclic", "periodic", "snowflake"];
  // The host's snowflake MAX_TAG (kinds/snowflake/tag.rs).
  var MAX_TAG = 16777215;
  var KINDS = ["cyclic", "autoinc", "segment", "snowflake", "periodic"];
  var LABELS = {
    year: /^[0-9]{4}$/,
    month: /^[0-9]{4}-(0[1-9]|1[0-2])$/,
    day: /^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$/
  };
  var LABEL_FORMATS = { year: "%Y", month: "%Y-%m", day: "%Y-%m-%d" };
  // The host's ZONE_PATTERN (kinds/periodic).
  var ZONE = /^[A-Za-z0-9_+\/:-]{1,64}$/;

  function corrupt(reason) {
    return new Error("counter '" + keyName + "' is corrupt: " + reason +
      "; it was left unchanged, fix or recreate it");
  }
  function striping(reason) {
    return new Error("counter '" + keyName + "': " + reason);
  }
  function corruptMap(reason) {
    return striping("its stripe map is corrupt: " + reason + "; it was left unchanged");
  }
  function corruptLane(reason) {
    return striping("lane '" + doc._id + "' is corrupt: " + reason + "; it was left unchanged");
  }

  // The readers below say what is wrong by throwing wrong(reason), as the
  // host's readers return Err(reason); what was being read words the error
  // (read(), as the host's callers map_err), and a field within another is
  // named by its path (within()).
  function wrong(reason) {
    return { idmintReason: reason };
  }
  function isWrong(e) {
    return e !== null && typeof e === "object" && typeof e.idmintReason === "string";
  }
  function read(reader, error) {
    try {
      return reader();
    } catch (e) {
      throw isWrong(e) ? error(e.idmintReason) : e;
    }
  }
  function within(prefix, reader) {
    return read(reader, function (reason) { return wrong(prefix + reason); });
  }

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
  function readInteger(source, field, min, max) {
    var value = source[field];
    if (value === undefined) throw wrong(field + " is missing");
    // 64-bit integers arrive as Long (mongosh) or NumberLong (legacy shell).
    if (value !== null && typeof value === "object" && typeof value.toNumber === "function") {
      value = value.toNumber();
    }
    if (typeof value !== "number") throw wrong(field + " is " + describe(value) + ", not a number");
    if (Math.floor(value) !== value) throw wrong(field + " is " + value + ", not an integer");
    if (value < 0) throw wrong(field + " is " + value + ", it must not be negative");
    if (value < min) throw wrong(field + " is " + value + ", it must be at least " + min);
    if (max !== undefined && value > max) throw wrong(field + " is " + value + ", it must be at most " + max);
    return value;
  }
  function readString(source, field) {
    var value = source[field];
    if (value === undefined) throw wrong(field + " is missing");
    if (typeof value !== "string") throw wrong(field + " is " + describe(value) + ", not a string");
    return value;
  }
  function readDocument(source, field) {
    var value = source[field];
    if (value === undefined) throw wrong(field + " is missing");
    if (describe(value) !== "a document") throw wrong(field + " is " + describe(value) + ", not a document");
    return value;
  }
  function readArray(source, field) {
    var value = source[field];
    if (value === undefined) throw wrong(field + " is missing");
    if (!Array.isArray(value)) throw wrong(field + " is " + describe(value) + ", not an array");
    return value;
  }
  function withArticle(kind) {
    return (/^[aeiou]/.test(kind) ? "an " : "a ") + kind;
  }
  // The host's Generation::new: every lane of `modulus` lanes above `base`
  // has a value up to MAX_VALUE.
  function checkGeneration(base, modulus) {
    if (base > MAX_VALUE - modulus) {
      throw wrong("a generation based at " + base + " with " + modulus +
        " lanes leaves a lane no value up to 2^53 - 1");
    }
  }

  // The host's PeriodicKind::read (kinds/periodic): {period, zone,
  // current, seq} of a periodic counter's document (or a periodic
  // map's).
  function readPeriodic(source) {
    var fields = {};
    fields.period = readString(source, "period");
    if (!LABELS.hasOwnProperty(fields.period)) {
      throw wrong("period: unknown period " + JSON.stringify(fields.period) + ": use day, month or year");
    }
    fields.zone = readString(source, "zone");
    if (!ZONE.test(fields.zone)) {
      throw wrong("zone " + JSON.stringify(fields.zone) +
        " is not a time zone name (letters, digits, _ + / : -, 1 to 64)");
    }
    fields.current = readString(source, "current");
    if (fields.current !== "" && !LABELS[fields.period].test(fields.current)) {
      throw wrong("current " + JSON.stringify(fields.current) + " is not a " + fields.period +
        " label (" + LABEL_FORMATS[fields.period] + ")");
    }
    fields.seq = readInteger(source, "seq", 0, MAX_VALUE);
    return fields;
  }

  // The host's SnowflakeKind::read (kinds/snowflake): the layout and
  // tag of a snowflake counter's document (or a snowflake map's).
  function readSnowflake(source) {
    var unit = readString(source, "unit");
    if (unit !== "ms" && unit !== "s") {
      throw wrong("unit: unknown time unit " + JSON.stringify(unit) + ": use ms or s");
    }
    var t = readInteger(source, "time_bits", 1, 62);
    var w = readInteger(source, "worker_bits", 1, 62);
    var s = readInteger(source, "seq_bits", 1, 62);
    readInteger(source, "epoch_ms", 0, MAX_LONG);
    // The host's Layout::check_shape.
    if (t + w + s !== 63) {
      throw wrong("layout " + t + "," + w + "," + s + " adds up to " + (t + w + s) +
        " bits; time, worker and sequence must add up to 63");
    }
    if (t < 20 || w < 1 || s < 1) {
      throw wrong("layout " + t + "," + w + "," + s + ": at least 20 time bits, 1 worker bit and 1 sequence bit");
    }
    // The host's CounterTag::read: both or neither.
    if (source.tag !== undefined && source.salt === undefined) throw wrong("tag is set but salt is missing");
    if (source.tag === undefined && source.salt !== undefined) throw wrong("salt is set but tag is missing");
    if (source.tag !== undefined) {
      readInteger(source, "tag", 1, MAX_TAG);
      var salt = readString(source, "salt");
      // Rust's u64::from_str_radix, which takes a leading '+'.
      if (salt.length !== 16 || !/^\+?[0-9A-Fa-f]+$/.test(salt)) throw wrong("salt is not 16 hex digits");
    }
    return { unit: unit, timeBits: t, workerBits: w, seqBits: s };
  }

  // The host's lanes_of (striping/lane.rs, each kind's Stripable::of in
  // kinds/<kind>/lanes.rs): what the lanes of a counter
  // of `kind` whose own document (its map) is `source` are made of, read
  // from the kind's own fields; its reasons are the kind reader's.
  function lanesOf(kind, source) {
    if (kind === "cyclic") return { top: readInteger(source, "maxval", 1, MAX_MAXVAL) };
    if (kind === "segment") return { step: readInteger(source, "step", 1, MAX_STEP) };
    if (kind === "periodic") {
      var periodic = readPeriodic(source);
      return { period: periodic.period, zone: periodic.zone };
    }
    if (kind === "snowflake") return { layout: readSnowflake(source) };
    return {};
  }

  // The host's Incarnation::read (sequence/identity.rs): the counter's
  // identity, 32 lowercase hex digits in field `field` of `source`; null
  // for none (absent or null: a counter made before incarnations).
  function readIncarnation(source, field) {
    var value = source[field];
    if (value === undefined || value === null) return null;
    if (typeof value !== "string") throw wrong(field + " is " + describe(value) + ", not a string");
    if (!/^[0-9a-f]{32}$/.test(value)) {
      throw wrong(field + " " + JSON.stringify(value) + " is not 32 lowercase hex digits");
    }
    return value;
  }

  // The host's StripeMap::read (striping/map.rs).
  function readMap() {
    var striped = readDocument(doc, "striped");
    var incarnation = readIncarnation(doc, "incarnation");
    var map = within("striped.", function () {
      return {
        kind: readString(striped, "kind"),
        generation: readInteger(striped, "generation", 0, MAX_VALUE),
        base: readInteger(striped, "base", 0, MAX_VALUE)
      };
    });
    // A kind that can be striped: its own fields say what its lanes are
    // made of.
    if (STRIPABLE.indexOf(map.kind) >= 0) {
      var of = lanesOf(map.kind, doc);
      for (var key in of) map[key] = of[key];
    }
    // The period the base counts in (a periodic counter's; none: absent
    // or "").
    map.basePeriod = null;
    if (striped.base_period !== undefined) {
      if (typeof striped.base_period !== "string") {
        throw wrong("striped.base_period is " + describe(striped.base_period) + ", not a string");
      }
      if (striped.base_period !== "") map.basePeriod = striped.base_period;
    }
    map.modulus = within("striped.", function () { return readInteger(striped, "modulus", 1, MAX_LANES); });
    within("striped: ", function () { checkGeneration(map.base, map.modulus); });
    var lanes = within("striped.", function () { return readArray(striped, "lanes"); });
    map.live = lanes.length > 0;
    var placement = [];
    if (map.live && map.generation === 0) {
      throw wrong("striped.lanes lists lanes of generation 0, which has none");
    }
    if (map.live && lanes.length !== map.modulus) {
      throw wrong("striped.lanes lists " + lanes.length + " lanes, not the " + map.modulus + " of its modulus");
    }
    for (var index = 0; index < lanes.length; index++) {
      var lane = lanes[index];
      if (describe(lane) !== "a document") {
        throw wrong("striped.lanes holds " + describe(lane) + ", not only documents");
      }
      var residue = within("striped.lanes." + index + ".", function () {
        return readInteger(lane, "residue", 0, MAX_LANES);
      });
      if (residue !== index) {
        throw wrong("striped.lanes." + index + ".residue is " + residue + ", not " + index);
      }
      if (lane.deployment !== undefined) {
        var deployment = lane.deployment;
        if (typeof deployment !== "string") {
          throw wrong("striped.lanes." + index + ".deployment is " + describe(deployment) + ", not a string");
        }
        within("striped.lanes." + index + ".deployment: ", function () { checkDeploymentName(deployment); });
        placement.push(deployment);
      }
    }
    // Across deployments: each lane's deployment, the deployments the
    // counter spans and the one this copy is in.
    var spans = [];
    if (striped.spans !== undefined) {
      var listed = within("striped.", function () { return readArray(striped, "spans"); });
      for (var at = 0; at < listed.length; at++) {
        var span = listed[at];
        if (typeof span !== "string") {
          throw wrong("striped.spans." + at + " is " + describe(span) + ", not a string");
        }
        within("striped.spans." + at + ": ", function () { checkDeploymentName(span); });
        spans.push(span);
      }
    }
    var here = null;
    if (striped.here !== undefined) {
      here = within("striped.", function () { return readString(striped, "here"); });
    }
    if (placement.length > 0 && placement.length !== lanes.length) {
      throw wrong("striped.lanes names the deployment of some lanes only");
    }
    var mentioned = placement.concat(here === null ? [] : [here]);
    for (var n = 0; n < mentioned.length; n++) {
      if (spans.indexOf(mentioned[n]) < 0) {
        throw wrong("striped names deployment " + JSON.stringify(mentioned[n]) +
          ", which striped.spans does not list");
      }
    }
    if ((spans.length === 0) !== (here === null)) {
      throw wrong("striped.spans and striped.here go together");
    }
    map.placement = placement;
    map.spans = spans;
    map.here = here;
    map.incarnation = incarnation;
    return map;
  }

  // The host's check_deployment_name (striping/deployments.rs).
  function checkDeploymentName(name) {
    if (!/^[a-z][a-z0-9_-]{0,31}$/.test(name)) {
      throw wrong(JSON.stringify(name) + " is not a deployment name: 1 to 32 of a-z, 0-9, '_' and '-', " +
        "starting with a letter");
    }
  }

  // A period's label of `unit`, or "" (none), in field `key` of `source`
  // (the host's read_periodic's label).
  function readLabel(source, key, unit) {
    var text = readString(source, key);
    if (text !== "" && !LABELS[unit].test(text)) {
      throw wrong(key + " " + JSON.stringify(text) + " is not a " + unit + " label (" + LABEL_FORMATS[unit] + ")");
    }
    return text;
  }

  // The host's lane::read (striping/lane.rs), the twin of the lanes' take
  // filter that takeFromLanes sends.
  function readLane() {
    if (doc.kind !== "lane") {
      throw wrong("kind is " + (doc.kind === undefined ? "missing" : describe(doc.kind)) + ", not \"lane\"");
    }
    var place = readDocument(doc, "lane");
    var lane = within("lane.", function () {
      return {
        kind: readString(place, "kind"),
        generation: readInteger(place, "generation", 1, MAX_VALUE),
        b: readInteger(place, "b", 0, MAX_VALUE),
        m: readInteger(place, "m", 1, MAX_LANES),
        r: readInteger(place, "r", 0, MAX_LANES - 1)
      };
    });
    within("lane: ", function () {
      checkGeneration(lane.b, lane.m);
      if (lane.r >= lane.m) {
        throw wrong("lane " + lane.r + " does not exist in a generation of " + lane.m + " lanes");
      }
    });
    lane.last = readInteger(doc, "last", 0, MAX_VALUE);
    var expected;
    var localValue;
    if (lane.kind === "cyclic") {
      // A cyclic counter over its residue class of its counter's cycle
      // 0..=top: local values 0..=maxval, standing for r + val * m.
      lane.top = within("lane.", function () { return readInteger(place, "top", 1, MAX_MAXVAL); });
      if (lane.r > lane.top) {
        throw wrong("lane.r is " + lane.r + ", above lane.top " + lane.top + ": the lane has no value");
      }
      // A remainder taken first: exact below 2^53.
      var span = lane.top - lane.r;
      var cycle = (span - span % lane.m) / lane.m;
      lane.maxval = readInteger(doc, "maxval", 0, MAX_MAXVAL);
      if (lane.maxval !== cycle) {
        throw wrong("maxval is " + lane.maxval + ", not " + cycle + ", the last local value of lane " + lane.r +
          " of " + lane.m + " over 0..=" + lane.top);
      }
      lane.val = readInteger(doc, "val", 0, lane.maxval);
      lane.ts = readInteger(doc, "ts", 0, MAX_LONG);
      expected = lane.r + lane.val * lane.m;
      localValue = lane.val;
    } else if (lane.kind === "periodic") {
      // An autoinc lane that starts again in each period of its counter's
      // unit and zone (the host's read_periodic): in basePeriod, the
      // period its generation started in, its values are above b; in
      // every later one above 0.
      lane.period = within("lane.", function () { return readString(place, "period"); });
      if (!LABELS.hasOwnProperty(lane.period)) {
        throw wrong("lane.period: unknown period " + JSON.stringify(lane.period) + ": use day, month or year");
      }
      lane.zone = within("lane.", function () { return readString(place, "zone"); });
      if (!ZONE.test(lane.zone)) throw wrong("lane.zone " + JSON.stringify(lane.zone) + " is not a time zone name");
      lane.basePeriod = within("lane.", function () { return readLabel(place, "base_period", lane.period); });
      lane.current = readLabel(doc, "current", lane.period);
      // Labels of one unit sort as their periods do ("": none, first).
      if (lane.current < lane.basePeriod) {
        throw wrong("current is " + JSON.stringify(lane.current) + ", before lane.base_period " +
          JSON.stringify(lane.basePeriod));
      }
      var inBase = lane.current === lane.basePeriod;
      var floor = inBase ? lane.b : 0;
      var left = MAX_VALUE - (floor + lane.r + 1);
      // A later period has a value: its local value is at least 1.
      lane.seq = readInteger(doc, "seq", inBase ? 0 : 1, (left - left % lane.m) / lane.m + 1);
      expected = lane.seq === 0 ? floor : floor + (lane.seq - 1) * lane.m + lane.r + 1;
      localValue = lane.seq;
    } else {
      // How many values the lane hands out in all (a remainder taken
      // first: every step exact below 2^53).
      var room = MAX_VALUE - (lane.b + lane.r + 1);
      var capacity = (room - room % lane.m) / lane.m + 1;
      lane.seq = readInteger(doc, "seq", 0, capacity);
      expected = lane.seq === 0 ? lane.b : lane.b + (lane.seq - 1) * lane.m + lane.r + 1;
      localValue = lane.seq;
    }
    if (lane.last !== expected) {
      throw wrong("last is " + lane.last + ", not " + expected + ", the value of its local value " + localValue);
    }
    if (doc.sealed === undefined) throw wrong("sealed is missing");
    if (doc.sealed !== null && describe(doc.sealed) !== "a document") {
      throw wrong("sealed is " + describe(doc.sealed) + ", not null or a document");
    }
    lane.sealed = doc.sealed !== null;
    return lane;
  }

  if (doc === null) {
    throw new Error("counter '" + keyName + "' does not exist (create it with `idmint counter create " +
      keyName + "`)");
  }
  if (expectedKind === "lane") {
    var lane = read(readLane, corruptLane);
    if (lanesKind !== undefined && lane.kind !== lanesKind) {
      throw corruptLane("it is a lane of " + lane.kind + " counter, not of " + lanesKind);
    }
    return lane;
  }
  if (expectedKind === "striped") {
    if (doc.kind !== "striped") {
      throw corruptMap("kind is " + (doc.kind === undefined ? "missing" : describe(doc.kind)) +
        ", no longer \"striped\"");
    }
    return read(readMap, corruptMap);
  }
  var kind = "cyclic";
  var map = null;
  if (doc.kind !== undefined && doc.kind !== null) {
    if (typeof doc.kind !== "string") throw corrupt("kind is " + describe(doc.kind) + ", not a string");
    kind = doc.kind;
    if (kind === "lane") {
      throw striping("it is a lane of a striped counter, taken from through that counter only; it was left unchanged");
    }
    if (kind === "striped") {
      map = read(readMap, corruptMap);
      kind = map.kind;
    }
    if (KINDS.indexOf(kind) < 0) {
      throw new Error("counter '" + keyName + "' has kind " + JSON.stringify(kind) +
        ", which this idmint does not know (it knows cyclic, autoinc, segment, snowflake and periodic); it was left unchanged");
    }
  }
  var fields = read(function () {
    var fields = { kind: kind };
    if (kind === "cyclic") {
      fields.val = readInteger(doc, "val", 0);
      fields.maxval = readInteger(doc, "maxval", 1);
      fields.hasTs = doc.ts !== undefined;
      fields.ts = fields.hasTs ? readInteger(doc, "ts", 0) : 0;
    } else if (kind === "autoinc") {
      fields.seq = readInteger(doc, "seq", 0, MAX_VALUE);
    } else if (kind === "segment") {
      fields.max = readInteger(doc, "max", 0, MAX_VALUE + 1);
      fields.step = readInteger(doc, "step", 1, MAX_STEP);
    } else if (kind === "periodic") {
      var periodic = readPeriodic(doc);
      for (var key in periodic) fields[key] = periodic[key];
    }
    if (doc.prefix !== undefined && doc.prefix !== null && typeof doc.prefix !== "string") {
      throw wrong("prefix is " + describe(doc.prefix) + ", not a string");
    }
    // The prefixes it owns (see the host's document.rs): an array of distinct
    // strings that holds the default prefix.
    if (doc.prefixes !== undefined) {
      if (!Array.isArray(doc.prefixes)) {
        throw wrong("prefixes is " + describe(doc.prefixes) + ", not an array");
      }
      var seen = [];
      for (var i = 0; i < doc.prefixes.length; i++) {
        var owned = doc.prefixes[i];
        if (typeof owned !== "string") {
          throw wrong("prefixes holds " + describe(owned) + ", not only strings");
        }
        if (seen.indexOf(owned) >= 0) throw wrong("prefixes holds " + JSON.stringify(owned) + " twice");
        seen.push(owned);
      }
      if (typeof doc.prefix === "string" && seen.indexOf(doc.prefix) < 0) {
        throw wrong("prefix " + JSON.stringify(doc.prefix) + " is not one of its prefixes [" +
          seen.map(function (p) { return JSON.stringify(p); }).join(", ") + "]");
      }
    }
    return fields;
  }, corrupt);
  if (map !== null) {
    // As the host opens it (StripedCounter::open), for a path that takes
    // from lanes.
    if (lanesKind !== undefined && STRIPABLE.indexOf(kind) < 0) {
      throw striping(kind + " counters cannot be striped (" + STRIPABLE.slice(0, -1).join(", ") + " and " +
        STRIPABLE[STRIPABLE.length - 1] + " ones can)");
    }
    // As the host's kind readers refuse it (its lanes are not of the
    // caller's kind, or the caller takes from no lanes).
    if (kind !== lanesKind) {
      throw new Error("counter '" + keyName + "' is striped: its values come from its lanes, which this " +
        "path does not take from (take with `idmint seq`, `next` or `serve`); it was left unchanged");
    }
    fields.striped = map;
    return fields;
  }
  if (kind !== expectedKind) {
    throw new Error("counter '" + keyName + "' is " + withArticle(kind) + " counter, not " +
      withArticle(expectedKind) + " one; it was left unchanged");
  }
  return fields;
}
