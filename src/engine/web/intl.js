// Intl's constructors, each object they make watched (V8 cannot write an
// Intl object into a heap snapshot), in a file of its own so that a run
// pays for ICU only when it uses Intl. Evaluated once per context as
// `(natives, load) => exports`.
(function (natives, load) {
  "use strict";
  const { track } = natives;
  const { wrap } = load("guard");
  const intrinsics = load("intrinsics");
  const { defineProperty, getOwnPropertyNames, getPrototypeOf } = Object;
  const { construct } = Reflect;

  const Intl = intrinsics.Intl;
  // The built-in, before the loop below replaces it with its wrapper.
  const Segmenter = Intl.Segmenter;
  for (const name of getOwnPropertyNames(Intl)) {
    const Original = Intl[name];
    if (typeof Original !== "function" || !Original.prototype) continue;
    const kind = `an Intl.${name}`;
    defineProperty(Intl, name, {
      value: wrap(Original, (object) => track(object, kind)),
      writable: true, enumerable: false, configurable: true,
    });
  }
  // A Segmenter's segments and their iterators hold ICU state too.
  if (Segmenter) {
    const segment = Segmenter.prototype.segment;
    const Segments = getPrototypeOf(Reflect.apply(segment, construct(Segmenter, []), [""]));
    const iterate = Segments[Symbol.iterator];
    defineProperty(Segmenter.prototype, "segment", {
      value: { segment(input) {
        const segments = Reflect.apply(segment, this, [input]);
        track(segments, "an Intl.Segmenter's segments");
        return segments;
      } }.segment,
      writable: true, enumerable: false, configurable: true,
    });
    defineProperty(Segments, Symbol.iterator, {
      value: { [Symbol.iterator]() {
        const iterator = Reflect.apply(iterate, this, []);
        track(iterator, "an Intl.Segmenter's iterator");
        return iterator;
      } }[Symbol.iterator],
      writable: true, enumerable: false, configurable: true,
    });
  }

  return { Intl };
})
