function (name, reference, session) {
  // idmint's gap-free series number, the JavaScript twin of the host's
  // host/core/src/series/next.rs (Series::next_in); tests/series.rs holds the
  // two equal. It writes, so it runs in mongosh (through idmint's loader),
  // not on the server (MongoDB >= 4.2 runs no stored JavaScript that writes).
  //
  // Takes the next number of series `name` ({_id, kind: "series", first,
  // last, current, ...} in `series`; per period if it has one) inside the transaction in progress on `session` (a
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
  // The period of the server's clock (a series numbered per fiscal year or
  // month starts again at `first` in a new one, the old one's last kept in
  // `closed`); "" for a series without periods. The series is read first in
  // the transaction, for its period (a server takes a time zone as a
  // constant, not from a field); the take matches only a series numbered so,
  // as document.rs's takes_filter and take_update.
  var database = session.getDatabase(db.getName());
  var series = database.getCollection("series").findOne({ _id: name });
  var filter = { _id: name, kind: "series",
    last: { $type: ["long", "int"], $gte: 0, $lt: NumberLong("9007199254740991") } };
  var label = "";
  if (series !== null && typeof series.period === "string") {
    var start = series.period_start === undefined ? 101 : Number(series.period_start);
    filter.period = series.period;
    filter.period_start = NumberInt(start);
    filter.zone = series.zone;
    label = series.period === "year"
      ? { $let: {
          vars: { now: { $dateToParts: { date: "$$NOW", timezone: series.zone } } },
          in: { $toString: { $subtract: ["$$now.year",
            { $cond: [{ $lt: [{ $add: [{ $multiply: ["$$now.month", 100] }, "$$now.day"] }, NumberInt(start)] }, 1, 0] }] } } } }
      : { $dateToString: { format: "%Y-%m", date: "$$NOW", timezone: series.zone } };
  } else {
    filter.period = { $exists: false };
  }
  var current = { $ifNull: ["$current", ""] };
  var newPeriod = { $gt: ["$_label", current] };
  // A series without periods: $inc and $currentDate, no pipeline (the
  // cheapest update); one numbered per period: the pipeline.
  var update = label === ""
    ? { $inc: { last: NumberLong("1") }, $currentDate: { taken_at: true } }
    : [
      { $set: { _label: label, taken_at: "$$NOW" } },
      { $set: {
        closed: { $cond: [
          { $and: [newPeriod, { $ne: [current, ""] }] },
          { $mergeObjects: [{ $ifNull: ["$closed", {}] }, { $arrayToObject: [[{ k: current, v: "$last" }]] }] },
          "$closed"] },
        last: { $cond: [newPeriod, "$first", { $add: ["$last", NumberLong("1")] }] },
        current: "$_label" } },
      { $unset: "_label" }
    ];
  var after = database.getCollection("series").findOneAndUpdate(filter, update,
    { returnDocument: "after" });
  if (after === null) {
    throw new Error("series '" + name + "' took nothing: it is missing, malformed or at its last number " +
      "(idmint series audit " + name + " says which); nothing was taken");
  }
  var digits = String(after.last);
  var padded = ("0000000000000000000" + digits).slice(-19);
  var period = typeof after.current === "string" ? after.current : "";
  database.getCollection("series_numbers").insertOne({
    _id: name + "/" + period + "/" + padded,
    series: name,
    period: period,
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
