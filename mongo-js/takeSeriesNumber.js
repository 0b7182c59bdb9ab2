function (name, reference, session) {
  // idmint's gap-free series number, the JavaScript twin of the host's
  // host/core/src/series/next.rs (Series::next_in); tests/series.rs holds the
  // two equal. It writes, so it runs in mongosh (through idmint's loader),
  // not on the server (MongoDB >= 4.2 runs no stored JavaScript that writes).
  //
  // Takes the next number of series `name` ({_id, kind: "series", first,
  // last} in `series`) inside the transaction in progress on `session` (a
  // mongosh session: db.getMongo().startSession(), then
  // session.startTransaction({writeConcern: {w: "majority", j: true}})), and
  // writes its record in `series_numbers`, confirmed with `reference`. Both
  // are kept only if the transaction commits. Returns the number. Throws,
  // having written nothing, for a session with no transaction in progress, a
  // bad name or reference, or a series it cannot take from (missing,
  // malformed, at its last number: `idmint series audit NAME` says which). A
  // write conflict with another transaction on the series throws with the
  // label TransientTransactionError: abort, and run the transaction again.
  if (typeof name !== "string" || !/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/.test(name)) {
    throw new Error("invalid series name " + JSON.stringify(name) +
      ": use 1 to 128 ASCII letters, digits and _ - . :, starting with a letter or digit");
  }
  if (typeof reference !== "string" || reference.length === 0) {
    throw new Error("series '" + name + "': the reference is empty: a number is confirmed with the business record's; nothing was taken");
  }
  if (Array.from(reference).length > 512 || /[\u0000-\u001f\u007f-\u009f]/.test(reference)) {
    throw new Error("series '" + name + "': the reference is longer than 512 characters or holds a control character; nothing was taken");
  }
  // mongosh's session wraps the driver's, which says whether a transaction is
  // in progress; a session that cannot say is refused too.
  var driver = session && session._session;
  if (!driver || typeof driver.inTransaction !== "function" || !driver.inTransaction()) {
    throw new Error("series '" + name + "': a number is taken only inside a transaction " +
      "(session.startTransaction() first); nothing was taken");
  }
  var database = session.getDatabase(db.getName());
  var after = database.getCollection("series").findOneAndUpdate(
    { _id: name, kind: "series",
      last: { $type: ["long", "int"], $gte: 0, $lt: NumberLong("9007199254740991") } },
    { $inc: { last: NumberLong("1") } },
    { returnDocument: "after" });
  if (after === null) {
    throw new Error("series '" + name + "' took nothing: it is missing, malformed or at its last number " +
      "(idmint series audit " + name + " says which); nothing was taken");
  }
  var digits = String(after.last);
  var padded = ("0000000000000000000" + digits).slice(-19);
  database.getCollection("series_numbers").insertOne({
    _id: name + "//" + padded,
    series: name,
    period: "",
    number: NumberLong(digits),
    state: "confirmed",
    reference: reference,
    at: new Date(),
    by: typeof process === "object" && typeof require === "function"
      ? require("os").hostname() + ":" + process.pid
      : "mongo shell"
  });
  return Number(digits);
}
