// `/work`: `node:fs` and `node:fs/promises` over a tree kept in this
// family's closure, so in the heap: a restore or a fork of a heap has
// exactly its files. The tree holds each file's size and where its bytes
// are: a stored file's key (a manifest of chunks, `m`; or, in heaps from
// before chunking, the bytes stored whole), or, for a file written in this
// run, its id on the run's local disk (`blob`, natives of the "disk"
// family), sealed into chunks when the run's heap is kept. Bytes never
// enter the heap or the run's memory but as the buffers code reads and
// writes. Nothing here reaches the host's file system: every path is
// resolved under /work first, and the disk knows files only by id.
(function (natives, load) {
  "use strict";
  const ROOT = "/work";
  const disk = load("disk");
  // path -> { dir: true, mtimeMs, birthtimeMs }
  //       | { dir: false, size, mtimeMs, birthtimeMs, key?, m?, sha?, blob? }
  const tree = new Map();
  const now = () => Date.now();
  tree.set(ROOT, { dir: true, mtimeMs: now(), birthtimeMs: now() });
  // fd -> { entry, path, readable, writable, append, position }
  const fds = new Map();
  let nextFd = 3;

  const ERRNO = { ENOENT: -2, EACCES: -13, EEXIST: -17, ENOTDIR: -20, EISDIR: -21,
    EINVAL: -22, EFBIG: -27, ENOSPC: -28, ENOTEMPTY: -39, EBUSY: -16, EBADF: -9, EIO: -5,
    EROFS: -30, ENOMEM: -12 };
  const DESCRIPTION = { ENOENT: "no such file or directory", EACCES: "permission denied",
    EEXIST: "file already exists", ENOTDIR: "not a directory", EISDIR: "illegal operation on a directory",
    EINVAL: "invalid argument", EFBIG: "file too large", ENOSPC: "no space left on device",
    ENOTEMPTY: "directory not empty", EBUSY: "resource busy or locked", EBADF: "bad file descriptor",
    EIO: "i/o error", EROFS: "read-only file system", ENOMEM: "not enough memory" };

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

  // A native disk call, its error made Node's: the code, the syscall and
  // the path the caller gave, and the disk's words (which name a setting).
  function io(syscall, shown, call) {
    try {
      return call();
    } catch (error) {
      if (error && typeof error.code === "string" && ERRNO[error.code] !== undefined) {
        const hint = String(error.message).replace(/^[A-Z]+: /, "");
        throw fsError(error.code, syscall, shown, hint);
      }
      throw error;
    }
  }

  // Caps checked before a file grows to `end` bytes: nothing is written
  // when a write would pass one.
  function roomFor(e, end, syscall, shown) {
    const [maxFile, maxTree] = natives.limits();
    if (end > maxFile) {
      throw fsError("EFBIG", syscall, shown,
        `${end} bytes; a file holds at most ${maxFile / 1048576} MiB (MCP_V8_MAX_FILE_MB)`);
    }
    const growth = end - (e ? e.size : 0);
    if (growth > 0) {
      const used = totals().bytes;
      if (used + growth > maxTree) {
        throw fsError("ENOSPC", syscall, shown,
          `/work holds at most ${maxTree / 1048576} MiB (MCP_V8_MAX_WORK_MB); it has ${used} bytes`);
      }
    }
  }

  // Whether an open descriptor holds `e`, so its bytes must outlive its path.
  function held(e) {
    for (const f of fds.values()) if (f.entry === e) return true;
    return false;
  }

  // Gives back the local bytes of `e` unless a descriptor still reads them.
  function release(e) {
    if (e && !e.dir && e.blob !== undefined && !held(e)) {
      disk.remove(e.blob);
      e.blob = undefined;
    }
  }

  // The file's local id, made now: a stored file is continued (its stored
  // chunks kept, read when needed), an empty one starts empty.
  function writable(e, syscall, shown) {
    if (e.blob === undefined) {
      e.blob = io(syscall, shown, () =>
        e.key && e.size > 0 ? disk.derive(e.key, !!e.m) : disk.create());
      delete e.key;
      delete e.m;
      delete e.sha;
    }
    return e.blob;
  }

  // Up to `length` bytes of `e` from `position`.
  function readAt(e, position, length, syscall, shown) {
    if (length <= 0 || position >= e.size) return new Uint8Array(0);
    if (e.blob !== undefined) return io(syscall, shown, () => disk.read(e.blob, position, length));
    if (e.key) return io(syscall, shown, () => disk.readStored(e.key, !!e.m, position, length));
    return new Uint8Array(0);
  }

  // Writes `bytes` into `e` at `position`, within the caps.
  function writeAt(e, position, bytes, syscall, shown) {
    const end = position + bytes.length;
    roomFor(e, end, syscall, shown);
    if (bytes.length === 0) return 0;
    const id = writable(e, syscall, shown);
    e.size = io(syscall, shown, () => disk.write(id, bytes, position));
    e.mtimeMs = now();
    return bytes.length;
  }

  // Replaces the bytes of `path` with `bytes`, all or nothing: they go to a
  // new local file first, so a write a cap refuses leaves the old bytes.
  function store(path, bytes, syscall, shown) {
    const old = tree.get(path);
    if (old && old.dir) throw fsError("EISDIR", syscall, shown);
    roomFor(old, bytes.length, syscall, shown);
    if (!old) roomForOne(syscall, shown);
    const id = io(syscall, shown, () => disk.create());
    try {
      if (bytes.length) io(syscall, shown, () => disk.write(id, bytes, 0));
    } catch (error) {
      disk.remove(id);
      throw error;
    }
    const time = now();
    if (old) {
      // In place, as Node's truncating open: descriptors see the new bytes.
      if (old.blob !== undefined) disk.remove(old.blob);
      delete old.key;
      delete old.m;
      delete old.sha;
      old.blob = id;
      old.size = bytes.length;
      old.mtimeMs = time;
    } else {
      tree.set(path, { dir: false, blob: id, size: bytes.length, mtimeMs: time, birthtimeMs: time });
    }
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
    let e, shown = path;
    if (typeof path === "number") {
      const f = descriptor(path, "read", "read");
      e = f.entry;
      shown = f.path;
    } else {
      const p = resolve(path, "open");
      e = entry(p, "open", path);
    }
    if (e.dir) throw fsError("EISDIR", "read", shown);
    const bytes = readAt(e, 0, e.size, "read", shown);
    const encoding = encodingOf(options);
    if (encoding) return decode(bytes, encoding);
    // A Node Buffer, as Node's readFile gives (`Buffer.isBuffer`, `equals`,
    // `readUInt16LE`, `toString(encoding)`).
    return load("node").Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  function writeFile(path, data, options) {
    if (typeof path === "number") {
      const f = descriptor(path, "write", "write");
      writeFd(f, toBytes(data, encodingOf(options)), null);
      return;
    }
    const p = resolve(path, "open");
    parentDir(p, "open", path);
    const flag = options && typeof options === "object" ? options.flag : undefined;
    if (flag === "wx" && tree.has(p)) throw fsError("EEXIST", "open", path);
    if (flag === "a") return appendFile(path, data, options);
    store(p, toBytes(data, encodingOf(options)), "open", path);
  }

  // Costs the bytes appended: the file's earlier bytes stay where they are.
  function appendFile(path, data, options) {
    if (typeof path === "number") {
      const f = descriptor(path, "write", "write");
      const bytes = toBytes(data, encodingOf(options));
      writeAt(f.entry, f.entry.size, bytes, "write", f.path);
      return;
    }
    const p = resolve(path, "open");
    parentDir(p, "open", path);
    const added = toBytes(data, encodingOf(options));
    const old = tree.get(p);
    if (old && old.dir) throw fsError("EISDIR", "open", path);
    if (!old) return store(p, added, "open", path);
    writeAt(old, old.size, added, "write", path);
    touch(parentOf(p));
  }

  function truncate(path, len) {
    if (typeof path === "number") return ftruncate(path, len);
    const p = resolve(path, "open");
    const e = entry(p, "open", path);
    if (e.dir) throw fsError("EISDIR", "open", path);
    resize(e, len, path);
  }

  function resize(e, len = 0, shown) {
    const n = Math.max(0, Math.trunc(Number(len) || 0));
    if (n === e.size) return;
    roomFor(e, n, "ftruncate", shown);
    const id = writable(e, "ftruncate", shown);
    io("ftruncate", shown, () => disk.truncate(id, n));
    e.size = n;
    e.mtimeMs = now();
  }

  // File descriptors: Node's flags, a position each, the file by entry (so
  // a descriptor follows its file through a rename, as an inode would).
  const FLAGS = {
    r: [true, false, false, false, false, false], rs: [true, false, false, false, false, false],
    sr: [true, false, false, false, false, false],
    "r+": [true, true, false, false, false, false], "rs+": [true, true, false, false, false, false],
    "sr+": [true, true, false, false, false, false],
    w: [false, true, true, true, false, false], wx: [false, true, true, true, true, false],
    xw: [false, true, true, true, true, false],
    "w+": [true, true, true, true, false, false], "wx+": [true, true, true, true, true, false],
    "xw+": [true, true, true, true, true, false],
    a: [false, true, true, false, false, true], as: [false, true, true, false, false, true],
    sa: [false, true, true, false, false, true], ax: [false, true, true, false, true, true],
    xa: [false, true, true, false, true, true],
    "a+": [true, true, true, false, false, true], "as+": [true, true, true, false, false, true],
    "sa+": [true, true, true, false, false, true], "ax+": [true, true, true, false, true, true],
    "xa+": [true, true, true, false, true, true],
  };
  const O = { O_RDONLY: 0, O_WRONLY: 1, O_RDWR: 2, O_CREAT: 64, O_EXCL: 128, O_TRUNC: 512,
    O_APPEND: 1024, O_SYNC: 1052672, O_DSYNC: 4096, O_NOCTTY: 256, O_NONBLOCK: 2048 };

  // [read, write, create, truncate, exclusive, append] of Node's `flags`.
  function parseFlags(flags) {
    if (flags === undefined || flags === null) return FLAGS.r;
    if (typeof flags === "number") {
      const access = flags & 3;
      return [access !== O.O_WRONLY, access !== O.O_RDONLY, !!(flags & O.O_CREAT),
        !!(flags & O.O_TRUNC), !!(flags & O.O_EXCL), !!(flags & O.O_APPEND)];
    }
    const found = FLAGS[flags];
    if (!found) {
      const error = new TypeError(`The value "${flags}" is invalid for option "flags"`);
      error.code = "ERR_INVALID_ARG_VALUE";
      throw error;
    }
    return found;
  }

  function open(path, flags, _mode) {
    const [readable, writable_, create, trunc, exclusive, append] = parseFlags(flags);
    const p = resolve(path, "open");
    let e = tree.get(p);
    if (e && exclusive) throw fsError("EEXIST", "open", path);
    if (e && e.dir) {
      if (writable_) throw fsError("EISDIR", "open", path);
    } else if (!e) {
      if (!create) throw fsError("ENOENT", "open", path);
      parentDir(p, "open", path);
      store(p, new Uint8Array(0), "open", path);
      e = tree.get(p);
    } else if (trunc) {
      resize(e, 0, path);
    }
    const fd = nextFd++;
    fds.set(fd, { entry: e, path: typeof path === "string" ? path : p, readable, writable: writable_,
      append, position: 0 });
    return fd;
  }

  function descriptor(fd, syscall, need) {
    const f = fds.get(fd);
    if (typeof fd !== "number" || !f) {
      const error = new Error(`EBADF: bad file descriptor, ${syscall}`);
      error.errno = ERRNO.EBADF;
      error.code = "EBADF";
      error.syscall = syscall;
      throw error;
    }
    if ((need === "read" && !f.readable) || (need === "write" && !f.writable)) {
      const error = new Error(`EBADF: bad file descriptor, ${syscall}`);
      error.errno = ERRNO.EBADF;
      error.code = "EBADF";
      error.syscall = syscall;
      throw error;
    }
    return f;
  }

  function close(fd) {
    const f = descriptor(fd, "close");
    fds.delete(fd);
    // A file removed while open goes with its last descriptor.
    if (![...tree.values()].includes(f.entry)) release(f.entry);
  }

  const isPosition = (p) => typeof p === "number" && p >= 0 || typeof p === "bigint";

  // readSync(fd, buffer, offset?, length?, position?) or
  // readSync(fd, buffer, { offset, length, position }).
  function read(fd, buffer, offset, length, position) {
    const f = descriptor(fd, "read", "read");
    if (offset !== null && typeof offset === "object") {
      ({ offset = 0, length = buffer.byteLength - offset, position = null } = offset);
    }
    if (!ArrayBuffer.isView(buffer)) {
      const error = new TypeError(
        `The "buffer" argument must be an instance of Buffer, TypedArray, or DataView. Received ${typeof buffer}`);
      error.code = "ERR_INVALID_ARG_TYPE";
      throw error;
    }
    offset = offset ?? 0;
    length = length ?? buffer.byteLength - offset;
    if (offset < 0 || length < 0 || offset + length > buffer.byteLength) {
      const error = new RangeError(`The value of "length" is out of range. It must be >= 0 && <= ${buffer.byteLength - offset}. Received ${length}`);
      error.code = "ERR_OUT_OF_RANGE";
      throw error;
    }
    if (f.entry.dir) throw fsError("EISDIR", "read", f.path);
    const at = isPosition(position) ? Number(position) : f.position;
    const bytes = readAt(f.entry, at, length, "read", f.path);
    new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength).set(bytes, offset);
    if (!isPosition(position)) f.position = at + bytes.length;
    return bytes.length;
  }

  function writeFd(f, bytes, position) {
    const at = f.append ? f.entry.size : isPosition(position) ? Number(position) : f.position;
    const written = writeAt(f.entry, at, bytes, "write", f.path);
    if (f.append || !isPosition(position)) f.position = at + written;
    return written;
  }

  // writeSync(fd, buffer, offset?, length?, position?),
  // writeSync(fd, buffer, { offset, length, position }) or
  // writeSync(fd, string, position?, encoding?).
  function write(fd, data, offset, length, position) {
    const f = descriptor(fd, "write", "write");
    if (typeof data === "string") {
      return writeFd(f, encode(data, typeof length === "string" ? length : "utf8"), offset);
    }
    if (offset !== null && typeof offset === "object") {
      ({ offset = 0, length = data.byteLength - offset, position = null } = offset);
    }
    const bytes = toBytes(data);
    offset = offset ?? 0;
    length = length ?? bytes.length - offset;
    return writeFd(f, bytes.subarray(offset, offset + length), position);
  }

  function ftruncate(fd, len = 0) {
    const f = descriptor(fd, "ftruncate", "write");
    resize(f.entry, len, f.path);
  }

  function fstat(fd) {
    return new Stats(descriptor(fd, "fstat").entry);
  }

  function fsync(fd) {
    descriptor(fd, "fsync");
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
    for (const k of subtree(p)) {
      if (k === ROOT) continue;
      const gone = tree.get(k);
      tree.delete(k);
      release(gone);
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
    release(e);
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
    if (target && !target.dir) release(target);
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
    // A stored file is shared by key; one written this run is copied on
    // the local disk.
    const copy = { dir: false, size: e.size, mtimeMs: time, birthtimeMs: time };
    if (e.blob !== undefined) copy.blob = io("copyfile", from, () => disk.copy(e.blob));
    else if (e.key) Object.assign(copy, { key: e.key, m: e.m, sha: e.sha });
    if (target) release(target);
    tree.set(b, copy);
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
    copyFile, stat, lstat: stat, access, truncate, open, close, ftruncate, fstat, fsync,
    fdatasync: fsync };

  const promises = {};
  const fs = { constants: Object.freeze({ F_OK: 0, R_OK: 4, W_OK: 2, X_OK: 1, COPYFILE_EXCL: 1,
    COPYFILE_FICLONE: 2, COPYFILE_FICLONE_FORCE: 4, ...O }) };
  function callbackOf(args) {
    const callback = args.pop();
    if (typeof callback !== "function") {
      const error = new TypeError(`The "cb" argument must be of type function. Received ${typeof callback}`);
      error.code = "ERR_INVALID_ARG_TYPE";
      throw error;
    }
    return callback;
  }
  for (const [name, operation] of Object.entries(operations)) {
    if (name !== "open" && name !== "close" && name !== "fstat" && name !== "ftruncate"
      && name !== "fsync" && name !== "fdatasync") {
      promises[name] = async (...args) => operation(...args);
    }
    fs[name + "Sync"] = (...args) => operation(...args);
    // Node's callback form: the last argument is the callback.
    fs[name] = (...args) => {
      const callback = callbackOf(args);
      let result, failure = null;
      try {
        result = operation(...args);
      } catch (error) {
        failure = error;
      }
      queueMicrotask(() => (failure ? callback(failure) : callback(null, result)));
    };
  }
  fs.readSync = read;
  fs.writeSync = write;
  // Node's fs.close takes its callback optionally.
  fs.close = (fd, callback) => {
    let failure = null;
    try {
      close(fd);
    } catch (error) {
      failure = error;
    }
    if (typeof callback === "function") queueMicrotask(() => callback(failure));
    else if (failure) throw failure;
  };
  // The callback forms of read and write give the count and the buffer.
  const counting = (operation) => (fd, data, ...rest) => {
    const callback = callbackOf(rest);
    let count, failure = null;
    try {
      count = operation(fd, data, ...rest);
    } catch (error) {
      failure = error;
    }
    queueMicrotask(() => (failure ? callback(failure) : callback(null, count, data)));
  };
  fs.read = counting(read);
  fs.write = counting(write);

  // `fs.promises.open`'s handle.
  class FileHandle {
    constructor(fd) {
      this.fd = fd;
    }
    async read(buffer, offset, length, position) {
      if (buffer === undefined || (buffer !== null && typeof buffer === "object" && !ArrayBuffer.isView(buffer))) {
        const options = buffer ?? {};
        buffer = options.buffer ?? load("node").Buffer.alloc(16384);
        ({ offset = 0, length = buffer.byteLength - offset, position = null } = options);
      }
      const bytesRead = read(this.fd, buffer, offset, length, position);
      return { bytesRead, buffer };
    }
    async write(data, offset, length, position) {
      const bytesWritten = write(this.fd, data, offset, length, position);
      return { bytesWritten, buffer: data };
    }
    async readFile(options) {
      return readFile(this.fd, options);
    }
    async writeFile(data, options) {
      const f = descriptor(this.fd, "write", "write");
      resize(f.entry, 0, f.path);
      f.position = 0;
      writeFd(f, toBytes(data, encodingOf(options)), null);
    }
    async appendFile(data, options) {
      return appendFile(this.fd, data, options);
    }
    async stat() {
      return fstat(this.fd);
    }
    async truncate(len) {
      return ftruncate(this.fd, len);
    }
    async sync() {
      return fsync(this.fd);
    }
    async datasync() {
      return fsync(this.fd);
    }
    async close() {
      if (fds.has(this.fd)) close(this.fd);
    }
    async [Symbol.asyncDispose]() {
      return this.close();
    }
    createReadStream(options) {
      return fs.createReadStream(null, { ...options, fd: this.fd });
    }
    createWriteStream(options) {
      return fs.createWriteStream(null, { ...options, fd: this.fd });
    }
  }
  promises.open = async (path, flags, mode) => new FileHandle(open(path, flags, mode));

  // Streams over /work, node:stream's (the "node" family, loaded on first
  // use), through a descriptor as Node's are: a read stream reads its
  // chunks as they are asked for, a write stream writes each to the local
  // disk as it comes, so neither holds the file.
  function streamOptions(options) {
    return typeof options === "string" ? { encoding: options }
      : options !== null && typeof options === "object" ? options : {};
  }
  // A stream's descriptor: the one given (`fd`, or a FileHandle), or one
  // opened when the stream is constructed with `flags` (by default
  // `flags`), announced with 'open' and 'ready' as Node does; closed with
  // the stream unless `autoClose` is false.
  function streamFile(path, opts, flags, site) {
    const file = {
      fd: typeof opts.fd === "number" ? opts.fd : opts.fd?.fd ?? null,
      open(stream, callback) {
        try {
          if (file.fd === null) file.fd = open(path, opts.flags ?? flags);
          callback();
          queueMicrotask(() => {
            stream.emit("open", file.fd);
            stream.emit("ready");
          });
        } catch (error) {
          callback(calledAt(error, site));
        }
      },
      close(error, callback) {
        if (file.fd !== null && opts.autoClose !== false && fds.has(file.fd)) close(file.fd);
        callback(error);
      },
    };
    return file;
  }
  fs.createReadStream = (path, options) => {
    const site = new Error();
    const { Readable } = load("node").stream;
    const { Buffer } = load("node").buffer;
    const opts = streamOptions(options);
    const chunk = opts.highWaterMark ?? 64 * 1024;
    const file = streamFile(path, opts, "r", site);
    let at = opts.start ?? 0;
    const stop = opts.end === undefined || opts.end === Infinity ? Infinity : opts.end + 1;
    const stream = new Readable({
      highWaterMark: chunk,
      encoding: opts.encoding ?? undefined,
      construct(callback) {
        file.open(stream, callback);
      },
      read(size) {
        try {
          const f = descriptor(file.fd, "read", "read");
          const want = Math.min(Math.max(size || chunk, 1), stop - at);
          const bytes = want > 0 ? readAt(f.entry, at, want, "read", f.path) : new Uint8Array(0);
          if (bytes.length === 0) {
            this.push(null);
            return;
          }
          at += bytes.length;
          this.bytesRead += bytes.length;
          this.push(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
        } catch (error) {
          this.destroy(calledAt(error, site));
        }
      },
      destroy(error, callback) {
        file.close(error, callback);
      },
    });
    stream.path = path;
    stream.bytesRead = 0;
    stream.pending = false;
    return stream;
  };
  fs.createWriteStream = (path, options) => {
    const site = new Error();
    const { Writable } = load("node").stream;
    const opts = streamOptions(options);
    // Node opens (and truncates, or appends to) the file first.
    const file = streamFile(path, opts, "w", site);
    let at = opts.start;
    let bytesWritten = 0;
    const stream = new Writable({
      defaultEncoding: opts.encoding ?? "utf8",
      highWaterMark: opts.highWaterMark,
      construct(callback) {
        file.open(stream, callback);
      },
      write(data, encoding, callback) {
        try {
          const bytes = typeof data === "string" ? encode(data, encoding) : data;
          const n = writeFd(descriptor(file.fd, "write", "write"), bytes, at ?? null);
          if (at !== undefined) at += n;
          bytesWritten += n;
          callback();
        } catch (error) {
          callback(calledAt(error, site));
        }
      },
      destroy(error, callback) {
        file.close(error, callback);
      },
    });
    stream.path = path;
    stream.pending = false;
    Object.defineProperty(stream, "bytesWritten", { get: () => bytesWritten });
    stream.close = (callback) => {
      if (callback) stream.once("close", callback);
      stream.end();
    };
    return stream;
  };
  fs.existsSync = exists;
  fs.exists = (path, callback) => queueMicrotask(() => callback(exists(path)));
  fs.promises = promises;
  promises.constants = fs.constants;
  Object.freeze(promises);
  Object.freeze(fs);

  // The call's `files`, written before the code runs.
  function writeInputs(inputs) {
    for (const [path, bytes] of inputs) {
      const p = resolve(path, "open");
      mkdir(parentOf(p), { recursive: true });
      store(p, bytes, "open", path);
    }
  }

  // The host seals the files this run wrote before its heap is kept: each
  // becomes a manifest of stored chunks. Descriptors stay open across
  // runs; one whose file was removed keeps nothing after the run.
  function seal() {
    for (const [path, e] of tree) {
      if (e.dir || e.blob === undefined) continue;
      const [key, sha] = io("close", path, () => disk.seal(e.blob));
      delete e.blob;
      if (key) {
        e.key = key;
        e.m = 1;
        if (sha) e.sha = sha;
      } else {
        delete e.key;
        e.size = 0;
      }
    }
    for (const f of fds.values()) {
      if (f.entry.blob !== undefined) {
        f.entry.blob = undefined;
        f.entry.size = 0;
      }
    }
  }

  return {
    fs,
    promises,
    writeInputs,
    seal,
    // The tree for the host: [path, isDir, key, size, mtimeMs, chunked,
    // sha] rows (sealed files only: the host asks after `seal`).
    entries: () => [...tree].map(([p, e]) => [p, e.dir, e.dir || !(e.size > 0) ? null : e.key ?? null,
      e.dir ? 0 : e.size, e.mtimeMs, !!e.m, e.sha ?? null]),
  };
})
