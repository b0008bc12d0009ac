// `/work`: `node:fs` and `node:fs/promises` over a tree kept in this
// family's closure, so in the heap: a restore or a fork of a heap has
// exactly its files. The tree holds each file's key (SHA-256) and size; the
// bytes are the host's (`natives.put`/`natives.get`). Nothing here reaches
// the host's file system: every path is resolved under /work first.
(function (natives, load) {
  "use strict";
  const ROOT = "/work";
  // path -> { dir: true, mtimeMs, birthtimeMs } | { dir: false, key, size, mtimeMs, birthtimeMs }
  const tree = new Map();
  const now = () => Date.now();
  tree.set(ROOT, { dir: true, mtimeMs: now(), birthtimeMs: now() });

  const ERRNO = { ENOENT: -2, EACCES: -13, EEXIST: -17, ENOTDIR: -20, EISDIR: -21,
    EINVAL: -22, EFBIG: -27, ENOSPC: -28, ENOTEMPTY: -39, EBUSY: -16 };
  const DESCRIPTION = { ENOENT: "no such file or directory", EACCES: "permission denied",
    EEXIST: "file already exists", ENOTDIR: "not a directory", EISDIR: "illegal operation on a directory",
    EINVAL: "invalid argument", EFBIG: "file too large", ENOSPC: "no space left on device",
    ENOTEMPTY: "directory not empty", EBUSY: "resource busy or locked" };

  function fsError(code, syscall, path, hint, dest) {
    let message = `${code}: ${DESCRIPTION[code]}, ${syscall} '${path}'`;
    if (dest !== undefined) message += ` -> '${dest}'`;
    if (hint) message += ` (${hint})`;
    const error = new Error(message);
    error.errno = ERRNO[code];
    error.code = code;
    error.syscall = syscall;
    error.path = path;
    if (dest !== undefined) error.dest = dest;
    return error;
  }

  function argError(name, value) {
    const shown = value === null ? "null" : typeof value === "object"
      ? `an instance of ${value?.constructor?.name ?? "Object"}` : `type ${typeof value} (${String(value)})`;
    const error = new TypeError(
      `The "${name}" argument must be of type string or an instance of Buffer or URL. Received ${shown}`);
    error.code = "ERR_INVALID_ARG_TYPE";
    return error;
  }

  // The absolute path under /work that `path` names, or the error Node
  // would give with what runs may use instead.
  function resolve(path, syscall, name = "path") {
    if (path instanceof URL) {
      if (path.protocol !== "file:") {
        const error = new TypeError("The URL must be of scheme file");
        error.code = "ERR_INVALID_URL_SCHEME";
        throw error;
      }
      path = decodeURIComponent(path.pathname);
    } else if (path instanceof Uint8Array) {
      path = new TextDecoder().decode(path);
    }
    if (typeof path !== "string") throw argError(name, path);
    if (path.includes("\u0000")) {
      const error = new TypeError(
        `The argument '${name}' must be a string, Uint8Array, or URL without null bytes. Received ${JSON.stringify(path)}`);
      error.code = "ERR_INVALID_ARG_VALUE";
      throw error;
    }
    const parts = [];
    const absolute = path.startsWith("/") ? path : ROOT + "/" + path;
    for (const part of absolute.split("/")) {
      if (part === "" || part === ".") continue;
      if (part === "..") parts.pop();
      else parts.push(part);
    }
    const resolved = "/" + parts.join("/");
    if (resolved !== ROOT && !resolved.startsWith(ROOT + "/")) {
      throw fsError("EACCES", syscall, path,
        "runs have no file system but /work: use a path under /work, or a relative one");
    }
    return resolved;
  }

  const parentOf = (path) => path.slice(0, path.lastIndexOf("/")) || "/";

  function entry(path, syscall, shown) {
    const found = tree.get(path);
    if (!found) throw fsError("ENOENT", syscall, shown ?? path);
    return found;
  }

  // `path` is resolved; the error names `shown` (and `dest`) as Node does,
  // what the caller passed.
  function parentDir(path, syscall, shown = path, dest = undefined) {
    const dir = parentOf(path);
    const parent = tree.get(dir);
    if (!parent) {
      throw fsError("ENOENT", syscall, shown,
        `directory '${dir}' does not exist: create it first with fs.mkdirSync('${dir}', { recursive: true })`, dest);
    }
    if (!parent.dir) throw fsError("ENOTDIR", syscall, shown, `'${dir}' is a file, not a directory`, dest);
  }

  // A stream opens its file later, from node:stream's internals, so its
  // error's stack has none of the run's lines: add the frames of the call
  // that made the stream, as the place to fix.
  function calledAt(error, site) {
    if (!(error instanceof Error) || typeof site.stack !== "string") return error;
    const frames = site.stack.split("\n").slice(2).join("\n");
    if (frames) error.stack = `${error.stack}\nThe stream was created at:\n${frames}`;
    return error;
  }

  function children(dir) {
    const prefix = dir + "/";
    const names = [];
    for (const path of tree.keys()) {
      if (path.startsWith(prefix) && !path.slice(prefix.length).includes("/")) {
        names.push(path.slice(prefix.length));
      }
    }
    return names.sort();
  }

  function totals() {
    let bytes = 0;
    for (const e of tree.values()) if (!e.dir) bytes += e.size;
    return { bytes, count: tree.size - 1 };
  }

  // Bytes of `data` as `writeFile` takes it.
  function toBytes(data, encoding) {
    if (typeof data === "string") return encode(data, encoding);
    if (data instanceof ArrayBuffer) return new Uint8Array(data);
    if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    const error = new TypeError(
      `The "data" argument must be of type string or an instance of Buffer, TypedArray, or DataView. Received ${data === null ? "null" : typeof data}`);
    error.code = "ERR_INVALID_ARG_TYPE";
    throw error;
  }

  function encodingOf(options) {
    if (typeof options === "string") return options;
    if (options && typeof options === "object" && options.encoding) return options.encoding;
    return null;
  }

  function normalEncoding(encoding) {
    const e = String(encoding).toLowerCase();
    if (e === "utf8" || e === "utf-8") return "utf8";
    if (e === "binary") return "latin1";
    if (["base64", "base64url", "hex", "latin1", "ascii"].includes(e)) return e;
    const error = new TypeError(`Unknown encoding: ${encoding}`);
    error.code = "ERR_UNKNOWN_ENCODING";
    throw error;
  }

  function encode(text, encoding) {
    const e = normalEncoding(encoding ?? "utf8");
    if (e === "utf8") return new TextEncoder().encode(text);
    if (e === "hex") {
      const out = new Uint8Array(text.length >> 1);
      for (let i = 0; i < out.length; i++) out[i] = parseInt(text.substr(2 * i, 2), 16);
      return out;
    }
    if (e === "base64" || e === "base64url") {
      const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/").replace(/\s/g, ""));
      return Uint8Array.from(binary, (c) => c.charCodeAt(0));
    }
    return Uint8Array.from(text, (c) => c.charCodeAt(0) & 0xff);
  }

  function decode(bytes, encoding) {
    const e = normalEncoding(encoding ?? "utf8");
    if (e === "utf8") return new TextDecoder().decode(bytes);
    if (e === "hex") return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
    let binary = "";
    for (let i = 0; i < bytes.length; i += 0x8000) {
      binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    }
    if (e === "base64") return btoa(binary);
    if (e === "base64url") return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    if (e === "ascii") return binary.replace(/[\u0080-\u00ff]/g, (c) => String.fromCharCode(c.charCodeAt(0) & 0x7f));
    return binary;
  }

  function store(path, bytes, syscall, shown) {
    const [maxFile, maxTree] = natives.limits();
    const old = tree.get(path);
    if (old && old.dir) throw fsError("EISDIR", syscall, shown);
    if (bytes.length > maxFile) {
      throw fsError("EFBIG", syscall, shown,
        `${bytes.length} bytes; a file holds at most ${maxFile / 1048576} MiB (MCP_V8_MAX_FILE_MB)`);
    }
    const used = totals().bytes;
    if (used - (old ? old.size : 0) + bytes.length > maxTree) {
      throw fsError("ENOSPC", syscall, shown,
        `/work holds at most ${maxTree / 1048576} MiB (MCP_V8_MAX_WORK_MB); it has ${used} bytes`);
    }
    if (!old) roomForOne(syscall, shown);
    const key = natives.put(bytes);
    const time = now();
    tree.set(path, { dir: false, key, size: bytes.length, mtimeMs: time,
      birthtimeMs: old ? old.birthtimeMs : time });
    touch(parentOf(path));
  }

  // ENOSPC unless the tree may hold one more file or directory.
  function roomForOne(syscall, shown) {
    const maxFiles = natives.limits()[2];
    if (totals().count + 1 > maxFiles) {
      throw fsError("ENOSPC", syscall, shown,
        `/work holds at most ${maxFiles} files and directories (MCP_V8_MAX_FILES)`);
    }
  }

  function touch(dir) {
    const e = tree.get(dir);
    if (e) e.mtimeMs = now();
  }

  // The operations, synchronous; the promise and callback forms wrap them.
  function readFile(path, options) {
    const p = resolve(path, "open");
    const e = entry(p, "open", path);
    if (e.dir) throw fsError("EISDIR", "read", path);
    const bytes = e.size === 0 ? new Uint8Array(0) : natives.get(e.key);
    const encoding = encodingOf(options);
    if (encoding) return decode(bytes, encoding);
    // A Node Buffer, as Node's readFile gives (`Buffer.isBuffer`, `equals`,
    // `readUInt16LE`, `toString(encoding)`).
    return load("node").Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  function writeFile(path, data, options) {
    const p = resolve(path, "open");
    parentDir(p, "open", path);
    const flag = options && typeof options === "object" ? options.flag : undefined;
    if (flag === "wx" && tree.has(p)) throw fsError("EEXIST", "open", path);
    if (flag === "a") return appendFile(path, data, options);
    store(p, toBytes(data, encodingOf(options)), "open", path);
  }

  function appendFile(path, data, options) {
    const p = resolve(path, "open");
    parentDir(p, "open", path);
    const added = toBytes(data, encodingOf(options));
    const old = tree.get(p);
    if (old && old.dir) throw fsError("EISDIR", "open", path);
    if (!old) return store(p, added, "open", path);
    const before = old.size === 0 ? new Uint8Array(0) : natives.get(old.key);
    const joined = new Uint8Array(before.length + added.length);
    joined.set(before, 0);
    joined.set(added, before.length);
    store(p, joined, "open", path);
  }

  // What `Dirent` and `Stats` say of a path's kind: only files and
  // directories exist here.
  class Kind {
    constructor(dir) {
      Object.defineProperty(this, "_dir", { value: dir });
    }
    isFile() { return !this._dir; }
    isDirectory() { return this._dir; }
    isSymbolicLink() { return false; }
    isBlockDevice() { return false; }
    isCharacterDevice() { return false; }
    isFIFO() { return false; }
    isSocket() { return false; }
  }

  class Dirent extends Kind {
    constructor(name, dir, parent) {
      super(dir);
      this.name = name;
      this.parentPath = parent;
      this.path = parent;
    }
  }

  function readdir(path, options) {
    const p = resolve(path, "scandir");
    const e = entry(p, "scandir", path);
    if (!e.dir) throw fsError("ENOTDIR", "scandir", path);
    const recursive = options && typeof options === "object" && options.recursive;
    let names = children(p);
    if (recursive) {
      names = [...tree.keys()].filter((k) => k.startsWith(p + "/")).map((k) => k.slice(p.length + 1)).sort();
    }
    if (options && typeof options === "object" && options.withFileTypes) {
      return names.map((name) => {
        const full = p + "/" + name;
        return new Dirent(full.slice(full.lastIndexOf("/") + 1), tree.get(full).dir, parentOf(full));
      });
    }
    return names;
  }

  function mkdir(path, options) {
    const p = resolve(path, "mkdir");
    const recursive = options && typeof options === "object" && options.recursive;
    if (!recursive) {
      if (tree.has(p)) throw fsError("EEXIST", "mkdir", path);
      parentDir(p, "mkdir", path);
      roomForOne("mkdir", path);
      tree.set(p, { dir: true, mtimeMs: now(), birthtimeMs: now() });
      touch(parentOf(p));
      return undefined;
    }
    let first;
    const parts = p.slice(1).split("/");
    for (let i = 2; i <= parts.length; i++) {
      const at = "/" + parts.slice(0, i).join("/");
      const e = tree.get(at);
      if (e && !e.dir) throw fsError("EEXIST", "mkdir", path);
      if (!e) {
        roomForOne("mkdir", path);
        tree.set(at, { dir: true, mtimeMs: now(), birthtimeMs: now() });
        touch(parentOf(at));
        first ??= at;
      }
    }
    return first;
  }

  function subtree(p) {
    return [...tree.keys()].filter((k) => k === p || k.startsWith(p + "/"));
  }

  function rm(path, options) {
    const opts = options && typeof options === "object" ? options : {};
    const p = resolve(path, "rm");
    const e = tree.get(p);
    if (!e) {
      if (opts.force) return;
      throw fsError("ENOENT", "lstat", path);
    }
    if (e.dir && !opts.recursive) {
      const error = new Error(`Path is a directory: rm returned EISDIR (is a directory) ${path}`);
      error.code = "ERR_FS_EISDIR";
      throw error;
    }
    if (p === ROOT) {
      for (const k of subtree(p)) if (k !== ROOT) tree.delete(k);
    } else {
      for (const k of subtree(p)) tree.delete(k);
    }
    touch(parentOf(p));
  }

  function rmdir(path) {
    const p = resolve(path, "rmdir");
    const e = entry(p, "rmdir", path);
    if (!e.dir) throw fsError("ENOTDIR", "rmdir", path);
    if (p === ROOT) throw fsError("EBUSY", "rmdir", path);
    if (children(p).length) throw fsError("ENOTEMPTY", "rmdir", path);
    tree.delete(p);
    touch(parentOf(p));
  }

  function unlink(path) {
    const p = resolve(path, "unlink");
    const e = entry(p, "unlink", path);
    if (e.dir) throw fsError("EISDIR", "unlink", path);
    tree.delete(p);
    touch(parentOf(p));
  }

  function rename(from, to) {
    const a = resolve(from, "rename", "oldPath");
    const b = resolve(to, "rename", "newPath");
    const e = tree.get(a);
    if (!e) throw fsError("ENOENT", "rename", from, undefined, to);
    if (a === ROOT || b === ROOT) throw fsError("EBUSY", "rename", from, undefined, to);
    parentDir(b, "rename", from, to);
    if (a === b) return;
    if (e.dir && b.startsWith(a + "/")) throw fsError("EINVAL", "rename", from, undefined, to);
    const target = tree.get(b);
    if (target && target.dir && !e.dir) throw fsError("EISDIR", "rename", from, undefined, to);
    if (target && !target.dir && e.dir) throw fsError("ENOTDIR", "rename", from, undefined, to);
    if (target && target.dir && children(b).length) throw fsError("ENOTEMPTY", "rename", from, undefined, to);
    const moved = subtree(a).map((k) => [k, tree.get(k)]);
    for (const [k] of moved) tree.delete(k);
    tree.delete(b);
    for (const [k, v] of moved) tree.set(b + k.slice(a.length), v);
    touch(parentOf(a));
    touch(parentOf(b));
  }

  function copyFile(from, to, mode) {
    const a = resolve(from, "copyfile", "src");
    const b = resolve(to, "copyfile", "dest");
    const e = tree.get(a);
    if (!e) throw fsError("ENOENT", "copyfile", from, undefined, to);
    if (e.dir) throw fsError("EISDIR", "copyfile", from, undefined, to);
    parentDir(b, "copyfile", from, to);
    const target = tree.get(b);
    if (target && (mode & 1)) throw fsError("EEXIST", "copyfile", from, undefined, to);
    if (target && target.dir) throw fsError("EISDIR", "copyfile", from, undefined, to);
    if (!target) roomForOne("copyfile", to);
    if (totals().bytes - (target ? target.size : 0) + e.size > natives.limits()[1]) {
      throw fsError("ENOSPC", "copyfile", to, "/work is full (MCP_V8_MAX_WORK_MB)");
    }
    const time = now();
    tree.set(b, { dir: false, key: e.key, size: e.size, mtimeMs: time, birthtimeMs: time });
    touch(parentOf(b));
  }

  class Stats extends Kind {
    constructor(e) {
      super(e.dir);
      this.dev = 1;
      this.mode = e.dir ? 0o40755 : 0o100644;
      this.nlink = 1;
      this.uid = 0;
      this.gid = 0;
      this.rdev = 0;
      this.blksize = 4096;
      this.ino = 0;
      this.size = e.dir ? 4096 : e.size;
      this.blocks = Math.ceil(this.size / 512);
      this.atimeMs = e.mtimeMs;
      this.mtimeMs = e.mtimeMs;
      this.ctimeMs = e.mtimeMs;
      this.birthtimeMs = e.birthtimeMs;
      this.atime = new Date(e.mtimeMs);
      this.mtime = new Date(e.mtimeMs);
      this.ctime = new Date(e.mtimeMs);
      this.birthtime = new Date(e.birthtimeMs);
    }
  }

  function stat(path, options) {
    const p = resolve(path, "stat");
    const e = tree.get(p);
    if (!e) {
      if (options && options.throwIfNoEntry === false) return undefined;
      throw fsError("ENOENT", "stat", path);
    }
    return new Stats(e);
  }

  function access(path) {
    entry(resolve(path, "access"), "access", path);
  }

  function exists(path) {
    try {
      return tree.has(resolve(path, "access"));
    } catch {
      return false;
    }
  }

  const operations = { readFile, writeFile, appendFile, readdir, mkdir, rm, rmdir, unlink, rename,
    copyFile, stat, lstat: stat, access };

  const promises = {};
  const fs = { constants: Object.freeze({ F_OK: 0, R_OK: 4, W_OK: 2, X_OK: 1, COPYFILE_EXCL: 1 }) };
  for (const [name, operation] of Object.entries(operations)) {
    promises[name] = async (...args) => operation(...args);
    fs[name + "Sync"] = (...args) => operation(...args);
    // Node's callback form: the last argument is the callback.
    fs[name] = (...args) => {
      const callback = args.pop();
      if (typeof callback !== "function") {
        const error = new TypeError(`The "cb" argument must be of type function. Received ${typeof callback}`);
        error.code = "ERR_INVALID_ARG_TYPE";
        throw error;
      }
      let result, failure = null;
      try {
        result = operation(...args);
      } catch (error) {
        failure = error;
      }
      queueMicrotask(() => (failure ? callback(failure) : callback(null, result)));
    };
  }
  // Streams over /work, node:stream's (the "node" family, loaded on first
  // use). A read stream gives the file in chunks; a write stream keeps what
  // is written and stores it when it ends, so a file written in many chunks
  // is hashed and stored once.
  fs.createReadStream = (path, options) => {
    const site = new Error();
    const { Readable } = load("node").stream;
    const { Buffer } = load("node").buffer;
    const opts = typeof options === "object" && options !== null ? options : {};
    const chunk = opts.highWaterMark ?? 64 * 1024;
    let bytes, at = opts.start ?? 0;
    const stream = new Readable({
      highWaterMark: chunk,
      encoding: encodingOf(options) ?? undefined,
      read() {
        try {
          bytes ??= readFile(path);
        } catch (error) {
          this.destroy(calledAt(error, site));
          return;
        }
        const stop = Math.min(opts.end === undefined ? bytes.length : opts.end + 1, bytes.length);
        if (at >= stop) {
          this.push(null);
          return;
        }
        const next = Math.min(at + chunk, stop);
        this.push(Buffer.from(bytes.subarray(at, next)));
        at = next;
      },
    });
    stream.path = path;
    return stream;
  };
  fs.createWriteStream = (path, options) => {
    const site = new Error();
    const { Writable } = load("node").stream;
    const opts = typeof options === "string" ? { encoding: options } : options ?? {};
    const append = typeof opts.flags === "string" && opts.flags.startsWith("a");
    const pending = [];
    let bytesWritten = 0;
    const stream = new Writable({
      defaultEncoding: opts.encoding ?? "utf8",
      construct(callback) {
        // Node opens (and truncates) the file first.
        try {
          if (append) appendFile(path, "");
          else writeFile(path, "");
          callback();
        } catch (error) {
          callback(calledAt(error, site));
        }
      },
      write(data, _encoding, callback) {
        pending.push(data);
        bytesWritten += data.length;
        callback();
      },
      final(callback) {
        try {
          const total = pending.reduce((n, c) => n + c.length, 0);
          const joined = new Uint8Array(total);
          let at = 0;
          for (const c of pending) {
            joined.set(c, at);
            at += c.length;
          }
          pending.length = 0;
          appendFile(path, joined);
          callback();
        } catch (error) {
          callback(calledAt(error, site));
        }
      },
    });
    stream.path = path;
    Object.defineProperty(stream, "bytesWritten", { get: () => bytesWritten });
    return stream;
  };
  fs.existsSync = exists;
  fs.exists = (path, callback) => queueMicrotask(() => callback(exists(path)));
  fs.promises = promises;
  promises.constants = fs.constants;
  Object.freeze(promises);
  Object.freeze(fs);

  // `node:path`, POSIX, with /work as the working directory.
  function normalizeParts(path) {
    const absolute = path.startsWith("/");
    const parts = [];
    for (const part of path.split("/")) {
      if (part === "" || part === ".") continue;
      if (part === "..") {
        if (parts.length && parts[parts.length - 1] !== "..") parts.pop();
        else if (!absolute) parts.push("..");
      } else parts.push(part);
    }
    return { absolute, parts };
  }
  function checkPath(p) {
    if (typeof p !== "string") {
      const error = new TypeError(`The "path" argument must be of type string. Received ${typeof p}`);
      error.code = "ERR_INVALID_ARG_TYPE";
      throw error;
    }
    return p;
  }
  const path = {
    sep: "/",
    delimiter: ":",
    normalize(p) {
      checkPath(p);
      if (p === "") return ".";
      const { absolute, parts } = normalizeParts(p);
      const joined = (absolute ? "/" : "") + parts.join("/");
      const trailing = p.endsWith("/") && parts.length ? "/" : "";
      return (joined || (absolute ? "/" : ".")) + trailing;
    },
    join(...parts) {
      const joined = parts.map(checkPath).filter((p) => p !== "").join("/");
      return joined === "" ? "." : path.normalize(joined);
    },
    resolve(...parts) {
      let resolved = "";
      for (let i = parts.length - 1; i >= 0 && !resolved.startsWith("/"); i--) {
        const p = checkPath(parts[i]);
        if (p) resolved = resolved ? p + "/" + resolved : p;
      }
      if (!resolved.startsWith("/")) resolved = ROOT + (resolved ? "/" + resolved : "");
      const { parts: normal } = normalizeParts(resolved);
      return "/" + normal.join("/");
    },
    isAbsolute: (p) => checkPath(p).startsWith("/"),
    dirname(p) {
      checkPath(p);
      const trimmed = p.length > 1 ? p.replace(/\/+$/, "") : p;
      const i = trimmed.lastIndexOf("/");
      if (i === -1) return ".";
      if (i === 0) return "/";
      return trimmed.slice(0, i);
    },
    basename(p, ext) {
      checkPath(p);
      const trimmed = p.length > 1 ? p.replace(/\/+$/, "") : p;
      let base = trimmed.slice(trimmed.lastIndexOf("/") + 1);
      if (ext && base.endsWith(ext) && base !== ext) base = base.slice(0, -ext.length);
      return base;
    },
    extname(p) {
      const base = path.basename(p);
      const i = base.lastIndexOf(".");
      return i <= 0 ? "" : base.slice(i);
    },
    relative(from, to) {
      const a = path.resolve(from).split("/").filter(Boolean);
      const b = path.resolve(to).split("/").filter(Boolean);
      let i = 0;
      while (i < a.length && i < b.length && a[i] === b[i]) i++;
      return [...Array(a.length - i).fill(".."), ...b.slice(i)].join("/");
    },
    parse(p) {
      const root = checkPath(p).startsWith("/") ? "/" : "";
      const base = path.basename(p);
      const ext = path.extname(p);
      const dir = p.includes("/") ? path.dirname(p) : "";
      return { root, dir, base, ext, name: ext ? base.slice(0, -ext.length) : base };
    },
    format(o) {
      const dir = o.dir || o.root || "";
      const base = o.base || (o.name || "") + (o.ext || "");
      return dir ? (dir === o.root ? dir + base : dir + "/" + base) : base;
    },
  };
  path.posix = path;
  Object.freeze(path);

  // The call's `files`, written before the code runs.
  function writeInputs(inputs) {
    for (const [path, bytes] of inputs) {
      const p = resolve(path, "open");
      mkdir(parentOf(p), { recursive: true });
      store(p, bytes, "open", path);
    }
  }

  return {
    fs,
    promises,
    path,
    writeInputs,
    // The tree for the host: [path, isDir, key, size, mtimeMs] rows.
    entries: () => [...tree].map(([p, e]) => [p, e.dir, e.dir || !(e.size > 0) ? null : e.key, e.dir ? 0 : e.size, e.mtimeMs]),
    // The keys of the files the tree has now (heaps of layer 3 call this).
    keys: () => [...new Set([...tree.values()].filter((e) => !e.dir && e.size > 0).map((e) => e.key))],
  };
})
