// DOMException, Event, CustomEvent, EventTarget, AbortController, AbortSignal.
test(() => {
  const e = new DOMException("msg", "NotFoundError");
  assert_equals(e.name, "NotFoundError");
  assert_equals(e.message, "msg");
  assert_equals(e.code, 8);
  assert_true(e instanceof Error, "inherits from Error");
  assert_equals(String(e), "NotFoundError: msg");
  assert_equals(new DOMException().name, "Error");
  assert_equals(new DOMException().message, "");
  assert_equals(new DOMException("x").code, 0);
  assert_equals(new DOMException("x", "Custom").code, 0, "unknown names have code 0");
  assert_equals(DOMException.ABORT_ERR, 20);
  assert_equals(DOMException.DATA_CLONE_ERR, 25);
  assert_equals(e.INVALID_CHARACTER_ERR, 5);
  assert_equals(new DOMException("x", { name: "TimeoutError", cause: 1 }).cause, 1);
  assert_equals(typeof e.stack, "string");
}, "DOMException");

test(() => {
  const e = new Event("go", { bubbles: true, cancelable: true });
  assert_equals(e.type, "go");
  assert_true(e.bubbles);
  assert_true(e.cancelable);
  assert_false(e.composed);
  assert_false(e.defaultPrevented);
  assert_false(e.isTrusted);
  assert_equals(e.eventPhase, Event.NONE);
  assert_equals(e.target, null);
  assert_equals(typeof e.timeStamp, "number");
  e.preventDefault();
  assert_true(e.defaultPrevented);
  assert_false(e.returnValue);
  const n = new Event("x");
  n.preventDefault();
  assert_false(n.defaultPrevented, "not cancelable");
  assert_throws_js(TypeError, () => new Event());
  assert_equals(Event.AT_TARGET, 2);
  assert_equals(new CustomEvent("c", { detail: { a: 1 } }).detail.a, 1);
  assert_equals(new CustomEvent("c").detail, null);
  assert_true(new CustomEvent("c") instanceof Event);
  assert_class_string(e, "Event");
}, "Event and CustomEvent");

test(() => {
  const t = new EventTarget();
  const seen = [];
  const f = (e) => seen.push(["f", e.type, e.target === t, e.currentTarget === t, e.eventPhase]);
  t.addEventListener("x", f);
  t.addEventListener("x", f);
  t.addEventListener("x", { handleEvent(e) { seen.push(["obj", this !== t]); } });
  assert_true(t.dispatchEvent(new Event("x")));
  assert_equals(seen.length, 2, "duplicates are ignored");
  assert_array_equals(seen[0], ["f", "x", true, true, 2]);
  assert_array_equals(seen[1], ["obj", true]);
  t.removeEventListener("x", f);
  seen.length = 0;
  t.dispatchEvent(new Event("x"));
  assert_equals(seen.length, 1);
  const e = new Event("x");
  t.dispatchEvent(e);
  assert_equals(e.target, t, "target stays after dispatch");
  assert_equals(e.currentTarget, null);
  assert_equals(e.eventPhase, 0);
}, "EventTarget add, remove, dispatch");

test(() => {
  const t = new EventTarget();
  let once = 0, passive = null, order = [];
  t.addEventListener("x", () => once++, { once: true });
  t.addEventListener("y", (e) => { e.preventDefault(); passive = e.defaultPrevented; }, { passive: true });
  t.addEventListener("z", (e) => { order.push(1); e.stopImmediatePropagation(); });
  t.addEventListener("z", () => order.push(2));
  t.dispatchEvent(new Event("x"));
  t.dispatchEvent(new Event("x"));
  assert_equals(once, 1, "once");
  assert_true(t.dispatchEvent(new Event("y", { cancelable: true })), "passive cannot cancel");
  assert_false(passive);
  t.dispatchEvent(new Event("z"));
  assert_array_equals(order, [1], "stopImmediatePropagation");
  const c = new EventTarget();
  c.addEventListener("q", (e) => e.preventDefault());
  assert_false(c.dispatchEvent(new Event("q", { cancelable: true })), "returns false when canceled");
  assert_throws_js(TypeError, () => c.dispatchEvent({ type: "q" }));
  const ac = new AbortController();
  let hits = 0;
  c.addEventListener("s", () => hits++, { signal: ac.signal });
  c.dispatchEvent(new Event("s"));
  ac.abort();
  c.dispatchEvent(new Event("s"));
  assert_equals(hits, 1, "an aborted signal removes the listener");
}, "listener options");

