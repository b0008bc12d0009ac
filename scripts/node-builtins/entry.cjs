// What the "node" family exports: each module made on first use.
module.exports = {
  get Buffer() { return require("buffer/").Buffer; },
  get buffer() { return require("buffer/"); },
  get events() { return require("events/"); },
  get util() { return require("util/"); },
  get stream() { return require("readable-stream"); },
  get string_decoder() { return require("string_decoder/"); },
  get assert() { return require("assert/"); },
};
