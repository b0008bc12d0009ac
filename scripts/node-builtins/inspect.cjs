// What the "node_inspect" family exports: Node's own util.inspect and
// util.format (lib/internal/util/inspect.js, extracted), apart from the
// "node" family so a run that only touches `Buffer` does not parse them.
module.exports = require("node-inspect-extracted");
