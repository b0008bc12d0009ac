// fetch (Fetch Standard), through the host's egress policy. What code sees
// of a request and a response is the Request and Response of the http
// family; headers the operator injects are added outside the isolate.
(function (natives, load) {
  "use strict";
  const { Request, requestParts, makeResponse } = load("http");
  const { onAbort } = load("events");

  function fetch(input, init = undefined) {
    try {
      if (arguments.length === 0) throw new TypeError("fetch: 1 argument required, but only 0 present");
      const request = new Request(input, init);
      const parts = requestParts(request);
      if (parts.signal.aborted) return Promise.reject(parts.signal.reason);
      let body = null;
      if (parts.body !== null) {
        if (parts.body.used) throw new TypeError("fetch: the request's body is already used");
        parts.body.used = true;
        body = parts.body.bytes;
      }
      const [id, head, bytes] = natives.start(parts.method, parts.url, parts.headers.flat(), body, parts.redirect);
      // An unread body that fails must not surface as an unhandled rejection.
      bytes.catch(() => {});
      onAbort(parts.signal, () => natives.abort(id, parts.signal.reason));
      return head.then((h) => {
        const headers = [];
        for (let i = 0; i < h.headers.length; i += 2) headers.push([h.headers[i], h.headers[i + 1]]);
        return makeResponse({
          type: h.type, status: h.status, statusText: h.statusText, headers,
          bytes: h.type === "opaqueredirect" ? null : bytes, url: h.url, redirected: h.redirected,
        });
      });
    } catch (error) {
      return Promise.reject(error);
    }
  }

  return { fetch };
})
