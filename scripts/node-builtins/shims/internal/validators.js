// The argument checks of Node's lib/ files bundled here, as Node's
// lib/internal/validators.js makes them.
"use strict";

const { ERR_INVALID_ARG_TYPE } = require("./errors").codes;

const kValidateObjectNone = 0;
const kValidateObjectAllowNullable = 1 << 0;
const kValidateObjectAllowArray = 1 << 1;
const kValidateObjectAllowFunction = 1 << 2;
const kValidateObjectAllowObjects = kValidateObjectAllowArray | kValidateObjectAllowFunction;

function validateString(value, name) {
  if (typeof value !== "string") throw new ERR_INVALID_ARG_TYPE(name, "string", value);
}

function validateObject(value, name, options = kValidateObjectNone) {
  const nullable = (options & kValidateObjectAllowNullable) !== 0;
  const array = (options & kValidateObjectAllowArray) !== 0;
  const fn = (options & kValidateObjectAllowFunction) !== 0;
  if ((!nullable && value === null) || (!array && Array.isArray(value)) ||
      (typeof value !== "object" && (!fn || typeof value !== "function"))) {
    throw new ERR_INVALID_ARG_TYPE(name, "Object", value);
  }
}

module.exports = {
  validateString,
  validateObject,
  kValidateObjectNone,
  kValidateObjectAllowNullable,
  kValidateObjectAllowArray,
  kValidateObjectAllowFunction,
  kValidateObjectAllowObjects,
};
