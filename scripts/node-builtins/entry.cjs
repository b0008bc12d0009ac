// What the "node" family exports: each module made on first use.

// Base64 text in Node's `base64url`: the URL alphabet, no padding.
const toBase64Url = (text) => text.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

// Node 22's additions to the buffer port (6.0.3): the `base64url`
// encoding (its decoder already reads the URL alphabet) and
// ERR_UNKNOWN_ENCODING from `toString`, made once.
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
    // Node names an encoding it does not know, where the port reads a
    // falsy one as utf8 (`toString(0, 1, 2)`).
    if (arguments.length > 0 && encoding !== undefined && !Buffer.isEncoding(encoding)) {
      const error = new TypeError(`Unknown encoding: ${encoding}`);
      error.code = "ERR_UNKNOWN_ENCODING";
      throw error;
    }
    if (!url(encoding)) return toString.apply(this, arguments);
    return toBase64Url(toString.call(this, "base64", start, end));
  };
  Buffer.prototype.write = function (string, offset, length, encoding) {
    const args = Array.from(arguments).map((a) => (url(a) ? "base64" : a));
    return write.apply(this, args);
  };
  return mod;
}

// The string_decoder port (1.3.0) with Node 22's `base64url`: base64,
// written in the URL alphabet without padding. Made once.
let decoderReady = false;
function stringDecoder() {
  const mod = require("string_decoder/");
  if (decoderReady) return mod;
  decoderReady = true;
  const Port = mod.StringDecoder;
  // A function, as Node's is (`StringDecoder.call(target)` works); the
  // port sets `end` on each decoder, so it is wrapped there.
  function StringDecoder(encoding) {
    const url = typeof encoding === "string" && encoding.toLowerCase() === "base64url";
    Port.call(this, url ? "base64" : encoding);
    if (url) {
      this.encoding = "base64url";
      const end = this.end;
      this.end = function (buf) {
        return toBase64Url(end.call(this, buf));
      };
    }
  }
  StringDecoder.prototype = Object.create(Port.prototype, {
    constructor: { value: StringDecoder, writable: true, configurable: true },
  });
  StringDecoder.prototype.write = function (buf) {
    const text = Port.prototype.write.call(this, buf);
    return this.encoding === "base64url" ? toBase64Url(text) : text;
  };
  mod.StringDecoder = StringDecoder;
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
  // Node's `process` is an EventEmitter: the run's (process.js) has the
  // methods as its own, and EventEmitter.prototype for `instanceof`.
  const proc = require("process/");
  if (Object.getPrototypeOf(proc) === Object.prototype) Object.setPrototypeOf(proc, EventEmitter.prototype);
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

module.exports = {
  get Buffer() { return buffer().Buffer; },
  get buffer() { return buffer(); },
  get events() { return events(); },
  get util() { return require("util/"); },
  // Node's deep equality (util.isDeepStrictEqual), from the assert port.
  get comparisons() { return require("assert/build/internal/util/comparisons"); },
  get stream() { return stream(); },
  get string_decoder() { return stringDecoder(); },
  get assert() { return require("assert/"); },
  // Node's lib/punycode.js is this library (2.1.0 there).
  get punycode() { return require("punycode/punycode.js"); },
};
