// The microtasks family has natives only (microtasks.rs): nothing here is
// ever loaded by a run.
(function (natives) {
  "use strict";
  return Object.freeze({});
})
