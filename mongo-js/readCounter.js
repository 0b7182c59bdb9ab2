function (keyName, doc, expectedKind) {
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
  var MAX_VALUE = 9007199254740991;
  var KINDS = ["cyclic", "autoinc", "segment", "snowflake", "periodic"];
  var LABELS = {
    year: /^[0-9]{4}$/,
    month: /^[0-9]{4}-(0[1-9]|1[0-2])$/,
    day: /^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$/
  };
  var LABEL_FORMATS = { year: "%Y", month: "%Y-%m", day: "%Y-%m-%d" };

  function corrupt(reason) {
    return new Error("counter '" + keyName + "' is corrupt: " + reason +
      "; it was left unchanged, fix or recreate it");
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
  function readInteger(field, min, max) {
    var value = doc[field];
    if (value === undefined) throw corrupt(field + " is missing");
    // 64-bit integers arrive as Long (mongosh) or NumberLong (legacy shell).
    if (value !== null && typeof value === "object" && typeof value.toNumber === "function") {
      value = value.toNumber();
    }
    if (typeof value !== "number") throw corrupt(field + " is " + describe(value) + ", not a number");
    if (Math.floor(value) !== value) throw corrupt(field + " is " + value + ", not an integer");
    if (value < 0) throw corrupt(field + " is " + value + ", it must not be negative");
    if (value < min) throw corrupt(field + " is " + value + ", it must be at least " + min);
    if (max !== undefined && value > max) throw corrupt(field + " is " + value + ", it must be at most " + max);
    return value;
  }
  function readString(field) {
    var value = doc[field];
    if (value === undefined) throw corrupt(field + " is missing");
    if (typeof value !== "string") throw corrupt(field + " is " + describe(value) + ", not a string");
    return value;
  }
  function withArticle(kind) {
    return (/^[aeiou]/.test(kind) ? "an " : "a ") + kind;
  }

  if (doc === null) {
    throw new Error("counter '" + keyName + "' does not exist (create it with `idmint counter create " +
      keyName + "`)");
  }
  var kind = "cyclic";
  if (doc.kind !== undefined && doc.kind !== null) {
    if (typeof doc.kind !== "string") throw corrupt("kind is " + describe(doc.kind) + ", not a string");
    if (KINDS.indexOf(doc.kind) < 0) {
      throw new Error("counter '" + keyName + "' has kind " + JSON.stringify(doc.kind) +
        ", which this idmint does not know (it knows cyclic, autoinc, segment, snowflake and periodic); it was left unchanged");
    }
    kind = doc.kind;
  }
  var fields = { kind: kind };
  if (kind === "cyclic") {
    fields.val = readInteger("val", 0);
    fields.maxval = readInteger("maxval", 1);
    fields.hasTs = doc.ts !== undefined;
    fields.ts = fields.hasTs ? readInteger("ts", 0) : 0;
  } else if (kind === "autoinc") {
    fields.seq = readInteger("seq", 0, MAX_VALUE);
  } else if (kind === "segment") {
    fields.max = readInteger("max", 0, MAX_VALUE + 1);
    fields.step = readInteger("step", 1, 100000000);
  } else if (kind === "periodic") {
    fields.period = readString("period");
    if (!LABELS.hasOwnProperty(fields.period)) {
      throw corrupt("period: unknown period " + JSON.stringify(fields.period) + ": use day, month or year");
    }
    fields.zone = readString("zone");
    if (!/^[A-Za-z0-9_+\/:-]{1,64}$/.test(fields.zone)) {
      throw corrupt("zone " + JSON.stringify(fields.zone) +
        " is not a time zone name (letters, digits, _ + / : -, 1 to 64)");
    }
    fields.current = readString("current");
    if (fields.current !== "" && !LABELS[fields.period].test(fields.current)) {
      throw corrupt("current " + JSON.stringify(fields.current) + " is not a " + fields.period +
        " label (" + LABEL_FORMATS[fields.period] + ")");
    }
    fields.seq = readInteger("seq", 0, MAX_VALUE);
  }
  if (doc.prefix !== undefined && doc.prefix !== null && typeof doc.prefix !== "string") {
    throw corrupt("prefix is " + describe(doc.prefix) + ", not a string");
  }
  // The prefixes it owns (see the host's document.rs): an array of distinct
  // strings that holds the default prefix.
  if (doc.prefixes !== undefined) {
    if (!Array.isArray(doc.prefixes)) {
      throw corrupt("prefixes is " + describe(doc.prefixes) + ", not an array");
    }
    var seen = [];
    for (var i = 0; i < doc.prefixes.length; i++) {
      var owned = doc.prefixes[i];
      if (typeof owned !== "string") {
        throw corrupt("prefixes holds " + describe(owned) + ", not only strings");
      }
      if (seen.indexOf(owned) >= 0) throw corrupt("prefixes holds " + JSON.stringify(owned) + " twice");
      seen.push(owned);
    }
    if (typeof doc.prefix === "string" && seen.indexOf(doc.prefix) < 0) {
      throw corrupt("prefix " + JSON.stringify(doc.prefix) + " is not one of its prefixes [" +
        seen.map(function (p) { return JSON.stringify(p); }).join(", ") + "]");
    }
  }
  if (kind !== expectedKind) {
    throw new Error("counter '" + keyName + "' is " + withArticle(kind) + " counter, not " +
      withArticle(expectedKind) + " one; it was left unchanged");
  }
  return fields;
}
