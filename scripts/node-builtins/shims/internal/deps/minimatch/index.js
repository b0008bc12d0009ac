// Node's bundled minimatch (path.matchesGlob), from npm.
"use strict";

module.exports = require("minimatch");
