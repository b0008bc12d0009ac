// What Node's lib/ files bundled here take from lib/internal/util.js. Runs
// are Linux: POSIX paths, a case-sensitive file system.
"use strict";

function getLazy(initializer) {
  let value;
  let initialized = false;
  return () => {
    if (!initialized) {
      value = initializer();
      initialized = true;
    }
    return value;
  };
}

function spliceOne(list, index) {
  for (; index + 1 < list.length; index++) list[index] = list[index + 1];
  list.pop();
}

module.exports = { getLazy, spliceOne, isWindows: false, isMacOS: false };
