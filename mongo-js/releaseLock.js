function (key, token) {
  // idmint's lock release, the JavaScript twin of Lease::release in
  // host/core/src/lock/handles.rs: matches the owner AND the fencing token that
  // getLock returned ("<fencing token>:<owner>"), so it never frees a lock
  // that expired and was taken by someone else. Returns true when released,
  // false when the lock is no longer this holder's.
  var match = /^([0-9]+):([0-9a-f]+)$/.exec(String(token));
  if (match === null) throw new Error("invalid lock token " + JSON.stringify(token) + ": expected what getLock returned");
  var stillHeld = { $gt: ["$count", 0] };
  var result = db.runCommand({
    findAndModify: "locks",
    query: { _id: key, owner: match[2], token: NumberLong(match[1]) },
    update: [
      { $set: { count: { $subtract: ["$count", NumberLong("1")] } } },
      { $set: { owner: { $cond: [stillHeld, "$owner", null] }, expiresAt: { $cond: [stillHeld, "$expiresAt", null] } } }
    ],
    new: true,
    writeConcern: { w: "majority", j: true, wtimeout: 10000 }
  });
  if (!result.ok) throw new Error("release of lock '" + key + "' failed: " + result.errmsg);
  if (result.writeConcernError) {
    throw new Error("release of lock '" + key + "' not durable: " + result.writeConcernError.errmsg);
  }
  return result.value !== null;
}
