// Blob, File (File API) and FormData (XHR Standard), in memory. Blob.stream()
// is absent with the rest of the Streams API.
(function (natives, load) {
  "use strict";
  const { TextEncoder, TextDecoder, bufferSource } = load("encoding");
  const encoder = new TextEncoder();

  function normalizeType(type) {
    const text = String(type);
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c < 0x20 || c > 0x7e) return "";
    }
    return text.toLowerCase();
  }

  let bytesOf;

  class Blob {
    #bytes;
    #type;
    constructor(blobParts = undefined, options = undefined) {
      const chunks = [];
      if (blobParts !== undefined) {
        if (blobParts === null || typeof blobParts !== "object" || typeof blobParts[Symbol.iterator] !== "function") {
          throw new TypeError("Blob constructor: blobParts must be a sequence");
        }
        const native = options?.endings === "native";
        if (options?.endings !== undefined && options.endings !== "native" && options.endings !== "transparent") {
          throw new TypeError(`Blob constructor: '${options.endings}' is not a valid value for endings`);
        }
        for (const part of blobParts) {
          if (part instanceof Blob) chunks.push(part.#bytes);
          else if (ArrayBuffer.isView(part) || part instanceof ArrayBuffer) chunks.push(bufferSource(part, "Blob").slice());
          else {
            let text = String(part);
            if (native) text = text.replace(/\r\n|\r/g, "\n");
            chunks.push(encoder.encode(text));
          }
        }
      }
      let size = 0;
      for (const c of chunks) size += c.length;
      const bytes = new Uint8Array(size);
      let at = 0;
      for (const c of chunks) {
        bytes.set(c, at);
        at += c.length;
      }
      this.#bytes = bytes;
      this.#type = options?.type === undefined ? "" : normalizeType(options.type);
    }
    static {
      bytesOf = (blob) => blob.#bytes;
    }
    get size() { return this.#bytes.length; }
    get type() { return this.#type; }
    slice(start = undefined, end = undefined, contentType = undefined) {
      const size = this.#bytes.length;
      const clamp = (value, fallback) => {
        if (value === undefined) return fallback;
        const n = Math.trunc(Number(value)) || 0;
        return n < 0 ? Math.max(size + n, 0) : Math.min(n, size);
      };
      const from = clamp(start, 0);
      const to = clamp(end, size);
      const blob = new Blob([], { type: contentType === undefined ? "" : contentType });
      blob.#bytes = this.#bytes.slice(from, Math.max(from, to));
      return blob;
    }
    text() { return Promise.resolve(new TextDecoder().decode(this.#bytes)); }
    arrayBuffer() { return Promise.resolve(this.#bytes.slice().buffer); }
    bytes() { return Promise.resolve(this.#bytes.slice()); }
    get [Symbol.toStringTag]() { return "Blob"; }
  }

  class File extends Blob {
    #name;
    #lastModified;
    constructor(fileBits, fileName, options = undefined) {
      if (arguments.length < 2) throw new TypeError("File constructor: 2 arguments required");
      super(fileBits, options);
      this.#name = String(fileName);
      this.#lastModified = options?.lastModified === undefined ? Date.now() : Math.trunc(Number(options.lastModified)) || 0;
    }
    get name() { return this.#name; }
    get lastModified() { return this.#lastModified; }
    get webkitRelativePath() { return ""; }
    get [Symbol.toStringTag]() { return "File"; }
  }

  const usv = (value) => String(value).toWellFormed();

  function entryValue(value, filename, count) {
    if (value instanceof Blob) {
      if (count === 3 || !(value instanceof File)) {
        const name = filename !== undefined ? String(filename) : value instanceof File ? value.name : "blob";
        return new File([value], name, { type: value.type, lastModified: value instanceof File ? value.lastModified : undefined });
      }
      return value;
    }
    return usv(value);
  }

  class FormData {
    #list = [];
    constructor(form = undefined) {
      if (form !== undefined) throw new TypeError("FormData constructor: there are no HTML forms here; pass no argument");
    }
    append(name, value, filename = undefined) {
      if (arguments.length < 2) throw new TypeError("FormData.append: 2 arguments required");
      this.#list.push([usv(name), entryValue(value, filename, arguments.length)]);
    }
    delete(name) {
      name = usv(name);
      this.#list = this.#list.filter(([n]) => n !== name);
    }
    get(name) {
      name = usv(name);
      const found = this.#list.find(([n]) => n === name);
      return found ? found[1] : null;
    }
    getAll(name) {
      name = usv(name);
      return this.#list.filter(([n]) => n === name).map(([, v]) => v);
    }
    has(name) {
      name = usv(name);
      return this.#list.some(([n]) => n === name);
    }
    set(name, value, filename = undefined) {
      if (arguments.length < 2) throw new TypeError("FormData.set: 2 arguments required");
      name = usv(name);
      const entry = [name, entryValue(value, filename, arguments.length)];
      const i = this.#list.findIndex(([n]) => n === name);
      if (i < 0) this.#list.push(entry);
      else this.#list = [...this.#list.slice(0, i), entry, ...this.#list.slice(i + 1).filter(([n]) => n !== name)];
    }
    forEach(callback, thisArg = undefined) {
      if (typeof callback !== "function") throw new TypeError("FormData.forEach: the callback must be a function");
      for (let i = 0; i < this.#list.length; i++) callback.call(thisArg, this.#list[i][1], this.#list[i][0], this);
    }
    *entries() { for (let i = 0; i < this.#list.length; i++) yield [this.#list[i][0], this.#list[i][1]]; }
    *keys() { for (let i = 0; i < this.#list.length; i++) yield this.#list[i][0]; }
    *values() { for (let i = 0; i < this.#list.length; i++) yield this.#list[i][1]; }
    [Symbol.iterator]() { return this.entries(); }
    get [Symbol.toStringTag]() { return "FormData"; }
  }

  // multipart/form-data (RFC 7578), as the HTML Standard serialises it.
  function escapeName(name) {
    return name.replace(/\r\n|\r|\n/g, "\r\n").replace(/\n/g, "%0A").replace(/\r/g, "%0D").replace(/"/g, "%22");
  }

  function multipart(form) {
    const boundary = "----mcpv8" + randomBoundary();
    const chunks = [];
    for (const [name, value] of form) {
      let head = `--${boundary}\r\nContent-Disposition: form-data; name="${escapeName(name)}"`;
      if (value instanceof File) {
        head += `; filename="${escapeName(value.name)}"\r\nContent-Type: ${value.type || "application/octet-stream"}\r\n\r\n`;
        chunks.push(encoder.encode(head), bytesOf(value), encoder.encode("\r\n"));
      } else {
        chunks.push(encoder.encode(`${head}\r\n\r\n${value.replace(/\r\n|\r|\n/g, "\r\n")}\r\n`));
      }
    }
    chunks.push(encoder.encode(`--${boundary}--\r\n`));
    return { blob: new Blob(chunks), type: `multipart/form-data; boundary=${boundary}` };
  }

  function randomBoundary() {
    let text = "";
    for (let i = 0; i < 24; i++) text += Math.floor(Math.random() * 16).toString(16);
    return text;
  }

  function parseMultipart(bytes, boundary) {
    const text = new TextDecoder("latin1").decode(bytes);
    const delimiter = `--${boundary}`;
    const form = new FormData();
    const parts = text.split(delimiter);
    if (parts.length < 2) throw new TypeError("the body is not multipart/form-data with that boundary");
    for (const raw of parts.slice(1)) {
      if (raw.startsWith("--")) break;
      const part = raw.replace(/^\r\n/, "").replace(/\r\n$/, "");
      const split = part.indexOf("\r\n\r\n");
      if (split < 0) throw new TypeError("a multipart/form-data part has no header end");
      const headers = part.slice(0, split).split("\r\n");
      const body = part.slice(split + 4);
      let name = null, filename = null, type = "";
      for (const line of headers) {
        const [key, ...rest] = line.split(":");
        const value = rest.join(":").trim();
        if (key.trim().toLowerCase() === "content-disposition") {
          name = /\bname="([^"]*)"/.exec(value)?.[1] ?? null;
          filename = /\bfilename="([^"]*)"/.exec(value)?.[1] ?? null;
        } else if (key.trim().toLowerCase() === "content-type") {
          type = value;
        }
      }
      if (name === null) throw new TypeError("a multipart/form-data part has no name");
      const data = Uint8Array.from(body, (c) => c.charCodeAt(0));
      const utf8 = (s) => new TextDecoder().decode(Uint8Array.from(s, (c) => c.charCodeAt(0)));
      if (filename !== null) form.append(utf8(name), new File([data], utf8(filename), { type }));
      else form.append(utf8(name), new TextDecoder().decode(data));
    }
    return form;
  }

  return { Blob, File, FormData, bytesOf, multipart, parseMultipart };
})
