// idmint shell loader: makes every function stored in <db>.system.js callable
// in this shell session, as the legacy shell's db.loadServerScripts() did
// (mongosh has none).
//
//   mongosh "mongodb://host/idmint" idmint-loader.js --shell   # then: getNextUniqueSeq("orders")
//   or, inside a session:  load("idmint-loader.js")
//
// `idmint shell-loader` prints this file. Each function becomes a global of the
// session and uses the session's `db`.
//
// mongosh makes shell calls such as db.c.findOne() synchronous only in code it
// loads itself; a function made with eval() would get Promises back. So under
// mongosh each function is written to a private temporary file and load()ed.
// The legacy mongo shell is synchronous and simply evaluates the source.
(function () {
  var global = (function () { return this; })() || globalThis;
  var inMongosh = typeof require === "function" && typeof process === "object";
  var fs = null, path = null, dir = null;
  if (inMongosh) {
    fs = require("fs");
    path = require("path");
    dir = fs.mkdtempSync(path.join(require("os").tmpdir(), "idmint-loader-"));
  }
  var loaded = [];
  try {
    db.getCollection("system.js").find().forEach(function (stored) {
      var value = stored.value;
      var source = null;
      if (typeof value === "function") source = value.toString();
      else if (value !== null && typeof value === "object" && typeof value.code === "string") source = value.code;
      if (source === null) {
        print("idmint loader: skipped " + stored._id + ": its value is not code");
        return;
      }
      if (inMongosh) {
        var file = path.join(dir, "function.js");
        fs.writeFileSync(file, "globalThis[" + JSON.stringify(String(stored._id)) + "] = (" + source + ");\n",
          { mode: 384 /* 0600 */ });
        load(file);
      } else {
        global[stored._id] = eval("(" + source + ")");
      }
      loaded.push(stored._id);
    });
  } finally {
    if (dir !== null) fs.rmSync(dir, { recursive: true, force: true });
  }
  print("idmint loader: loaded " + (loaded.length ? loaded.join(", ") : "nothing") +
    " from " + db.getName() + ".system.js");
})();
