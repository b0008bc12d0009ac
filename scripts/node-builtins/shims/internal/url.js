// What Node's lib/url.js takes from lib/internal/url.js, over the run's
// own WHATWG `URL` (ada, as in Node): the file URL conversions for POSIX
// paths (and Windows ones when asked), `urlToHttpOptions`, and the
// protocol sets of the legacy parser.
"use strict";

// Node's lib/path.js, read when a conversion needs it.
const path = { get posix() { return require("path").posix; }, get win32() { return require("path").win32; } };
const {
  ERR_INVALID_ARG_TYPE,
  ERR_INVALID_ARG_VALUE,
  ERR_INVALID_FILE_URL_HOST,
  ERR_INVALID_FILE_URL_PATH,
  ERR_INVALID_URL_SCHEME,
  ERR_MISSING_ARGS,
} = require("./errors").codes;
const { validateObject, kValidateObjectAllowObjects } = require("./validators");

const { URL, URLSearchParams } = globalThis;

const isURL = (value) => Boolean(value && typeof value.href === "string" && typeof value.protocol === "string" &&
  value.auth === undefined && value.path === undefined);

function hostOf(domain) {
  try {
    return new URL(`ws://${domain}`).hostname;
  } catch {
    return "";
  }
}

function domainToASCII(domain) {
  if (arguments.length < 1) throw new ERR_MISSING_ARGS("domain");
  return hostOf(`${domain}`);
}

function domainToUnicode(domain) {
  if (arguments.length < 1) throw new ERR_MISSING_ARGS("domain");
  const ascii = hostOf(`${domain}`);
  return ascii.split(".").map((label) => (label.startsWith("xn--")
    ? require("node-family:punycode").toUnicode(label) : label)).join(".");
}

function urlToHttpOptions(url) {
  validateObject(url, "url", kValidateObjectAllowObjects);
  const { hostname, pathname, port, username, password, search } = url;
  const options = {
    __proto__: null,
    ...url,
    protocol: url.protocol,
    hostname: hostname && hostname[0] === "[" ? hostname.slice(1, -1) : hostname,
    hash: url.hash,
    search,
    pathname,
    path: `${pathname || ""}${search || ""}`,
    href: url.href,
  };
  if (port !== "") options.port = Number(port);
  if (username || password) {
    options.auth = `${decodeURIComponent(username)}:${decodeURIComponent(password)}`;
  }
  return options;
}

function pathFromPosixURL(url) {
  if (url.hostname !== "") throw new ERR_INVALID_FILE_URL_HOST("linux");
  const { pathname } = url;
  if (/%2f/i.test(pathname)) throw new ERR_INVALID_FILE_URL_PATH("must not include encoded / characters", url);
  return pathname.includes("%") ? decodeURIComponent(pathname) : pathname;
}

function pathFromWin32URL(url) {
  const { hostname } = url;
  let { pathname } = url;
  if (/%2f|%5c/i.test(pathname)) throw new ERR_INVALID_FILE_URL_PATH("must not include encoded \\ or / characters", url);
  pathname = decodeURIComponent(pathname.replace(/\//g, "\\"));
  if (hostname !== "") return `\\\\${domainToUnicode(hostname)}${pathname}`;
  const letter = pathname.codePointAt(1) | 0x20;
  if (letter < 0x61 || letter > 0x7a || pathname[2] !== ":") {
    throw new ERR_INVALID_FILE_URL_PATH("must be absolute", url);
  }
  return pathname.slice(1);
}

function fileURLToPath(path, options = {}) {
  const windows = options?.windows;
  if (typeof path === "string") path = new URL(path);
  else if (!isURL(path)) throw new ERR_INVALID_ARG_TYPE("path", ["string", "URL"], path);
  if (path.protocol !== "file:") throw new ERR_INVALID_URL_SCHEME("file");
  return windows ? pathFromWin32URL(path) : pathFromPosixURL(path);
}

function fileURLToPathBuffer(path, options) {
  return require("node-family:buffer").Buffer.from(fileURLToPath(path, options));
}

// As Node's file URL from a path: controls, space and the characters a
// URL would read otherwise (`"#%<>?[\]^`{|}~`) percent-encoded, and every
// other non-ASCII character as its UTF-8 bytes.
function encodePath(filepath) {
  return filepath.toWellFormed().replace(/[\x00-\x20"#%<>?[\\\]^`{|}~\x7f]|[^\x00-\x7f]/gu, (c) =>
    (c.codePointAt(0) < 0x80 ? `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}` : encodeURIComponent(c)));
}

function pathToFileURL(filepath, options = {}) {
  const windows = options?.windows ?? false;
  if (windows && filepath.startsWith("\\\\")) {
    const isExtended = filepath.startsWith("\\\\?\\UNC\\");
    const prefix = isExtended ? 8 : 2;
    const end = filepath.indexOf("\\", prefix);
    if (end === -1) throw new ERR_INVALID_ARG_VALUE("path", filepath, "Missing UNC resource path");
    if (end === 2) throw new ERR_INVALID_ARG_VALUE("path", filepath, "Empty UNC servername");
    // `\\?\C:\…`, a long local path, has no host.
    const hostname = filepath.slice(prefix, end) === "?" ? "" : filepath.slice(prefix, end);
    return new URL(`file://${hostname}${encodePath(filepath.slice(end).replace(/\\/g, "/"))}`);
  }
  let resolved = windows ? path.win32.resolve(filepath) : path.posix.resolve(filepath);
  const last = filepath.charCodeAt(filepath.length - 1);
  if ((last === 0x2f || (windows && last === 0x5c)) && resolved[resolved.length - 1] !== (windows ? "\\" : "/")) {
    resolved += "/";
  }
  if (windows) resolved = `/${resolved.replace(/\\/g, "/")}`;
  return new URL(`file://${encodePath(resolved)}`);
}

const unsafeProtocol = new Set(["javascript", "javascript:"]);
const hostlessProtocol = new Set(["javascript", "javascript:"]);
const slashedProtocol = new Set([
  "http", "http:", "https", "https:", "ftp", "ftp:", "gopher", "gopher:",
  "file", "file:", "ws", "ws:", "wss", "wss:",
]);

module.exports = {
  URL,
  URLSearchParams,
  domainToASCII,
  domainToUnicode,
  fileURLToPath,
  fileURLToPathBuffer,
  pathToFileURL,
  urlToHttpOptions,
  isURL,
  unsafeProtocol,
  hostlessProtocol,
  slashedProtocol,
};
