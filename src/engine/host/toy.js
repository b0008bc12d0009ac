// toy.double(n): a promise of 2n, computed by the host. Exists only for the
// tests (engine/host/toy.rs).
(function (natives) {
  "use strict";
  return { toy: { double: (n) => natives.double(Number(n)) } };
})
