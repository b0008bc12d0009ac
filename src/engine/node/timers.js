// Node's timers: `setTimeout` and `setInterval` return a `Timeout`, and
// `setImmediate` an `Immediate`, with `ref`, `unref`, `hasRef`, `refresh`,
// `close` and `[Symbol.toPrimitive]` (so `clearTimeout(+t)` works); a
// callback runs with the timer as `this`; an unref'd timer does not keep the
// run going. Each pending timer is one native one-shot timer of the run
// (timers.rs), re-armed here for intervals and `refresh()`. A throw in a
// callback leaves the timer to the event loop, which gives it to
// `process`'s 'uncaughtException' listeners when there are some and
// otherwise ends the run with it (run/process_events.rs). `timers` and
// `timers/promises` are the modules of the same names. docs/engine.md, "Node".
(function (natives, load) {
  "use strict";
  const TIMEOUT_MAX = 2 ** 31 - 1;
  const kId = Symbol("timerId");
  const kRefed = Symbol("refed");
  const kHasPrimitive = Symbol("kHasPrimitive");
  const promisify = Symbol.for("nodejs.util.promisify.custom");
  const knownTimersById = Object.create(null);
  let nextAsyncId = 1;

  function invalidArgType(name, expected, value) {
    let received;
    if (value == null) received = ` Received ${value}`;
    else if (typeof value === "function") received = ` Received function ${value.name}`;
    else if (typeof value === "object") {
      received = value.constructor && value.constructor.name
        ? ` Received an instance of ${value.constructor.name}`
        : " Received an object";
    } else {
      let shown = typeof value === "string" ? `'${value}'` : String(value);
      if (typeof value === "bigint") shown += "n";
      if (shown.length > 28) shown = `${shown.slice(0, 25)}...`;
      received = ` Received type ${typeof value} (${shown})`;
    }
    const error = new TypeError(`The "${name}" argument must be of type ${expected}.${received}`);
    error.code = "ERR_INVALID_ARG_TYPE";
    return error;
  }

  function validateFunction(value, name) {
    if (typeof value !== "function") throw invalidArgType(name, "function", value);
  }

  function warn(message, type) {
    load("process").process.emitWarning(message, type);
  }

  function arm(timer, after) {
    timer[kId] = natives.schedule(fireTimeout, after, timer[kRefed], timer, timer._repeat || 0);
  }

  function disarm(timer) {
    if (timer[kId] !== undefined) natives.clear(timer[kId]);
    timer[kId] = undefined;
  }

  // A Timeout's or an Immediate's ref()/unref(): whether it holds the run,
  // told to its native timer while one is armed.
  function setRef(timer, refed) {
    if (timer[kRefed] !== refed) {
      timer[kRefed] = refed;
      if (timer[kId] !== undefined) natives.ref(timer[kId], refed);
    }
    return timer;
  }

  class Timeout {
    constructor(callback, after, args, isRepeat, isRefed) {
      after *= 1;
      if (!(after >= 1 && after <= TIMEOUT_MAX)) {
        if (after > TIMEOUT_MAX) {
          warn(`${after} does not fit into a 32-bit signed integer.\nTimeout duration was set to 1.`,
               "TimeoutOverflowWarning");
        }
        after = 1;
      }
      this._idleTimeout = after;
      this._onTimeout = callback;
      this._timerArgs = args;
      this._repeat = isRepeat ? after : null;
      this._destroyed = false;
      this[kRefed] = isRefed;
      this[kHasPrimitive] = false;
      Object.defineProperty(this, "_asyncId", { value: nextAsyncId++, writable: true, configurable: true });
      arm(this, after);
    }

    refresh() {
      insertGuarded(this, this[kRefed]);
      return this;
    }

    unref() {
      return setRef(this, false);
    }

    ref() {
      return setRef(this, true);
    }

    hasRef() {
      return this[kRefed];
    }

    close() {
      clearTimeout(this);
      return this;
    }

    [Symbol.toPrimitive]() {
      const id = this._asyncId;
      if (!this[kHasPrimitive]) {
        this[kHasPrimitive] = true;
        knownTimersById[id] = this;
      }
      return id;
    }

    [Symbol.dispose]() {
      clearTimeout(this);
    }
  }

  function unenroll(timer) {
    if (timer._destroyed) return;
    timer._destroyed = true;
    disarm(timer);
    if (timer[kHasPrimitive]) delete knownTimersById[timer._asyncId];
    // As Node: a later active() does not start it again.
    timer._idleTimeout = -1;
  }

  // Node's deprecated timer-list API over any object with `_onTimeout`:
  // enroll sets its duration, active/_unrefActive (re)start it, unenroll
  // stops it. Each warns once, as Node's util.deprecate does.
  const warned = new Set();
  function deprecated(fn, message, code) {
    return function (...args) {
      if (!warned.has(code)) {
        warned.add(code);
        load("process").process.emitWarning(message, "DeprecationWarning", code);
      }
      return fn.apply(this, args);
    };
  }

  function insertGuarded(item, refed) {
    const msecs = item._idleTimeout;
    if (msecs < 0 || msecs === undefined) return;
    disarm(item);
    item._destroyed = false;
    item[kRefed] = refed;
    arm(item, msecs);
  }

  function enroll(item, msecs) {
    if (typeof msecs !== "number") throw invalidArgType("msecs", "number", msecs);
    if (msecs < 0 || !Number.isFinite(msecs)) {
      const error = new RangeError(`The value of "msecs" is out of range. It must be a non-negative finite number. Received ${String(msecs)}`);
      error.code = "ERR_OUT_OF_RANGE";
      throw error;
    }
    if (msecs > TIMEOUT_MAX) {
      warn(`${msecs} does not fit into a 32-bit signed integer.\nTimer duration was truncated to ${TIMEOUT_MAX}.`,
           "TimeoutOverflowWarning");
      msecs = TIMEOUT_MAX;
    }
    if (item[kId] !== undefined) unenroll(item);
    item._idleTimeout = msecs;
  }

  // As Node's listOnTimeout: after the callback, a timer it neither
  // cleared nor refreshed goes on if it repeats (`_repeat` read then, so a
  // callback may make a timeout an interval) and is done otherwise.
  function fireTimeout(timer) {
    timer[kId] = undefined;
    if (timer._destroyed) return;
    if (typeof timer._onTimeout !== "function") {
      unenroll(timer);
      return;
    }
    try {
      const args = timer._timerArgs;
      if (args === undefined) timer._onTimeout();
      else timer._onTimeout(...args);
    } finally {
      if (!timer._destroyed && timer[kId] === undefined) {
        if (timer._repeat && timer._idleTimeout !== -1) {
          timer._idleTimeout = timer._repeat;
          arm(timer, timer._repeat);
        } else {
          // Done, but not cleared: refresh() starts it again, as in Node.
          timer._destroyed = true;
          if (timer[kHasPrimitive]) delete knownTimersById[timer._asyncId];
        }
      }
    }
  }

  function setTimeout(callback, after, ...args) {
    validateFunction(callback, "callback");
    return new Timeout(callback, after, args.length ? args : undefined, false, true);
  }

  function setInterval(callback, repeat, ...args) {
    validateFunction(callback, "callback");
    return new Timeout(callback, repeat, args.length ? args : undefined, true, true);
  }

  function clearTimeout(timer) {
    if (timer && timer._onTimeout) {
      timer._onTimeout = null;
      unenroll(timer);
      return;
    }
    if (typeof timer === "number" || typeof timer === "string") {
      const known = knownTimersById[timer];
      if (known !== undefined) {
        known._onTimeout = null;
        unenroll(known);
      }
    }
  }

  // Node clears an interval and a timeout alike, either way round.
  function clearInterval(timer) {
    clearTimeout(timer);
  }

  class Immediate {
    constructor(callback, args) {
      this._idleNext = null;
      this._idlePrev = null;
      this._onImmediate = callback;
      this._argv = args;
      this._destroyed = false;
      this[kRefed] = true;
      this[kId] = natives.schedule(fireImmediate, 0, true, this);
    }

    ref() {
      return setRef(this, true);
    }

    unref() {
      return setRef(this, false);
    }

    hasRef() {
      return !!this[kRefed];
    }

    [Symbol.dispose]() {
      clearImmediate(this);
    }
  }

  function fireImmediate(immediate) {
    immediate[kId] = undefined;
    if (immediate._destroyed) return;
    immediate._destroyed = true;
    const callback = immediate._onImmediate;
    immediate._onImmediate = null;
    if (typeof callback !== "function") return;
    Reflect.apply(callback, immediate, immediate._argv || []);
  }

  function setImmediate(callback, ...args) {
    validateFunction(callback, "callback");
    return new Immediate(callback, args.length ? args : undefined);
  }

  function clearImmediate(immediate) {
    if (!immediate || immediate._destroyed) return;
    immediate._destroyed = true;
    immediate._onImmediate = null;
    immediate[kRefed] = false;
    if (immediate[kId] !== undefined) natives.clear(immediate[kId]);
    immediate[kId] = undefined;
  }

  // timers/promises.
  function abortError(signal) {
    const error = new Error("The operation was aborted", { cause: signal && signal.reason });
    error.name = "AbortError";
    error.code = "ABORT_ERR";
    return error;
  }

  function validateOptions(options) {
    if (options === null || typeof options !== "object") throw invalidArgType("options", "object", options);
    const { signal, ref = true } = options;
    if (signal !== undefined && (signal === null || typeof signal !== "object" || !("aborted" in signal))) {
      throw invalidArgType("options.signal", "AbortSignal", signal);
    }
    if (typeof ref !== "boolean") throw invalidArgType("options.ref", "boolean", ref);
    return { signal, ref };
  }

  function settleLater(start, signal, ref) {
    return new Promise((resolve, reject) => {
      if (signal && signal.aborted) {
        reject(abortError(signal));
        return;
      }
      let onAbort;
      const timer = start((value) => {
        if (signal) signal.removeEventListener("abort", onAbort);
        resolve(value);
      });
      if (!ref) timer.unref();
      if (signal) {
        onAbort = () => {
          clearTimeout(timer);
          clearImmediate(timer);
          reject(abortError(signal));
        };
        signal.addEventListener("abort", onAbort, { once: true });
      }
    });
  }

  const promises = {
    setTimeout(after, value, options = {}) {
      try {
        const { signal, ref } = validateOptions(options);
        return settleLater((done) => setTimeout(() => done(value), after), signal, ref);
      } catch (error) {
        return Promise.reject(error);
      }
    },
    setImmediate(value, options = {}) {
      try {
        const { signal, ref } = validateOptions(options);
        return settleLater((done) => setImmediate(() => done(value)), signal, ref);
      } catch (error) {
        return Promise.reject(error);
      }
    },
    async *setInterval(after, value, options = {}) {
      const { signal, ref } = validateOptions(options);
      if (signal && signal.aborted) throw abortError(signal);
      let pending = 0;
      let wake = null;
      const interval = setInterval(() => {
        pending++;
        if (wake) {
          wake();
          wake = null;
        }
      }, after);
      if (!ref) interval.unref();
      let onAbort;
      const aborted = signal
        ? new Promise((_, reject) => {
            onAbort = () => reject(abortError(signal));
            signal.addEventListener("abort", onAbort, { once: true });
          })
        : null;
      if (aborted) aborted.catch(() => {});
      try {
        while (true) {
          if (pending === 0) {
            const tick = new Promise((resolve) => { wake = resolve; });
            await (aborted ? Promise.race([tick, aborted]) : tick);
          }
          for (; pending > 0; pending--) yield value;
        }
      } finally {
        clearInterval(interval);
        if (signal) signal.removeEventListener("abort", onAbort);
      }
    },
  };

  const kScheduler = Symbol("kScheduler");
  class Scheduler {
    constructor(token) {
      if (token !== kScheduler) {
        const error = new TypeError("Illegal constructor");
        error.code = "ERR_ILLEGAL_CONSTRUCTOR";
        throw error;
      }
    }

    yield() {
      return promises.setImmediate();
    }

    wait(delay, options) {
      return promises.setTimeout(delay, undefined, options);
    }
  }
  promises.scheduler = new Scheduler(kScheduler);

  Object.defineProperty(setTimeout, promisify, { value: promises.setTimeout, enumerable: false, configurable: true });
  Object.defineProperty(setImmediate, promisify, { value: promises.setImmediate, enumerable: false, configurable: true });

  return {
    setTimeout,
    setInterval,
    clearTimeout,
    clearInterval,
    setImmediate,
    clearImmediate,
    promises,
    // Deprecated, for the `timers` module only.
    deprecated: {
      _unrefActive: deprecated((item) => insertGuarded(item, false),
        "timers._unrefActive() is deprecated. Please use timeout.refresh() instead.", "DEP0127"),
      active: deprecated((item) => insertGuarded(item, true),
        "timers.active() is deprecated. Please use timeout.refresh() instead.", "DEP0126"),
      unenroll: deprecated(unenroll, "timers.unenroll() is deprecated. Please use clearTimeout instead.", "DEP0096"),
      enroll: deprecated(enroll, "timers.enroll() is deprecated. Please use setTimeout instead.", "DEP0095"),
    },
  };
})
