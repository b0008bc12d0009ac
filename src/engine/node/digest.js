// node:crypto's createHash, hashing as data comes (modules.js's Hash):
// a stream of gigabytes is hashed a piece at a time, never held.
(function (natives) {
  "use strict";
  return Object.freeze({ ...natives });
})
