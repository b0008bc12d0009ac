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
      randomFillSync,
      createHash: (algorithm) => new Hash(algorithm),
      createHmac: (algorithm, key) => new Hash(algorithm, key === undefined ? null : key),
      getHashes: () => Object.keys(HASHES),
      timingSafeEqual(a, b) {
        if (a.byteLength !== b.byteLength) {
          throw new RangeError("Input buffers must have the same byte length");
        }
        const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
        const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
        let differ = 0;
        for (let i = 0; i < x.length; i++) differ |= x[i] ^ y[i];
        return differ === 0;
      },
      randomBytes(size, callback) {
        const bytes = randomFillSync(load("node").Buffer.alloc(size));
        if (typeof callback !== "function") return bytes;
        queueMicrotask(() => callback(null, bytes));
      },
    }),
    perf_hooks: () => ({ performance: globalThis.performance }),
    // Node's timer model (timers.js), whichever `setTimeout` the heap's
    // global holds.
    timers: () => {
      const { promises, deprecated, ...timers } = load("node_timers");
      return { ...timers, ...deprecated, promises };
    },
    "timers/promises": () => load("node_timers").promises,
    // Node 22's own lib/url.js (node_core.js): the WHATWG URL of the run
    // and the legacy parse/format/resolve API.
    url: () => load("node_core").url,
    util: () => {
      const node = load("node");
      const { inspect, format, formatWithOptions, stripVTControlCharacters } = load("node_inspect");
      return {
        ...node.util,
        inspect,
        format,
        formatWithOptions,
        stripVTControlCharacters,
        isDeepStrictEqual: node.comparisons.isDeepStrictEqual,
        inherits,
        TextEncoder: globalThis.TextEncoder,
        TextDecoder: globalThis.TextDecoder,
      };
    },
    // Node's everyday modules, from their npm ports (node_lib.js).
    buffer: () => {
      const buffer = load("node").buffer;
      return {
        ...buffer,
        Blob: globalThis.Blob,
        File: globalThis.File,
        atob: globalThis.atob,
        btoa: globalThis.btoa,
        constants: { MAX_LENGTH: buffer.kMaxLength, MAX_STRING_LENGTH: buffer.kStringMaxLength ?? 0x1fffffe8 },
      };
    },
    events: () => load("node").events,
    // As Node's lib/stream.js: the module is the legacy Stream, with the
    // classes and `promises` on it (the port's own stream.js).
    stream: () => load("node").stream.Stream,
    "stream/promises": () => load("node").stream.promises,
    // Node's aliases of the stream classes, which older packages require.
    _stream_duplex: () => load("node").stream.Duplex,
    _stream_passthrough: () => load("node").stream.PassThrough,
    _stream_readable: () => load("node").stream.Readable,
    _stream_transform: () => load("node").stream.Transform,
    _stream_writable: () => load("node").stream.Writable,
    // Node's lib/punycode.js is punycode.js (node_lib.js), deprecated there
    // for the WHATWG URL's own IDNA and kept for the packages that use it.
    punycode: () => load("node").punycode,
    string_decoder: () => load("node").string_decoder,
    readline: () => readline(),
    assert: () => load("node").assert,
    "assert/strict": () => load("node").assert.strict,
    process: () => globalThis.process,
    // /work, the run's file tree (fs.js).
    fs: () => load("fs").fs,
    "fs/promises": () => load("fs").promises,
    // Node 22's own lib/path.js (node_core.js), POSIX as on Linux; paths
    // are /work's.
    path: () => load("node_core").path,
    "path/posix": () => load("node_core").path.posix,
    "path/win32": () => load("node_core").path.win32,
    querystring: () => load("node_core").querystring,
  };
  const builtinCache = new Map();

  // node:readline's createInterface over a readable stream: lines as
  // 'line' events and by `for await`, the way large files are read a line
  // at a time. Lines end at "\n" or "\r\n". The input is paused while
  // more than LINES_AHEAD lines wait for an iterator, so a large file is
  // never read ahead into memory.
  function readline() {
    const EventEmitter = load("node").events;
    const { StringDecoder } = load("node").string_decoder;
    const LINES_AHEAD = 1024;
    class Interface extends EventEmitter {
      constructor(input) {
        super();
        this.input = input;
        this.closed = false;
        const decoder = new StringDecoder("utf8");
        let rest = "";
        const emit = (line) => this.emit("line", line.endsWith("\r") ? line.slice(0, -1) : line);
        this._onData = (chunk) => {
          rest += typeof chunk === "string" ? chunk : decoder.write(chunk);
          let at;
          while (!this.closed && (at = rest.indexOf("\n")) !== -1) {
            const line = rest.slice(0, at);
            rest = rest.slice(at + 1);
            emit(line);
          }
        };
        this._onEnd = () => {
          rest += decoder.end();
          if (rest.length && !this.closed) emit(rest);
          rest = "";
          this.close();
        };
        this._onError = (error) => this.emit("error", error);
        input.on("data", this._onData);
        input.on("end", this._onEnd);
        input.on("error", this._onError);
      }
      close() {
        if (this.closed) return;
        this.closed = true;
        this.input.off?.("data", this._onData);
        this.input.off?.("end", this._onEnd);
        this.input.pause?.();
        this.emit("close");
      }
      pause() {
        this.input.pause?.();
        return this;
      }
      resume() {
        this.input.resume?.();
        return this;
      }
      [Symbol.asyncIterator]() {
        const queue = [];
        let waiting = null, done = false, failure = null;
        const settle = () => {
          if (!waiting) return;
          const { resolve, reject } = waiting;
          if (queue.length) {
            waiting = null;
            resolve({ value: queue.shift(), done: false });
          } else if (failure) {
            waiting = null;
            reject(failure);
          } else if (done) {
            waiting = null;
            resolve({ value: undefined, done: true });
          }
        };
        this.on("line", (line) => {
          queue.push(line);
          if (queue.length > LINES_AHEAD) this.input.pause?.();
          settle();
        });
        this.on("close", () => {
          done = true;
          settle();
        });
        this.on("error", (error) => {
          failure = error;
          settle();
        });
        const self = this;
        return {
          next() {
            if (queue.length) {
              const value = queue.shift();
              if (queue.length < LINES_AHEAD / 2 && !self.closed) self.input.resume?.();
              return Promise.resolve({ value, done: false });
            }
            if (failure) return Promise.reject(failure);
            if (done) return Promise.resolve({ value: undefined, done: true });
            if (!self.closed) self.input.resume?.();
            return new Promise((resolve, reject) => {
              waiting = { resolve, reject };
            });
          },
          return() {
            self.close();
            return Promise.resolve({ value: undefined, done: true });
          },
          [Symbol.asyncIterator]() {
            return this;
          },
        };
      }
    }
    const createInterface = (input, ...rest) => {
      const options = input && typeof input === "object" && "input" in input ? input : { input };
      void rest;
      return new Interface(options.input);
    };
    return { createInterface, Interface };
  }

  // Node's crypto.randomFillSync over getRandomValues, which fills at most
  // 64 KiB a call.
  function randomFillSync(buffer, offset = 0, size) {
    const view = ArrayBuffer.isView(buffer)
      ? new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength)
      : new Uint8Array(buffer);
    const end = size === undefined ? view.length : offset + size;
    if (!(offset >= 0 && end <= view.length && offset <= end)) {
      throw new RangeError(`randomFillSync: offset ${offset} and size ${size} do not fit a buffer of ${view.length} bytes`);
    }
    for (let at = offset; at < end; at += 65536) {
      globalThis.crypto.getRandomValues(view.subarray(at, Math.min(end, at + 65536)));
    }
    return buffer;
  }

  // node:crypto's hashes, by Node's names; the host hashes at once.
  const HASHES = { md5: "MD5", sha1: "SHA-1", sha256: "SHA-256", sha384: "SHA-384", sha512: "SHA-512" };
  const HMACS = new Set(["sha1", "sha256", "sha384", "sha512"]);

  // Node's Hash and Hmac: update() any number of times, then digest().
  class Hash {
    #name;
    #key;
    #chunks = [];
    #running;
    #done = false;
    constructor(algorithm, key) {
      const wanted = String(algorithm).toLowerCase().replace(/^rsa-/, "");
      const name = HASHES[wanted];
      if (name === undefined || (key !== undefined && !HMACS.has(wanted))) {
        const offered = key === undefined ? Object.keys(HASHES) : [...HMACS];
        throw new Error(`Digest method not supported: ${algorithm}; runs offer ${offered.join(", ")}`);
      }
      this.#name = name;
      if (key !== undefined) {
        if (key === null) throw new TypeError('The "key" argument must be a string or a Buffer');
        this.#key = bytesOf(key);
      }
    }
    update(data, encoding) {
      if (this.#done) throw new Error("Digest already called");
      // A hash runs as data comes (so a stream of any size is hashed while
      // holding none of it); an HMAC keeps its data until digest().
      if (this.#key === undefined) {
        this.#running ??= load("digest").start(this.#name);
        load("digest").update(this.#running, bytesOf(data, encoding));
      } else {
        this.#chunks.push(bytesOf(data, encoding));
      }
      return this;
    }
    digest(encoding) {
      if (this.#done) throw new Error("Digest already called");
      this.#done = true;
      const { Buffer } = load("node");
      let out;
      if (this.#key === undefined) {
        const digests = load("digest");
        out = Buffer.from(digests.finish(this.#running ?? digests.start(this.#name)));
      } else {
        const { sync } = load("crypto");
        out = Buffer.from(sync.hmac(this.#name, this.#key, Buffer.concat(this.#chunks)));
      }
      return encoding === undefined || encoding === "buffer" ? out : out.toString(encoding);
    }
  }

  function bytesOf(data, encoding) {
    const { Buffer } = load("node");
    if (typeof data === "string") return Buffer.from(data, encoding);
    if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    if (data instanceof ArrayBuffer) return Buffer.from(data);
    throw new TypeError('The "data" argument must be of type string or an instance of Buffer, TypedArray, or DataView');
  }

  // Node's util.inherits: `super_` is not enumerable (the npm port's is, so
  // `Object.keys(Readable)` listed it).
  function inherits(ctor, superCtor) {
    if (typeof ctor !== "function") {
      throw new TypeError('The "ctor" argument must be of type function');
    }
    if (typeof superCtor !== "function") {
      throw new TypeError('The "superCtor" argument must be of type function');
    }
    if (superCtor.prototype === undefined) {
      throw new TypeError('The "superCtor.prototype" property must be of type object');
    }
    Object.defineProperty(ctor, "super_", { value: superCtor, writable: true, configurable: true });
    Object.setPrototypeOf(ctor.prototype, superCtor.prototype);
  }

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

  // For an error naming `value.member` (thrown.rs): which package gave
  // `value` and what it has, or undefined when no package did.
  function packageOf(value, member) {
    if (value === null || (typeof value !== "object" && typeof value !== "function")) return undefined;
    for (const [key, module] of modules) {
      if (module.exports !== value && namespaces.get(key) !== value) continue;
      const name = key.slice(0, key.indexOf("@", 1));
      const keys = Object.keys(value);
      const shown = keys.length === 0 ? "no names at all"
        : keys.slice(0, 20).join(", ") + (keys.length > 20 ? `, … (${keys.length} in all)` : "");
      let hint = `the package ${name} has no '${member}' here; what it gave has ${shown}`;
      const inner = value.default;
      if (inner !== null && (typeof inner === "object" || typeof inner === "function") && member in inner) {
        hint += `; its default export has it: use .default.${member}, or import { ${member} } from "${name}"`;
      }
      return hint;
    }
    return undefined;
  }

  return {
    require,
    packageOf,
    $__mcpv8_import: importStatic,
    import: (specifier) => new Promise((resolve) => resolve(namespace(String(specifier)))),
  };
})