test(() => {
  const t = new EventTarget();
  const e = new Event("x");
  let inner = null;
  t.addEventListener("x", () => {
    try { t.dispatchEvent(e); } catch (err) { inner = err.name; }
  });
  t.dispatchEvent(e);
  assert_equals(inner, "InvalidStateError", "re-dispatching a dispatched event");
  class Counter extends EventTarget {
    count = 0;
    constructor() { super(); this.addEventListener("inc", () => this.count++); }
  }
  const k = new Counter();
  k.dispatchEvent(new Event("inc"));
  assert_equals(k.count, 1, "subclasses work");
  assert_true(k instanceof EventTarget);
}, "dispatch edge cases and subclasses");

test(() => {
  const ac = new AbortController();
  const s = ac.signal;
  assert_true(s instanceof AbortSignal);
  assert_true(s instanceof EventTarget);
  assert_false(s.aborted);
  assert_equals(s.reason, undefined);
  let fired = 0, handler = 0;
  s.addEventListener("abort", () => fired++);
  s.onabort = () => handler++;
  ac.abort();
  assert_true(s.aborted);
  assert_true(s.reason instanceof DOMException);
  assert_equals(s.reason.name, "AbortError");
  ac.abort();
  assert_equals(fired, 1, "abort fires once");
  assert_equals(handler, 1, "onabort");
  const e = assert_throws_dom("AbortError", () => s.throwIfAborted());
  assert_equals(e, s.reason);
  const c2 = new AbortController();
  c2.abort("why");
  assert_equals(c2.signal.reason, "why", "custom reason");
  assert_throws_js(TypeError, () => new AbortSignal());
}, "AbortController and AbortSignal");

test(() => {
  const a = AbortSignal.abort();
  assert_true(a.aborted);
  assert_equals(a.reason.name, "AbortError");
  assert_equals(AbortSignal.abort(42).reason, 42);
  const c1 = new AbortController(), c2 = new AbortController();
  const any = AbortSignal.any([c1.signal, c2.signal]);
  assert_false(any.aborted);
  let fired = 0;
  any.addEventListener("abort", () => fired++);
  c2.abort("second");
  assert_true(any.aborted);
  assert_equals(any.reason, "second");
  assert_equals(fired, 1);
  c1.abort();
  assert_equals(fired, 1);
  assert_equals(AbortSignal.any([AbortSignal.abort("pre")]).reason, "pre", "already aborted input");
  assert_false(AbortSignal.any([]).aborted);
  assert_throws_js(TypeError, () => AbortSignal.any([{}]));
  assert_throws_js(TypeError, () => AbortSignal.timeout(-1));
}, "AbortSignal.abort and AbortSignal.any");

promise_test(async () => {
  const s = AbortSignal.timeout(5);
  assert_false(s.aborted);
  let fired = false;
  s.addEventListener("abort", () => { fired = true; });
  // The signal's own timer does not hold the run; this one does.
  await new Promise((resolve) => setTimeout(resolve, 30));
  assert_true(fired);
  assert_true(s.aborted);
  assert_equals(s.reason.name, "TimeoutError");
  assert_equals(s.reason.code, 23);
}, "AbortSignal.timeout fires");

test(() => {
  // A long timeout signal must not hold the run open (it ends at once).
  globalThis.__longSignal = AbortSignal.timeout(600000);
  assert_false(__longSignal.aborted);
}, "AbortSignal.timeout does not keep the run alive");
