// Node's command-line options, which a run has none of.
"use strict";

module.exports = { getOptionValue: () => false };
