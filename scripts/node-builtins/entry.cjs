// What the "node" family exports: each module made on first use.

// Node 22's additions to the buffer port (6.0.3): the `base64url`
// encoding (its decoder already reads the URL alphabet), made once.
let bufferReady = false;
function buffer() {
  const mod = require("buffer/");
  if (bufferReady) return mod;
  bufferReady = true;
  const { Buffer } = mod;
  const url = (encoding) => typeof encoding === "string" && encoding.toLowerCase() === "base64url";
  const { from, byteLength, isEncoding } = Buffer;
  const { toString, write } = Buffer.prototype;
  Buffer.from = function (value, encoding, length) {
    if (typeof value === "string" && url(encoding)) return from.call(Buffer, value, "base64");
    return from.apply(Buffer, arguments);
  };
  Buffer.byteLength = function (value, encoding) {
    return byteLength.call(Buffer, value, url(encoding) ? "base64" : encoding);
  };
  Buffer.isEncoding = (encoding) => url(encoding) || isEncoding.call(Buffer, encoding);
  Buffer.prototype.toString = function (encoding, start, end) {
    if (!url(encoding)) return toString.apply(this, arguments);
    return toString.call(this, "base64", start, end).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  };
  Buffer.prototype.write = function (string, offset, length, encoding) {
    const args = Array.from(arguments).map((a) => (url(a) ? "base64" : a));
    return write.apply(this, args);
  };
  return mod;
}

// Node 22's default high-water mark of byte streams is 64 KiB (the port's
// is 16 KiB), set once.
let streamReady = false;
function stream() {
  const mod = require("readable-stream");
  if (!streamReady) {
    streamReady = true;
    mod.setDefaultHighWaterMark(false, 65536);
  }
  return mod;
}

// Node's `events.errorMonitor` (since 13.6), which the port (3.3.0) lacks:
// its listeners hear an 'error' event before the 'error' listeners do, and
// do not count as handling it. Made once.
let eventsReady = false;
function events() {
  const EventEmitter = require("events/");
  if (eventsReady) return EventEmitter;
  eventsReady = true;
  const errorMonitor = Symbol("events.errorMonitor");
  Object.defineProperty(EventEmitter, "errorMonitor", {
    value: errorMonitor, writable: false, configurable: true, enumerable: true,
  });
  const { emit } = EventEmitter.prototype;
  EventEmitter.prototype.emit = function (type) {
    if (type === "error" && this._events !== undefined && this._events[errorMonitor] !== undefined) {
      const args = Array.prototype.slice.call(arguments, 1);
      emit.call(this, errorMonitor, ...args);
    }
    return emit.apply(this, arguments);
  };
  return EventEmitter;
}

// Node's POSIX path is the port's (Node 10's lib/path.js) but for what
// Node changed since: arguments checked with Node's ERR_INVALID_ARG_TYPE,
// `format` adding the dot an `ext` lacks, and `toNamespacedPath`. Made once.
let pathReady = false;
function path() {
  const mod = require("path-browserify");
  if (pathReady) return mod;
  pathReady = true;
  const received = (value) => {
    if (value == null) return `Received ${value}`;
    if (typeof value === "function") return `Received function ${value.name}`;
    if (typeof value === "object") return `Received an instance of ${value.constructor?.name ?? "Object"}`;
    return `Received type ${typeof value} (${String(value)})`;
  };
  const check = (value, name, type = "string") => {
    if (type === "object" ? value === null || typeof value !== "object" : typeof value !== type) {
      const error = new TypeError(`The "${name}" argument must be of type ${type}. ${received(value)}`);
      error.code = "ERR_INVALID_ARG_TYPE";
      throw error;
    }
  };
  const checked = (name, names) => {
    const original = mod[name];
    mod[name] = function (...args) {
      names(args).forEach(([value, argument]) => check(value, argument));
      return original.apply(this, args);
    };
  };
  checked("resolve", (args) => args.map((a, i) => [a, `paths[${i}]`]));
  checked("join", (args) => args.map((a) => [a, "path"]));
  checked("relative", ([from, to]) => [[from, "from"], [to, "to"]]);
  for (const name of ["normalize", "isAbsolute", "dirname", "extname", "parse"]) {
    checked(name, ([p]) => [[p, "path"]]);
  }
  checked("basename", ([p, ext]) => (ext === undefined ? [[p, "path"]] : [[p, "path"], [ext, "suffix"]]));
  mod.format = function format(pathObject) {
    check(pathObject, "pathObject", "object");
    const dir = pathObject.dir || pathObject.root;
    const ext = pathObject.ext ? `${pathObject.ext[0] === "." ? "" : "."}${pathObject.ext}` : "";
    const base = pathObject.base || `${pathObject.name || ""}${ext}`;
    if (!dir) return base;
    return dir === pathObject.root ? `${dir}${base}` : `${dir}/${base}`;
  };
  mod.toNamespacedPath = (p) => p;
  return mod;
}

module.exports = {
  get Buffer() { return buffer().Buffer; },
  get buffer() { return buffer(); },
  get events() { return events(); },
  get util() { return require("util/"); },
  // Node's deep equality (util.isDeepStrictEqual), from the assert port.
  get comparisons() { return require("assert/build/internal/util/comparisons"); },
  get stream() { return stream(); },
  get string_decoder() { return require("string_decoder/"); },
  get assert() { return require("assert/"); },
  // Node's lib/punycode.js is this library (2.1.0 there).
  get punycode() { return require("punycode/punycode.js"); },
  // Node's POSIX path (its lib/path.js, as of Node 10, which is Node 22's
  // in behaviour); `resolve` starts from process.cwd(), /work in a run.
  get path() { return path(); },
};
