// Builds a graph of kept objects from `seed` (an array of bytes), for the
// kept_objects fuzz target (tests/fuzz) and its proptest twin
// (tests/it/properties.rs): each byte picks what to make, link, keep or
// drop, so random seeds reach every kind of object a heap may hold when it
// is snapshotted. The engine must answer every such run with an outcome;
// it must never abort the process.
(() => {
  const made = [];
  const kinds = [
    () => ({ n: 1 }),
    () => [1, 2, 3],
    () => new Map([[1, {}]]),
    () => new Set([{}]),
    () => new WeakMap([[{}, 1]]),
    () => new WeakRef({}),
    () => new WeakRef(made[made.length - 1] ?? {}),
    () => new FinalizationRegistry(() => {}),
    () => { const r = new FinalizationRegistry(() => {}); r.register({}, 1); return r; },
    () => { const r = new FinalizationRegistry(() => {}); r.register(made[0] ?? {}, 2); return r; },
    () => new Intl.NumberFormat("en"),
    () => new Intl.DateTimeFormat("en"),
    () => new Intl.Collator(),
    () => new Intl.Segmenter().segment("a b"),
    () => new ArrayBuffer(16),
    () => new ArrayBuffer(8, { maxByteLength: 64 }),
    () => new ArrayBuffer(8, { maxByteLength: 2 ** 32 + 8 }),
    () => new Uint8Array(new ArrayBuffer(8, { maxByteLength: 32 })),
    () => { const b = new ArrayBuffer(8); structuredClone(b, { transfer: [b] }); return b; },
    () => new DataView(new ArrayBuffer(4)),
    () => new Promise(() => {}),
    () => Promise.reject(new Error("kept rejection")).catch(() => {}),
    () => (function* () { yield 1; })(),
    () => (async function* () { yield 1; })(),
    () => new Proxy({}, { get: () => 1 }),
    () => Symbol("kept"),
    () => new Date(0),
    () => /a(?<b>c)/gdu,
    () => new Error("kept"),
    () => { const x = {}; return () => x; },
    () => Function.prototype.bind.call(() => 1, null),
    () => new (class K { #p = 1; get p() { return this.#p; } })(),
    () => new URL("https://example.com/a?b=c"),
    () => new Headers({ a: "b" }),
    () => new Blob(["blob"]),
    () => new Response("body"),
    () => new AbortController(),
    () => AbortSignal.timeout(1e6),
    () => { const d = new TextDecoder(); d.decode(new Uint8Array([0xe2]), { stream: true }); return d; },
    () => new EventTarget(),
    () => structuredClone({ a: [1, { b: 2 }] }),
    () => new Uint8Array(1 << (made.length % 16)),
  ];
  for (let i = 0; i < seed.length; i++) {
    const byte = seed[i];
    const op = byte % 4;
    const pick = (byte >> 2) % Math.max(made.length, 1);
    try {
      if (op === 0 || made.length === 0) {
        made.push(kinds[(byte >> 2) % kinds.length]());
      } else if (op === 1) {
        const target = made[pick];
        if (target !== null && typeof target === "object") target.link = made[i % made.length];
      } else if (op === 2) {
        globalThis["kept" + pick] = made[pick];
      } else {
        delete globalThis["kept" + pick];
        made[pick] = null;
      }
    } catch {
      // A refusal (a budget, a bad argument) is an outcome like any other.
    }
  }
  globalThis.keptAll = seed.length % 3 === 0 ? made : null;
  return made.length;
})()
