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

  // Node's process is an EventEmitter; runs emit none of its events, so
  // listeners are kept and never called.
  const listeners = [];
  const on = function (event, listener) {
    listeners.push([event, listener]);
    return process;
  };

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
        throw new TypeError(`The "callback" argument must be of type function. Received ${typeof callback}`);
      }
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
    emitWarning(warning) {
      console.warn(`Warning: ${warning instanceof Error ? warning.message : warning}`);
    },
    on,
    once: on,
    addListener: on,
    prependListener: on,
    off: () => process,
    removeListener: () => process,
    removeAllListeners: () => process,
    emit: () => false,
    listeners: (event) => listeners.filter(([e]) => e === event).map(([, l]) => l),
    listenerCount: (event) => listeners.filter(([e]) => e === event).length,
    stdout: { write: line((text) => console.log(text)), isTTY: false, columns: 80 },
    stderr: { write: line((text) => console.error(text)), isTTY: false, columns: 80 },
    stdin: { isTTY: false },
    [Symbol.toStringTag]: "process",
  };
  // Node's `global`, the global object by its older name (browserify-era
  // packages read `global.Buffer`, `global.process`).
  return { process, global: globalThis };
})
