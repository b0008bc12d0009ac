// Packages in runs: `require`, the namespace objects `import` gives, and
// the few `node:` modules the engine provides. Every module loaded lives in
// this family's maps, which are part of the heap: a restored heap has the
// packages its runs imported, with their state, without the store.
(function (natives, load) {
  "use strict";
  const modules = new Map(); // "name@version/file" -> { exports, loaded }
  const namespaces = new Map(); // "name@version/file" -> namespace object
  // Specifier -> [id, file, esm, wrapped], so a heap imports again what it has
  // without the store (after `packages remove`, or on any instance).
  // `require`'s are under "require " + specifier: a dual package's
  // CommonJS build, as Node's require takes it.
  const resolved = new Map();

  function resolve(specifier, required) {
    const key = required ? "require " + specifier : specifier;
    let entry = resolved.get(key);
    if (!entry) {
      entry = natives.resolve(specifier, required === true);
      resolved.set(key, entry);
      // The other way of loading it too, while the store has the package:
      // a heap that imported it can require it after `packages remove`.
      const other = required ? specifier : "require " + specifier;
      if (!resolved.has(other)) {
        try {
          resolved.set(other, natives.resolve(specifier, !required));
        } catch {
          // Only the way asked for resolves; the other fails when used.
        }
      }
    }
    return entry;
  }

  // The node: modules the engine provides, from the run's own globals.
  const builtins = {
    console: () => globalThis.console,
    crypto: () => ({
      webcrypto: globalThis.crypto,
      subtle: globalThis.crypto.subtle,
      getRandomValues: (array) => globalThis.crypto.getRandomValues(array),
      randomUUID: () => globalThis.crypto.randomUUID(),
    }),
    perf_hooks: () => ({ performance: globalThis.performance }),
    timers: () => ({
      setTimeout: globalThis.setTimeout,
      clearTimeout: globalThis.clearTimeout,
      setInterval: globalThis.setInterval,
      clearInterval: globalThis.clearInterval,
      queueMicrotask: globalThis.queueMicrotask,
    }),
    url: () => ({ URL: globalThis.URL, URLSearchParams: globalThis.URLSearchParams }),
    util: () => ({
      ...load("node").util,
      TextEncoder: globalThis.TextEncoder,
      TextDecoder: globalThis.TextDecoder,
    }),
    // Node's everyday modules, from their npm ports (node_lib.js).
    buffer: () => load("node").buffer,
    events: () => load("node").events,
    stream: () => load("node").stream,
    "stream/promises": () => load("node").stream.promises,
    string_decoder: () => load("node").string_decoder,
    assert: () => load("node").assert,
    "assert/strict": () => load("node").assert.strict,
    process: () => globalThis.process,
    // /work, the run's file tree (files.js).
    fs: () => load("fs").fs,
    "fs/promises": () => load("fs").promises,
    path: () => load("fs").path,
  };
  const builtinCache = new Map();

  function installed(specifier) {
    try {
      resolve(specifier);
      return true;
    } catch {
      return false;
    }
  }
  const NODE = new Set(natives.nodeModules());

  function builtin(specifier) {
    let name = specifier.startsWith("node:") ? specifier.slice(5) : specifier;
    if (!specifier.startsWith("node:")) {
      if (name.endsWith("/")) {
        // `buffer/` names npm's port of a core module, as Node reads it: the
        // package when the run has it, else the engine's port of the same API.
        const core = name.slice(0, -1);
        if (!Object.prototype.hasOwnProperty.call(builtins, core) || installed(specifier)) {
          return undefined;
        }
        name = core;
      } else if (!NODE.has(name.split("/")[0])) {
        return undefined;
      }
    }
    if (!Object.prototype.hasOwnProperty.call(builtins, name)) {
      const error = new Error(
        `Cannot find module 'node:${name}': this engine is not Node.js and provides only ` +
        Object.keys(builtins).map((n) => `node:${n}`).join(", ") +
        "; runs have the Web platform (fetch, URL, TextEncoder, crypto, …) as globals");
      error.code = "ERR_UNKNOWN_BUILTIN_MODULE";
      throw error;
    }
    let exports = builtinCache.get(name);
    if (!exports) {
      exports = builtins[name]();
      builtinCache.set(name, exports);
    }
    return exports;
  }

  function loadFile(id, file) {
    const key = id + "/" + file;
    const cached = modules.get(key);
    if (cached) return cached.exports;
    const module = { exports: {}, id: key, loaded: false };
    modules.set(key, module);
    const wrapper = natives.compile(id, file);
    const localRequire = (specifier) => {
      // Bundles refer to their own chunks as "./file".
      if (typeof specifier === "string" && specifier.startsWith("./")) {
        return loadFile(id, specifier.slice(2));
      }
      return requireSpecifier(specifier);
    };
    try {
      wrapper.call(module.exports, module.exports, localRequire, module,
        "/node_modules/" + key, "/node_modules/" + id);
    } catch (error) {
      modules.delete(key);
      throw error;
    }
    module.loaded = true;
    return module.exports;
  }

  function check(specifier) {
    if (typeof specifier !== "string") {
      throw new TypeError(`The "id" argument must be of type string. Received ${typeof specifier}`);
    }
  }

  function requireSpecifier(specifier) {
    check(specifier);
    const node = builtin(specifier);
    if (node !== undefined) return node;
    const [id, file, esm, wrapped] = resolve(specifier, true);
    const exports = entryExports(id, file, wrapped);
    return esm ? requiredEsm(id + "/" + file, exports) : exports;
  }

  // Node 22's require() of an ES module: its exports, and, when it has a
  // default export, an object of its own with `__esModule: true` beside
  // them (names sorted, as a namespace's), which CommonJS that was once
  // an ES module reads to find `default`.
  const required = new Map();
  function requiredEsm(key, exports) {
    if (exports === null || typeof exports !== "object" || !("default" in exports)) return exports;
    let marked = required.get(key);
    if (marked) return marked;
    marked = Object.create(null);
    const names = [...new Set([...Object.keys(exports).filter((n) => n !== "__esModule"), "__esModule"])].sort();
    for (const name of names) {
      if (name === "__esModule") {
        Object.defineProperty(marked, name, { value: true, enumerable: true, writable: true });
      } else {
        Object.defineProperty(marked, name, { enumerable: true, get: () => exports[name] });
      }
    }
    Object.defineProperty(marked, Symbol.toStringTag, { value: "Module" });
    Object.preventExtensions(marked);
    required.set(key, marked);
    return marked;
  }

  // An entry the bundler shares with other entries holds a CommonJS
  // module's `module.exports` as its `default`.
  function entryExports(id, file, wrapped) {
    const exports = loadFile(id, file);
    return wrapped ? exports.default : exports;
  }

  // What `import` gives: an ES module's exports as they are; for CommonJS,
  // `default` is `module.exports` and its own properties are named exports
  // (Node's interop).
  function namespace(specifier) {
    check(specifier);
    const node = builtin(specifier);
    if (node !== undefined) return wrapCommonJs("node:" + specifier, node);
    const [id, file, esm, wrapped] = resolve(specifier);
    const key = id + "/" + file;
    const cached = namespaces.get(key);
    if (cached) return cached;
    const exports = entryExports(id, file, wrapped);
    const result = esm ? exports : wrapCommonJs(key, exports);
    namespaces.set(key, result);
    return result;
  }

  function wrapCommonJs(key, exports) {
    const cached = namespaces.get(key);
    if (cached) return cached;
    const ns = Object.create(null);
    if (exports !== null && (typeof exports === "object" || typeof exports === "function")) {
      for (const name of Object.keys(exports)) {
        if (name !== "default") ns[name] = exports[name];
      }
    }
    ns.default = exports;
    Object.defineProperty(ns, Symbol.toStringTag, { value: "Module" });
    Object.freeze(ns);
    namespaces.set(key, ns);
    return ns;
  }

  // Static `import` in a run: the namespace, checked for the names it
  // binds as module linking would check them.
  function importStatic(specifier, names) {
    const ns = namespace(specifier);
    if (names) {
      for (const name of names) {
        if (!(name in ns)) {
          throw new SyntaxError(
            `The requested module '${specifier}' does not provide an export named '${name}'`);
        }
      }
    }
    return ns;
  }

  function require(specifier) {
    return requireSpecifier(specifier);
  }
  require.resolve = (specifier) => {
    check(specifier);
    if (builtin(specifier) !== undefined) return specifier;
    const [id, file] = resolve(specifier, true);
    return "/node_modules/" + id + "/" + file;
  };
  Object.defineProperty(require, "cache", { get: () => Object.fromEntries(modules) });

  return {
    require,
    $__mcpv8_import: importStatic,
    import: (specifier) => new Promise((resolve) => resolve(namespace(String(specifier)))),
  };
})
