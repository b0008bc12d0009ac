// Node's `primordials` for its own lib/ files bundled here: the built-ins
// under the names Node gives them (lib/internal/per_context/primordials.js),
// `ArrayPrototypeJoin(array, sep)` for `array.join(sep)`, `ObjectKeys` for
// `Object.keys`, `SymbolIterator`, `SafeSet`, and so on. Made on first read
// of a name, one built-in at a time; Node freezes its copies against
// tampering, which a run's own heap does not need.
"use strict";

const { apply, ownKeys, getOwnPropertyDescriptor } = Reflect;
const uncurryThis = (fn) => (self, ...args) => apply(fn, self, args);
const applyBind = (fn) => (self, args) => apply(fn, self, args);

const GLOBALS = [
  "AggregateError", "Array", "ArrayBuffer", "BigInt", "BigInt64Array", "BigUint64Array",
  "Boolean", "DataView", "Date", "Error", "EvalError", "FinalizationRegistry",
  "Float32Array", "Float64Array", "Function", "Int16Array", "Int32Array", "Int8Array",
  "Map", "Number", "Object", "Promise", "RangeError", "ReferenceError", "RegExp", "Set",
  "String", "Symbol", "SyntaxError", "TypeError", "URIError", "Uint16Array",
  "Uint32Array", "Uint8Array", "Uint8ClampedArray", "WeakMap", "WeakRef", "WeakSet",
];
const NAMESPACES = ["JSON", "Math", "Proxy", "Reflect"];
const FUNCTIONS = [
  "decodeURI", "decodeURIComponent", "encodeURI", "encodeURIComponent",
  "isFinite", "isNaN", "parseFloat", "parseInt",
];

const keyName = (key) => {
  if (typeof key !== "symbol") return key[0].toUpperCase() + key.slice(1);
  const description = key.description.replace(/^Symbol\./, "");
  return `Symbol${description[0].toUpperCase()}${description.slice(1)}`;
};

function copy(target, source, prefix, uncurry) {
  for (const key of ownKeys(source)) {
    const descriptor = getOwnPropertyDescriptor(source, key);
    const name = `${prefix}${keyName(key)}`;
    if ("get" in descriptor) {
      if (descriptor.get) target[`${prefix}Get${keyName(key)}`] = uncurry ? uncurryThis(descriptor.get) : descriptor.get;
      if (descriptor.set) target[`${prefix}Set${keyName(key)}`] = uncurry ? uncurryThis(descriptor.set) : descriptor.set;
    } else if (!(name in target)) {
      const { value } = descriptor;
      target[name] = uncurry && typeof value === "function" ? uncurryThis(value) : value;
      if (!uncurry && typeof value === "function") target[`${name}Apply`] = applyBind(value);
    }
  }
}

function made(name) {
  const made = {};
  const value = globalThis[name];
  if (value === undefined) return made;
  made[name] = value;
  if (GLOBALS.includes(name) || NAMESPACES.includes(name)) {
    copy(made, value, name, false);
    if (value.prototype) {
      copy(made, value.prototype, `${name}Prototype`, true);
      made[`${name}Prototype`] = value.prototype;
    }
  }
  return made;
}

class SafeMap extends Map {}
class SafeSet extends Set {}
class SafeWeakMap extends WeakMap {}
class SafeWeakSet extends WeakSet {}

const primordials = {
  uncurryThis,
  applyBind,
  SafeMap,
  SafeSet,
  SafeWeakMap,
  SafeWeakSet,
  globalThis,
};
for (const name of FUNCTIONS) primordials[name] = globalThis[name];

// The longest built-in name that starts `name` owns it.
const owners = [...GLOBALS, ...NAMESPACES].sort((a, b) => b.length - a.length);
const done = new Set();
module.exports = new Proxy(primordials, {
  get(target, name) {
    if (typeof name !== "string" || name in target) return target[name];
    const owner = owners.find((o) => name.startsWith(o));
    if (owner === undefined || done.has(owner)) return undefined;
    done.add(owner);
    for (const [key, value] of Object.entries(made(owner))) {
      if (!(key in target)) target[key] = value;
    }
    return target[name];
  },
});
