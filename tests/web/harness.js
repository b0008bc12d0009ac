// A small testharness in the style of WPT's: each `test` holds several
// assertions; a failed assertion ends its test. `__report(family)` waits for
// the async tests and returns the counts the Rust side checks and that
// docs/engine.md's table shows.
const __results = { asserted: 0, failed: [] };
const __pending = [];
class AssertionError extends Error {}
function __record(name, error) {
  if (!(error instanceof AssertionError)) __results.asserted++;
  __results.failed.push(`${name}: ${error && error.name ? error.name + ": " : ""}${error && error.message !== undefined ? error.message : String(error)}`);
}
function test(fn, name) {
  try {
    const r = fn();
    if (r && typeof r.then === "function") __pending.push(Promise.resolve(r).then(() => {}, (e) => __record(name, e)));
  } catch (e) {
    __record(name, e);
  }
}
const promise_test = test;
function __check(ok, message) {
  __results.asserted++;
  if (!ok) throw new AssertionError(message);
}
const __show = (v) => {
  try { return typeof v === "string" ? JSON.stringify(v) : String(v); } catch { return Object.prototype.toString.call(v); }
};
function assert_equals(actual, expected, what = "") {
  __check(Object.is(actual, expected), `${what} expected ${__show(expected)}, got ${__show(actual)}`);
}
function assert_not_equals(actual, expected, what = "") {
  __check(!Object.is(actual, expected), `${what} expected anything but ${__show(expected)}`);
}
function assert_true(value, what = "") { __check(value === true, `${what} expected true, got ${__show(value)}`); }
function assert_false(value, what = "") { __check(value === false, `${what} expected false, got ${__show(value)}`); }
function assert_array_equals(actual, expected, what = "") {
  const a = [...actual], e = [...expected];
  __check(a.length === e.length && a.every((v, i) => Object.is(v, e[i])), `${what} expected [${e.map(__show)}], got [${a.map(__show)}]`);
}
function assert_throws_js(type, fn, what = "") {
  try { fn(); } catch (e) {
    __check(e instanceof type && e.constructor === type, `${what} expected a ${type.name}, got ${e && e.name}: ${e && e.message}`);
    return e;
  }
  __check(false, `${what} expected a ${type.name}, nothing was thrown`);
}
function assert_throws_dom(name, fn, what = "") {
  try { fn(); } catch (e) {
    __check(e instanceof DOMException && e.name === name, `${what} expected DOMException ${name}, got ${e && e.name}: ${e && e.message}`);
    return e;
  }
  __check(false, `${what} expected DOMException ${name}, nothing was thrown`);
}
async function promise_rejects_js(type, promise, what = "") {
  try { await promise; } catch (e) {
    __check(e instanceof type, `${what} expected a ${type.name} rejection, got ${e && e.name}: ${e && e.message}`);
    return;
  }
  __check(false, `${what} expected a ${type.name} rejection, the promise fulfilled`);
}
async function promise_rejects_dom(name, promise, what = "") {
  try { await promise; } catch (e) {
    __check(e instanceof DOMException && e.name === name, `${what} expected DOMException ${name}, got ${e && e.name}: ${e && e.message}`);
    return;
  }
  __check(false, `${what} expected DOMException ${name}, the promise fulfilled`);
}
function assert_class_string(object, name, what = "") {
  assert_equals(Object.prototype.toString.call(object), `[object ${name}]`, what);
}
async function __report(family) {
  await Promise.all(__pending);
  return { family, asserted: __results.asserted, failed: __results.failed };
}
