// The local disk of `/work` (`fs.js` loads it): the natives, as they are.
// A family of its own so its natives come after every older one in the
// table stored heaps index; heaps whose `fs` predates it keep theirs.
(function (natives) {
  "use strict";
  return Object.freeze({ ...natives });
})
