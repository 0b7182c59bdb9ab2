function (key, expireMs) {
  // idmint's lock acquire, the JavaScript twin of host/core/src/lock/handles.rs
  // (acquire_pipeline); tests/lock_stored_functions.rs holds the two equal.
  //
  // Lock documents live in `locks`: {_id, owner, token, count, expiresAt,
  // acquiredAt}. One findAndModify upsert whose pipeline decides by the
  // SERVER's clock ($$NOW) whether the lock is free (no owner, or expired):
  // then it takes it with the next fencing token. Returns the token as
  // "<fencing token>:<owner>" (pass it to releaseLock; the number before the
  // colon is the fencing token for fenced writes), or null when someone else
  // holds the lock. Each call is a new owner: calls do not nest.
  var ttl = Number(expireMs);
  if (!(ttl >= 100 && ttl <= 86400000) || Math.floor(ttl) !== ttl) {
    throw new Error("invalid lease ttl: " + expireMs + " ms is out of range 100..=86400000");
  }
  if (typeof key !== "string" || !/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/.test(key)) {
    throw new Error("invalid lock name " + JSON.stringify(key) +
      ": use 1 to 128 ASCII letters, digits and _ - . :, starting with a letter or digit");
  }
  var owner = "";
  for (var i = 0; i < 4; i++) owner += ("00000000" + Math.floor(Math.random() * 4294967296).toString(16)).slice(-8);
  var one = NumberLong("1"), zero = NumberLong("0");

  function integerOrMissing(field) {
    var path = "$" + field;
    return { $or: [
      { $eq: [{ $type: path }, "missing"] },
      { $and: [{ $in: [{ $type: path }, ["int", "long"]] }, { $gte: [path, 0] }] }
    ] };
  }
  var wellFormed = { $and: [
    { $in: [{ $type: "$owner" }, ["missing", "null", "string"]] },
    { $in: [{ $type: "$expiresAt" }, ["missing", "null", "date"]] },
    integerOrMissing("token"),
    integerOrMissing("count"),
    { $or: [{ $in: [{ $type: "$owner" }, ["missing", "null"]] }, { $eq: [{ $type: "$expiresAt" }, "date"] }] },
    { $in: [{ $type: "$ticket" }, ["missing", "null", "string"]] },
    { $or: [
      { $eq: [{ $type: "$queue" }, "missing"] },
      { $and: [
        { $isArray: "$queue" },
        { $allElementsTrue: [{ $map: { input: "$queue", in: { $and: [
          { $eq: [{ $type: "$$this.owner" }, "string"] },
          { $eq: [{ $type: "$$this.ticket" }, "string"] },
          { $eq: [{ $type: "$$this.since" }, "date"] },
          { $eq: [{ $type: "$$this.until" }, "date"] },
          { $in: [{ $type: "$$this.ttl" }, ["int", "long"]] },
          { $in: [{ $type: "$$this.shared" }, ["missing", "null", "bool"]] },
          { $in: [{ $type: "$$this.permits" }, ["missing", "null", "int", "long"]] }
        ] } } }] }
      ] }
    ] },
    // Shared holders (host/core/src/lock/shared.rs): permits, readers.
    { $or: [
      { $eq: [{ $type: "$shared" }, "missing"] },
      { $and: [
        { $isArray: "$shared" },
        { $allElementsTrue: [{ $map: { input: "$shared", in: { $and: [
          { $eq: [{ $type: "$$this.owner" }, "string"] },
          { $eq: [{ $type: "$$this.ticket" }, "string"] },
          { $in: [{ $type: "$$this.token" }, ["int", "long"]] },
          { $eq: [{ $type: "$$this.expiresAt" }, "date"] }
        ] } } }] }
      ] }
    ] }
  ] };
  // The lock's waiting line (host/core/src/lock/queue.rs): its live entries. A
  // free lock with live waiters is theirs first; these calls never wait in
  // line, so they take a free lock only when nobody waits.
  var waiting = { $filter: { input: { $cond: [{ $isArray: "$queue" }, "$queue", []] }, cond: { $gt: ["$$this.until", "$$NOW"] } } };
  var live = { $and: [
    { $eq: [{ $type: "$owner" }, "string"] },
    { $eq: [{ $type: "$expiresAt" }, "date"] },
    { $gt: ["$expiresAt", "$$NOW"] }
  ] };
  var mine = { $and: [live, { $eq: ["$owner", owner] }] };
  var expires = { $toDate: { $add: [{ $toLong: "$$NOW" }, NumberLong(String(ttl))] } };
  var again = { $mergeObjects: ["$$ROOT", { count: { $add: [{ $ifNull: ["$count", zero] }, one] }, expiresAt: expires }] };
  var fresh = { $mergeObjects: ["$$ROOT", {
    owner: owner,
    ticket: owner,
    token: { $add: [{ $ifNull: ["$token", zero] }, one] },
    count: one,
    acquiredAt: "$$NOW",
    queue: "$$q",
    shared: "$$s",
    expiresAt: expires
  }] };
  // Taken only when nobody holds it, exclusively or shared, and nobody waits.
  var sharedLive = { $filter: { input: { $cond: [{ $isArray: "$shared" }, "$shared", []] }, cond: { $gt: ["$$this.expiresAt", "$$NOW"] } } };
  var notTaken = { $or: [live, { $gt: [{ $size: "$$q" }, 0] }, { $gt: [{ $size: "$$s" }, 0] }] };
  // An ended lease left to those in line is freed in the same write, as the
  // Rust acquire does: no answer names the owner of a lease that ended.
  var ended = { $mergeObjects: ["$$ROOT", { owner: null, expiresAt: null, ticket: null, count: zero }] };
  var kept = { $cond: [live, "$$ROOT", ended] };
  var pipeline = [{ $replaceWith: { $cond: [
    wellFormed,
    { $let: { vars: { q: waiting, s: sharedLive }, in: { $cond: [mine, again, { $cond: [notTaken, kept, fresh] }] } } },
    "$$ROOT"
  ] } }];

  for (var attempt = 0; attempt < 10; attempt++) {
    var result = db.runCommand({
      findAndModify: "locks", query: { _id: key }, update: pipeline, upsert: true, new: true,
      writeConcern: { w: "majority", j: true, wtimeout: 10000 }
    });
    if (!result.ok) {
      if (result.code === 11000) continue; // a racing upsert created it: try again
      throw new Error("acquire of lock '" + key + "' failed: " + result.errmsg);
    }
    if (result.writeConcernError) {
      throw new Error("acquire of lock '" + key + "' not durable: " + result.writeConcernError.errmsg);
    }
    var doc = result.value;
    if (doc === null) continue;
    if (doc.owner !== undefined && doc.owner !== null && typeof doc.owner !== "string") {
      throw new Error("lock '" + key + "' is corrupt: owner is not a string; it was left unchanged, fix or delete it");
    }
    if (doc.owner === owner) return String(doc.token) + ":" + owner;
    if (doc.queue !== undefined && !(Array.isArray(doc.queue) && doc.queue.every(function (e) {
      return e !== null && typeof e === "object" && typeof e.owner === "string" && typeof e.ticket === "string" &&
        e.since instanceof Date && e.until instanceof Date && (typeof e.ttl === "number" || e.ttl instanceof Long);
    }))) {
      throw new Error("lock '" + key + "' is corrupt: queue is not a list of waiters; it was left unchanged, fix or delete it");
    }
    // Free, but someone waits in line: theirs first; or held shared (permits, readers).
    if ((doc.owner === undefined || doc.owner === null) && Array.isArray(doc.queue) && doc.queue.length > 0) return null;
    if ((doc.owner === undefined || doc.owner === null) && Array.isArray(doc.shared) && doc.shared.length > 0) return null;
    if (doc.owner === undefined || doc.owner === null) {
      throw new Error("lock '" + key + "' is corrupt; it was left unchanged, fix or delete it");
    }
    return null;
  }
  throw new Error("lock '" + key + "' is too contended");
}
