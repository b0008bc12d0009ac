// The constructors whose objects a run's limits or V8's snapshots need to
// know of: resizable ArrayBuffers (their memory is reserved and committed
// outside the allocator that counts the run's buffers) and
// FinalizationRegistry registrations (V8 cannot write them into a heap
// snapshot); Intl's are in intl.js, which uses `wrap`. Evaluated once per
// context as `(natives, load) => exports`; the originals come from the
// context's own intrinsics.
(function (natives, load) {
  "use strict";
  const { reserve, track } = natives;
  const intrinsics = load("intrinsics");
  const { defineProperty, getOwnPropertyDescriptor, getOwnPropertyNames, getPrototypeOf } = Object;
  const { construct } = Reflect;

  // A constructor that behaves as `Original` (callable without `new` where
  // it is, subclassable, same prototype, name and statics) and runs
  // `after` on each object it makes. The prototype's `constructor` becomes
  // the wrapper too, except `ArrayBuffer`'s: the layer keeps a lazy
  // property there that loads this file, and hands out the wrapper itself.
  function wrap(Original, after, ownConstructor = true) {
    const Wrapper = function (...args) {
      // Called without `new`, each does what the built-in does: throws
      // (ArrayBuffer) or makes an object (the legacy Intl constructors).
      const object = new.target === undefined
        ? Reflect.apply(Original, this, args)
        : construct(Original, args, new.target === Wrapper ? Original : new.target);
      after(object, args);
      return object;
    };
    for (const key of getOwnPropertyNames(Original)) {
      if (key === "prototype" || key === "arguments" || key === "caller") continue;
      defineProperty(Wrapper, key, getOwnPropertyDescriptor(Original, key));
    }
    defineProperty(Wrapper, "prototype", { value: Original.prototype, writable: false });
    if (ownConstructor) {
      defineProperty(Original.prototype, "constructor", {
        value: Wrapper, writable: true, enumerable: false, configurable: true,
      });
    }
    const species = getOwnPropertyDescriptor(Original, Symbol.species);
    if (species) defineProperty(Wrapper, Symbol.species, species);
    return Wrapper;
  }

  const ArrayBuffer = wrap(intrinsics.ArrayBuffer, (buffer, args) => {
    const options = args[1];
    if (buffer.resizable) reserve(buffer.maxByteLength, options);
  }, false);

  const FinalizationRegistry = intrinsics.FinalizationRegistry;
  const register = FinalizationRegistry.prototype.register;
  defineProperty(FinalizationRegistry.prototype, "register", {
    value: function register_(...args) {
      const result = Reflect.apply(register, this, args);
      track(this, "a FinalizationRegistry with registered objects");
      return result;
    },
    writable: true, enumerable: false, configurable: true,
  });
  defineProperty(FinalizationRegistry.prototype.register, "name", { value: "register" });

  return { ArrayBuffer, FinalizationRegistry, wrap };
})
