// Headers, Request, Response (Fetch Standard), with bodies held in memory:
// text, JSON, ArrayBuffer, bytes, Blob and FormData readers. `body` (a
// ReadableStream) is absent with the rest of the Streams API.
(function (natives, load) {
  "use strict";
  const { AbortSignal, AbortController } = load("events");
  const { TextEncoder, TextDecoder, bufferSource } = load("encoding");
  const { URL, URLSearchParams } = load("url");
  const { Blob, FormData, bytesOf, multipart, parseMultipart } = load("blob");
  const encoder = new TextEncoder();

  const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
  function headerName(name) {
    name = String(name);
    if (!TOKEN.test(name)) throw new TypeError(`Headers: '${name}' is not a valid header name`);
    return name.toLowerCase();
  }
  function headerValue(value) {
    const text = String(value).replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, "");
    if (/[\0\r\n]/.test(text)) throw new TypeError(`Headers: '${text}' is not a valid header value`);
    return text;
  }

  let headersList;  // (headers) => the [name, value] list
  let headersGuard; // (headers, guard) => set the guard

  class Headers {
    #list = [];
    #guard = "none";
    constructor(init = undefined) {
      if (init === undefined) return;
      if (init === null || (typeof init !== "object" && typeof init !== "function")) {
        throw new TypeError("Headers constructor: init must be an object, a sequence of pairs or Headers");
      }
      if (init instanceof Headers) {
        for (const [name, value] of init.#list) this.#list.push([name, value]);
      } else if (typeof init[Symbol.iterator] === "function") {
        for (const pair of init) {
          const items = [...pair];
          if (items.length !== 2) throw new TypeError("Headers constructor: each pair must have exactly two items");
          this.append(items[0], items[1]);
        }
      } else {
        for (const key of Reflect.ownKeys(init)) {
          if (typeof key !== "string") continue;
          if (Reflect.getOwnPropertyDescriptor(init, key)?.enumerable) this.append(key, init[key]);
        }
      }
    }
    static {
      headersList = (headers) => headers.#list;
      headersGuard = (headers, guard) => { headers.#guard = guard; };
    }
    #mutable() {
      if (this.#guard === "immutable") throw new TypeError("Headers: these headers are immutable");
    }
    append(name, value) {
      if (arguments.length < 2) throw new TypeError("Headers.append: 2 arguments required");
      const n = headerName(name), v = headerValue(value);
      this.#mutable();
      this.#list.push([n, v]);
    }
    delete(name) {
      const n = headerName(name);
      this.#mutable();
      this.#list = this.#list.filter(([key]) => key !== n);
    }
    get(name) {
      const n = headerName(name);
      const values = this.#list.filter(([key]) => key === n).map(([, v]) => v);
      return values.length === 0 ? null : values.join(", ");
    }
    getSetCookie() {
      return this.#list.filter(([key]) => key === "set-cookie").map(([, v]) => v);
    }
    has(name) {
      const n = headerName(name);
      return this.#list.some(([key]) => key === n);
    }
    set(name, value) {
      if (arguments.length < 2) throw new TypeError("Headers.set: 2 arguments required");
      const n = headerName(name), v = headerValue(value);
      this.#mutable();
      const i = this.#list.findIndex(([key]) => key === n);
      if (i < 0) this.#list.push([n, v]);
      else this.#list = [...this.#list.slice(0, i), [n, v], ...this.#list.slice(i + 1).filter(([key]) => key !== n)];
    }
    #sorted() {
      const names = [...new Set(this.#list.map(([n]) => n))].sort();
      const out = [];
      for (const name of names) {
        if (name === "set-cookie") for (const v of this.getSetCookie()) out.push([name, v]);
        else out.push([name, this.get(name)]);
      }
      return out;
    }
    forEach(callback, thisArg = undefined) {
      if (typeof callback !== "function") throw new TypeError("Headers.forEach: the callback must be a function");
      for (const [name, value] of this.#sorted()) callback.call(thisArg, value, name, this);
    }
    *entries() { yield* this.#sorted(); }
    *keys() { for (const [name] of this.#sorted()) yield name; }
    *values() { for (const [, value] of this.#sorted()) yield value; }
    [Symbol.iterator]() { return this.entries(); }
    get [Symbol.toStringTag]() { return "Headers"; }
  }

  // Body extraction: bytes plus the Content-Type the body implies.
  function extract(body) {
    if (body instanceof Blob) return { bytes: bytesOf(body).slice(), type: body.type || null };
    if (ArrayBuffer.isView(body) || body instanceof ArrayBuffer) return { bytes: bufferSource(body, "body").slice(), type: null };
    if (body instanceof URLSearchParams) {
      return { bytes: encoder.encode(body.toString()), type: "application/x-www-form-urlencoded;charset=UTF-8" };
    }
    if (body instanceof FormData) {
      const { blob, type } = multipart(body);
      return { bytes: bytesOf(blob), type };
    }
    return { bytes: encoder.encode(String(body)), type: "text/plain;charset=UTF-8" };
  }

  function mimeEssence(headers) {
    return (headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
  }

  // The body readers shared by Request and Response, over an internal slot
  // { bytes, used } or null.
  function consume(owner, body) {
    if (body !== null && body.used) return Promise.reject(new TypeError("Body has already been consumed"));
    if (body !== null) body.used = true;
    return Promise.resolve(body === null ? new Uint8Array(0) : body.bytes);
  }
  const readers = (slot) => ({
    get bodyUsed() { return slot(this) !== null && slot(this).used; },
    arrayBuffer() { return consume(this, slot(this)).then((b) => b.slice().buffer); },
    bytes() { return consume(this, slot(this)).then((b) => b.slice()); },
    text() { return consume(this, slot(this)).then((b) => new TextDecoder().decode(b)); },
    json() { return this.text().then((t) => JSON.parse(t)); },
    blob() {
      const type = this.headers.get("content-type") ?? "";
      return consume(this, slot(this)).then((b) => new Blob([b], { type }));
    },
    formData() {
      const headers = this.headers;
      return consume(this, slot(this)).then((b) => {
        const essence = mimeEssence(headers);
        if (essence === "application/x-www-form-urlencoded") {
          const form = new FormData();
          for (const [k, v] of new URLSearchParams(new TextDecoder().decode(b))) form.append(k, v);
          return form;
        }
        if (essence === "multipart/form-data") {
          const boundary = /boundary=("?)([^";]+)\1/i.exec(headers.get("content-type"))?.[2];
          if (!boundary) throw new TypeError("formData: the multipart body has no boundary");
          return parseMultipart(b, boundary);
        }
        throw new TypeError(`formData: cannot parse a body of type '${essence}'`);
      });
    },
  });
  function mixBody(Class, slot) {
    const methods = readers(slot);
    for (const key of Reflect.ownKeys(methods)) {
      const desc = Reflect.getOwnPropertyDescriptor(methods, key);
      desc.enumerable = false;
      Object.defineProperty(Class.prototype, key, desc);
    }
  }

  const METHODS = new Map(["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"].map((m) => [m.toLowerCase(), m]));
  const FORBIDDEN_METHODS = new Set(["connect", "trace", "track"]);
  const REDIRECTS = new Set(["follow", "error", "manual"]);

  let requestParts;

  class Request {
    #method = "GET";
    #url;
    #headers = new Headers();
    #body = null;
    #redirect = "follow";
    #signal;
    #options = { credentials: "same-origin", mode: "cors", cache: "default", referrer: "about:client",
      referrerPolicy: "", integrity: "", keepalive: false };
    constructor(input, init = undefined) {
      if (arguments.length === 0) throw new TypeError("Request constructor: 1 argument required, but only 0 present");
      let signal = null;
      let inputBody = null;
      if (input instanceof Request) {
        this.#url = input.#url;
        this.#method = input.#method;
        for (const [n, v] of headersList(input.#headers)) headersList(this.#headers).push([n, v]);
        this.#redirect = input.#redirect;
        this.#options = { ...input.#options };
        signal = input.#signal;
        inputBody = input.#body;
      } else {
        let parsed;
        try {
          parsed = new URL(String(input));
        } catch {
          throw new TypeError(`Request constructor: '${input}' is not an absolute URL`);
        }
        if (parsed.username || parsed.password) throw new TypeError("Request constructor: URLs with credentials are not allowed");
        this.#url = parsed.href;
      }
      const i = init ?? {};
      if (i.method !== undefined) {
        const method = String(i.method);
        if (!TOKEN.test(method)) throw new TypeError(`Request constructor: '${method}' is not a valid method`);
        if (FORBIDDEN_METHODS.has(method.toLowerCase())) throw new TypeError(`Request constructor: the method '${method}' is forbidden`);
        this.#method = METHODS.get(method.toLowerCase()) ?? method;
      }
      if (i.redirect !== undefined) {
        if (!REDIRECTS.has(i.redirect)) throw new TypeError(`Request constructor: '${i.redirect}' is not a valid redirect mode`);
        this.#redirect = i.redirect;
      }
      for (const key of ["credentials", "mode", "cache", "referrer", "referrerPolicy", "integrity"]) {
        if (i[key] !== undefined) this.#options[key] = String(i[key]);
      }
      if (i.keepalive !== undefined) this.#options.keepalive = !!i.keepalive;
      if (i.signal !== undefined && i.signal !== null) {
        if (!(i.signal instanceof AbortSignal)) throw new TypeError("Request constructor: signal must be an AbortSignal");
        signal = i.signal;
      }
      this.#signal = signal === null ? new AbortController().signal : AbortSignal.any([signal]);
      if (i.headers !== undefined) {
        this.#headers = new Headers(i.headers);
      }
      const hasBody = i.body !== undefined && i.body !== null;
      if ((hasBody || (inputBody !== null && i.body === undefined)) && (this.#method === "GET" || this.#method === "HEAD")) {
        throw new TypeError("Request constructor: a GET or HEAD request cannot have a body");
      }
      if (hasBody) {
        const { bytes, type } = extract(i.body);
        this.#body = { bytes, used: false };
        if (type !== null && !this.#headers.has("content-type")) this.#headers.append("content-type", type);
      } else if (inputBody !== null && i.body === undefined) {
        if (inputBody.used) throw new TypeError("Request constructor: the input request's body is already used");
        this.#body = { bytes: inputBody.bytes, used: false };
        inputBody.used = true;
      }
      headersGuard(this.#headers, "request");
    }
    static {
      mixBody(Request, (r) => r.#body);
      requestParts = (r) => ({
        method: r.#method, url: r.#url, headers: headersList(r.#headers),
        body: r.#body, redirect: r.#redirect, signal: r.#signal,
      });
    }
    get method() { return this.#method; }
    get url() { return this.#url; }
    get headers() { return this.#headers; }
    get redirect() { return this.#redirect; }
    get signal() { return this.#signal; }
    get credentials() { return this.#options.credentials; }
    get mode() { return this.#options.mode; }
    get cache() { return this.#options.cache; }
    get referrer() { return this.#options.referrer; }
    get referrerPolicy() { return this.#options.referrerPolicy; }
    get integrity() { return this.#options.integrity; }
    get keepalive() { return this.#options.keepalive; }
    get destination() { return ""; }
    clone() {
      if (this.bodyUsed) throw new TypeError("Request.clone: the body is already used");
      const copy = new Request(this.#url, { method: this.#method === "GET" || this.#method === "HEAD" ? this.#method : "POST" });
      copy.#method = this.#method;
      copy.#headers = new Headers(this.#headers);
      headersGuard(copy.#headers, "request");
      copy.#body = this.#body === null ? null : { bytes: this.#body.bytes, used: false };
      copy.#redirect = this.#redirect;
      copy.#options = { ...this.#options };
      copy.#signal = AbortSignal.any([this.#signal]);
      return copy;
    }
    get [Symbol.toStringTag]() { return "Request"; }
  }

  const NULL_BODY = new Set([101, 103, 204, 205, 304]);
  const REDIRECT_STATUS = new Set([301, 302, 303, 307, 308]);
  const REASON = /^[\t\x20-\x7e\x80-\xff]*$/;
  const create = {};
  let makeResponse;

  class Response {
    #type = "default";
    #status = 200;
    #statusText = "";
    #headers = new Headers();
    #body = null;
    #url = "";
    #redirected = false;
    constructor(body = null, init = undefined) {
      if (body === create) return;
      const i = init ?? {};
      const status = i.status === undefined ? 200 : Number(i.status);
      if (!Number.isInteger(status) || status < 200 || status > 599) {
        throw new RangeError(`Response constructor: ${i.status} is not a status in the range 200 to 599`);
      }
      const statusText = i.statusText === undefined ? "" : String(i.statusText);
      if (!REASON.test(statusText)) throw new TypeError("Response constructor: the statusText is not a valid reason phrase");
      this.#status = status;
      this.#statusText = statusText;
      if (i.headers !== undefined) this.#headers = new Headers(i.headers);
      if (body !== null && body !== undefined) {
        if (NULL_BODY.has(status)) throw new TypeError(`Response constructor: a ${status} response cannot have a body`);
        const { bytes, type } = extract(body);
        this.#body = { bytes, used: false };
        if (type !== null && !this.#headers.has("content-type")) this.#headers.append("content-type", type);
      }
      headersGuard(this.#headers, "response");
    }
    static {
      mixBody(Response, (r) => r.#body);
      makeResponse = ({ type = "basic", status, statusText = "", headers = [], bytes = null, url = "", redirected = false }) => {
        const r = new Response(create);
        r.#type = type;
        r.#status = status;
        r.#statusText = statusText;
        for (const [n, v] of headers) headersList(r.#headers).push([String(n).toLowerCase(), String(v)]);
        headersGuard(r.#headers, "immutable");
        r.#body = bytes === null ? null : { bytes, used: false };
        r.#url = url;
        r.#redirected = redirected;
        return r;
      };
    }
    static error() {
      const r = makeResponse({ type: "error", status: 0 });
      return r;
    }
    static redirect(url, status = 302) {
      const href = new URL(String(url)).href;
      if (!REDIRECT_STATUS.has(Number(status))) throw new RangeError(`Response.redirect: ${status} is not a redirect status`);
      const r = new Response(null, { status: Number(status), headers: { location: href } });
      headersGuard(r.#headers, "immutable");
      return r;
    }
    static json(data, init = undefined) {
      const text = JSON.stringify(data);
      if (text === undefined) throw new TypeError("Response.json: the data cannot be serialised to JSON");
      const headers = new Headers(init?.headers);
      if (!headers.has("content-type")) headers.set("content-type", "application/json");
      return new Response(text, { status: init?.status, statusText: init?.statusText, headers });
    }
    get type() { return this.#type; }
    get url() { return this.#url; }
    get redirected() { return this.#redirected; }
    get status() { return this.#status; }
    get ok() { return this.#status >= 200 && this.#status <= 299; }
    get statusText() { return this.#statusText; }
    get headers() { return this.#headers; }
    clone() {
      if (this.bodyUsed) throw new TypeError("Response.clone: the body is already used");
      const r = new Response(create);
      r.#type = this.#type;
      r.#status = this.#status;
      r.#statusText = this.#statusText;
      r.#headers = new Headers(this.#headers);
      headersGuard(r.#headers, this.#type === "default" ? "response" : "immutable");
      r.#body = this.#body === null ? null : { bytes: this.#body.bytes, used: false };
      r.#url = this.#url;
      r.#redirected = this.#redirected;
      return r;
    }
    get [Symbol.toStringTag]() { return "Response"; }
  }

  return { Headers, Request, Response, requestParts, makeResponse, headersList };
})
