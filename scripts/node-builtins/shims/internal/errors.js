// The errors Node's lib/ files bundled here throw, with Node's codes and
// messages (lib/internal/errors.js): `ERR_INVALID_ARG_TYPE`'s message names
// the expected types and what was received as Node words it.
"use strict";

const kTypes = ["string", "function", "number", "object", "Function", "Object", "boolean", "bigint", "symbol"];
const classRegExp = /^([A-Z][a-z0-9]*)+$/;

function received(value) {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  switch (typeof value) {
    case "bigint":
      return `type bigint (${value}n)`;
    case "number":
      if (value === 0) return 1 / value === -Infinity ? "type number (-0)" : "type number (0)";
      return `type number (${value})`;
    case "boolean":
      return `type boolean (${value})`;
    case "symbol":
      return `type symbol (${String(value)})`;
    case "function":
      return `function ${value.name}`;
    case "object":
      if (value.constructor && "name" in value.constructor) return `an instance of ${value.constructor.name}`;
      return require("node-family:inspect")(value, { depth: -1 });
    case "string": {
      const shown = value.length > 28 ? `${value.slice(0, 25)}...` : value;
      return shown.includes("'") ? `type string (${JSON.stringify(shown)})` : `type string ('${shown}')`;
    }
    default:
      return String(value);
  }
}

function list(words, kind) {
  if (words.length > 2) {
    const last = words.pop();
    return `${kind}${words.join(", ")}, or ${last}`;
  }
  if (words.length === 2) return `${kind}${words[0]} or ${words[1]}`;
  return `${kind}${words[0]}`;
}

function invalidArgType(name, expected, actual) {
  if (!Array.isArray(expected)) expected = [expected];
  let message = "The ";
  if (name.endsWith(" argument")) message += `${name} `;
  else message += `"${name}" ${name.includes(".") ? "property" : "argument"} `;
  message += "must be ";
  const types = [];
  const instances = [];
  const other = [];
  for (const value of expected) {
    if (kTypes.includes(value)) types.push(value.toLowerCase());
    else if (classRegExp.test(value)) instances.push(value);
    else other.push(value);
  }
  if (instances.length > 0) {
    const at = types.indexOf("object");
    if (at !== -1) {
      types.splice(at, 1);
      instances.push("Object");
    }
  }
  const parts = [];
  if (types.length > 0) parts.push(list(types, types.length > 1 ? "one of type " : "of type "));
  if (instances.length > 0) {
    parts.push(instances.length > 2 ? list(instances, "an instance of ")
      : `an instance of ${instances.join(" or ")}`);
  }
  if (other.length > 0) {
    if (other.length > 1) parts.push(list(other, "one of "));
    else parts.push(`${other[0].toLowerCase() !== other[0] ? "an " : ""}${other[0]}`);
  }
  return `${message}${parts.join(" or ")}. Received ${received(actual)}`;
}

function invalidArgValue(name, value, reason = "is invalid") {
  let inspected = require("node-family:inspect")(value);
  if (inspected.length > 128) inspected = `${inspected.slice(0, 128)}...`;
  const type = name.includes(".") ? "property" : "argument";
  return `The ${type} '${name}' ${reason}. Received ${inspected}`;
}

function make(code, Base, message) {
  return class NodeError extends Base {
    constructor(...args) {
      super(typeof message === "function" ? message(...args) : message);
      Object.defineProperty(this, "code", { value: code, enumerable: true, writable: true, configurable: true });
      this.stack = this.stack.replace(/^[A-Za-z]*Error/, `${Base.name} [${code}]`);
    }

    toString() {
      return `${this.name} [${code}]: ${this.message}`;
    }
  };
}

class InvalidUrl extends TypeError {
  constructor(input, base = null) {
    super("Invalid URL");
    this.code = "ERR_INVALID_URL";
    this.input = input;
    if (base != null) this.base = base;
  }
}

const codes = {
  ERR_INVALID_ARG_TYPE: make("ERR_INVALID_ARG_TYPE", TypeError, invalidArgType),
  ERR_INVALID_ARG_VALUE: make("ERR_INVALID_ARG_VALUE", TypeError, invalidArgValue),
  ERR_INVALID_URI: make("ERR_INVALID_URI", URIError, "URI malformed"),
  ERR_INVALID_URL: InvalidUrl,
  ERR_INVALID_URL_SCHEME: make("ERR_INVALID_URL_SCHEME", TypeError,
    (expected) => `The URL must be of scheme ${expected}`),
  ERR_INVALID_FILE_URL_HOST: make("ERR_INVALID_FILE_URL_HOST", TypeError,
    (platform) => `File URL host must be "localhost" or empty on ${platform}`),
  ERR_INVALID_FILE_URL_PATH: class extends make("ERR_INVALID_FILE_URL_PATH", TypeError,
    (path) => `File URL path ${path}`) {
    constructor(path, input) {
      super(path);
      if (input !== undefined) this.input = input;
    }
  },
  ERR_MISSING_ARGS: make("ERR_MISSING_ARGS", TypeError,
    (...names) => `The ${names.map((n) => `"${n}"`).join(" and ")} argument${names.length > 1 ? "s" : ""} must be specified`),
};

module.exports = { codes, hideStackFrames: (fn) => fn };
