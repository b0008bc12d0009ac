// URL and URLSearchParams (URL Standard). Parsing and setters are ada's (as
// in Node 22), through natives that return the components array:
// [href, origin, protocol, username, password, host, hostname, port,
//  pathname, search, hash].
(function (natives, load) {
  "use strict";
  const HREF = 0, ORIGIN = 1, PROTOCOL = 2, USERNAME = 3, PASSWORD = 4, HOST = 5,
    HOSTNAME = 6, PORT = 7, PATHNAME = 8, SEARCH = 9, HASH = 10;

  let paramsList;    // (params) => its list, for URL
  let paramsLink;    // (params, url) => link a URL's params
  let urlSetQuery;   // (url, serialized) => URL's query from its params

  // Web IDL's USVString: lone surrogates become U+FFFD.
  const usv = (value) => String(value).toWellFormed();

  function invalid(url, base) {
    return new TypeError(base === undefined ? `Invalid URL: '${url}'` : `Invalid URL: '${url}' with base '${base}'`);
  }

  class URL {
    #c;
    #params = null;
    constructor(url, base = undefined) {
      if (arguments.length === 0) throw new TypeError("URL constructor: 1 argument required, but only 0 present");
      const c = natives.parse(String(url), base === undefined ? undefined : String(base));
      if (c === undefined) throw invalid(url, base);
      this.#c = c;
    }
    static canParse(url, base = undefined) {
      if (arguments.length === 0) throw new TypeError("URL.canParse: 1 argument required, but only 0 present");
      return natives.parse(String(url), base === undefined ? undefined : String(base)) !== undefined;
    }
    static parse(url, base = undefined) {
      if (arguments.length === 0) throw new TypeError("URL.parse: 1 argument required, but only 0 present");
      try {
        return new URL(url, base);
      } catch {
        return null;
      }
    }
    static {
      urlSetQuery = (url, serialized) => {
        url.#c = natives.set(url.#c[HREF], SEARCH, serialized) ?? url.#c;
      };
    }
    #set(index, value) {
      const c = natives.set(this.#c[HREF], index, String(value));
      if (c === undefined) {
        if (index === HREF) throw new TypeError(`Invalid URL: '${value}'`);
        return;
      }
      this.#c = c;
      if ((index === HREF || index === SEARCH) && this.#params !== null) {
        const list = paramsList(this.#params);
        list.length = 0;
        const flat = natives.formParse(c[SEARCH].slice(1));
        for (let i = 0; i < flat.length; i += 2) list.push([flat[i], flat[i + 1]]);
      }
    }
    get href() { return this.#c[HREF]; }
    set href(value) { this.#set(HREF, value); }
    get origin() { return this.#c[ORIGIN]; }
    get protocol() { return this.#c[PROTOCOL]; }
    set protocol(value) { this.#set(PROTOCOL, value); }
    get username() { return this.#c[USERNAME]; }
    set username(value) { this.#set(USERNAME, value); }
    get password() { return this.#c[PASSWORD]; }
    set password(value) { this.#set(PASSWORD, value); }
    get host() { return this.#c[HOST]; }
    set host(value) { this.#set(HOST, value); }
    get hostname() { return this.#c[HOSTNAME]; }
    set hostname(value) { this.#set(HOSTNAME, value); }
    get port() { return this.#c[PORT]; }
    set port(value) { this.#set(PORT, value); }
    get pathname() { return this.#c[PATHNAME]; }
    set pathname(value) { this.#set(PATHNAME, value); }
    get search() { return this.#c[SEARCH]; }
    set search(value) { this.#set(SEARCH, value); }
    get hash() { return this.#c[HASH]; }
    set hash(value) { this.#set(HASH, value); }
    get searchParams() {
      if (this.#params === null) {
        this.#params = new URLSearchParams(this.#c[SEARCH]);
        paramsLink(this.#params, this);
      }
      return this.#params;
    }
    toString() { return this.#c[HREF]; }
    toJSON() { return this.#c[HREF]; }
    get [Symbol.toStringTag]() { return "URL"; }
  }

  class URLSearchParams {
    #list = [];
    #url = null;
    constructor(init = "") {
      if (init !== null && (typeof init === "object" || typeof init === "function")) {
        if (typeof init[Symbol.iterator] === "function") {
          for (const pair of init) {
            const items = [...pair];
            if (items.length !== 2) throw new TypeError("URLSearchParams: each pair must have exactly two items");
            this.#list.push([usv(items[0]), usv(items[1])]);
          }
        } else {
          for (const key of Reflect.ownKeys(init)) {
            if (typeof key !== "string") continue;
            const desc = Reflect.getOwnPropertyDescriptor(init, key);
            if (desc?.enumerable) this.#list.push([key, usv(init[key])]);
          }
        }
      } else {
        let text = usv(init);
        if (text.startsWith("?")) text = text.slice(1);
        const flat = natives.formParse(text);
        for (let i = 0; i < flat.length; i += 2) this.#list.push([flat[i], flat[i + 1]]);
      }
    }
    static {
      paramsList = (params) => params.#list;
      paramsLink = (params, url) => { params.#url = url; };
    }
    #update() {
      if (this.#url !== null) urlSetQuery(this.#url, this.toString());
    }
    get size() { return this.#list.length; }
    append(name, value) {
      if (arguments.length < 2) throw new TypeError("URLSearchParams.append: 2 arguments required");
      this.#list.push([usv(name), usv(value)]);
      this.#update();
    }
    delete(name, value = undefined) {
      name = usv(name);
      const v = value === undefined ? undefined : usv(value);
      this.#list = this.#list.filter(([n, x]) => !(n === name && (v === undefined || x === v)));
      this.#update();
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
    has(name, value = undefined) {
      name = usv(name);
      const v = value === undefined ? undefined : usv(value);
      return this.#list.some(([n, x]) => n === name && (v === undefined || x === v));
    }
    set(name, value) {
      if (arguments.length < 2) throw new TypeError("URLSearchParams.set: 2 arguments required");
      name = usv(name);
      value = usv(value);
      const i = this.#list.findIndex(([n]) => n === name);
      if (i < 0) {
        this.#list.push([name, value]);
      } else {
        this.#list[i][1] = value;
        this.#list = this.#list.filter(([n], j) => j <= i || n !== name);
      }
      this.#update();
    }
    sort() {
      // Stable, by UTF-16 code units (the standard's order).
      this.#list = this.#list
        .map((pair, i) => [pair, i])
        .sort(([a, i], [b, j]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : i - j))
        .map(([pair]) => pair);
      this.#update();
    }
    forEach(callback, thisArg = undefined) {
      if (typeof callback !== "function") throw new TypeError("URLSearchParams.forEach: the callback must be a function");
      for (let i = 0; i < this.#list.length; i++) {
        const [name, value] = this.#list[i];
        callback.call(thisArg, value, name, this);
      }
    }
    *entries() {
      for (let i = 0; i < this.#list.length; i++) yield [this.#list[i][0], this.#list[i][1]];
    }
    *keys() {
      for (let i = 0; i < this.#list.length; i++) yield this.#list[i][0];
    }
    *values() {
      for (let i = 0; i < this.#list.length; i++) yield this.#list[i][1];
    }
    [Symbol.iterator]() { return this.entries(); }
    toString() { return natives.formSerialize(this.#list.flat()); }
    get [Symbol.toStringTag]() { return "URLSearchParams"; }
  }

  return { URL, URLSearchParams, paramsList };
})
