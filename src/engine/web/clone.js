// structuredClone (HTML), by V8's serializer. Objects made by classes are
// copied as plain objects of their own enumerable properties, as V8 does;
// the Web layer's classes (URL, Blob, …) are not serializable here.
(function (natives, load) {
  "use strict";
  const { DOMException } = load("events");

  function structuredClone(value, options = undefined) {
    if (arguments.length === 0) throw new TypeError("structuredClone: 1 argument required, but only 0 present");
    const transfer = options?.transfer === undefined ? [] : [...options.transfer];
    const seen = new Set();
    for (const item of transfer) {
      if (!(item instanceof ArrayBuffer)) throw new DOMException("Only ArrayBuffers can be transferred", "DataCloneError");
      if (seen.has(item)) throw new DOMException("An ArrayBuffer is listed twice in transfer", "DataCloneError");
      if (item.detached) throw new DOMException("A detached ArrayBuffer cannot be transferred", "DataCloneError");
      seen.add(item);
    }
    return natives.clone(value, DOMException, transfer);
  }

  return { structuredClone };
})
