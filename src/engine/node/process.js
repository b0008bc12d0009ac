// `process`: what Node code reads of its process, without the host's
// authority. `env` is empty unless the operator set MCP_V8_PROCESS_ENV; it is
// read live from the run (never kept in the heap unless code copies a value),
// and what code sets in it is the heap's own. `cwd()` is /work, `exit()`
// ends the run with an error that says so, and nothing here reaches the
// host's own process, environment or file system. docs/engine.md, "Node".
(function (natives, load) {
  "use strict";
  const written = new Map();
  const removed = new Set();
  const own = (name) => typeof name === "string";
  const read = (name) => {
    if (written.has(name)) return written.get(name);
    if (removed.has(name)) return undefined;
    return natives.env(name);
  };
  const env = new Proxy(Object.create(null), {
    get: (_, name) => (own(name) ? read(name) : undefined),
    set(_, name, value) {
      if (own(name)) {
        written.set(name, String(value));
        removed.delete(name);
      }
      return true;
    },
    deleteProperty(_, name) {
      if (own(name)) {
        written.delete(name);
        removed.add(name);
      }
      return true;
    },
    has: (_, name) => own(name) && read(name) !== undefined,
    ownKeys() {
      const keys = new Set(natives.envKeys().filter((k) => !removed.has(k)));
      for (const k of written.keys()) keys.add(k);
      return [...keys];
    },
    getOwnPropertyDescriptor(_, name) {
      const value = own(name) ? read(name) : undefined;
      return value === undefined
        ? undefined
        : { value, writable: true, enumerable: true, configurable: true };
    },
  });

  function hrtime(previous) {
    const now = hrtime.bigint();
    let seconds = Number(now / 1000000000n);
    let nanos = Number(now % 1000000000n);
    if (Array.isArray(previous)) {
      seconds -= previous[0];
      nanos -= previous[1];
      if (nanos < 0) {
        seconds -= 1;
        nanos += 1e9;
      }
    }
    return [seconds, nanos];
  }
  hrtime.bigint = () => BigInt(Math.round(performance.now() * 1e6));

  class ProcessExit extends Error {}
  ProcessExit.prototype.name = "ProcessExit";

  // Node's process is an EventEmitter (its prototype becomes
  // EventEmitter.prototype when node:events loads). A run emits 'exit' and
  // 'beforeExit' when its event loop ends, 'warning' for each
  // emitWarning, 'uncaughtException' for a throw in a timer, an immediate
  // or a queued callback, and 'unhandledRejection' for a promise nothing
  // handled (run/process_events.rs calls `uncaught`, `rejected` and `ended`
  // below).
  const events = new Map();
  let maxListeners = 10;
  const listenerOf = (entry) => entry.listener || entry;
  function checkListener(listener) {
    if (typeof listener !== "function") {
      const error = new TypeError(`The "listener" argument must be of type function. Received ${listener === null ? "null" : typeof listener}`);
      error.code = "ERR_INVALID_ARG_TYPE";
      throw error;
    }
  }
  function add(event, listener, prepend, once) {
    checkListener(listener);
    if (events.has("newListener")) emit("newListener", event, listener);
    let entry = listener;
    if (once) {
      entry = function (...args) {
        remove(event, entry);
        return listener.apply(this, args);
      };
      entry.listener = listener;
    }
    const list = events.get(event) || [];
    if (prepend) list.unshift(entry);
    else list.push(entry);
    events.set(event, list);
    return process;
  }
  function remove(event, listener) {
    const list = events.get(event);
    if (!list) return process;
    const at = list.findLastIndex((entry) => entry === listener || entry.listener === listener);
    if (at >= 0) {
      list.splice(at, 1);
      if (list.length === 0) events.delete(event);
      if (events.has("removeListener")) emit("removeListener", event, listener);
    }
    return process;
  }
  function emit(event, ...args) {
    const list = events.get(event);
    if (!list) {
      if (event === "error") throw args[0] instanceof Error ? args[0] : new Error(`Unhandled error. (${String(args[0])})`);
      return false;
    }
    for (const entry of [...list]) entry.apply(process, args);
    return true;
  }
  const emitter = {
    on: (event, listener) => add(event, listener, false, false),
    addListener: (event, listener) => add(event, listener, false, false),
    prependListener: (event, listener) => add(event, listener, true, false),
    once: (event, listener) => add(event, listener, false, true),
    prependOnceListener: (event, listener) => add(event, listener, true, true),
    off: remove,
    removeListener: remove,
    removeAllListeners(event) {
      if (event === undefined) events.clear();
      else events.delete(event);
      return process;
    },
    emit,
    listeners: (event) => (events.get(event) || []).map(listenerOf),
    rawListeners: (event) => [...(events.get(event) || [])],
    listenerCount: (event, listener) => (events.get(event) || [])
      .filter((entry) => listener === undefined || listenerOf(entry) === listener).length,
    eventNames: () => [...events.keys()],
    setMaxListeners(n) {
      maxListeners = n;
      return process;
    },
    getMaxListeners: () => maxListeners,
  };

  // A warning is printed as Node prints it, then emitted as 'warning' on
  // the next tick.
  function emitWarning(warning, type, code, ctor) {
    let detail;
    if (type !== null && typeof type === "object" && !Array.isArray(type)) {
      ({ type, code, detail } = type);
    } else if (typeof type === "function") {
      type = undefined;
    }
    if (typeof code === "function") code = undefined;
    void ctor;
    type = type || "Warning";
    if (typeof warning === "string") {
      const made = new Error(warning);
      made.name = String(type);
      if (code !== undefined) made.code = code;
      if (detail !== undefined) made.detail = detail;
      warning = made;
    } else if (!(warning instanceof Error)) {
      const error = new TypeError(`The "warning" argument must be of type string or an instance of Error. Received ${typeof warning}`);
      error.code = "ERR_INVALID_ARG_TYPE";
      throw error;
    }
    if (warning.name === "DeprecationWarning" && process.noDeprecation) return;
    process.nextTick(() => {
      const prefix = warning.code ? `[${warning.code}] ` : "";
      console.warn(`(node) ${prefix}${warning.name}: ${warning.message}${warning.detail ? `\n${warning.detail}` : ""}`);
      emit("warning", warning);
    });
  }

  // For the event loop (run/process_events.rs): a callback's throw, which
  // 'uncaughtException' listeners take (true) or leave to end the run.
  function uncaught(error) {
    if (!events.has("uncaughtException")) return false;
    console.warn(`(node) an uncaught exception went to process.on('uncaughtException') and the run went on: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
    emit("uncaughtException", error, "uncaughtException");
    return true;
  }

  // A rejection nothing handled: to 'unhandledRejection' listeners when
  // there are some (true), else left to the run's warnings.
  function rejected(reason, promise) {
    if (!events.has("unhandledRejection")) return false;
    emit("unhandledRejection", reason, promise);
    return true;
  }

  // The run's event loop is empty: 'beforeExit' (whose listeners may give
  // it more work), or at the very end 'exit'. Listeners are the heap's:
  // they hear the end of each later run from it too.
  function ended(phase) {
    const code = process.exitCode === undefined ? 0 : Number(process.exitCode) || 0;
    if (phase !== "exit") return emit(phase, code);
    process._exiting = true;
    try {
      return emit(phase, code);
    } finally {
      process._exiting = false;
    }
  }

  const line = (write) => (chunk, encoding, callback) => {
    const text = typeof chunk === "string" ? chunk : new TextDecoder().decode(chunk);
    write(text.endsWith("\n") ? text.slice(0, -1) : text);
    if (typeof encoding === "function") encoding();
    else if (typeof callback === "function") callback();
    return true;
  };

  const process = {
    env,
    argv: ["/usr/local/bin/node", "/work/run_js.js"],
    argv0: "node",
    execArgv: [],
    execPath: "/usr/local/bin/node",
    title: "mcp-v8",
    pid: 1,
    ppid: 0,
    platform: "linux",
    arch: "x64",
    version: "",
    versions: { v8: natives.v8Version() },
    release: { name: "mcp-v8" },
    exitCode: undefined,
    cwd: () => "/work",
    chdir(directory) {
      const error = new Error(`process.chdir(${JSON.stringify(directory)}): the working directory of a run is always /work`);
      error.code = "ERR_UNSUPPORTED";
      throw error;
    },
    nextTick(callback, ...args) {
      if (typeof callback !== "function") {
        const error = new TypeError(`The "callback" argument must be of type function. Received ${callback === null ? "null" : typeof callback}`);
        error.code = "ERR_INVALID_ARG_TYPE";
        throw error;
      }
      // A throw goes to 'uncaughtException' listeners, or ends the run, as
      // any queued callback's does (run/process_events.rs).
      queueMicrotask(() => callback(...args));
    },
    hrtime,
    uptime: () => performance.now() / 1000,
    memoryUsage: Object.assign(() => natives.memoryUsage(), { rss: () => natives.memoryUsage().rss }),
    exit(code) {
      const status = code ?? process.exitCode ?? 0;
      throw new ProcessExit(
        `process.exit(${status}) ended the run here. A run is not a process: its result is the value of ` +
        "its last expression, and returning early is done with an async function or by throwing");
    },
    abort() {
      process.exit(134);
    },
    emitWarning,
    ...emitter,
    _exiting: false,
    noDeprecation: false,
    stdout: { write: line((text) => console.log(text)), isTTY: false, columns: 80 },
    stderr: { write: line((text) => console.error(text)), isTTY: false, columns: 80 },
    stdin: { isTTY: false },
    [Symbol.toStringTag]: "process",
  };
  // Node's `global`, the global object by its older name (browserify-era
  // packages read `global.Buffer`, `global.process`).
  return { process, global: globalThis, uncaught, rejected, ended };
})
