// The stand-in for Node's test/common that the slice of Node's own tests
// (tests/node/slice.txt) requires as '../common', used unchanged in Node 22
// and in a run: the helpers those files call, with test/common's meaning
// (a function that must be called N times is checked when the process, or
// the run, exits). Written for this repository from the helpers' documented
// behaviour (nodejs/node test/common/README.md); what needs a real process
// (child processes, fixtures, inspector) is left out with the files that use it.
'use strict';
const assert = require('assert');
const { inspect } = require('util');

const mustCallChecks = [];

function runCallChecks(exitCode) {
  if (exitCode !== 0) return;
  const failed = mustCallChecks.filter((context) => {
    if ('minimum' in context) {
      context.messageSegment = `at least ${context.minimum}`;
      return context.actual < context.minimum;
    }
    context.messageSegment = `exactly ${context.exact}`;
    return context.actual !== context.exact;
  });
  for (const context of failed) {
    console.log('Mismatched %s function calls. Expected %s, actual %d.\n%s',
                context.name, context.messageSegment, context.actual, context.stack);
  }
  if (failed.length) process.exit(1);
}

function noop() {}

function track(fn, field, count) {
  if (typeof fn === 'number') {
    count = fn;
    fn = noop;
  } else if (fn === undefined) {
    fn = noop;
  }
  if (count === undefined) count = 1;
  if (mustCallChecks.length === 0) process.on('exit', runCallChecks);
  const context = {
    [field]: count,
    actual: 0,
    stack: (new Error().stack || '').split('\n').slice(3).join('\n'),
    name: fn.name || '<anonymous>',
  };
  mustCallChecks.push(context);
  const wrapped = function(...args) {
    context.actual++;
    return fn.apply(this, args);
  };
  Object.defineProperty(wrapped, 'length', { value: fn.length, writable: false, enumerable: false, configurable: true });
  return wrapped;
}

function mustCall(fn, exact) {
  return track(fn, 'exact', exact);
}

function mustCallAtLeast(fn, minimum) {
  return track(fn, 'minimum', minimum);
}

function mustSucceed(fn, exact) {
  return mustCall(function(err, ...args) {
    assert.ifError(err);
    if (typeof fn === 'function') return fn.apply(this, args);
  }, exact);
}

function mustNotCall(msg) {
  const where = (new Error().stack || '').split('\n').slice(2, 3).join('').trim();
  return function mustNotCall(...args) {
    const argsInfo = args.length > 0 ? `\ncalled with arguments: ${args.map((a) => inspect(a)).join(', ')}` : '';
    assert.fail(`${msg || 'function should not have been called'} ${where}${argsInfo}`);
  };
}

function expectsError(validator, exact) {
  return mustCall((...args) => {
    if (args.length !== 1) {
      assert.fail(`Expected one argument, got ${inspect(args)}`);
    }
    const error = args.pop();
    assert.throws(() => { throw error; }, validator);
    return true;
  }, exact);
}

// expectWarning(name, messages, code) or expectWarning({ name: messages }):
// each 'warning' the process emits must be one of these, in order.
let expected = null;
function expectWarning(nameOrMap, message, code) {
  if (expected === null) {
    expected = new Map();
    process.on('warning', (warning) => {
      const queue = expected.get(warning.name);
      assert.ok(queue, `unexpected warning ${warning.name}: ${warning.message}`);
      assert.ok(queue.length > 0, `one ${warning.name} too many: ${warning.message}`);
      const [msg, c] = queue.shift();
      if (msg instanceof RegExp) assert.match(warning.message, msg);
      else assert.strictEqual(warning.message, msg);
      if (c !== undefined) assert.strictEqual(warning.code, c);
    });
    process.on('exit', () => {
      for (const [name, queue] of expected) {
        assert.strictEqual(queue.length, 0, `${name} warnings not emitted: ${inspect(queue)}`);
      }
    });
  }
  const add = (name, list) => {
    if (!Array.isArray(list)) list = [[list]];
    else if (!Array.isArray(list[0]) && list.length <= 2 && typeof list[0] !== 'object') list = [list];
    else if (!Array.isArray(list[0])) list = list.map((m) => [m]);
    expected.set(name, (expected.get(name) || []).concat(list));
  };
  if (typeof nameOrMap === 'string') add(nameOrMap, code === undefined ? message : [[message, code]]);
  else for (const name of Object.keys(nameOrMap)) add(name, nameOrMap[name]);
}

function invalidArgTypeHelper(input) {
  if (input == null) return ` Received ${input}`;
  if (typeof input === 'function') return ` Received function ${input.name}`;
  if (typeof input === 'object') {
    if (input.constructor && input.constructor.name) {
      return ` Received an instance of ${input.constructor.name}`;
    }
    return ` Received ${inspect(input, { depth: -1 })}`;
  }
  let inspected = inspect(input, { colors: false });
  if (inspected.length > 28) inspected = `${inspected.slice(0, 25)}...`;
  return ` Received type ${typeof input} (${inspected})`;
}

const arrayBufferViews = [
  Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array,
  Int32Array, Uint32Array, Float32Array, Float64Array, BigInt64Array,
  BigUint64Array, DataView,
];

function getArrayBufferViews(buf) {
  const { buffer, byteOffset, byteLength } = buf;
  const out = [];
  for (const Type of arrayBufferViews) {
    const { BYTES_PER_ELEMENT = 1 } = Type;
    if (byteLength % BYTES_PER_ELEMENT === 0) {
      out.push(new Type(buffer, byteOffset, byteLength / BYTES_PER_ELEMENT));
    }
  }
  return out;
}

function getBufferSources(buf) {
  return [...getArrayBufferViews(buf), new Uint8Array(buf).buffer];
}

module.exports = {
  mustCall,
  mustCallAtLeast,
  mustSucceed,
  mustNotCall,
  expectsError,
  expectWarning,
  invalidArgTypeHelper,
  getArrayBufferViews,
  getBufferSources,
  platformTimeout: (ms) => ms,
  allowGlobals: noop,
  isWindows: false,
  isLinux: true,
  isMacOS: false,
  isOSX: false,
  isAIX: false,
  isSunOS: false,
  isFreeBSD: false,
  isOpenBSD: false,
  isIBMi: false,
  isDebug: false,
  hasIntl: true,
  hasCrypto: false,
  enoughTestMem: true,
  skip(msg) {
    throw new Error(`this file skips itself (${msg}): it belongs on the slice's left-out list`);
  },
};
