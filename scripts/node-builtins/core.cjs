// What the "node_core" family exports: Node 22's own lib/ modules (path,
// querystring, the legacy url API), each made on first use, bundled from
// Node's source with the small stand-ins in shims/ for what they take from
// Node's internals.
module.exports = {
  get path() { return require("node-lib/path"); },
  get querystring() { return require("node-lib/querystring"); },
  get url() { return require("node-lib/url"); },
};
