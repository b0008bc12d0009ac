// structuredClone.
test(() => {
  const src = { n: 1, s: "x", b: true, u: undefined, nul: null, big: 10n, arr: [1, [2]], nested: { d: 1 } };
  const c = structuredClone(src);
  assert_not_equals(c, src);
  assert_equals(c.n, 1);
  assert_equals(c.big, 10n);
  assert_true("u" in c);
  assert_equals(c.arr[1][0], 2);
  assert_not_equals(c.nested, src.nested, "deep");
  assert_equals(structuredClone(5), 5);
  assert_equals(structuredClone("s"), "s");
  assert_true(Number.isNaN(structuredClone(NaN)));
  assert_equals(Object.is(structuredClone(-0), -0), true);
}, "plain values");

test(() => {
  const m = new Map([[1, "a"], [{ k: 1 }, new Set([1, 2])]]);
  const c = structuredClone(m);
  assert_true(c instanceof Map);
  assert_equals(c.get(1), "a");
  assert_true([...c.values()][1] instanceof Set);
  const d = structuredClone(new Date(5));
  assert_true(d instanceof Date);
  assert_equals(d.getTime(), 5);
  const r = structuredClone(/a+b/gi);
  assert_true(r instanceof RegExp);
  assert_equals(r.source, "a+b");
  assert_equals(r.flags, "gi");
  const t = structuredClone(new Float64Array([1.5, 2.5]));
  assert_true(t instanceof Float64Array);
  assert_equals(t[1], 2.5);
  const buf = new Uint8Array([1, 2, 3]).buffer;
  const b = structuredClone(buf);
  assert_equals(b.byteLength, 3);
  assert_not_equals(b, buf);
  const shared = new Uint8Array([9, 8, 7, 6]);
  const views = structuredClone({ a: new Uint8Array(shared.buffer, 1, 2), b: new DataView(shared.buffer) });
  assert_equals(views.a.buffer, views.b.buffer, "views keep sharing one buffer");
  assert_equals(views.a[0], 8);
  const err = structuredClone(new RangeError("bad"));
  assert_true(err instanceof RangeError);
  assert_equals(err.message, "bad");
  assert_equals(structuredClone(new String("w")).valueOf(), "w");
}, "Map, Set, Date, RegExp, typed arrays, errors");

test(() => {
  const a = { name: "a" };
  a.self = a;
  a.list = [a, { back: a }];
  const c = structuredClone(a);
  assert_equals(c.self, c, "cycle");
  assert_equals(c.list[0], c);
  assert_equals(c.list[1].back, c);
  const shared = { s: 1 };
  const pair = structuredClone([shared, shared]);
  assert_equals(pair[0], pair[1], "shared references stay shared");
  const m = new Map();
  m.set("me", m);
  const mc = structuredClone(m);
  assert_equals(mc.get("me"), mc);
}, "cycles and shared references");

test(() => {
  const e = assert_throws_dom("DataCloneError", () => structuredClone(() => 1));
  assert_equals(e.code, 25);
  assert_throws_dom("DataCloneError", () => structuredClone({ f() {} }), "a method");
  assert_throws_dom("DataCloneError", () => structuredClone(Symbol("s")));
  assert_throws_dom("DataCloneError", () => structuredClone(new WeakMap()));
  assert_throws_dom("DataCloneError", () => structuredClone(Promise.resolve()));
  assert_throws_js(TypeError, () => structuredClone());
  class K { constructor() { this.v = 1; } }
  const k = structuredClone(new K());
  assert_false(k instanceof K, "class instances become plain objects");
  assert_equals(k.v, 1);
  const getter = { get x() { throw new RangeError("from a getter"); } };
  assert_throws_js(RangeError, () => structuredClone(getter), "a getter's exception passes through");
}, "what cannot be cloned");

test(() => {
  const buf = new Uint8Array([1, 2, 3]).buffer;
  const c = structuredClone({ buf }, { transfer: [buf] });
  assert_equals(buf.byteLength, 0, "the source is detached");
  assert_equals(new Uint8Array(c.buf)[2], 3);
  assert_throws_dom("DataCloneError", () => structuredClone(1, { transfer: [{}] }));
  const twice = new ArrayBuffer(1);
  assert_throws_dom("DataCloneError", () => structuredClone(1, { transfer: [twice, twice] }));
}, "transfer");
