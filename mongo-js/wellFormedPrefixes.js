function () {
  // The aggregation expression that holds where a counter document's
  // prefixes are as the host's readers require them
  // (host/core/src/sequence/counter/document.rs, and readCounter beside this
  // function): `prefix` missing, null or a string; `prefixes` missing, or an
  // array of distinct strings that holds `prefix` when it is one. The
  // twins' queries (getNextSequence, getNextPeriodic, getNextUniqueStamp)
  // use it, so that each matches only a counter readCounter accepts.
  return { $and: [
    { $in: [{ $type: "$prefix" }, ["missing", "null", "string"]] },
    { $or: [
      { $eq: [{ $type: "$prefixes" }, "missing"] },
      { $and: [
        { $isArray: "$prefixes" },
        { $allElementsTrue: [{ $map: { input: "$prefixes", in: { $eq: [{ $type: "$$this" }, "string"] } } }] },
        { $eq: [{ $size: "$prefixes" }, { $size: { $setUnion: ["$prefixes"] } }] },
        { $or: [{ $in: [{ $type: "$prefix" }, ["missing", "null"]] }, { $in: ["$prefix", "$prefixes"] }] }
      ] }
    ] }
  ] };
}
