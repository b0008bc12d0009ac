// The C++ bindings Node's lib/url.js calls (`internalBinding`), over the
// run's WHATWG `URL`: IDNA's toASCII, and formatting a URL with parts
// left out.
"use strict";

// internal/url requires path, which must not wait on this: read lazily.
const domainToASCII = (domain) => require("./internal/url").domainToASCII(domain);
const domainToUnicode = (domain) => require("./internal/url").domainToUnicode(domain);

function format(href, fragment, unicode, search, auth) {
  const url = new URL(href);
  if (!fragment) url.hash = "";
  if (!search) url.search = "";
  if (!auth) {
    url.username = "";
    url.password = "";
  }
  if (!unicode || !url.hostname) return url.href;
  const host = domainToUnicode(url.hostname) + (url.port ? `:${url.port}` : "");
  const credentials = url.username ? `${url.username}${url.password ? `:${url.password}` : ""}@` : "";
  return `${url.protocol}//${credentials}${host}${url.pathname}${url.search}${url.hash}`;
}

const bindings = {
  encoding_binding: { toASCII: (domain) => domainToASCII(domain) },
  url: { format },
};

module.exports = (name) => bindings[name];
